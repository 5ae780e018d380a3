"""Time dilation's experiments (issue 29): experiments/dilation/equivalence.yaml, the same
scenarios at k = 1 and k = 4 (the causal cluster at a moderate load, and probes into a
bandwidth-limited link), 3 seeds each, whose virtual-time measures should agree (flat shapes over
k, judged from the seeds' spread); and abc-tree.yaml, AbC's communication-intensive T[3,5,5] at
the paper's scale at k = 1 and 8 (the servers' rate against lambda_t, and the runs' fidelity).

    python benchmarks/dilation.py [--set equivalence|abc-tree|all] [--seeds N|S,S] [--only PATTERN] [--add] [--no-run] [--rejudge]

Runs `testbed experiment` on the file (resuming what is complete), then writes
benchmarks/results/dilation.json: per point and measure the mean and its 95% interval over
seeds, the shapes' verdicts with the intervals they rest on, and per run its measures and its
fidelity.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import main  # noqa: E402

FILES = {"equivalence": "experiments/dilation/equivalence.yaml", "abc-tree": "experiments/dilation/abc-tree.yaml"}

if __name__ == "__main__":
    sys.exit(main(__doc__.split("\n\n")[0], FILES, "dilation", "dilation.json", "equivalence"))
