"""Experiments: parameter sweeps with replications, compared with a paper (`testbed experiment FILE`).

An experiment file (spec.py, read into model.py's classes) names scenarios, a grid of `--set`
parameters, seeds per point, the measures to take from each run's results.json, reference values
with their source, and expected shapes (shapes/: order, trend, ratio, near_reference, flat, fit,
each judged from the seeds' spread with stats.py). runner.py carries out every point × seed that
is not complete yet (an interrupted experiment resumes; a run whose fingerprint changed, by its
files, flags, images or code, is stale and made again: fingerprint.py), on this machine or spread
over SSH hosts one run at a time each, benching a host that keeps failing; results.py analyses the
runs in one Spark job, checks that every measure's path resolves (measures.py) and writes the
tidy table, the per-point summary with 95% confidence intervals, the verdicts with their
intervals, the plots and index.html (report.py). docs/EXPERIMENTS.md is the user's account.

Anchors: ns-3's Simulation Execution Manager (a campaign's parameter space, replications, a
result database that skips what was run, export to pandas) and OMNeT++'s parameter studies
(iteration variables, `repeat`, scave's tables).
"""
