"""What the paper-scale benchmark scripts share (benchmarks/abc_paper.py, deeco_thesis.py): run
`testbed experiment` on each experiment file of a set (resuming what is complete), gather each
experiment directory's summary, runs and shape verdicts, and write them to one JSON file under
benchmarks/results/ whose other sets' results stay."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _clean(v):
    return None if isinstance(v, float) and v != v else v


def gather(out_dir: str) -> Dict[str, object]:
    """An experiment directory's figures: per point and measure the mean, its 95% interval over
    seeds and the reference; the shapes' verdicts; per run its measures."""
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


def main(description: str, files: Dict[str, Union[str, Tuple[str, Sequence[str]]]], prefix: str, results: str,
         default: str, argv: Optional[List[str]] = None) -> int:
    """The command line of a benchmark script: --set NAME|all, --seeds N, --no-run. `files` maps a
    set name to its experiment file (relative to the repository), or to the file and further
    `testbed experiment` arguments (a set that runs a file's scenarios with an override, say),
    `prefix` names the experiment directories (runs/experiments/<prefix>-<name>), `results` the
    JSON file's name."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--set", choices=[*files, "all"], default=default)
    parser.add_argument("--seeds", type=int, help="seeds per point (default: the files')")
    parser.add_argument("--no-run", action="store_true", help="gather what the experiment directories hold")
    args = parser.parse_args(argv)
    names = list(files) if args.set == "all" else [args.set]
    path = os.path.join(HERE, "results", results)
    kept = {}
    if os.path.exists(path):  # the other sets' results stay
        with open(path) as fh:
            kept = json.load(fh).get("experiments") or {}
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "experiments": kept}
    for name in names:
        out = os.path.join(ROOT, "runs", "experiments", f"{prefix}-{name}")
        file, extra = (files[name], ()) if isinstance(files[name], str) else files[name]
        command = [sys.executable, "-m", "testbed", "experiment", os.path.join(ROOT, file), "--out", out, *extra]
        if args.seeds:
            command += ["--seeds", str(args.seeds)]
        if args.no_run:
            command += ["--no-run"]
        subprocess.run(command, check=True, cwd=ROOT)
        result["experiments"][name] = gather(out)
        for s in result["experiments"][name]["shapes"]:
            print(f"{name}: {s['verdict']:<8} {s['name']}")
        with open(path, "w") as fh:  # after every set: a long run interrupted keeps what is done
            json.dump(result, fh, indent=1)
    print(f"wrote {path}")
    return 0
