"""Vehicles and walkers from SUMO: a street grid (netgenerate), cars on long random routes and
walkers on long random walks (randomTrips), simulated by sumo, exported as an ns-2 movement
trace (traceExporter) for a radio segment's `trace:`.

The trace's `node_(i)` are the cars first (i = 0 .. cars−1), then the walkers, so that a
topology whose segment lists `members: [car, walker]` (kinds of cars and walkers nodes, in that
number) is moved by it without a `nodes:` list. Every step is seeded, so one seed gives one
trace; a JSON file beside the trace records how it was made and which SUMO id each index is.

The defaults are the DEECo thesis's scenario (section 7.2): the centre of Berlin, "8 km
perimeter" (a 2 km square), 100 car drivers and 100 walkers, 15 minutes; a grid of 250 m
blocks stands in for Berlin's streets (MATSim there, SUMO here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional

from ..errors import CapabilityError, TestbedError, UsageError

SUMO_HOME = "/usr/share/sumo"
TOOLS = ("netgenerate", "sumo", "duarouter")


@dataclass(frozen=True)
class Streets:
    size_m: float = 2000.0
    block_m: float = 250.0
    cars: int = 100
    walkers: int = 100
    duration_s: float = 900.0
    seed: int = 1

    def check(self) -> None:
        """UsageError naming the option and what is allowed."""
        for name, value, low, high in (("size", self.size_m, 100.0, 50_000.0), ("block", self.block_m, 20.0, 5_000.0),
                                       ("duration", self.duration_s, 1.0, 86_400.0)):
            if not low <= value <= high:
                raise UsageError(f"--{name} {value:g} is out of range (allowed: {low:g} to {high:g})")
        if self.block_m * 2 > self.size_m:
            raise UsageError(f"--block {self.block_m:g} leaves fewer than 3 streets a side in --size {self.size_m:g}")
        for name, value in (("cars", self.cars), ("walkers", self.walkers)):
            if not 0 <= value <= 10_000:
                raise UsageError(f"--{name} {value} is out of range (allowed: 0 to 10000)")
        if self.cars + self.walkers == 0:
            raise UsageError("--cars and --walkers are both 0: nothing would move")
        if not 1 <= self.seed <= 2 ** 31 - 1:
            raise UsageError(f"--seed {self.seed} is out of range (allowed: 1 to 2147483647)")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "testbed", "sumo")


def cached(streets: Streets, progress: Callable[[str], None] = lambda message: None) -> str:
    """The trace of these streets (`trace: {sumo: ...}` in a topology): made once and kept in the
    cache (~/.cache/testbed/sumo), named by every setting and SUMO's version."""
    import hashlib

    key = hashlib.sha256(json.dumps([asdict(streets), _version()], sort_keys=True).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir(), f"{streets.cars}c-{streets.walkers}w-{streets.size_m:g}m-"
                                     f"{streets.duration_s:g}s-seed{streets.seed}-{key}.ns2")
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        generate(path, streets, progress=progress)
    return path


def missing_tools() -> List[str]:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    tools = os.path.join(os.environ.get("SUMO_HOME", SUMO_HOME), "tools")
    for script in ("randomTrips.py", "traceExporter.py"):
        if not os.path.exists(os.path.join(tools, script)):
            missing.append(script)
    return missing


