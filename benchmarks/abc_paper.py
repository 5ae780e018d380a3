"""The AbC paper's experiments (section 4) on the testbed: average delivery time and average
message time gap for the cluster, ring and tree infrastructures at paper scale (31 servers, 155
components, 186 containers), with the paper's rates mapped to wall-clock time by the scenarios
(scenarios/abc-paper/: one time unit = 100 ms, λs = 1, λt = 15, a horizon of 2000 time units).

    python benchmarks/abc_paper.py [--set dp|ci|all] [--out-dir DIR] [--runs DIR ...]

Each scenario runs with `testbed run --analyze` (a 200 s workload, plus warm-up, quiet period,
start-up and analysis); `--runs` takes run directories analysed before instead. Prints a table
and writes benchmarks/results/abc_paper.json: per configuration the delivery time (from wanting
to send to the last component's handling, the paper's measure), the dissemination time (from the
data send) and the message time gap, overall and at the horizon (the cumulative mean at the end
of the workload, where the paper reads its figures), in ms and time units; the messages, the
servers' achieved transmission rate, the checks' verdicts (total order, exactly-once) and
retransmissions, and whether the paper's ordering (tree < ring < cluster, Figures 1-2) holds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCENARIOS = os.path.join(ROOT, "scenarios", "abc-paper")
SETS = {
    "dp": ["dp-tree-3-5-5", "dp-ring-31-5", "dp-cluster-31-155"],
    "ci": ["ci-tree-3-5-5", "ci-tree-5-2-5", "ci-ring-31-5", "ci-ring-5-31", "ci-cluster-31-155",
           "ci-cluster-10-155"],
}
SETS["all"] = SETS["dp"] + SETS["ci"]


def figures(run_dir: str) -> Dict[str, object]:
    with open(os.path.join(run_dir, "report", "results.json")) as fh:
        r = json.load(fh)
    a = r.get("abc") or {}
    checks = {c["check"]: c["verdict"] for c in r.get("checks", [])}
    dt, dis, gap = (a.get(k) or {} for k in ("delivery_time", "dissemination_time", "message_time_gap"))
    servers = (a.get("transmitters") or {}).get("servers") or {}

    def horizon(m: dict, key: str):
        return (m.get("at_horizon") or {}).get(key)

    return {
        "run": r["run"]["id"], "scenario": r["run"].get("scenario"), "components": a.get("components"),
        "messages": a.get("messages"), "delivered_to_all": a.get("delivered_to_all"),
        "time_unit_ms": a.get("time_unit_ms"), "horizon_time_units": a.get("horizon_time_units"),
        "delivery_time_ms": dt.get("mean_ms"), "delivery_time_median_ms": dt.get("median_ms"),
        "delivery_time_p95_ms": dt.get("p95_ms"), "delivery_time_units": dt.get("mean_time_units"),
        "delivery_time_at_horizon_units": horizon(dt, "mean_time_units"),
        "dissemination_time_ms": dis.get("mean_ms"), "dissemination_time_units": dis.get("mean_time_units"),
        "dissemination_time_at_horizon_units": horizon(dis, "mean_time_units"),
        "time_gap_ms": gap.get("mean_ms"), "time_gap_units": gap.get("mean_time_units"),
        "time_gap_at_horizon_units": horizon(gap, "mean_time_units"),
        "id_wait_ms": (a.get("id_wait") or {}).get("mean_ms"),
        "server_rate_median": servers.get("median_rate"), "server_rate_target": servers.get("target_rate"),
        "total_order": checks.get("total-order-sequencer"), "exactly_once": checks.get("exactly-once"),
        "retransmissions": (r.get("overhead") or {}).get("total", {}).get("retransmissions"),
    }


def _num(v, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


def run(name: str, out_dir: str) -> str:
    out = os.path.join(out_dir, name)
    if os.path.exists(out):
        raise SystemExit(f"{out} exists; remove it or pass it with --runs")
    subprocess.run([sys.executable, "-m", "testbed", "run", os.path.join(SCENARIOS, f"{name}.yaml"), "--out", out,
                    "--quiet", "--analyze"], check=True, cwd=ROOT)
    return out


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="dp")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "runs", "abc-paper"))
    parser.add_argument("--runs", nargs="*", help="analysed run directories instead of new runs")
    args = parser.parse_args(argv)
    dirs = args.runs or [run(name, args.out_dir) for name in SETS[args.set]]
    rows = {os.path.basename(os.path.normpath(d)): figures(d) for d in dirs}
    print(f"{'configuration':<22} {'msgs':>6} {'delivery ms':>12} {'@horizon tu':>11} {'dissem. ms':>11} "
          f"{'gap ms':>8} {'@horizon tu':>11} {'srv rate':>8} {'order':>7} {'retx':>6}")
    for name, f in rows.items():
        print(f"{name:<22} {f['messages'] or 0:>6} {_num(f['delivery_time_ms'], 12, 1)} "
              f"{_num(f['delivery_time_at_horizon_units'], 11, 2)} {_num(f['dissemination_time_ms'], 11, 1)} "
              f"{_num(f['time_gap_ms'], 8, 1)} {_num(f['time_gap_at_horizon_units'], 11, 2)} "
              f"{_num(f['server_rate_median'], 8, 2)} {str(f['total_order']):>7} {str(f['retransmissions']):>6}")
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "runs": rows}
    dp = {k.split("-")[1]: v for k, v in rows.items() if k.startswith("dp-")}
    if set(dp) == {"tree", "ring", "cluster"}:
        for measure in ("delivery_time_ms", "time_gap_ms"):
            t, r, c = (dp[k][measure] for k in ("tree", "ring", "cluster"))
            result[f"dp_tree_lt_ring_lt_cluster_{measure}"] = bool(t < r < c)
            print(f"DP {measure}: tree {t:.1f} < ring {r:.1f} < cluster {c:.1f}: {t < r < c}")
    path = os.path.join(HERE, "results", "abc_paper.json")
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
