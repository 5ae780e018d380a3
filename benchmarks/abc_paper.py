"""The AbC paper's experiments (section 4, Figures 1-7) at paper scale: the experiment files
experiments/abc/dp.yaml (data providers: T[3,5,5] with 15 and with 10 senders, R[31,5],
C[31,155]) and ci.yaml (communication intensive: C[10,155], C[31,155], R[5,31], R[31,5],
T[5,2,5], T[3,5,5]), 155 components and 186 containers each, 2000 time units of 100 ms, 3 seeds.

    python benchmarks/abc_paper.py [--set dp|ci|ring-time-unit|all] [--seeds N] [--no-run]

Runs `testbed experiment` on each file (resuming what is complete: about 6 minutes a run on 2
cores, 12 runs for dp, 18 for ci; ring-time-unit, the data-provider ring at 100 and 200 ms a
time unit, 4 runs of 5 and 9 minutes), then writes benchmarks/results/abc_paper.json: per experiment,
per point and measure the mean, the 95% confidence interval over seeds and the paper's value, the
expected shapes' verdicts (tree < ring < cluster; within a factor 1.5 of the paper), and per run
its measures. `--no-run` only gathers what the experiment directories hold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from typing import Dict, List

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FILES = {"dp": "experiments/abc/dp.yaml", "ci": "experiments/abc/ci.yaml",
         "ring-time-unit": "experiments/abc/ring-time-unit.yaml"}


def _clean(v):
    return None if isinstance(v, float) and v != v else v


def gather(out_dir: str) -> Dict[str, object]:
    summary = pd.read_csv(os.path.join(out_dir, "summary.csv"))
    points: Dict[str, Dict[str, object]] = {}
    for row in summary.to_dict("records"):
        points.setdefault(row["point"], {})[row["measure"]] = {
            k: _clean(row[k]) for k in ("n", "mean", "sd", "ci95_low", "ci95_high", "reference_low", "reference_high",
                                        "ratio_to_reference")}
    runs = [{k: _clean(v) for k, v in r.items()} for r in pd.read_csv(os.path.join(out_dir, "runs.csv")).to_dict("records")]
    with open(os.path.join(out_dir, "shapes.json")) as fh:
        shapes = json.load(fh)
    return {"directory": os.path.relpath(out_dir, ROOT), "points": points,
            "shapes": [{k: s[k] for k in ("name", "verdict", "groups")} for s in shapes], "runs": runs}


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=[*FILES, "all"], default="dp")
    parser.add_argument("--seeds", type=int, help="seeds per point (default: the files', 3)")
    parser.add_argument("--no-run", action="store_true", help="gather what the experiment directories hold")
    args = parser.parse_args(argv)
    names = list(FILES) if args.set == "all" else [args.set]
    path = os.path.join(HERE, "results", "abc_paper.json")
    kept = {}
    if os.path.exists(path):  # the other set's results stay
        with open(path) as fh:
            kept = json.load(fh).get("experiments") or {}
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "experiments": kept}
    for name in names:
        out = os.path.join(ROOT, "runs", "experiments", f"abc-{name}")
        argv = [sys.executable, "-m", "testbed", "experiment", os.path.join(ROOT, FILES[name]), "--out", out]
        if args.seeds:
            argv += ["--seeds", str(args.seeds)]
        if args.no_run:
            argv += ["--no-run"]
        subprocess.run(argv, check=True, cwd=ROOT)
        result["experiments"][name] = gather(out)
        for s in result["experiments"][name]["shapes"]:
            print(f"{name}: {s['verdict']:<8} {s['name']}")
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
