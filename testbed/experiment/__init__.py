"""Experiments: parameter sweeps with replications, compared with a paper (`testbed experiment FILE`).

An experiment file (spec.py) names scenarios, a grid of `--set` parameters, seeds per point,
the measures to take from each run's results.json, reference values with their source, and
expected shapes (shapes/: order, trend, ratio, near_reference). runner.py carries out every
point × seed that is not complete yet (an interrupted experiment resumes), on this machine or
spread over SSH hosts one run at a time each; results.py analyses the runs in one Spark job and
writes the tidy table, the per-point summary with 95% confidence intervals, the shapes' verdicts,
the plots and index.html (report.py).

Anchors: ns-3's Simulation Execution Manager (a campaign's parameter space, replications, a
result database that skips what was run, export to pandas) and OMNeT++'s parameter studies
(iteration variables, `repeat`, scave's tables).
"""
