"""The DEECo gossip thesis's experiments (Kováč, chapter 7) at this machine's scale: the
experiment files experiments/deeco/manet-p.yaml (Table 5, Figures 28-30: P = 0.0-1.0 with and
without the communication boundary, 60 random-waypoint radio nodes for 5 minutes, 22 runs),
manet-p-sparse.yaml (the same sweep at 7 values of P with a radio reach of about 100 m, the
number of nodes a broadcast reaches that Table 5's counts imply, 14 runs), manet-200.yaml (the
thesis's 200 nodes in its 2 km square at that reach, P = 0.5 and 1.0, 4 runs), age.yaml (Figures
29, 33-35, Table 6: knowledge age at P = 0.9 of simple gossip, the boundary and seven push-pull
configurations, 9 runs; the set `age-sparse` runs it on the sparse topology) and
ip-groupers.yaml (Figures 31-32: simple IP gossip against 8 groupers, P = 0.0-0.5 x C = 1-3 on
60 switched nodes for 2 minutes, 36 runs); and on the thesis's scale with SUMO's cars and walkers,
each on the kernel range medium and on an 802.11b channel (ns-3): sumo-p.yaml (Table 5, 44
points) and sumo-age.yaml (Figures 29, 33-35 and all 21 configurations of Table 6, 46 points).

    python benchmarks/deeco_thesis.py [--set manet-p|manet-p-sparse|manet-200|age|age-sparse|ip-groupers|sumo-p|sumo-age|all] [--seeds N|S,S] [--only PATTERN] [--add] [--no-run]

Runs `testbed experiment` on each file (resuming what is complete: about 6 minutes a MANET run
and 3 minutes an IP run on 2 cores), then writes benchmarks/results/deeco_thesis.json: per
experiment, per point and measure the mean and the thesis's value where it gives one, the
expected shapes' verdicts, and per run its measures. docs/REPRODUCTION.md sets them beside the
thesis's. `--no-run` only gathers what the experiment directories hold.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import main  # noqa: E402

FILES = {"manet-p": "experiments/deeco/manet-p.yaml", "manet-p-sparse": "experiments/deeco/manet-p-sparse.yaml",
         "age": "experiments/deeco/age.yaml",
         "age-sparse": ("experiments/deeco/age.yaml", ["--set", "topology=../topologies/deeco-manet-60-sparse.yaml"]),
         "manet-200": "experiments/deeco/manet-200.yaml",
         "ip-groupers": "experiments/deeco/ip-groupers.yaml",
         "sumo-p": "experiments/deeco/sumo-p.yaml", "sumo-age": "experiments/deeco/sumo-age.yaml"}

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], FILES, "deeco", "deeco_thesis.json", "manet-p"))
