"""How far a DEECo flood can go on the SUMO runs' own positions, against how far it went.

At P = 1 every node that gets a knowledge rebroadcasts it once, so the messages a publication
costs are the nodes its flood reaches. This script replays that flood on each run's recorded
positions (radio/positions.parquet, a snapshot a tick): every node publishes once in each of a
sample of snapshots, and the flood crosses each pair with the probability the segment's loss
model gives (the medium's own delivery function, the per-pair table's `expected`). It prints the
expected receivers of one broadcast and nodes reached by one flood beside the runs' measured
values (receptions per broadcast at P = 0, messages per publication at P = 1), and repeats the
replay with every distance divided by a factor, to find the reach at which floods cost what
Table 5's do (958,077 messages at P = 1 over 36,200 publications at P = 0).

    python benchmarks/deeco_flood.py                      # the sumo-p runs there are
    python benchmarks/deeco_flood.py --runs DIR --every 5

Writes benchmarks/results/deeco_flood.json, keeping the rows it holds for a medium and seed whose
runs the directory no longer has (stored_rows); docs/REPRODUCTION.md's block deeco/sumo-p/flood
is generated from it (benchmarks/reproduction.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

RUNS = os.path.join(ROOT, "runs", "experiments", "deeco-sumo-p", "runs")
SCALES = (1.0, 1.25, 1.5, 1.6, 1.7, 1.8, 2.0)
#: the runs at P = 1 and P = 0 of one medium and seed, simple gossip and the boundary
NAME = re.compile(r"^(?P<medium>\w+)-(?P<scenario>simple|boundary)\.P=(?P<p>1|1\.0|0|0\.0)-s(?P<seed>\d+)$")


def _delivery(manifest: Dict[str, Any]):
    """The run's segment and its delivery function, from the topology file the run names."""
    from testbed.topology import load_topology

    topology = load_topology(manifest["scenario"]["topology"])
    (segment,) = topology.radio.values()
    return segment.delivery


