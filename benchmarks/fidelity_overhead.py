"""What the fidelity monitor costs: the agents' part (agents/clock.py: each wake-up measured, a
`fidelity` event a second) and the machine's (testbed/monitor.py: a host sample a second).

    python benchmarks/fidelity_overhead.py [--rounds 7] [--wakeups 20000]

- per wake-up: an event loop runs `--wakeups` zero-delay sleeps through the agent clock
  (`Clock.sleep_until`, the lateness measured) and through `asyncio.sleep` alone, alternating
  the two over `--rounds` rounds; the CPU time per wake-up is each round's process time over its
  wake-ups, and the monitor's cost is the median of the paired differences;
- per second: `Monitor.window()` with a second's wake-ups at the rates below, and the event
  written as the runtime writes it (JSON, to a file);
- the share of a core an agent spends on the monitor at a rate of wake-ups per second: the AbC
  server paced at λt = 15 per 100 ms time unit (150/s), a DEECo node (3 ticks a second at most),
  a causal member (a gossip round every 100 ms and a cluster round: 20/s);
- the host sampler: one sample with the nodes' cgroups (the containers running now, if any: run
  it beside an experiment to read real ones; else none), per second of the run.

Prints the figures and writes benchmarks/results/fidelity_overhead.json. The issue asks for less
than 1% of a core per agent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from agents.clock import Clock  # noqa: E402
from testbed.monitor import HostMonitor  # noqa: E402

RATES = {"AbC server at λt = 15 per 100 ms": 150, "causal member (gossip and cluster rounds)": 20,
         "DEECo node (three periodic tasks)": 3}


def per_wakeup_cpu(n: int, measured: bool) -> float:
    """CPU seconds per zero-delay wake-up, through the agent clock or asyncio alone."""
    clock = Clock()

    async def through_clock():
        for _ in range(n):
            await clock.sleep_until(clock.time(), period=0.01)

    async def plain():
        for _ in range(n):
            await asyncio.sleep(0)

    start = time.process_time()
    asyncio.run(through_clock() if measured else plain())
    return (time.process_time() - start) / n


def window_cpu(wakeups: int, repeats: int = 200) -> float:
    """CPU seconds of one `fidelity` window with `wakeups` wake-ups in it, the event written."""
    clock = Clock()
    with tempfile.TemporaryFile("w") as out:
        start = time.process_time()
        for _ in range(repeats):
            for k in range(wakeups):
                clock.monitor.woke(0.0002 * (k % 7), 0.01)
            fields = clock.monitor.window()
            out.write(json.dumps({"t": time.time_ns(), "node": "n", "event": "fidelity", **fields},
                                 separators=(",", ":")) + "\n")
        return (time.process_time() - start) / repeats


def running_container_pids():
    try:
        import docker

        api = docker.from_env().api
        return {c["Names"][0].lstrip("/"): api.inspect_container(c["Id"])["State"]["Pid"] for c in api.containers()}
    except Exception:
        return {}


def host_sample_cpu(pids, samples: int = 20) -> float:
    with tempfile.TemporaryDirectory() as d:
        monitor = HostMonitor(d, lambda: pids, interval=3600)  # the thread never samples; we do
        monitor.start()
        start = time.process_time()
        for _ in range(samples):
            monitor._sample()
        cost = (time.process_time() - start) / samples
        monitor.stop()
    return cost


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--wakeups", type=int, default=20000)
    args = p.parse_args(argv)
    diffs, clocked, plain = [], [], []
    for r in range(args.rounds):  # alternating, the order swapped every round
        order = (True, False) if r % 2 == 0 else (False, True)
        got = {m: per_wakeup_cpu(args.wakeups, m) for m in order}
        clocked.append(got[True])
        plain.append(got[False])
        diffs.append(got[True] - got[False])
    per_wakeup = statistics.median(diffs)
    windows = {rate: window_cpu(rate) for rate in sorted(set(RATES.values()))}
    shares = {name: (rate * per_wakeup + windows[rate]) for name, rate in RATES.items()}
    pids = running_container_pids()
    host = host_sample_cpu(pids)
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "rounds": args.rounds, "wakeups_per_round": args.wakeups,
        "wakeup_us": {"through_clock_median": statistics.median(clocked) * 1e6,
                      "asyncio_sleep_median": statistics.median(plain) * 1e6,
                      "monitor_cost_median": per_wakeup * 1e6,
                      "monitor_cost_range": [min(diffs) * 1e6, max(diffs) * 1e6]},
        "window_us": {str(rate): cost * 1e6 for rate, cost in windows.items()},
        "agent_core_share": {name: share for name, share in shares.items()},
        "host_sample_ms": host * 1e3, "host_sample_nodes": len(pids),
        "host_core_share": host,
    }
    print(f"a wake-up through the agent clock: {result['wakeup_us']['through_clock_median']:.2f} µs CPU, "
          f"asyncio.sleep alone {result['wakeup_us']['asyncio_sleep_median']:.2f} µs; the monitor's part "
          f"{per_wakeup * 1e6:.2f} µs (median of {args.rounds} paired rounds, "
          f"range {result['wakeup_us']['monitor_cost_range'][0]:.2f} to {result['wakeup_us']['monitor_cost_range'][1]:.2f})")
    for rate, cost in windows.items():
        print(f"a fidelity window with {rate} wake-ups, its event written: {cost * 1e6:.1f} µs")
    for name, share in shares.items():
        print(f"  {name} ({RATES[name]} wake-ups/s): {100 * share:.3f}% of a core")
    print(f"a host sample with {len(pids)} containers' cgroups: {host * 1e3:.2f} ms CPU a second "
          f"({100 * host:.2f}% of a core for the whole run)")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fidelity_overhead.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
