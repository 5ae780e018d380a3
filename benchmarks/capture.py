#!/usr/bin/env python3
"""Capture under load: probe traffic on tree-3-5-5 (186 containers) at several aggregate rates.

For each offered rate (packets/s summed over all nodes) one run of DURATION seconds: packets
sent (agents' logs), packets captured and dropped by the kernel before the capture read them
(tcpdump's statistics, per node), the runner's CPU seconds and peak memory. Prints the figures
and writes benchmarks/results/capture.json, one object per rate.

Usage: benchmarks/capture.py [--rates 5000,20000,50000] [--duration 60]   (root, after ./setup.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from testbed.run import Run  # noqa: E402
from testbed.scenario import parse_scenario_text  # noqa: E402

SCENARIO = """
name: capture-bench
topology: {topology}
warmup: 3s
duration: {duration}s
quiet: 2s
capture: {{snaplen: 128, buffer_mib: 16}}
workload:
  defaults: {{role: probe, params: {{rate: {per_node}, size: 64, to: broadcast}}}}
"""


def run_rate(offered: int, duration: float, topology: str) -> dict:
    nodes = 186
    per_node = offered / nodes
    text = SCENARIO.format(topology=topology, duration=duration, per_node=round(per_node, 3))
    with tempfile.TemporaryDirectory(prefix="capture-bench-") as tmp:
        scenario = parse_scenario_text(text, os.path.join(tmp, "scenario.yaml"))
        usage_before = resource.getrusage(resource.RUSAGE_SELF)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        execution = Run(scenario, out_dir=os.path.join(tmp, "run"), progress=False)
        manifest = execution.execute()
        wall = time.monotonic() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        sent = 0
        for name in os.listdir(os.path.join(execution.dir, "logs")):
            with open(os.path.join(execution.dir, "logs", name)) as handle:
                sent += sum(1 for line in handle if '"event":"send"' in line)
        capture = manifest.get("capture", {})
        captured = sum(v.get("captured", 0) for v in capture.values())
        drops = sum(v.get("kernel_drops", 0) for v in capture.values())
        nodes_with_drops = sorted(n for n, v in capture.items() if v.get("kernel_drops"))
    return {
        "offered_pps": offered, "duration_s": duration, "status": manifest["status"],
        "sent": sent, "sent_pps": round(sent / duration, 1), "captured": captured, "kernel_drops": drops,
        "nodes_with_drops": nodes_with_drops[:20],
        "runner_cpu_s": round(usage.ru_utime + usage.ru_stime - usage_before.ru_utime - usage_before.ru_stime, 2),
        "captures_cpu_s": round(children.ru_utime + children.ru_stime - children_before.ru_utime
                                - children_before.ru_stime, 2),
        "runner_peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "wall_s": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="5000,20000,50000")
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--topology", default=os.path.join(ROOT, "topologies", "tree-3-5-5.yaml"))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "capture.json"))
    args = parser.parse_args()
    results = []
    for rate in (int(r) for r in args.rates.split(",")):
        result = run_rate(rate, args.duration, args.topology)
        results.append(result)
        print(f"offered {rate:>6} pps: sent {result['sent_pps']:>8} pps, captured {result['captured']:>9}, "
              f"kernel drops {result['kernel_drops']:>7} ({len(result['nodes_with_drops'])} nodes), "
              f"runner cpu {result['runner_cpu_s']} s, captures+children cpu {result['captures_cpu_s']} s, "
              f"status {result['status']}", flush=True)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as handle:
            json.dump({"machine": {"cores": os.cpu_count()}, "rates": results}, handle, indent=2)
    drops_begin = next((r["offered_pps"] for r in results if r["kernel_drops"]), None)
    print(f"capture drops begin at: {drops_begin or 'no drops at any measured rate'}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
