"""Where DEECo knowledge ages come from, measured on the sumo-age runs' own logs.

A delivery (a node accepting knowledge newer than what it held) came in one of three ways: from
the publisher itself (hops 0), from a pushed rebroadcast (Rules 12-14) or from a rebroadcast in
answer to a pull (Rule 24: the sender's `send` of that message has `pulled: true`). For each run
this script splits the deliveries into those three ways and gives each way's count, share and
median age, and the median age of the run's deliveries without the pulled ones; it also counts
the pulled rebroadcasts, the receptions of knowledge (new or not) and, from the run's report,
the frames sent on the air and, on the 802.11 channel, the longest a frame waited in a node's MAC
queue (99th percentile). Push-pull's median
age beside simple gossip's then says whether pulling added deliveries older than the pushed
ones (their share times their ages) or made the pushed ones slower (more traffic).

    python benchmarks/deeco_ages.py                     # the sumo-age runs there are
    python benchmarks/deeco_ages.py --runs DIR

Writes benchmarks/results/deeco_ages.json, one row per run, keeping the rows it holds for runs
the directory no longer has (a campaign's run directories need not outlive its sitting);
docs/REPRODUCTION.md's block deeco/sumo-age/ways is generated from it (benchmarks/reproduction.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNS = os.path.join(ROOT, "runs", "experiments", "deeco-sumo-age", "runs")
RESULTS = os.path.join(HERE, "results", "deeco_ages.json")
#: a sumo-age run: medium, scenario (simple, boundary, pp-N) and seed
NAME = re.compile(r"^(?P<medium>[a-z]+)-(?P<scenario>simple|boundary|pp-\d+)-s(?P<seed>\d+)$")
WAYS = ("publisher", "pushed", "pulled")
KNOWLEDGE = "GOSSIP_KNOWLEDGE"


def read_logs(run_dir: str) -> Tuple[List[Tuple[str, str, int, int, int]], set, int, int]:
    """The run's knowledge deliveries (sender, origin, seq, hops, age in ns), the (sender, origin,
    seq) of its pulled rebroadcasts, how many pulled rebroadcasts it sent, and how many
    receptions of knowledge there were. Lines are filtered as text before they are parsed."""
    deliveries, pulled, pulled_sends, receptions = [], set(), 0, 0
    logs = os.path.join(run_dir, "logs")
    for name in sorted(os.listdir(logs)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(logs, name)) as fh:
            for line in fh:
                if KNOWLEDGE not in line:
                    continue
                if '"deliver"' in line:
                    e = json.loads(line)
                    if e.get("produced_ns") is not None:
                        deliveries.append((e.get("sender"), e["origin"], e["seq"], e.get("hops", 0),
                                           e["t"] - e["produced_ns"]))
                elif '"pulled":true' in line and '"send"' in line:
                    e = json.loads(line)
                    pulled.add((e["node"], e["origin"], e["seq"]))
                    pulled_sends += 1
                elif '"receive"' in line:
                    receptions += 1
    return deliveries, pulled, pulled_sends, receptions


def _median_ms(ages: List[int]) -> Optional[float]:
    return float(np.median(np.asarray(ages, dtype=np.float64))) / 1e6 if ages else None


def split(deliveries, pulled: set) -> Dict[str, Any]:
    """Each way's deliveries: count, share of all and median age in ms; and the median over all
    and over those not pulled."""
    ages: Dict[str, List[int]] = {w: [] for w in WAYS}
    for sender, origin, seq, hops, age in deliveries:
        way = "publisher" if hops == 0 else "pulled" if (sender, origin, seq) in pulled else "pushed"
        ages[way].append(age)
    total = sum(len(a) for a in ages.values())
    out: Dict[str, Any] = {"deliveries": total, "median_ms": _median_ms([a for w in WAYS for a in ages[w]]),
                           "median_without_pulled_ms": _median_ms(ages["publisher"] + ages["pushed"])}
    for way in WAYS:
        out[way] = {"deliveries": len(ages[way]), "share": len(ages[way]) / total if total else None,
                    "median_ms": _median_ms(ages[way])}
    return out


def channel(run_dir: str) -> Dict[str, Any]:
    """From the run's report (when it has one): the frames its radio segments sent and, on the
    802.11 channel, the largest 99th percentile of a node's MAC queueing delay (ms): how long a
    frame waited for the air, the thesis's explanation of minutes-old knowledge."""
    path = os.path.join(run_dir, "report", "results.json")
    if not os.path.isfile(path):
        return {}
    with open(path) as fh:
        segments = ((json.load(fh).get("radio") or {}).get("segments") or {}).values()
    delays = [s["wifi"]["queue_delay_ms_p99_max"] for s in segments
              if (s.get("wifi") or {}).get("queue_delay_ms_p99_max") is not None]
    return {"frames_sent": sum(s.get("frames_sent") or 0 for s in segments),
            "queue_delay_ms_p99_max": max(delays) if delays else None}


def measure(run_dir: str) -> Dict[str, Any]:
    deliveries, pulled, pulled_sends, receptions = read_logs(run_dir)
    row = split(deliveries, pulled)
    row["pulled_rebroadcasts"] = pulled_sends
    row["knowledge_receptions"] = receptions
    row.update(channel(run_dir))
    return row


def stored_rows(path: str, names: set) -> List[Dict[str, Any]]:
    """The rows the results file holds for runs not measured again now."""
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [r for r in json.load(fh).get("runs") or [] if r["run"] not in names]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=RUNS, help="a directory of sumo-age runs (default: %(default)s)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.runs):
        parser.error(f"--runs: {args.runs} is not a directory (run benchmarks/deeco_thesis.py --set sumo-age first)")
    rows = []
    for name in sorted(os.listdir(args.runs)):
        m = NAME.match(name)
        run_dir = os.path.join(args.runs, name)
        if not (m and os.path.isfile(os.path.join(run_dir, "report", "results.json"))):
            continue
        row = {"run": name, "point": f"{m['medium']}-{m['scenario']}", "seed": int(m["seed"]), **measure(run_dir)}
        rows.append(row)
        pp = row["pulled"]
        print(f"{name}: {row['deliveries']} deliveries, median age {row['median_ms']:.3g} ms "
              f"({row['median_without_pulled_ms']:.3g} without the pulled); publisher "
              f"{row['publisher']['share']:.1%}, pushed {row['pushed']['share']:.1%}, pulled {pp['share']:.1%}"
              + (f" (median {pp['median_ms']:.3g} ms)" if pp["median_ms"] is not None else "")
              + f"; {row['pulled_rebroadcasts']} pulled rebroadcasts"
              + (f"; MAC queueing p99 at most {row['queue_delay_ms_p99_max']:.3g} ms"
                 if row.get("queue_delay_ms_p99_max") is not None else ""))
    if not rows:
        print(f"{args.runs}: no sumo-age run with its report", file=sys.stderr)
        return 1
    kept = stored_rows(RESULTS, {r["run"] for r in rows})
    if kept:
        print(f"kept from {RESULTS}: {len(kept)} runs not in the directory")
    with open(RESULTS, "w") as fh:
        json.dump({"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                   "runs": sorted(kept + rows, key=lambda r: r["run"])}, fh, indent=1)
        fh.write("\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
