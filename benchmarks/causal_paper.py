"""The causal cluster-consistency paper's experiments (Gidenstam et al., section 6) at this
machine's scale: the experiment files experiments/causal/fig5.yaml (Figure 5: 25 coordinators,
the load rising to 12.5 new events a gossip round, no recovery, R1 and R4, gossip alone from the
same runs' PrCast order, 21 points, 63 runs of about a minute), fig4.yaml (Figure 4: groups of 25-125
members with 5, 25 and all members updating, 6 events a round, R1) and churn.yaml (coordinators
joining, leaving and killed from the timeline with k = 1).

    python benchmarks/causal_paper.py [--set fig5|fig4|churn|all] [--seeds N|S,S] [--only PATTERN] [--add] [--no-run] [--rejudge]

Runs `testbed experiment` on each file (resuming what is complete), then writes
benchmarks/results/causal_paper.json: per experiment, per point and measure the mean and its 95%
interval over seeds, the expected shapes' verdicts with the intervals they rest on, and per run
its measures. docs/REPRODUCTION.md sets them beside the paper's prose (its figures survive as
captions only), in tables benchmarks/reproduction.py generates.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import main  # noqa: E402

FILES = {"fig5": "experiments/causal/fig5.yaml", "fig4": "experiments/causal/fig4.yaml",
         "churn": "experiments/causal/churn.yaml"}

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], FILES, "causal", "causal_paper.json", "fig5"))
