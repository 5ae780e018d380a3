"""Helpers for the network tests: probes in node namespaces and binomial bounds."""

from __future__ import annotations

import json
import math
import os
import subprocess
from typing import Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
PROBE = os.path.join(ROOT, "tests", "netprobe.py")


def benchmark(name: str):
    """A script of benchmarks/ imported as a module, the directory on the path while it loads
    (the scripts import one another by name)."""
    import importlib
    import sys

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


class FakeClock:
    """A wall clock in seconds that moves only when a task sleeps through it or the test says work
    took time (`now += ...`): the agent clock's seams (agents/clock.py Clock: monotonic=time,
    realtime_ns, wall_sleep=sleep) for schedules that must be exact."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now
        self.sleeps: list = []

    def time(self) -> float:
        return self.now

    def realtime_ns(self) -> int:
        return int(self.now * 1e9)

    async def sleep(self, seconds: float) -> None:
        import asyncio

        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # other tasks get their turn, as they would while it sleeps


def start_probe(lab, node: str, *args) -> subprocess.Popen:
    """Start a receiving probe in a node and wait until it listens."""
    proc = lab.hosts[node].popen([PYTHON, PROBE, *map(str, args)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, universal_newlines=True)
    line = proc.stdout.readline().strip()
    assert line == "ready", f"probe in {node} did not start: {line} {proc.stderr.read() if proc.poll() is not None else ''}"
    return proc


def finish(proc: subprocess.Popen, timeout: float = 60) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def run_probe(lab, node: str, *args, timeout: float = 60) -> str:
    proc = lab.hosts[node].popen([PYTHON, PROBE, *map(str, args)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, universal_newlines=True)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def warm_arp(lab, src: str, dst_ip: str) -> None:
    """Resolve the neighbour before a measurement, so that ARP is not part of what is measured."""
    for _ in range(20):
        if "1 received" in lab.exec(src, f"ping -c1 -W1 {dst_ip}", check=False):  # a lost ping is no error here
            return
    raise AssertionError(f"{src} cannot reach {dst_ip}")


def _log_pmf(n: int, k: int, p: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)


def binomial_interval(n: int, p: float, confidence: float = 1 - 1e-6) -> Tuple[int, int]:
    """The central interval [lo, hi] that holds Binomial(n, p) with at least `confidence`.

    The suite makes eight such checks a run and CI runs it at every stop, so at 0.999 one suite run
    in about a hundred failed by chance (it did: 677 duplicates of 3,000 at p = 0.2, 3.5 standard
    deviations out, while 20 repeats on the same link gave a rate of 0.1989). At 1 - 1e-6 the
    interval is about 4.9 deviations wide each side and still tells every fault the checks are
    for: 3,000 frames at p = 0.2 hold [495, 709], so a duplicate duplicated again (750 expected),
    a rate read as per cent or per mille, or no shaping at all falls outside."""
    tail = (1 - confidence) / 2
    pmf = [math.exp(_log_pmf(n, k, p)) for k in range(n + 1)]
    lo, acc = 0, 0.0
    while acc + pmf[lo] < tail:
        acc += pmf[lo]
        lo += 1
    hi, acc = n, 0.0
    while acc + pmf[hi] < tail:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


def cli_in_process(*args, cwd=None) -> Tuple[int, str, str]:
    """`testbed ARGS` run in this process, with what it printed: (exit code, stdout, stderr). Its
    analysis takes the suite's Spark session (SparkSession.getOrCreate: tests/conftest.py's
    `spark`) instead of starting a JVM of its own, which is most of what a short analysis costs.
    Runs it starts are processes of their own all the same."""
    import contextlib
    import io

    from testbed.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


def testbed_cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """`testbed ARGS` in this process (cli_in_process), as the CompletedProcess that a test
    written against the command's exit code and output reads: a run then costs no interpreter
    start and no imports."""
    code, out, err = cli_in_process(*args, cwd=cwd)
    return subprocess.CompletedProcess(list(args), code, out, err)
