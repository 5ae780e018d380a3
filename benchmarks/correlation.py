"""Benchmark of receive-side matching (agents/abc/correlation.py): partial-key finds in the radix
trees of Algorithm 1 against a naive scan and against per-attribute hash sets intersected, on
100,000 sessions over 6 attributes, plus the rates of adding and deleting sessions and the time to
build the trees.

    python benchmarks/correlation.py [--sessions 100000] [--queries 2000] [--budget 0.6] [--seed 1]

Every subset of the 6 attributes may occur in a partial key, so the store has C(6, 3) = 20 trees
(the paper's worst case). Partial keys specify 1 to 6 attributes, equally many of each size, with
the values of a random stored session (so no key finds nothing). Prints the figures and writes
benchmarks/results/correlation.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import operator
import os
import platform
import random
import sys
import time
from typing import Callable, Dict, List, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from agents.abc.correlation import CorrelationStore, radix_tree_chains  # noqa: E402

#: attribute -> number of distinct values, as in an AbC system of many components: a few roles
#: and states, tens of zones and rounds, a few hundred groups, graph-colouring colours
CARDINALITIES = {"role": 5, "zone": 20, "colour": 8, "round": 50, "group": 200, "status": 3}
ATTRIBUTES = list(CARDINALITIES)


def make_sessions(count: int, rng: random.Random) -> List[Dict[str, object]]:
    roles = ["server", "client", "relay", "sensor", "actuator"]
    states = ["idle", "busy", "done"]
    sessions = []
    for _ in range(count):
        s: Dict[str, object] = {a: rng.randrange(c) for a, c in CARDINALITIES.items()}
        s["role"] = roles[rng.randrange(5)]
        s["status"] = states[rng.randrange(3)]
        sessions.append(s)
    return sessions


def make_keys(sessions: List[Dict[str, object]], size: int, count: int, rng: random.Random) -> List[Dict[str, object]]:
    subsets = list(itertools.combinations(ATTRIBUTES, size))
    keys = []
    for _ in range(count):
        session = sessions[rng.randrange(len(sessions))]
        keys.append({a: session[a] for a in rng.choice(subsets)})
    return keys


class NaiveScan:
    """Every session checked against the key."""

    def __init__(self, sessions: List[Dict[str, object]]) -> None:
        self.rows = [(i, tuple(s[a] for a in ATTRIBUTES)) for i, s in enumerate(sessions)]

    def find(self, key: Dict[str, object]) -> Set[int]:
        positions = [ATTRIBUTES.index(a) for a in key]
        wanted = tuple(key.values())
        pick: Callable = operator.itemgetter(*positions)
        if len(positions) == 1:
            wanted = wanted[0]
        return {i for i, row in self.rows if pick(row) == wanted}


class HashIntersection:
    """attribute -> value -> set of session ids; a key intersects its sets, smallest first."""

    def __init__(self) -> None:
        self.index: Dict[str, Dict[object, Set[int]]] = {a: {} for a in ATTRIBUTES}
        self.all: Set[int] = set()

    def add(self, session_id: int, values: Dict[str, object]) -> None:
        for a, v in values.items():
            self.index[a].setdefault(v, set()).add(session_id)
        self.all.add(session_id)

    def delete(self, session_id: int, values: Dict[str, object]) -> None:
        for a, v in values.items():
            self.index[a][v].discard(session_id)
        self.all.discard(session_id)

    def find(self, key: Dict[str, object]) -> Set[int]:
        if not key:
            return set(self.all)
        sets = sorted((self.index[a].get(v, set()) for a, v in key.items()), key=len)
        return sets[0].intersection(*sets[1:])


def finds_per_second(find: Callable, keys: List[Dict[str, object]], budget: float) -> Tuple[float, int, float]:
    """Finds per second over the keys, stopping after `budget` seconds; also the finds made and
    the mean number of sessions found."""
    done = found = 0
    start = time.perf_counter()
    elapsed = 0.0
    for key in keys:
        found += len(find(key))
        done += 1
        if done % 8 == 0:
            elapsed = time.perf_counter() - start
            if elapsed > budget:
                break
    elapsed = time.perf_counter() - start
    return done / elapsed, done, found / done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=2000, help="partial keys of each size (1 to 6 attributes)")
    ap.add_argument("--budget", type=float, default=0.6, help="seconds of finds per method and key size at most "
                    "(twice that for the naive scan)")
    ap.add_argument("--churn", type=int, default=10_000, help="sessions deleted and added again to time both")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "correlation.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sessions = make_sessions(args.sessions, rng)
    schemas = [c for k in range(len(ATTRIBUTES) + 1) for c in itertools.combinations(ATTRIBUTES, k)]
    out: Dict[str, object] = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "sessions": args.sessions, "attributes": CARDINALITIES, "schemas": len(schemas)}

    t = time.perf_counter()
    chains = radix_tree_chains(schemas, ATTRIBUTES)
    out["algorithm_1_ms"] = round((time.perf_counter() - t) * 1000, 2)
    store = CorrelationStore(ATTRIBUTES, schemas)
    t = time.perf_counter()
    for i, s in enumerate(sessions):
        store.add(i, s)
    out["build_s"] = round(time.perf_counter() - t, 2)
    out["trees"] = len(store.tree_orders)
    assert out["trees"] == len(chains)
    print(f"{len(schemas)} schemas -> {out['trees']} radix trees (Algorithm 1: {out['algorithm_1_ms']} ms); "
          f"{args.sessions:,} sessions added in {out['build_s']} s", flush=True)
    hashed = HashIntersection()
    t = time.perf_counter()
    for i, s in enumerate(sessions):
        hashed.add(i, s)
    out["hash_build_s"] = round(time.perf_counter() - t, 2)
    naive = NaiveScan(sessions)

    churn = rng.sample(range(args.sessions), min(args.churn, args.sessions))
    t = time.perf_counter()
    for i in churn:
        store.delete(i)
    deleted = time.perf_counter() - t
    t = time.perf_counter()
    for i in churn:
        store.add(i, sessions[i])
    added = time.perf_counter() - t
    t = time.perf_counter()
    for i in churn:
        hashed.delete(i, sessions[i])
    for i in churn:
        hashed.add(i, sessions[i])
    hash_churn = time.perf_counter() - t
    out["trees_adds_per_s"] = round(len(churn) / added)
    out["trees_deletes_per_s"] = round(len(churn) / deleted)
    out["hash_adds_and_deletes_per_s"] = round(2 * len(churn) / hash_churn)
    print(f"trees: {out['trees_adds_per_s']:,} adds/s, {out['trees_deletes_per_s']:,} deletes/s "
          f"(hash sets: {out['hash_adds_and_deletes_per_s']:,} adds and deletes/s)", flush=True)

    methods = {"trees": store.find, "hash": hashed.find, "naive": naive.find}
    by_size: Dict[str, Dict[str, object]] = {}
    for size in range(1, len(ATTRIBUTES) + 1):
        keys = make_keys(sessions, size, args.queries, rng)
        for key in keys[:5]:
            expected = naive.find(key)
            assert store.find(key) == expected == hashed.find(key), key
        entry: Dict[str, object] = {}
        for name, find in methods.items():
            rate, done, mean_found = finds_per_second(find, keys, args.budget * (2 if name == "naive" else 1))
            entry[f"{name}_finds_per_s"] = round(rate, 1)
            entry[f"{name}_finds"] = done
            if name == "trees":
                entry["mean_sessions_found"] = round(mean_found, 1)
        entry["trees_over_naive"] = round(entry["trees_finds_per_s"] / entry["naive_finds_per_s"], 1)
        entry["trees_over_hash"] = round(entry["trees_finds_per_s"] / entry["hash_finds_per_s"], 2)
        by_size[str(size)] = entry
        print(f"{size} attribute(s), {entry['mean_sessions_found']:>9,} found on average: trees "
              f"{entry['trees_finds_per_s']:>9,.0f}/s, hash {entry['hash_finds_per_s']:>9,.0f}/s, naive "
              f"{entry['naive_finds_per_s']:>6,.1f}/s; trees/naive {entry['trees_over_naive']:,}, "
              f"trees/hash {entry['trees_over_hash']}", flush=True)
    out["by_key_size"] = by_size
    # a workload with as many keys of each size: the harmonic mean of the rates
    for name in methods:
        rates = [e[f"{name}_finds_per_s"] for e in by_size.values()]
        out[f"{name}_finds_per_s"] = round(len(rates) / sum(1 / r for r in rates), 1)
    out["trees_over_naive"] = round(out["trees_finds_per_s"] / out["naive_finds_per_s"], 1)
    out["trees_over_hash"] = round(out["trees_finds_per_s"] / out["hash_finds_per_s"], 2)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k not in ("by_key_size", "machine")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
