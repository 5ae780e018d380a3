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
4. The 802.11 channel (`--wifi`, alone): whole DEECo runs (scenarios/deeco-manet.yaml, P = 0.5,
   1000-byte knowledge every 5 s) on topologies/deeco-sumo-200-wifi.yaml's radio at 16, 60 and
   200 members, the SUMO grid's side scaled with the square root of the count so that the density
   stays the thesis's, at time dilation 1, 2 and 4: ns-3's lag behind the wall clock (p50, p99,
   max), the frames it carried a second (frames handed to the members' kernels, and frames on the
   air), the run's fidelity verdict and its reasons; and the largest size that stayed faithful at
   each dilation. A size found unfaithful at k is not tried at higher sizes with that k.

Prints the figures and writes benchmarks/results/radio.json (`--wifi` updates its `wifi` key).

Usage: benchmarks/radio.py [--rounds 3] [--ticks 30] [--sizes 50,200,500]   (root, after ./setup.sh)
       benchmarks/radio.py --wifi [--wifi-sizes 16,60,200] [--dilations 1,2,4] [--duration 60]
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


WIFI_TOPOLOGY = os.path.join(ROOT, "topologies", "deeco-sumo-200-wifi.yaml")


def wifi_run(n: int, k: float, duration_s: float, workdir: str) -> dict:
    """One DEECo run of n members on the wifi channel at time dilation k: the channel's figures."""
    import yaml

    with open(WIFI_TOPOLOGY) as handle:
        topo = yaml.safe_load(handle)
    cars = n // 2
    topo["name"] = f"bench-wifi-{n}"
    topo["generate"]["groups"] = {"d": {"count": cars, "kind": "driver"}, "w": {"count": n - cars, "kind": "walker"}}
    topo["radio"]["air"]["trace"] = {"sumo": {"size": round(2000 * math.sqrt(n / 200)), "block": 250, "cars": cars,
                                              "walkers": n - cars, "duration": 900}}
    path = os.path.join(workdir, f"wifi-{n}.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(topo, handle)
    out = os.path.join(workdir, f"run-{n}-{k:g}")
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "testbed", "run", os.path.join(ROOT, "scenarios", "deeco-manet.yaml"),
                          "--set", f"topology={path}", "--set", f"duration={duration_s:g}s",
                          "--set", f"time_dilation={k:g}", "--seed", "1", "--out", out, "--analyze"],
                         capture_output=True, text=True)
    wall = time.monotonic() - started
    if res.returncode != 0:
        return {"members": n, "time_dilation": k, "error": (res.stderr or res.stdout).strip()[-800:]}
    with open(os.path.join(out, "manifest.json")) as handle:
        manifest = json.load(handle)
    with open(os.path.join(out, "report", "results.json")) as handle:
        results = json.load(handle)
    radio = manifest["radio"]["air"]
    stats = radio.get("wifi_statistics") or {}
    seconds = duration_s * k  # wall seconds of the workload
    fidelity = results.get("fidelity") or {}
    return {"members": n, "time_dilation": k, "duration_s": duration_s, "wall_s": round(wall, 1),
            "lag_ms": radio.get("realtime_lag_ms"),
            "frames_to_members_per_s": round(sum(s["frames_to_host"] for s in stats.values()) / seconds, 1),
            "frames_from_members_per_s": round(sum(s["frames_from_host"] for s in stats.values()) / seconds, 1),
            "air_tx_per_s": round(sum(s["phy_tx"] for s in stats.values()) / seconds, 1),
            "rx_lost_per_s": round(sum(s["phy_rx_error"] + sum(s["phy_rx_drop"].values())
                                       for s in stats.values()) / seconds, 1),
            "verdict": fidelity.get("verdict"), "reasons": fidelity.get("reasons"),
            "wifi_lag_verdict": ((fidelity.get("indicators") or {}).get("wifi_lag_ms") or {}).get("verdict")}


def wifi(sizes, dilations, duration_s: float) -> dict:
    found = {"runs": [], "largest_faithful": {}}
    with tempfile.TemporaryDirectory(prefix="radio-wifi-") as tmp:
        for k in dilations:
            for n in sizes:
                result = wifi_run(n, k, duration_s, tmp)
                found["runs"].append(result)
                lag = result.get("lag_ms") or {}
                print(f"  k={k:g} {n:>4} members: lag p50 {lag.get('p50')} p99 {lag.get('p99')} ms, "
                      f"{result.get('frames_to_members_per_s')} frames/s to members, "
                      f"{result.get('air_tx_per_s')} on the air; {result.get('verdict')} "
                      f"{result.get('reasons') or result.get('error') or ''}", flush=True)
                if result.get("verdict") == "faithful":
                    found["largest_faithful"][f"{k:g}"] = n
                else:
                    break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--sizes", default="50,200,500")
    parser.add_argument("--receivers", type=int, default=10)
    parser.add_argument("--rates", default="1000,2000,4000,8000,16000,32000")
    parser.add_argument("--wifi", action="store_true", help="only the 802.11 channel's DEECo runs")
    parser.add_argument("--wifi-sizes", default="16,60,200")
    parser.add_argument("--dilations", default="1,2,4")
    parser.add_argument("--duration", type=float, default=60.0, help="virtual seconds of each wifi run")
    args = parser.parse_args()
    if args.wifi:
        path = os.path.join(ROOT, "benchmarks", "results", "radio.json")
        found = wifi([int(n) for n in args.wifi_sizes.split(",")], [float(k) for k in args.dilations.split(",")],
                     args.duration)
        previous = json.load(open(path)) if os.path.exists(path) else {}
        previous["wifi"] = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release},
                            "duration_s": args.duration, **found}
        with open(path, "w") as handle:
            json.dump(previous, handle, indent=1)
        print(f"largest faithful size by time dilation: {found['largest_faithful']}")
        return 0
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
