"""What the paper-scale benchmark scripts share (benchmarks/abc_paper.py, deeco_thesis.py): run
`testbed experiment` on each experiment file of a set (resuming what is complete), gather each
experiment directory's summary, runs and shape verdicts, and write them to one JSON file under
benchmarks/results/ whose other sets' results stay.

A set too long for one sitting (or one machine) is run in slices, `--seeds 2,3` and `--only
PATTERN` being passed to `testbed experiment`, and `--add` pools each slice's runs with those the
results file holds for the set: the runs are the record, so the summary and the verdicts are
computed again over all of them (rejudge); each run's row names the code that made it (`code`)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _clean(v):
    return None if isinstance(v, float) and v != v else v


def gather(out_dir: str, file: Optional[str] = None) -> Dict[str, object]:
    """An experiment directory's figures: per point and measure the mean, its 95% interval over
    seeds and the reference; the shapes' verdicts with the intervals they rest on; per run its
    measures; the mean curves over time (at most 60 points each); and the experiment file, so
    that the verdicts can be judged again from the runs (rejudge)."""
    summary = pd.read_csv(os.path.join(out_dir, "summary.csv"))
    points: Dict[str, Dict[str, object]] = {}
    for row in summary.to_dict("records"):
        points.setdefault(row["point"], {})[row["measure"]] = {
            k: _clean(row[k]) for k in ("n", "mean", "sd", "ci95_low", "ci95_high", "reference_low", "reference_high",
                                        "ratio_to_reference")}
    runs = [{k: _clean(v) for k, v in r.items()} for r in pd.read_csv(os.path.join(out_dir, "runs.csv")).to_dict("records")]
    with open(os.path.join(out_dir, "shapes.json")) as fh:
        shapes = json.load(fh)
    curves: Dict[str, Dict[str, List]] = {}
    path = os.path.join(out_dir, "over_time.json")
    if os.path.isfile(path):
        with open(path) as fh:
            for measure, per_point in json.load(fh).items():
                curves[measure] = {pid: _thin(curve) for pid, curve in per_point.items()}
    out: Dict[str, object] = {"directory": os.path.relpath(out_dir, ROOT), "points": points,
                              "shapes": [_shape(s) for s in shapes], "runs": runs, "over_time": curves}
    if file:
        out["file"] = file
        out["file_sha256"] = file_digest(file)
    return out


def file_digest(file: str) -> Optional[str]:
    """The experiment file's content digest (relative paths from the repository's root), which
    --add compares so that runs of an edited file are never pooled with the old file's."""
    from testbed.experiment.fingerprint import file_sha256

    return file_sha256(os.path.join(ROOT, file))


def merge(old: Dict, new: Dict, file: str) -> Dict:
    """A set's results pooled over slices (--add): the stored entry's runs and the new ones (a run
    made again replaces the stored one of the same name), summarised and judged again together
    (rejudge). A point's curve over time is the mean of both weighted by their runs where both
    are on the same time points, else the one from more runs (approximate where a run was made
    again: its old curve stays inside the stored mean, only its weight leaves); `directories`
    lists where the runs were made."""
    if old.get("file") and old["file"] != file:
        raise SystemExit(f"--add: the stored results come from {old['file']}, not {file}")
    if old.get("file_sha256") != new.get("file_sha256", file_digest(file)):
        raise SystemExit(f"--add: the stored results were made from another version of {file} (or do not record "
                         f"which): run this slice without --add, so that it replaces them")
    runs = {r["run"]: r for r in old.get("runs") or []}
    fresh = {r["run"]: r for r in new.get("runs") or []}
    count_old = Counter(r.get("point") for name, r in runs.items() if name not in fresh)
    count_new = Counter(r.get("point") for r in fresh.values())
    runs.update(fresh)
    curves: Dict[str, Dict[str, List]] = {}
    for measure in sorted(set(old.get("over_time") or {}) | set(new.get("over_time") or {})):
        a, b = (old.get("over_time") or {}).get(measure) or {}, (new.get("over_time") or {}).get(measure) or {}
        curves[measure] = {}
        for point in sorted(set(a) | set(b)):
            na, nb = count_old.get(point, 0) if point in a else 0, count_new.get(point, 0) if point in b else 0
            if na and nb and [t for t, _ in a[point]] == [t for t, _ in b[point]]:
                curves[measure][point] = [[t, _weighted(u, na, v, nb)] for (t, u), (_, v) in zip(a[point], b[point])]
            else:
                curves[measure][point] = b[point] if nb >= na and point in b else a[point]
    directories = list(old.get("directories") or ([old["directory"]] if old.get("directory") else []))
    if new.get("directory") not in directories:
        directories.append(new["directory"])
    entry = dict(new, runs=list(runs.values()), over_time=curves, directories=directories)
    return rejudge(entry, file)


def _weighted(u, nu: int, v, nv: int):
    if u is None or v is None:
        return v if u is None else u
    return (u * nu + v * nv) / (nu + nv)


def _shape(s: Dict) -> Dict:
    keep = ("name", "kind", "verdict", "reason", "means_only", "judge", "groups", "judged", "fidelity")
    return {k: s[k] for k in keep if k in s}


