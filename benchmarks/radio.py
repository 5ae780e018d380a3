#!/usr/bin/env python3
"""The radio medium's costs: mobility ticks for 50, 200 and 500 members, frames per second it
carries without kernel drops, and memory.

1. Ticks. For each size, a radio segment of N random-waypoint members (speed 1–10 m/s, no
   pause) at a constant density (about ten neighbours in range per node), in the lab's real
   nftables table; the medium's own tick (positions, distances, the changed map elements in one
   nft transaction, the run-directory tables, the moved nodes' position files) is timed for
   TICKS consecutive one-second steps of model time, run back to back. Sizes alternate round by
   round (50, 200, 500, 50, ...), and medians are reported. Two loss models: none (only range
   changes touch the map) and log-distance with shadowing (every pair's probability class moves
   with its distance, the worst case for updates). No interfaces are needed: the map's keys are
   interface names, and nftables does not require them to exist.
2. Throughput. A real lab of RECEIVERS+1 process nodes on one segment, all in range with p = 1:
   one node broadcasts 64-byte datagrams at rising rates for 3 s each; the medium carries
   rate × RECEIVERS frames per second. Reported: the highest rate at which every receiver got
   every datagram (the receivers' socket buffers are 8 MiB, so a loss is the medium's or the
   kernel's, and it is reported as such), and the first rate with loss.
3. Memory: the benchmark process's peak RSS, and the RSS growth over a 500-member run of ticks.

Prints the figures and writes benchmarks/results/radio.json.

Usage: benchmarks/radio.py [--rounds 3] [--ticks 30] [--sizes 50,200,500]   (root, after ./setup.sh)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from testbed.capabilities import detect  # noqa: E402
from testbed.media.radio import Radio  # noqa: E402
from testbed.names import lab_names  # noqa: E402
from testbed.shaping import choose, nft_in_root  # noqa: E402
from testbed.topology import parse_topology_text  # noqa: E402

RANGE_M = 100.0
NEIGHBOURS = 10
LOSS = {"none": "none",
        "log-distance": "{model: log-distance, exponent: 3, reference_loss: 40, sigma: 4, tx_power: 14, "
                        "sensitivity: -80}"}


def _rss_kib() -> int:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))


def _topology(n: int, loss: str):
    side = math.sqrt(n * math.pi * RANGE_M ** 2 / NEIGHBOURS)
    nodes = "".join(f"  m{i}: {{kind: w}}\n" for i in range(n))
    text = (f"kinds:\n  w: {{mobility: {{model: random-waypoint, area: [[0, 0], [{side:.1f}, {side:.1f}]], "
            f"speed: [1, 10], pause: 0s}}}}\nnodes:\n{nodes}radio:\n  air: {{members: [w], range: {RANGE_M:g}, "
            f"loss: {LOSS[loss]}}}\n")
    return parse_topology_text(text, f"bench-{n}.yaml")


def tick_costs(n: int, loss: str, ticks: int, caps, workdir: str) -> dict:
    """Per-tick milliseconds of the medium's own tick for N moving members."""
    topo = _topology(n, loss)
    names = lab_names(f"radiobench{n}")
    shaper = choose(caps)
    node_dirs = {name: os.path.join(workdir, "nodes", name) for name in topo.nodes}
    for directory in node_dirs.values():
        os.makedirs(directory, exist_ok=True)
    medium = Radio(topo, names, shaper, caps, workdir=workdir, node_dirs=node_dirs, seed=1)
    medium.check(())
    bridge = names.radio_bridge(1)
    kernel = medium.channel("kernel")
    kernel._bridge["air"] = bridge  # what add() records while the lab is built
    for i, node in enumerate(topo.radio["air"].members, start=1):
        kernel._port[("air", node)] = names.port(bridge, i)
    shaper.setup(names.nft_table)
    rss_before = _rss_kib()
    try:
        medium.start()
        times, elements = [], []
        for k in range(1, ticks + 1):
            before = time.perf_counter()
            medium._tick(float(k))
            times.append((time.perf_counter() - before) * 1000)
            elements.append(int((kernel._state["air"] > 0).sum()))
        listed = subprocess.run(["nft", "list", "map", "bridge", names.nft_table, "radio1_pairs"],
                                capture_output=True, text=True).stdout
        in_map = listed.count(" : ")
        medium.finish()
    finally:
        nft_in_root(f"delete table bridge {names.nft_table}\n")
    return {"members": n, "loss": loss, "ticks": ticks, "tick_ms": times, "median_ms": statistics.median(times),
            "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))], "max_ms": max(times),
            "map_elements_median": statistics.median(elements), "map_elements_checked": in_map,
            "class_chains": len(kernel._classes), "rss_growth_kib": _rss_kib() - rss_before}


