#!/usr/bin/env python3
"""Deploy and tear down large networks; print the figures and write benchmarks/results/deploy.json.

Cases: the paper-scale tree T[3,5,5] and ring R[31,5] (186 containers each) and a cluster of
1000 containers on one switch with the docker runtime, and 500 nodes with the process runtime. For each: seconds until every node answers
(a ping from the first node to every other node succeeds), seconds to tear down, memory per
node (the machine's MemAvailable before and after, divided by the nodes; and the containers'
own cgroup memory), and the runner's peak memory.

With --baseline DIR (another checkout, say `git worktree add /tmp/base REF`), each case is run
with that checkout's testbed as well, the two in turn (A B A B ...), each run in a process of its
own; --runs N runs each N times and the results file gets each figure's median and range beside
the runs (issue 68's before and after). The cases run replace their entries in the results file;
the others stay as they were measured (each entry says when, and with which commit).

Usage: benchmarks/deploy.py [--case NAME ...] [--runs N] [--baseline DIR]   (root, after ./setup.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: the checkout whose testbed builds the labs: this one, or --baseline's in a run of its own
ROOT = os.environ.get("DEPLOY_TESTBED_ROOT") or os.path.dirname(HERE)
TOPOLOGIES = os.path.join(os.path.dirname(HERE), "topologies")
sys.path.insert(0, ROOT)

from revision import commit  # noqa: E402
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
    "tree-3-5-5": lambda: load_topology(os.path.join(TOPOLOGIES, "tree-3-5-5.yaml")),
    "cluster-1000": lambda: parse_topology_text(CLUSTER_1000, "cluster-1000"),
    "ring-31-5": lambda: load_topology(os.path.join(TOPOLOGIES, "ring-31-5.yaml")),
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


def one_run_in_a_process(name: str, root: str) -> dict:
    """run_case in a fresh process with `root`'s testbed (its memory figures are its own)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, DEPLOY_TESTBED_ROOT=root)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, "--out", out.name], env=env,
                       check=True)
        with open(out.name) as fh:
            return json.load(fh)


def medians(runs: list) -> dict:
    def med(values):
        values = [v for v in values if v is not None]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else None

    phases = sorted({k for r in runs for k in r["phases"]})
    return {"runs": len(runs), "up_seconds": med([r["up_seconds"] for r in runs]),
            "down_seconds": med([r["down_seconds"] for r in runs]),
            "mem_per_node_mib": med([r["mem_per_node_mib"] for r in runs]),
            "phases": {k: med([r["phases"].get(k) for r in runs]) for k in phases}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--runs", type=int, default=1, help="runs of each case (and variant); default 1")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout whose testbed to run as well, in turn")
    parser.add_argument("--one", choices=sorted(CASES), help=argparse.SUPPRESS)  # one run, in its own process
    parser.add_argument("--out", default=os.path.join(HERE, "results", "deploy.json"))
    args = parser.parse_args()
    if args.one:
        with open(args.out, "w") as handle:
            json.dump(run_case(args.one), handle)
        return 0
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    here = os.path.dirname(HERE)
    variants = {"current": here}
    if args.baseline:
        variants["baseline"] = os.path.abspath(args.baseline)
    results = []
    for name in args.case or list(CASES):
        runs = {label: [] for label in variants}
        for _ in range(args.runs):
            for label, root in variants.items():
                result = one_run_in_a_process(name, root)
                runs[label].append(result)
                print(f"{name:<12} {label:<8} {result['nodes']:>4} {result['runtime']:<8} up {result['up_seconds']:6.1f} s"
                      f"  down {result['down_seconds']:5.1f} s  {result['mem_per_node_mib']:5.1f} MiB/node "
                      f"(cgroup {result['container_cgroup_mib']})  runner peak {result['runner_peak_rss_mib']} MiB  "
                      f"answered={result['all_nodes_answered']}  phases {result['phases']}", flush=True)
        entry = {"case": name, "nodes": runs["current"][0]["nodes"], "runtime": runs["current"][0]["runtime"],
                 "date": time.strftime("%Y-%m-%d"), "commit": commit(here) or "unknown",
                 "variants": {label: {"root": root, "median": medians(runs[label]), "runs": runs[label]}
                              for label, root in variants.items()}}
        for label in variants:
            m = entry["variants"][label]["median"]
            print(f"== {name} {label}: median over {m['runs']}: up {m['up_seconds']['median']:.1f} s, down "
                  f"{m['down_seconds']['median']:.1f} s", flush=True)
        results.append(entry)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    kept = []  # the cases not run now stay as they were measured
    if os.path.exists(args.out):
        with open(args.out) as handle:
            kept = [c for c in json.load(handle).get("cases", []) if c.get("case") not in {r["case"] for r in results}]
    order = list(CASES)
    merged = sorted(kept + results, key=lambda c: order.index(c["case"]) if c["case"] in order else len(order))
    with open(args.out, "w") as handle:
        json.dump({"machine": {"cores": os.cpu_count(), "kernel": os.uname().release},
                   "variants": {label: {"root": root} for label, root in variants.items()}, "cases": merged},
                  handle, indent=2)
    print(f"wrote {args.out}")
    ok = all(r["all_nodes_answered"] and not r["leftovers"] for e in results for v in e["variants"].values()
             for r in v["runs"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
