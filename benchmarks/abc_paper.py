"""The AbC paper's experiments (section 4, Figures 1-7) at paper scale: the experiment files
experiments/abc/dp.yaml (data providers: T[3,5,5] with 15 and with 10 senders, R[31,5],
C[31,155]; 5 seeds), ci.yaml (communication intensive: C[10,155], C[20,155] and C[31,155] under
both dispatch readings, R[5,31], R[31,5], T[5,2,5], T[3,5,5]; 5 seeds) and dp-scale.yaml (data
providers at 155, 310 and 620 components under time dilation; 3 seeds; dp-scale-pilots.yaml, one
seed of the dilations first tried) and dp-dilation.yaml (the data-provider ring and tree at time
dilation 1, 2 and 4; 3 seeds) and ci-dilation.yaml (the communication-intensive C[10,155] and
C[31,155] at time dilation 4; 5 seeds) and ci-faithful.yaml (ci.yaml's seven configurations, the
clusters under the authors' dispatch, at time dilation 4), 2000 time units of 100 ms.

    python benchmarks/abc_paper.py [--set dp|ci|ring-time-unit|dp-scale|dp-scale-pilots|dp-dilation|ci-dilation|ci-faithful|all] [--seeds N|S,S] [--only PATTERN] [--add] [--no-run]

Runs `testbed experiment` on each file (resuming what is complete: about 6 minutes a run on 2
cores, 20 runs for dp, 50 for ci, 27 for dp-scale of 17 to 35 minutes, 35 for ci-faithful of 20; ring-time-unit, the data-provider ring at 100 and 200 ms a
time unit, 4 runs of 5 and 9 minutes), then writes benchmarks/results/abc_paper.json: per experiment,
per point and measure the mean, the 95% confidence interval over seeds and the paper's value, the
expected shapes' verdicts (tree < ring < cluster; within a factor 1.5 of the paper), and per run
its measures. `--no-run` only gathers what the experiment directories hold.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import main  # noqa: E402

FILES = {"dp": "experiments/abc/dp.yaml", "ci": "experiments/abc/ci.yaml",
         "ring-time-unit": "experiments/abc/ring-time-unit.yaml", "dp-scale": "experiments/abc/dp-scale.yaml",
         "dp-scale-pilots": "experiments/abc/dp-scale-pilots.yaml",
         "dp-dilation": "experiments/abc/dp-dilation.yaml", "ci-dilation": "experiments/abc/ci-dilation.yaml",
         "ci-faithful": "experiments/abc/ci-faithful.yaml"}

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], FILES, "abc", "abc_paper.json", "dp"))
