#!/usr/bin/env python3
"""Issue 68's check that no result moves: one paper point per family run again with this checkout's
agent undilated (k = 1), against its stored value (the experiment sets' results files, measured
with the agent of then, at the set's own dilation). Each point's new runs are a slice of its
experiment in a directory of their own:

    testbed experiment experiments/causal/fig4.yaml --out runs/experiments/k1-causal-fig4 \\
        --only all.members=125 --set time_dilation=1 --seeds 3
    testbed experiment experiments/abc/ci-faithful.yaml --out runs/experiments/k1-abc-ci \\
        --only tree-3-5-5 --set time_dilation=1 --seeds 3 --accept-unfaithful
    testbed experiment experiments/deeco/ip-groupers.yaml --out runs/experiments/k1-deeco-ip \\
        --only simple.P=0.5.C=2 --seeds 3

    python benchmarks/k1_points.py      # compares them; writes benchmarks/results/k1_points.json

Per measure: the new mean and 95% interval, the stored ones, whether the new mean lies in the
stored interval and whether the intervals overlap; per point, the new runs' fidelity verdicts.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import HERE, ROOT, gather  # noqa: E402

#: (new experiment directory, stored results file, its experiment key, the point)
POINTS = [
    ("k1-causal-fig4", "causal_paper", "fig4", "all.members=125"),
    ("k1-abc-ci", "abc_paper", "ci-faithful", "tree-3-5-5"),
    ("k1-deeco-ip", "deeco_thesis", "ip-groupers", "simple.P=0.5.C=2"),
]


def compare(directory: str, results: str, key: str, point: str):
    with open(os.path.join(HERE, "results", f"{results}.json")) as fh:
        stored = json.load(fh)["experiments"][key]["points"][point]
    new = gather(os.path.join(ROOT, "runs", "experiments", directory))
    measures = {}
    for name, m in new["points"].get(point, {}).items():
        ref = stored.get(name)
        if not m["n"] or not isinstance(ref, dict) or ref.get("mean") is None:
            continue
        mean, low, high = m["mean"], m["ci95_low"], m["ci95_high"]
        measures[name] = {
            "new": {"n": int(m["n"]), "mean": mean, "ci95": [low, high]},
            "stored": {"n": ref["n"], "mean": ref["mean"], "ci95": [ref["ci95_low"], ref["ci95_high"]]},
            "new_mean_in_stored_interval": ref["ci95_low"] <= mean <= ref["ci95_high"],
            "intervals_overlap": low is not None and not (high < ref["ci95_low"] or low > ref["ci95_high"]),
        }
    return {"experiment": directory, "stored": f"{results}.json {key}", "point": point,
            "fidelity": [r["fidelity"] for r in new["runs"] if r.get("point") == point], "measures": measures}


def main() -> int:
    out = [compare(*p) for p in POINTS if os.path.isdir(os.path.join(ROOT, "runs", "experiments", p[0]))]
    for entry in out:
        print(f"{entry['stored']} {entry['point']} at k = 1: fidelity {entry['fidelity']}")
        for name, m in entry["measures"].items():
            new, old = m["new"], m["stored"]
            print(f"  {name:20} {new['mean']:.4g} [{new['ci95'][0]:.4g}, {new['ci95'][1]:.4g}] against "
                  f"{old['mean']:.4g} [{old['ci95'][0]:.4g}, {old['ci95'][1]:.4g}]"
                  f"{'' if m['new_mean_in_stored_interval'] else '  outside' if not m['intervals_overlap'] else '  overlapping'}")
    path = os.path.join(HERE, "results", "k1_points.json")
    with open(path, "w") as fh:
        json.dump({"points": out}, fh, indent=2)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
