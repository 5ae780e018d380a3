"""How large a system this machine emulates faithfully, undilated and dilated (issue 29): the
causal cluster of 25 to 125 members (experiments/dilation/scaling-causal.yaml) and AbC trees of
21 to 186 containers (scaling-abc.yaml) at time dilation 1, 2 and 4, 3 seeds each; for each
family and k, the largest size whose runs the fidelity monitor called faithful, every seed.

    python benchmarks/fidelity.py [--set causal|abc|all] [--seeds N] [--no-run] [--before FILE|REV]
    python benchmarks/fidelity.py --spot REF --only PATTERN [--only ...] [--seeds N]
    python benchmarks/fidelity.py --markdown

Runs `testbed experiment` on the files (resuming what is complete), writes their summaries and
runs to benchmarks/results/fidelity.json as the other experiment benchmarks do, and adds
`capacity`: per family and k, the runs' fidelity per size and the largest size with every run
faithful (None when even the smallest was not). The README's scaling notes quote it.

`--before FILE|REV` keeps, beside this checkout's ladder, another one (another checkout's
fidelity.json, written by its own benchmarks/fidelity.py on this machine, or the file as a commit
of this repository holds it: issue 68's before and after) under `before`, with the commit it
names, each point's measures and its runs' verdicts. A ladder climbed in another sitting may not
hold today (the runner and the machine move too): `--spot REF` makes the points matching the
patterns again, in this sitting, with this checkout's runner and the agent of commit REF (built
as agent_cost.py's baseline), and keeps their verdicts and measures under `spot`. `--markdown`
prints the results file's ladders side by side and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiment_sets import HERE, main  # noqa: E402
from revision import commit  # noqa: E402

FILES = {"causal": "experiments/dilation/scaling-causal.yaml", "abc": "experiments/dilation/scaling-abc.yaml"}
#: how each family names a run's size: a grid column, or the scenario's label mapped to a number
ABC_SIZES = {"t21": 21, "t52": 52, "t105": 105, "t186": 186}
SIZES = {"causal": lambda run: run.get("members"), "abc": lambda run: ABC_SIZES.get(run.get("scenario"))}
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
        print("fidelity.py: --before needs a file (another checkout's benchmarks/results/fidelity.json) "
              "or a revision", file=sys.stderr)
        sys.exit(2)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def _read_before(before: str) -> Tuple[Dict, Optional[str]]:
    """The other ladder and its commit: a file (another checkout's results; its commit is the one it
    names, or that checkout's HEAD), or a revision of this repository whose committed results file
    it is (the ladder as it stood at that commit)."""
    if os.path.exists(before):
        with open(before) as fh:
            other = json.load(fh)
        return other, other.get("commit") or commit(os.path.dirname(os.path.abspath(before)))
    shown = subprocess.run(["git", "-C", HERE, "show", f"{before}:benchmarks/results/{RESULTS}"],
                           capture_output=True, text=True)
    if shown.returncode != 0:
        print(f"fidelity.py: --before {before}: neither a file nor a revision holding "
              f"benchmarks/results/{RESULTS} ({shown.stderr.strip()})", file=sys.stderr)
        sys.exit(2)
    return json.loads(shown.stdout), commit(HERE, before)


#: per family, the measures the ladder's table shows beside the verdicts: (key, label, format)
SHOWN = {"causal": [("late_share", "late", "%"), ("loop_lag_ms", "lag p99 (ms)", ".3g")],
         "abc": [("late_share", "late", "%"), ("loop_lag_ms", "lag p99 (ms)", ".3g"),
                 ("server_rate", "servers' rate (λt = 15)", ".2f")]}
LABELS = {"causal": "causal cluster, every member updating (members)", "abc": "AbC CI tree (containers)"}


def _verdicts(runs: List[str]) -> str:
    """'3/3 faithful', or the counts of each verdict."""
    counts = {v: runs.count(v) for v in sorted(set(runs))}
    if list(counts) == ["faithful"]:
        return f"{len(runs)}/{len(runs)} faithful"
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def _measure(point: Optional[Dict], key: str, spec: str) -> str:
    m = (point or {}).get(key)
    if not m or m.get("mean") is None:
        return "-"
    if spec == "%":
        half = "" if m.get("ci95_high") is None else f" ± {(m['ci95_high'] - m['mean']):.2%}"
        return f"{m['mean']:.2%}{half}"
    half = "" if m.get("ci95_high") is None else f" ± {format(m['ci95_high'] - m['mean'], spec)}"
    return f"{format(m['mean'], spec)}{half}"


def markdown(result: Dict) -> str:
    """The ladder as Markdown: per family and k the largest faithful size of each ladder the file
    holds (the other one under `before`, this checkout's, and between them the points `--spot`
    made again with the other agent in this checkout's sitting, by sizes re-run), then per point
    each side's verdicts and measures (mean ± the half-width of the 95% interval)."""
    before, spotted = result.get("before") or {}, result.get("spot") or {}
    sides = []  # (name, {family: ladder}, {family: points}, partial)
    if before:
        sides.append((f"before ({before.get('commit')}, as stored)", before.get("capacity") or {},
                      before.get("points") or {}, False))
    if spotted.get("runs"):
        sides.append((f"before's agent ({spotted.get('ref')}) today", *_spot_ladders(spotted["runs"]), True))
    sides.append(((f"after ({result.get('commit')})" if len(sides) else f"this checkout ({result.get('commit')})"),
                  {f: e.get("capacity") or {} for f, e in result["experiments"].items()},
                  {f: e.get("points") or {} for f, e in result["experiments"].items()}, False))
    head = ["| family | k | " + " | ".join(f"largest faithful, {name}" if not partial else f"{name}: points re-run"
                                            for name, _, _, partial in sides) + " |",
            "|---|---|" + "---|" * len(sides)]
    detail = []
    for family in FILES:
        if family not in result["experiments"]:
            continue
        ladders = [ladder.get(family) or {} for _, ladder, _, _ in sides]
        ks = sorted({k for ladder in ladders for k in ladder}, key=float)
        for k in ks:
            cells = []
            for (_, _, _, partial), ladder in zip(sides, ladders):
                c = ladder.get(k)
                if c is None:
                    cells.append("not run")
                elif partial:
                    cells.append("; ".join(f"{size}: {_verdicts(runs)}" for size, runs in c["runs"].items()))
                else:
                    cell = str(c["largest_faithful"]) if c["largest_faithful"] else "none"
                    tried = {size for other in ladder.values() for size in other["runs"]}
                    if set(c["runs"]) != tried:  # a slice: say which sizes it stands on
                        cell += f" (only {', '.join(sorted(c['runs'], key=float))} run)"
                    cells.append(cell)
            head.append(f"| {LABELS[family]} | {k} | " + " | ".join(cells) + " |")
        shown = SHOWN[family]
        detail += ["", f"{LABELS[family]}:", "",
                   "| size | k | " + " | ".join(f"{name.split(' (')[0]}: {what}" for name, _, _, _ in sides
                                               for what in ["runs"] + [label for _, label, _ in shown]) + " |",
                   "|---|---|" + "---|" * (len(sides) * (1 + len(shown)))]
        sizes = sorted({float(s) for ladder in ladders for c in ladder.values() for s in c["runs"]})
        for size in sizes:
            for k in ks:
                row = []
                for (_, _, points, _), ladder in zip(sides, ladders):
                    runs = (ladder.get(k) or {}).get("runs", {}).get(f"{size:g}")
                    point = (points.get(family) or {}).get(_point_id(family, size, k))
                    row += [_verdicts(runs) if runs else "not run"] + [_measure(point, key, spec) if runs else "-"
                                                                        for key, _, spec in shown]
                if any(cell != "not run" for cell in row[::1 + len(shown)]):
                    detail.append(f"| {size:g} | {k} | " + " | ".join(row) + " |")
    return "\n".join(head + detail)


def _point_id(family: str, size: float, k: str) -> str:
    """The experiment's name of `family`'s point at `size` and `k` (causal.members=25.k=1, t21.k=1)."""
    if family == "causal":
        return f"causal.members={size:g}.k={float(k):g}"
    return f"{ {v: name for name, v in ABC_SIZES.items()}.get(int(size), '?')}.k={float(k):g}"


def _spot_ladders(rows: List[Dict]) -> Tuple[Dict, Dict]:
    """The spot runs as ladders ({family: capacity}, the sizes re-run only) and points ({family:
    {point: {measure: mean and interval}}})."""
    from testbed.experiment.stats import mean_interval

    ladders, points = {}, {}
    for family in FILES:
        mine = [dict(r, **_size_k(family, r["point"])) for r in rows if r["family"] == family]
        if not mine:
            continue
        ladders[family] = capacity(mine, lambda r: r["size"])
        for point in sorted({r["point"] for r in mine}):
            values = [r for r in mine if r["point"] == point]
            measures = {}
            for key, _, _ in SHOWN[family]:
                mean, low, high = mean_interval([r[key] for r in values if r.get(key) is not None])
                measures[key] = {"n": len(values), "mean": mean, "ci95_low": low, "ci95_high": high}
            points.setdefault(family, {})[point] = measures
    return ladders, points


def _size_k(family: str, point: str) -> Dict[str, float]:
    """A point name's size and k (causal.members=100.k=1 → 100, 1; t21.k=2 → 21, 2)."""
    head, k = point.rsplit(".k=", 1)
    size = head.split("members=")[1] if family == "causal" else ABC_SIZES[head]
    return {"size": float(size), "k": float(k)}


def spot(ref: str, patterns: List[str], seeds: List[int]) -> int:
    """The ladder's points matching `patterns`, made again by this checkout's runner with the agent
    of commit `ref` (built from `git archive`, as agent_cost.py's baseline): whether another
    sitting's ladder still holds on this machine today. Kept under `spot` in the results file."""
    import fnmatch

    from agent_cost import baseline_variant
    from testbed import api
    from testbed.experiment.measures import lookup, number
    from testbed.experiment.spec import load_experiment
    from testbed.images import AGENT_IMAGE
    from testbed.scenario import load_scenario

    root = os.path.dirname(HERE)
    chosen = [(family, exp, point) for family, exp in
              ((family, load_experiment(os.path.join(root, file))) for family, file in FILES.items())
              for point in exp.points if any(fnmatch.fnmatchcase(point.id, pattern) for pattern in patterns)]
    if not chosen:
        print(f"fidelity.py: --spot: no point of {', '.join(FILES.values())} matches "
              f"{' or '.join(patterns)} (points are named as causal.members=100.k=1, t21.k=1)", file=sys.stderr)
        return 2
    variant = baseline_variant(ref)
    path = os.path.join(HERE, "results", RESULTS)
    with open(path) as fh:
        result = json.load(fh)
    kept = result.setdefault("spot", {"ref": variant.ref, "image": variant.image, "runs": []})
    if kept.get("ref") != variant.ref:
        kept.update(ref=variant.ref, image=variant.image, runs=[])
    spark = None
    for family, exp, point in chosen:
        for seed in seeds:
            scenario = load_scenario(point.scenario.file, seed=seed, overrides=point.overrides)
            for node in scenario.topology.nodes.values():
                if node.image == AGENT_IMAGE:
                    node.image = variant.image
            out = os.path.join(root, "runs", "experiments", f"scaling-spot-{variant.ref}", f"{point.id}-s{seed}")
            if os.path.exists(out):
                shutil.rmtree(out)
            outcome = api.run(scenario, out=out)
            if spark is None:
                from spark_analysis.session import spark_session
                spark = spark_session()
            res = next(iter(api.analyze([outcome.dir], spark=spark).values()))
            row = {"family": family, "point": point.id, "seed": seed, "run": os.path.relpath(out, root),
                   "status": outcome.status, "fidelity": (res.get("fidelity") or {}).get("verdict", "unknown"),
                   **{m.name: number(lookup(res, m.path)) for m in exp.measures}}
            print(f"spot {ref}: {point.id} s{seed}: {row['fidelity']} "
                  + ", ".join(f"{m.name} {row[m.name]}" for m in exp.measures), flush=True)
            kept["runs"] = [r for r in kept["runs"] if (r["point"], r["seed"]) != (point.id, seed)] + [row]
            with open(path, "w") as fh:
                json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    if "--spot" in sys.argv[1:]:
        spot_parser = argparse.ArgumentParser(description=spot.__doc__)
        spot_parser.add_argument("--spot", metavar="REF", required=True, help="the commit whose agent runs")
        spot_parser.add_argument("--only", action="append", required=True, metavar="PATTERN",
                                 help="the points to make again (shell patterns of the points' names; repeatable)")
        spot_parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
        spot_args = spot_parser.parse_args()
        sys.exit(spot(spot_args.spot, spot_args.only, list(range(1, spot_args.seeds + 1))))
    if "--markdown" in sys.argv[1:]:
        with open(os.path.join(HERE, "results", RESULTS)) as fh:
            print(markdown(json.load(fh)))
        sys.exit(0)
    before, argv = _before(sys.argv[1:])
    other = _read_before(before) if before is not None else None  # a bad --before stops before any run
    path = os.path.join(HERE, "results", RESULTS)
    kept = {}  # the other ladders stay until replaced: main() writes the experiments alone
    if os.path.exists(path):
        with open(path) as fh:
            kept = {key: value for key, value in json.load(fh).items() if key in ("before", "spot")}
    code = main(__doc__.split("\n\n")[0], FILES, "scaling", RESULTS, "all", argv)
    with open(path) as fh:
        result = {**kept, **json.load(fh)}
    for family, entry in result["experiments"].items():
        entry["capacity"] = capacity(entry["runs"], SIZES[family])
        for k, c in entry["capacity"].items():
            print(f"{family} at k = {k}: largest faithful size {c['largest_faithful']} ({c['runs']})")
    if other is not None:
        ladders, other_commit = other
        result["before"] = {"commit": other_commit, "file": before,
                            "capacity": {f: entry.get("capacity") for f, entry in ladders["experiments"].items()},
                            "points": {f: entry.get("points") for f, entry in ladders["experiments"].items()}}
        for family, ladder in result["before"]["capacity"].items():
            for k, c in (ladder or {}).items():
                print(f"before: {family} at k = {k}: largest faithful size {c['largest_faithful']} ({c['runs']})")
    result["commit"] = commit(HERE)
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1)
    sys.exit(code)