def _thin(curve: List, most: int = 60) -> List:
    if len(curve) <= most:
        return curve
    step = (len(curve) - 1) / (most - 1)
    return [curve[round(i * step)] for i in range(most)]


def rejudge(entry: Dict, file: str) -> Dict:
    """An experiment's summary and verdicts computed again from its stored runs with this
    checkout's statistics and shapes (the runs themselves are not touched): what `testbed
    experiment --no-run` would print from the same runs."""
    sys.path.insert(0, ROOT)
    from testbed.experiment.results import finite, judge, summarise
    from testbed.experiment.spec import load_experiment

    exp = load_experiment(os.path.join(ROOT, file), check_points=False)
    known = {p.id for p in exp.points}
    rows = [r for r in entry["runs"] if r.get("point") in known]
    points: Dict[str, Dict[str, object]] = {}
    for row in summarise(exp, rows):
        if row["n"]:
            points.setdefault(row["point"], {})[row["measure"]] = {
                k: _clean(row[k]) for k in ("n", "mean", "sd", "ci95_low", "ci95_high", "reference_low",
                                            "reference_high", "ratio_to_reference")}
    shapes = finite(judge(exp, rows))
    return dict(entry, file=file, points=points, shapes=[_shape(s) for s in shapes])


def main(description: str, files: Dict[str, Union[str, Tuple[str, Sequence[str]]]], prefix: str, results: str,
         default: str, argv: Optional[List[str]] = None) -> int:
    """The command line of a benchmark script: --set NAME|all, --seeds N|S,S,..., --only PATTERN, --add,
    --no-run, --accept-code-changes, --rejudge. `files` maps a set name to its experiment file
    (relative to the repository), or to the file and further `testbed experiment` arguments (a set
    that runs a file's scenarios with an override, say), `prefix` names the experiment directories
    (runs/experiments/<prefix>-<name>), `results` the JSON file's name. After an interrupted slice,
    `--no-run --add` pools the runs it completed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--set", choices=[*files, "all"], default=default)
    parser.add_argument("--seeds", metavar="N|S,S,...",
                        help="seeds 1..N per point, or a list of seeds (2,3; 3, for seed 3 alone: a bare 3 is "
                             "seeds 1 to 3) (default: the files')")
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN",
                        help="only the points whose names match (testbed experiment --only; repeatable)")
    parser.add_argument("--add", action="store_true",
                        help="pool the runs with those the results file holds for the set (a slice run in another "
                             "sitting), judging them again together, instead of replacing them")
    parser.add_argument("--no-run", action="store_true", help="gather what the experiment directories hold")
    parser.add_argument("--accept-code-changes", action="store_true",
                        help="keep complete runs made by other code (testbed experiment's flag): for a set "
                             "run across several code versions, or gathered with --no-run after the code moved")
    parser.add_argument("--rejudge", action="store_true",
                        help="judge the stored runs of every set in the results file again (no runs, no Spark)")
    args = parser.parse_args(argv)
    if args.only and args.set == "all":
        parser.error("--only names points of one set: give --set NAME")
    names = list(files) if args.set == "all" else [args.set]
    path = os.path.join(HERE, "results", results)
    kept = {}
    if os.path.exists(path):  # the other sets' results stay
        with open(path) as fh:
            kept = json.load(fh).get("experiments") or {}
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "experiments": kept}
    if args.rejudge:
        for name, entry in kept.items():
            file = entry.get("file") or (files[name] if isinstance(files.get(name), str) else files[name][0])
            kept[name] = rejudge(entry, file)
            for s in kept[name]["shapes"]:
                print(f"{name}: {s['verdict'] + (' (' + s['reason'] + ')' if s.get('reason') else ''):<40} {s['name']}")
        with open(path, "w") as fh:
            json.dump(result, fh, indent=1)
        print(f"wrote {path}")
        return 0
    for name in names:
        out = os.path.join(ROOT, "runs", "experiments", f"{prefix}-{name}")
        file, extra = (files[name], ()) if isinstance(files[name], str) else files[name]
        command = [sys.executable, "-m", "testbed", "experiment", os.path.join(ROOT, file), "--out", out, *extra]
        if args.seeds:
            command += ["--seeds", args.seeds]
        for pattern in args.only:
            command += ["--only", pattern]
        if args.no_run:
            command += ["--no-run"]
        if args.accept_code_changes:
            command += ["--accept-code-changes"]
        code = subprocess.run(command, cwd=ROOT).returncode
        if code != 0:  # testbed experiment has said why (an interruption, a bad file, a failed run)
            print(f"{name}: testbed experiment ended with exit code {code}; the results file is unchanged "
                  "for this set", file=sys.stderr)
            return code
        gathered = gather(out, file)
        result["experiments"][name] = merge(kept[name], gathered, file) if args.add and name in kept else gathered
        for s in result["experiments"][name]["shapes"]:
            print(f"{name}: {s['verdict']:<8} {s['name']}")
        with open(path, "w") as fh:  # after every set: a long run interrupted keeps what is done
            json.dump(result, fh, indent=1)
    print(f"wrote {path}")
    return 0