def generate(out: str, streets: Streets, keep: Optional[str] = None,
             progress: Callable[[str], None] = lambda message: None) -> Dict[str, object]:
    """Write the ns-2 trace `out` and `out`.json; return what the JSON says."""
    streets.check()
    missing = missing_tools()
    if missing:
        raise CapabilityError(f"SUMO is not installed: {', '.join(missing)} missing (apt-get install sumo sumo-tools; "
                              f"setup.sh installs them)")
    home = os.environ.get("SUMO_HOME", SUMO_HOME)
    env = {**os.environ, "SUMO_HOME": home}
    tools = os.path.join(home, "tools")
    work = keep or tempfile.mkdtemp(prefix="testbed-sumo-")
    os.makedirs(work, exist_ok=True)

    def step(what: str, args: List[str]) -> None:
        progress(what)
        res = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-5:]
            raise TestbedError(f"SUMO: {what} failed (exit {res.returncode}): {' | '.join(tail)}")

    junctions = int(round(streets.size_m / streets.block_m)) + 1
    # a car drives its whole run: about speed x duration of road, through random intermediate edges
    car_hops = max(2, int(13.9 * streets.duration_s / max(streets.size_m, 1.0)) + 2)
    try:
        step("the street grid (netgenerate)",
             ["netgenerate", "--grid", "--grid.number", str(junctions), "--grid.length", f"{streets.block_m:g}",
              "--sidewalks.guess", "--seed", str(streets.seed), "--output-file", "net.net.xml"])
        routes = []
        if streets.cars:
            step(f"{streets.cars} cars' routes (randomTrips, duarouter)",
                 [sys.executable, os.path.join(tools, "randomTrips.py"), "-n", "net.net.xml", *_departures(streets.cars),
                  "--seed", str(streets.seed), "--prefix", "car",
                  "--intermediate", str(car_hops), "--min-distance", f"{streets.size_m / 2:g}",
                  "-o", "cars.trips.xml", "-r", "cars.rou.xml", "--validate"])
            routes.append("cars.rou.xml")
        if streets.walkers:
            step(f"{streets.walkers} walkers' walks (randomTrips)",
                 [sys.executable, os.path.join(tools, "randomTrips.py"), "-n", "net.net.xml",
                  *_departures(streets.walkers), "--seed", str(streets.seed + 1), "--prefix", "walker",
                  "--pedestrians", "--min-distance", f"{0.75 * streets.size_m:g}", "-o", "walkers.rou.xml"])
            routes.append("walkers.rou.xml")
        step(f"{streets.duration_s:g} s of traffic (sumo)",
             ["sumo", "-n", "net.net.xml", "-r", ",".join(routes), "--begin", "0", "--end", f"{streets.duration_s:g}",
              "--step-length", "1", "--seed", str(streets.seed), "--fcd-output", "fcd.xml", "--no-step-log",
              "--no-warnings"])
        step("the ns-2 movement trace (traceExporter)",
             [sys.executable, os.path.join(tools, "traceExporter.py"), "--fcd-input", "fcd.xml", "--persons",
              "--ns2mobility-output", "sumo.ns2", "--ns2activity-output", "sumo.act"])
        ids = _exported_ids(os.path.join(work, "sumo.act"))
        order = _canonical(ids)
        counts = {"cars": sum(1 for i in order if i.startswith("car")),
                  "walkers": sum(1 for i in order if i.startswith("walker"))}
        if counts != {"cars": streets.cars, "walkers": streets.walkers}:
            raise TestbedError(f"SUMO: {counts['cars']} cars and {counts['walkers']} walkers moved, of "
                               f"{streets.cars} and {streets.walkers} asked (some could not be placed on the grid)")
        index = {sumo_id: order.index(sumo_id) for sumo_id in order}
        renumber = {exported: index[sumo_id] for exported, sumo_id in ids.items()}
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(os.path.join(work, "sumo.ns2")) as source, open(out + ".tmp", "w") as target:
            target.write(f"# SUMO {streets.cars} cars and {streets.walkers} walkers, {streets.size_m:g} m grid of "
                         f"{streets.block_m:g} m blocks, {streets.duration_s:g} s, seed {streets.seed} "
                         f"(testbed mobility sumo); node_(i): cars, then walkers\n")
            for line in source:
                target.write(_NODE.sub(lambda m: f"$node_({renumber[int(m.group(1))]})", line))
        os.replace(out + ".tmp", out)
        made = {"streets": asdict(streets), "nodes": order, "sumo_version": _version(), "trace": os.path.basename(out)}
        with open(out + ".json", "w") as handle:
            json.dump(made, handle, indent=1)
        return made
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _departures(count: int) -> List[str]:
    """randomTrips' begin, end and period for exactly `count` departures within the first second."""
    period = 1.0 / count
    return ["-b", "0", "-e", f"{(count - 0.5) * period:.9f}", "-p", f"{period:.9f}"]


_NODE = re.compile(r"\$node_\((\d+)\)")
_ACTIVITY = re.compile(r'\$g\((\d+)\) start";\s*#\s*SUMO-ID:\s*(\S+)')


def _exported_ids(path: str) -> Dict[int, str]:
    """traceExporter's node index → SUMO id, from its activity file."""
    out: Dict[int, str] = {}
    with open(path) as handle:
        for line in handle:
            match = _ACTIVITY.search(line)
            if match:
                out.setdefault(int(match.group(1)), match.group(2))
    return out


def _canonical(ids: Dict[int, str]) -> List[str]:
    """Cars by number, then walkers by number."""
    def key(sumo_id: str):
        kind = 0 if sumo_id.startswith("car") else 1
        digits = re.sub(r"\D", "", sumo_id)
        return (kind, int(digits) if digits else 0, sumo_id)

    return sorted(set(ids.values()), key=key)


def _version() -> str:
    try:
        res = subprocess.run(["sumo", "--version"], capture_output=True, text=True)
        return res.stdout.splitlines()[0].strip() if res.stdout else ""
    except OSError:
        return ""