def replay(positions: pd.DataFrame, delivery, boundary_m: Optional[float] = None, scales=SCALES, every: int = 10,
           seed: int = 1) -> List[Dict[str, Any]]:
    """Each scale's expected receivers a broadcast, mean size of a node's component on the pairs
    that deliver at least half the time, and messages a publication costs at P = 1 (the nodes its
    flood reaches, the publisher included), over every `every`-th snapshot with each node
    publishing once; with `boundary_m`, also with the communication boundary (Rule 14: only a node
    within boundary_m of the publisher passes it on: a distance on the ground, whatever the reach)."""
    rng = np.random.default_rng(seed)
    snapshots = sorted(positions["t_s"].unique())[every // 2::every]
    distances = []  # each snapshot's pairwise distances, for every scale
    for t in snapshots:
        xy = positions[positions["t_s"] == t].sort_values("node")[["x", "y"]].to_numpy()
        distances.append(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    out = []
    for scale in scales:
        receivers, components, floods, bounded = [], [], [], []
        for distance in distances:
            n = len(distance)
            p = np.asarray(delivery(distance.ravel() / scale), dtype=float).reshape(n, n)
            np.fill_diagonal(p, 0.0)
            receivers.append(p.sum(axis=1).mean())
            components.append(_component_sizes(p >= 0.5).mean())
            for source in range(n):
                floods.append(_flood(p, source, rng))
                if boundary_m is not None:
                    bounded.append(_flood(p, source, rng, distance[source] <= boundary_m))
        out.append({"range_scale": scale, "receivers_per_broadcast": float(np.mean(receivers)),
                    "component_mean": float(np.mean(components)), "flood_P1": float(np.mean(floods)),
                    "boundary_P1": float(np.mean(bounded)) if bounded else None,
                    "snapshots": len(snapshots), "floods": len(floods)})
    return out


def _component_sizes(adjacent: np.ndarray) -> np.ndarray:
    n = len(adjacent)
    size, seen = np.zeros(n), np.zeros(n, bool)
    for start in range(n):
        if seen[start]:
            continue
        members, stack = [start], [start]
        seen[start] = True
        while stack:
            for v in np.nonzero(adjacent[stack.pop()] & ~seen)[0]:
                seen[v] = True
                stack.append(v)
                members.append(v)
        size[members] = len(members)
    return size


def _flood(p: np.ndarray, source: int, rng: np.random.Generator, passes: Optional[np.ndarray] = None) -> int:
    """Messages one flood sends when every node that gets it and `passes` it (all, by default)
    sends it once, each transmission reaching each other node with that pair's probability."""
    got = np.zeros(len(p), bool)
    got[source] = True
    frontier, sent = [source], 1
    while frontier:
        heard = (rng.random(len(p)) < p[frontier.pop()]) & ~got
        got |= heard
        relays = np.nonzero(heard if passes is None else heard & passes)[0]
        frontier.extend(relays)
        sent += len(relays)
    return sent


def reach_for(expected: List[Dict[str, Any]], target: float) -> Optional[float]:
    """The range scale at which the expected flood reaches `target` nodes: interpolated on the
    logarithm of the flood size between the two scales around it; None outside the scales."""
    for a, b in zip(expected, expected[1:]):
        if a["flood_P1"] <= target <= b["flood_P1"]:
            la, lb = np.log(a["flood_P1"]), np.log(b["flood_P1"])
            w = 0.0 if lb == la else (np.log(target) - la) / (lb - la)
            return float(a["range_scale"] + w * (b["range_scale"] - a["range_scale"]))
    return None


def _results(run_dir: str) -> Dict[str, Any]:
    with open(os.path.join(run_dir, "report", "results.json")) as fh:
        return json.load(fh)


def thesis_values() -> Dict[str, float]:
    """From Table 5, as the sumo-p experiment's references hold it: the messages a publication
    costs at P = 1 (simple gossip's messages at P = 1 over those at P = 0, its publications) and
    simple gossip's messages over the boundary's at P = 1."""
    from testbed.experiment.results import reference_for
    from testbed.experiment.spec import load_experiment

    exp = load_experiment(os.path.join(ROOT, "experiments", "deeco", "sumo-p.yaml"))
    messages = next(m for m in exp.measures if m.name == "messages")
    points = {p.id: p for p in exp.points}
    value = {name: reference_for(exp, points[f"kernel-{name}"], messages).value
             for name in ("simple.P=1", "simple.P=0", "boundary.P=1")}
    return {"flood_P1": value["simple.P=1"] / value["simple.P=0"],
            "ratio_P1": value["simple.P=1"] / value["boundary.P=1"]}


def stored_rows(path: str, rows: List[Dict[str, Any]], every: int) -> List[Dict[str, Any]]:
    """The rows the results file holds for a medium and seed that `rows` does not replay again:
    a campaign's seeds are made over several sittings and its run directories need not outlive
    one, so a seed replayed before stays unless its runs are here to replay it again. Rows
    replayed at another `every` are dropped (their samples would not be alike)."""
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        stored = json.load(fh)
    if stored.get("every") != every:
        return []
    fresh = {(r["medium"], r["seed"]) for r in rows}
    return [r for r in stored.get("runs") or [] if (r["medium"], r["seed"]) not in fresh]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=RUNS, help="a directory of sumo-p runs (default: %(default)s)")
    parser.add_argument("--every", type=int, default=10, help="replay every N-th position snapshot (default 10)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.runs):
        parser.error(f"--runs: {args.runs} is not a directory (run benchmarks/deeco_thesis.py --set sumo-p first)")
    if args.every < 1:
        parser.error("--every: a whole number of snapshots, 1 or more")
    pairs: Dict[tuple, Dict[str, str]] = {}
    for name in sorted(os.listdir(args.runs)):
        m = NAME.match(name)
        if m and os.path.isfile(os.path.join(args.runs, name, "report", "results.json")):
            key = f"{m['scenario']}.P={float(m['p']):g}"
            pairs.setdefault((m["medium"], int(m["seed"])), {})[key] = os.path.join(args.runs, name)
    from testbed.rundir import read_manifest

    thesis = thesis_values()
    rows = []
    for (medium, seed), runs in sorted(pairs.items()):
        if "simple.P=1" not in runs:
            continue
        manifest = read_manifest(runs["simple.P=1"])
        boundary_m = None
        if "boundary.P=1" in runs:
            boundary_m = read_manifest(runs["boundary.P=1"])["scenario"]["workload"]["defaults"]["params"]["boundary_m"]
        positions = pd.read_parquet(os.path.join(runs["simple.P=1"], "radio", "positions.parquet"))
        expected = replay(positions, _delivery(manifest), boundary_m, every=args.every, seed=seed)
        simple = _results(runs["simple.P=1"])["deeco"]["messages"]
        measured = {"flood_P1": simple["total"] / simple["knowledge"]["messages"]}
        if "simple.P=0" in runs:
            sent = _results(runs["simple.P=0"])["messages"]["all"]
            measured["receivers_per_broadcast"] = sent["received"] / sent["sent"]
        if "boundary.P=1" in runs:
            bounded = _results(runs["boundary.P=1"])["deeco"]["messages"]
            measured["boundary_P1"] = bounded["total"] / bounded["knowledge"]["messages"]
        rows.append({"medium": medium, "seed": seed, "boundary_m": boundary_m,
                     "runs": {k: os.path.basename(v) for k, v in sorted(runs.items())}, "measured": measured,
                     "expected": expected, "thesis_reach_scale": reach_for(expected, thesis["flood_P1"])})
        at1 = expected[0]
        print(f"{medium} seed {seed}: a broadcast reaches {at1['receivers_per_broadcast']:.2f} nodes expected, "
              f"{measured.get('receivers_per_broadcast', float('nan')):.2f} measured (P = 0); a publication costs "
              f"{at1['flood_P1']:.2f} messages expected, {measured['flood_P1']:.2f} measured (P = 1, simple), "
              f"{at1['boundary_P1'] or float('nan'):.2f} and {measured.get('boundary_P1', float('nan')):.2f} "
              f"with the boundary; Table 5's {thesis['flood_P1']:.1f} at "
              f"{rows[-1]['thesis_reach_scale'] or float('nan'):.2f} x the reach")
        for e in expected:
            ratio = e["flood_P1"] / e["boundary_P1"] if e["boundary_P1"] else float("nan")
            print(f"  reach x {e['range_scale']:<4g}: {e['receivers_per_broadcast']:6.2f} receivers, "
                  f"{e['flood_P1']:7.2f} messages a publication, simple / boundary {ratio:.2f}")
    if not rows:
        print(f"{args.runs}: no simple-gossip run at P = 1 with its report", file=sys.stderr)
        return 1
    path = os.path.join(HERE, "results", "deeco_flood.json")
    kept = stored_rows(path, rows, args.every)
    if kept:
        print(f"kept from {path}: " + ", ".join(f"{r['medium']} seed {r['seed']}" for r in kept)
              + " (their runs are not in the directory)")
    with open(path, "w") as fh:
        json.dump({"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                   "every": args.every, "thesis": thesis,
                   "runs": sorted(rows + kept, key=lambda r: (r["medium"], r["seed"]))}, fh, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
