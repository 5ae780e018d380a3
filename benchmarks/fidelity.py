"""How large a system this machine emulates faithfully, undilated and dilated (issue 29): the
causal cluster of 25 to 125 members (experiments/dilation/scaling-causal.yaml) and AbC trees of
21 to 186 containers (scaling-abc.yaml) at time dilation 1, 2 and 4, 3 seeds each; for each
family and k, the largest size whose runs the fidelity monitor called faithful, every seed.

    python benchmarks/fidelity.py [--set causal|abc|all] [--seeds N] [--no-run] [--before FILE]

Runs `testbed experiment` on the files (resuming what is complete), writes their summaries and
runs to benchmarks/results/fidelity.json as the other experiment benchmarks do, and adds
`capacity`: per family and k, the runs' fidelity per size and the largest size with every run
faithful (None when even the smallest was not). The README's scaling notes quote it.

`--before FILE` keeps, beside this checkout's ladder, another checkout's (its fidelity.json,
written by its own benchmarks/fidelity.py on this machine: issue 68's before and after) under
`before`, with the commit it names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import HERE, main  # noqa: E402

FILES = {"causal": "experiments/dilation/scaling-causal.yaml", "abc": "experiments/dilation/scaling-abc.yaml"}
#: how each family names a run's size: a grid column, or the scenario's label mapped to a number
SIZES = {"causal": lambda run: run.get("members"),
         "abc": lambda run: {"t21": 21, "t52": 52, "t105": 105, "t186": 186}.get(run.get("scenario"))}
RESULTS = "fidelity.json"


def capacity(runs: List[Dict], size_of) -> Dict[str, Dict[str, object]]:
    """Per k: the runs' fidelity verdicts per size, and the largest size below which every size
    had every run faithful (a size with a run that was not stops the ladder)."""
    by_k: Dict[str, Dict[float, List[str]]] = {}
    for run in runs:
        size = size_of(run)
        if size is None or run.get("k") is None:
            continue
        by_k.setdefault(f"{float(run['k']):g}", {}).setdefault(float(size), []).append(run.get("fidelity") or "unknown")
    out: Dict[str, Dict[str, object]] = {}
    for k, sizes in sorted(by_k.items(), key=lambda kv: float(kv[0])):
        largest: Optional[float] = None
        for size in sorted(sizes):
            if all(v == "faithful" for v in sizes[size]):
                largest = size
            else:
                break
        out[k] = {"largest_faithful": None if largest is None else int(largest),
                  "runs": {f"{s:g}": sorted(v) for s, v in sorted(sizes.items())}}
    return out


def _before(argv: List[str]) -> Tuple[Optional[str], List[str]]:
    """(--before's file, the other arguments)."""
    if "--before" not in argv:
        return None, argv
    at = argv.index("--before")
    if at + 1 >= len(argv):
        sys.exit("fidelity.py: --before needs a file (another checkout's benchmarks/results/fidelity.json)")
    return argv[at + 1], argv[:at] + argv[at + 2:]


def _commit(directory: str) -> Optional[str]:
    """The commit checked out where `directory` is (None outside a git checkout)."""
    return subprocess.run(["git", "-C", directory, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or None


if __name__ == "__main__":
    before, argv = _before(sys.argv[1:])
    code = main(__doc__.split("\n\n")[0], FILES, "scaling", RESULTS, "all", argv)
    path = os.path.join(HERE, "results", RESULTS)
    with open(path) as fh:
        result = json.load(fh)
    for family, entry in result["experiments"].items():
        entry["capacity"] = capacity(entry["runs"], SIZES[family])
        for k, c in entry["capacity"].items():
            print(f"{family} at k = {k}: largest faithful size {c['largest_faithful']} ({c['runs']})")
    if before is not None:
        with open(before) as fh:
            other = json.load(fh)
        commit = other.get("commit") or _commit(os.path.dirname(os.path.abspath(before)))
        result["before"] = {"commit": commit, "file": before,
                            "capacity": {family: entry.get("capacity") for family, entry in other["experiments"].items()}}
        for family, capacity in result["before"]["capacity"].items():
            for k, c in (capacity or {}).items():
                print(f"before: {family} at k = {k}: largest faithful size {c['largest_faithful']} ({c['runs']})")
    result["commit"] = _commit(HERE)
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1)
    sys.exit(code)