def throughput(receivers: int, rates) -> dict:
    from testbed.network import Lab

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from tests.helpers import finish, run_probe, start_probe

    nodes = "".join(f"  r{i}: {{position: [{i}, 0]}}\n" for i in range(receivers))
    topo = parse_topology_text(f"defaults: {{runtime: process}}\nnodes:\n  s: {{position: [0, 1]}}\n{nodes}"
                               f"radio: {{air: {{members: [s{''.join(f', r{i}' for i in range(receivers))}], "
                               "range: 100}}\n", "bench-throughput.yaml")
    lab = Lab(topo, lab="radiobench-tp")
    lab.check()
    lab.start()
    results = []
    try:
        bcast = str(lab.address("s").network.broadcast_address)
        for rate in rates:
            count = int(rate * 3)
            procs = {r: start_probe(lab, r, "udp-recv", 7100, 1.5, 5) for r in (f"r{i}" for i in range(receivers))}
            started = time.monotonic()
            run_probe(lab, "s", "udp-send", bcast, 7100, count, rate, timeout=120)
            elapsed = time.monotonic() - started
            got = {r: finish(p)["unique"] for r, p in procs.items()}
            achieved = count / elapsed
            results.append({"offered_pps": rate, "sent": count, "send_seconds": round(elapsed, 3),
                            "achieved_pps": round(achieved, 1), "received_min": min(got.values()),
                            "received_total": sum(got.values()),
                            "frames_per_second": round(sum(got.values()) / elapsed, 1)})
            print(f"  {rate:>6} pps offered, {achieved:8.0f} sent/s: receivers got {min(got.values())}..{max(got.values())}"
                  f" of {count}", flush=True)
            if min(got.values()) < count and len(results) > 1 and results[-2]["received_min"] < results[-2]["sent"]:
                break
    finally:
        lab.stop()
    lossless = [r for r in results if r["received_min"] == r["sent"]]
    return {"receivers": receivers, "runs": results,
            "lossless_frames_per_second": max((r["frames_per_second"] for r in lossless), default=0),
            "lossless_pps": max((r["achieved_pps"] for r in lossless), default=0),
            "first_loss_pps": next((r["achieved_pps"] for r in results if r["received_min"] < r["sent"]), None)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--sizes", default="50,200,500")
    parser.add_argument("--receivers", type=int, default=10)
    parser.add_argument("--rates", default="1000,2000,4000,8000,16000,32000")
    args = parser.parse_args()
    caps = detect()
    sizes = [int(s) for s in args.sizes.split(",")]
    out = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release}, "range_m": RANGE_M,
           "neighbours_target": NEIGHBOURS, "ticks": {}}
    samples = {}
    for round_index in range(args.rounds):
        for loss in LOSS:
            for n in sizes:
                with tempfile.TemporaryDirectory(prefix="radio-bench-") as tmp:
                    result = tick_costs(n, loss, args.ticks, caps, tmp)
                samples.setdefault((loss, n), []).append(result)
                print(f"round {round_index + 1} {loss:>12} {n:>4} members: median {result['median_ms']:7.2f} ms, "
                      f"p95 {result['p95_ms']:7.2f} ms, max {result['max_ms']:7.2f} ms, "
                      f"{result['map_elements_median']:.0f} pairs in range", flush=True)
    for (loss, n), results in samples.items():
        ms = [t for r in results for t in r["tick_ms"]]
        out["ticks"].setdefault(loss, {})[str(n)] = {
            "median_ms": round(statistics.median(ms), 3), "p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 3),
            "max_ms": round(max(ms), 3),
            "round_medians_ms": [round(r["median_ms"], 3) for r in results],
            "pairs_in_range_median": statistics.median(r["map_elements_median"] for r in results),
            "map_elements_at_end": results[-1]["map_elements_checked"],
            "class_chains": max(r["class_chains"] for r in results),
            "core_share_at_1s_ticks": round(statistics.median(ms) / 1000, 4),
            "rss_growth_kib": results[-1]["rss_growth_kib"]}
    print("throughput:", flush=True)
    out["throughput"] = throughput(args.receivers, [int(r) for r in args.rates.split(",")])
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps({k: v for k, v in out.items() if k != "throughput"}, indent=1))
    print(f"lossless: {out['throughput']['lossless_frames_per_second']:.0f} frames/s "
          f"({out['throughput']['lossless_pps']:.0f} broadcasts/s to {args.receivers} receivers); "
          f"first loss at {out['throughput']['first_loss_pps']} broadcasts/s; peak RSS {out['peak_rss_mib']} MiB")
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "results", "radio.json"), "w") as handle:
        json.dump(out, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
