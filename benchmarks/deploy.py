#!/usr/bin/env python3
"""Deploy and tear down large networks; print the figures and write benchmarks/results/deploy.json.

Cases: the paper-scale tree T[3,5,5] and ring R[31,5] (186 containers each) and a cluster of
1000 containers on one switch with the docker runtime, and 500 nodes with the process runtime. For each: seconds until every node answers
(a ping from the first node to every other node succeeds), seconds to tear down, memory per
node (the machine's MemAvailable before and after, divided by the nodes; and the containers'
own cgroup memory), and the runner's peak memory.

Usage: benchmarks/deploy.py [--case NAME ...]   (run as root after ./setup.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from testbed.cleanup import leftovers  # noqa: E402
from testbed.network import Lab  # noqa: E402
from testbed.topology import load_topology, parse_topology_text  # noqa: E402

PROCESS_500 = """
name: process-500
generate:
  shape: cluster
  servers: 20
  components: 480
  server: {runtime: process}
  component: {runtime: process}
"""

#: a thousand containers on one switch (issue 68: up in 120 s and down in 60 s at most)
CLUSTER_1000 = """
name: cluster-1000
generate: {shape: cluster, servers: 31, components: 969}
"""

CASES = {
    "tree-3-5-5": lambda: load_topology(os.path.join(ROOT, "topologies", "tree-3-5-5.yaml")),
    "cluster-1000": lambda: parse_topology_text(CLUSTER_1000, "cluster-1000"),
    "ring-31-5": lambda: load_topology(os.path.join(ROOT, "topologies", "ring-31-5.yaml")),
    "process-500": lambda: parse_topology_text(PROCESS_500, "process-500"),
}


def mem_available_mib() -> float:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable")


def container_memory_mib(lab: Lab) -> float:
    """Mean memory.usage of the nodes' container cgroups (cgroup v1 or v2)."""
    values = []
    for started in lab.started.values():
        if not started.container_id:
            continue
        for path in (f"/sys/fs/cgroup/memory/docker/{started.container_id}/memory.usage_in_bytes",
                     f"/sys/fs/cgroup/system.slice/docker-{started.container_id}.scope/memory.current"):
            if os.path.exists(path):
                values.append(int(open(path).read()) / 2**20)
                break
    return round(sum(values) / len(values), 2) if values else None


def all_answer(lab: Lab, rounds: int = 3) -> bool:
    """Ping every node from the first; re-ping only those that missed (a first ping also waits
    for ARP, and hundreds at once can time out). True once every node answered."""
    names = list(lab.topo.nodes)
    src, waiting = names[0], names[1:]
    for _ in range(rounds):
        script = " ".join(f"(ping -c1 -W2 -q {lab.address(dst).ip} >/dev/null 2>&1 || echo miss:{dst}) &"
                          for dst in waiting) + " wait"
        out = lab.exec(src, script)
        waiting = [word[5:] for word in out.split() if word.startswith("miss:")]
        if not waiting:
            return True
    return False


def run_case(name: str) -> dict:
    topo = CASES[name]()
    runtimes = sorted({n.runtime for n in topo.nodes.values()})
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as handle:
        handle.write("3\n")
    time.sleep(1)
    before = mem_available_mib()
    lab = Lab(topo, f"bench-{name}")
    lab.check()
    t0 = time.monotonic()
    lab.start()
    answered = all_answer(lab)
    up_seconds = time.monotonic() - t0
    time.sleep(2)  # let the nodes settle to idle before reading memory
    after = mem_available_mib()
    per_container = container_memory_mib(lab)
    timings = dict(lab.timings)
    t1 = time.monotonic()
    lab.stop()
    down_seconds = time.monotonic() - t1
    timings.update({k: v for k, v in lab.timings.items() if k.startswith("stop")})
    left = leftovers()
    nodes = len(topo.nodes)
    return {
        "case": name, "nodes": nodes, "runtime": "+".join(runtimes),
        "up_seconds": round(up_seconds, 2), "down_seconds": round(down_seconds, 2),
        "all_nodes_answered": answered,
        "mem_per_node_mib": round((before - after) / nodes, 2),
        "container_cgroup_mib": per_container,
        "runner_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "phases": timings, "leftovers": left,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "deploy.json"))
    args = parser.parse_args()
    results = []
    for name in args.case or list(CASES):
        result = run_case(name)
        results.append(result)
        print(f"{name:<12} {result['nodes']:>4} {result['runtime']:<8} up {result['up_seconds']:6.1f} s  "
              f"down {result['down_seconds']:5.1f} s  {result['mem_per_node_mib']:5.1f} MiB/node "
              f"(cgroup {result['container_cgroup_mib']})  runner peak {result['runner_peak_rss_mib']} MiB  "
              f"answered={result['all_nodes_answered']}  phases {result['phases']}", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump({"machine": {"cores": os.cpu_count(), "kernel": os.uname().release}, "cases": results},
                  handle, indent=2)
    print(f"wrote {args.out}")
    return 0 if all(r["all_nodes_answered"] and not r["leftovers"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
