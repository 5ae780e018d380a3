"""The time an AbC ring or tree takes per hop, measured in the runs' server logs, beside the same
time in the authors' model (benchmarks/abc_model.py, `hop_time`): what turns "the machine adds a
cost on every hop" from a fit into a measurement.

    python benchmarks/abc_hops.py [EXPERIMENT_DIR ...]   # default: runs/experiments/abc-dp-dilation

A hop: from a data message's first arrival at a server (its `receive` event, from a component or
another server) to the arrival of its copy from that server at another server (the other's
`receive` event whose `sender` is the first). It holds the handling, the wait for the smaller ids
(rule Snd), the output queue behind the server's other copies, and the transmission; the model's
`hop_time` is the same interval between its servers' input queues. The logs stamp the wall clock;
a hop is turned into the agents' virtual time (divided by the run's time dilation, agents/clock.py)
and into the components' time units (`time_unit_ms`).

Per run: the hops counted and their mean; per point of an experiment (its runs.csv), the mean over
seeds with its 95% interval (Student's t). Writes benchmarks/results/abc_hops.json, keeping the
experiments it did not read this time; docs/REPRODUCTION.md's block `abc/hops` is generated from
it (benchmarks/reproduction.py). The runs' directories are needed (they are not kept in the
repository): read them in the sitting that made them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Dict, Iterable, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "abc_hops.json")
DEFAULT = [os.path.join(ROOT, "runs", "experiments", "abc-dp-dilation")]
SERVER_ROLES = ("abc-ring-server", "abc-tree-server")

sys.path.insert(0, HERE)
from abc_model import interval  # noqa: E402


def hops(logs: Dict[str, Iterable[str]]) -> List[int]:
    """Every hop's time in ns, from the servers' event logs ({server: lines of its JSONL log})."""
    first: Dict[Tuple[str, str, int], int] = {}
    copies: List[Tuple[str, str, int, int]] = []   # (sender, origin, seq, arrival)
    for server, lines in logs.items():
        for line in lines:
            if '"receive"' not in line or '"ABC_DATA"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed agent
            if e.get("event") != "receive" or e.get("type") != "ABC_DATA":
                continue
            key = (server, e["origin"], int(e["seq"]))
            t = int(e["t"])
            if key not in first or t < first[key]:
                first[key] = t
            if e.get("sender") in logs:
                copies.append((e["sender"], e["origin"], int(e["seq"]), t))
    return [t - first[(sender, origin, seq)] for sender, origin, seq, t in copies
            if (sender, origin, seq) in first]


def run_hops(run_dir: str) -> Optional[Dict[str, float]]:
    """One run's hops: their count and mean (ms, and time units); None for a run without ring or
    tree servers."""
    with open(os.path.join(run_dir, "manifest.json")) as f:
        manifest = json.load(f)
    nodes = manifest["topology"]["nodes"]
    servers = [n for n, spec in nodes.items() if spec.get("role") in SERVER_ROLES]
    if not servers:
        return None
    units = {spec.get("params", {}).get("time_unit_ms") for n, spec in nodes.items() if n in servers}
    unit = units.pop() if len(units) == 1 else None
    logs = {}
    for n in servers:
        path = os.path.join(run_dir, "logs", f"{n}.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                logs[n] = f.readlines()
    h = hops(logs)
    if not h:
        return {"hops": 0, "mean_ms": None, "mean_time_units": None, "wall_ms": None}
    k = float(manifest.get("time_dilation") or 1.0)
    wall_ms = sum(h) / len(h) / 1e6
    mean_ms = wall_ms / k   # the logs stamp the wall clock; the agents live in 1/k of it
    return {"hops": len(h), "mean_ms": mean_ms, "mean_time_units": mean_ms / unit if unit else None,
            "wall_ms": wall_ms, "time_dilation": k}


def experiment(directory: str) -> Dict[str, object]:
    """Every complete run of an experiment directory (its runs.csv), per point."""
    with open(os.path.join(directory, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    points: Dict[str, Dict[str, object]] = {}
    for row in rows:
        run_dir = os.path.join(directory, "runs", row["run"])
        if not os.path.isdir(run_dir):
            continue
        got = run_hops(run_dir)
        if got is None:
            continue
        p = points.setdefault(row["point"], {"runs": {}})
        p["runs"][row["run"]] = {**got, "seed": int(row["seed"]), "fidelity": row.get("fidelity"),
                                 "run_id": row.get("run_id")}
        print(f"{row['run']:16s} {got['hops']:7d} hops, mean {got['mean_ms'] or float('nan'):.3f} ms", flush=True)
    for p in points.values():
        runs = p["runs"].values()
        p["hop_time"] = interval([r["mean_time_units"] for r in runs])
        p["hop_ms"] = interval([r["mean_ms"] for r in runs])
    return points


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directories", nargs="*", help="experiment directories (default: the DP dilation experiment's)")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    dirs = args.directories or DEFAULT
    missing = [d for d in dirs if not os.path.isfile(os.path.join(d, "runs.csv"))]
    if missing:
        print(f"abc_hops: {', '.join(missing)}: not an experiment directory (no runs.csv); give the directory "
              f"`testbed experiment` made, such as runs/experiments/abc-dp-dilation", file=sys.stderr)
        return 2
    doc = {"about": __doc__.split("\n\n")[0], "experiments": {}}
    if os.path.exists(args.out):
        with open(args.out) as f:
            doc["experiments"] = json.load(f).get("experiments", {})
    for d in dirs:
        name = os.path.basename(os.path.normpath(d))
        # a slice run in another sitting (--only) leaves the other points' runs out of runs.csv: keep theirs
        doc["experiments"][name] = {**doc["experiments"].get(name, {}), **experiment(d)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
