"""The machine's side of a run's fidelity: whether the host kept up with what it emulated.

A thread samples, every second of the run, what the kernel says of the whole machine and of each
node's container, and appends one JSON line to `RUN_DIR/host.jsonl` (docs/RUNDIR.md):

- `cpu_busy`: the share of all cores' time spent busy in the interval (/proc/stat: everything
  but idle and iowait), and `cpu_busy_max_core`, the busiest core's share;
- `procs_running` and `procs_blocked` (/proc/stat): the run queue;
- `cpu_some`, `memory_some`, `memory_full`: the share of the interval in which some (or all)
  runnable tasks were stalled waiting for a CPU or for memory (pressure stall information,
  /proc/pressure; absent where the kernel has none);
- `mem_available_mib` (/proc/meminfo);
- `nodes`: per node with a cgroup of its own (a container), the CPU its processes used
  (`cpu_us`) and, when the cgroup is throttled by a CPU quota, the time it was
  (`throttled_us`), from the cgroup's cpuacct/cpu.stat (version 1) or cpu.stat (version 2).

The agents measure the rest (their timers' lateness, agents/clock.py); the analysis judges both
(spark_analysis/fidelity.py). Sampling costs a few milliseconds a second; a file it cannot read
(a container that just went away) is skipped for that sample.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: the fidelity indicators the analysis judges (spark_analysis/fidelity.py), each with its default
#: thresholds (degraded above, unfaithful above; None: never that level); a scenario's `fidelity:`
#: mapping sets its own
THRESHOLDS: Dict[str, Tuple[Optional[float], Optional[float]]] = {
    "late_share": (0.01, 0.05),
    "skipped_share": (0.001, 0.01),
    "loop_lag_ms": (20.0, 100.0),
    "cpu_saturated_share": (0.25, None),
    "throttled_share": (0.01, 0.1),
    "memory_full_share": (0.01, 0.1),
    "capture_drop_share": (0.0, 0.01),
    "radio_tick_late_share": (0.1, 0.5),
    "radio_skipped_share": (0.001, 0.01),
    "wifi_lag_ms": (10.0, 100.0),
    "rate_shortfall": (0.02, 0.05),
}
#: after a node comes back (resumed, restarted), its windows this long are left out as well
AFTER_DOWN_NS = 1_000_000_000
#: a second counts as saturated when the machine's cores were this busy
SATURATED = 0.95
#: what each indicator measures, for the reasons and the report
MEANING = {
    "late_share": "share of periodic wake-ups late by more than a tenth of their period",
    "skipped_share": "share of periodic ticks skipped because the task fell a whole period behind",
    "loop_lag_ms": "the agents' event-loop lag, 99th percentile of each agent's largest per second (ms)",
    "cpu_saturated_share": f"share of seconds with the machine's cores at least {SATURATED:.0%} busy",
    "throttled_share": "largest share of the run a node's container was held back by its CPU quota",
    "memory_full_share": "share of the run in which all tasks stalled waiting for memory",
    "capture_drop_share": "share of packets the captures' kernel buffers dropped",
    "radio_tick_late_share": "the radio ticker's 99th percentile lateness, as a share of its tick",
    "radio_skipped_share": "share of the radio's scheduled ticks skipped",
    "wifi_lag_ms": "the 802.11 channel's simulator behind the wall clock, 99th percentile (ms)",
    "rate_shortfall": "largest share of its run a rate-driven role lost by falling short of the rate asked, beyond chance",
}

HOST_FILE = "host.jsonl"
SAMPLE_S = 1.0
CGROUP_ROOT = "/sys/fs/cgroup"


def read_proc_stat(path: str = "/proc/stat") -> Dict[str, Any]:
    """{"total": [busy, all] jiffies of all cores, "cores": [[busy, all] per core], "procs_running",
    "procs_blocked"}."""
    out: Dict[str, Any] = {"cores": []}
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if not parts:
                continue
            if parts[0].startswith("cpu"):
                values = [int(v) for v in parts[1:]]
                # user nice system idle iowait irq softirq steal (guest is inside user)
                idle = values[3] + (values[4] if len(values) > 4 else 0)
                whole = sum(values[:8])
                pair = [whole - idle, whole]
                if parts[0] == "cpu":
                    out["total"] = pair
                else:
                    out["cores"].append(pair)
            elif parts[0] in ("procs_running", "procs_blocked"):
                out[parts[0]] = int(parts[1])
    return out


def read_pressure(resource: str, root: str = "/proc/pressure") -> Optional[Dict[str, int]]:
    """{"some": total µs, "full": total µs} of /proc/pressure/<resource>, None without PSI."""
    try:
        with open(os.path.join(root, resource)) as handle:
            text = handle.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in ("some", "full"):
            fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            out[parts[0]] = int(fields.get("total", 0))
    return out


def read_mem_available_kib(path: str = "/proc/meminfo") -> Optional[int]:
    with open(path) as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return None


def cgroup_of(pid: int) -> Dict[str, str]:
    """controller → the process's cgroup path (version 2's unified hierarchy under "")."""
    out = {}
    with open(f"/proc/{pid}/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in (controllers.split(",") if controllers else [""]):
                out[controller] = path
    return out


def own_group_dirs(pid: int, controllers: Sequence[str],
                   root: str = CGROUP_ROOT) -> Optional[Tuple[int, Dict[str, List[str]]]]:
    """(cgroup version, controller → the directories that may hold the files of the group holding
    `pid`): on version 2 the one unified directory for every controller; on version 1 the group's
    directory under each hierarchy the controller is mounted in ("cpu", "cpu,cpuacct", ...).
    A controller whose group is this very process's is left out (a node without a group of its
    own has nothing to count there); None when the process is gone."""
    try:
        theirs, ours = cgroup_of(pid), cgroup_of(os.getpid())
    except OSError:
        return None
    if "" in theirs and os.path.isfile(os.path.join(root, "cgroup.controllers")):
        if theirs[""] == ours.get(""):
            return 2, {}
        unified = os.path.join(root, theirs[""].lstrip("/"))
        return 2, {controller: [unified] for controller in controllers}
    try:
        mounts = sorted(os.listdir(root))
    except OSError:
        return None
    dirs = {}
    for controller in controllers:
        path = theirs.get(controller)
        if path is not None and path != ours.get(controller):
            dirs[controller] = [os.path.join(root, mount, path.lstrip("/"))
                                for mount in mounts if controller in mount.split(",")]
    return 1, dirs


def in_group(dirs: Dict[str, List[str]], controller: str, name: str) -> Optional[str]:
    """The first of the controller's directories that has the file `name`, as a path."""
    return _first_file([os.path.join(d, name) for d in dirs.get(controller, [])])


def cgroup_files(pid: int, root: str = CGROUP_ROOT) -> Optional[Tuple[str, str]]:
    """(usage file, cpu.stat file) of the cgroup holding `pid`, or None when it is this very
    process's (a node without a container of its own) or cannot be found."""
    found = own_group_dirs(pid, ("cpu", "cpuacct"), root)
    if found is None:
        return None
    version, dirs = found
    stat = in_group(dirs, "cpu", "cpu.stat")
    if version == 2:
        return (stat, stat) if stat else None
    usage = in_group(dirs, "cpuacct", "cpuacct.usage")
    return (usage, stat or "") if usage else None


def _first_file(paths: List[str]) -> Optional[str]:
    return next((p for p in paths if os.path.isfile(p)), None)


def read_cgroup_cpu(files: Tuple[str, str]) -> Tuple[int, int]:
    """(CPU used, throttled) in µs from a cgroup's files (version 1 or 2)."""
    usage_file, stat_file = files
    stat: Dict[str, int] = {}
    if stat_file:
        with open(stat_file) as handle:
            for line in handle:
                key, _, value = line.partition(" ")
                if value.strip().isdigit():
                    stat[key] = int(value)
    if usage_file == stat_file:  # version 2: one file, microseconds
        return stat.get("usage_usec", 0), stat.get("throttled_usec", 0)
    with open(usage_file) as handle:  # version 1: cpuacct.usage in ns, throttled_time in ns
        used_ns = int(handle.read().strip() or 0)
    return used_ns // 1000, stat.get("throttled_time", 0) // 1000


class HostMonitor:
    """Samples the machine every `interval` seconds into `RUN_DIR/host.jsonl` from `start()` to
    `stop()`; `pids()` gives the nodes' pids whose cgroups to read (asked again every sample, so
    that a node restarted mid-run is followed)."""

    def __init__(self, run_dir: str, pids: Callable[[], Dict[str, int]], interval: float = SAMPLE_S,
                 watch: Optional[Any] = None, watch_pids: Optional[Callable[[], Dict[str, int]]] = None,
                 on_limit: Optional[Callable[[str, str, int], None]] = None) -> None:
        """`watch` (testbed.limit_events.LimitWatch), polled each sample with `watch_pids()`,
        gives `on_limit(node, event, count)` the nodes that met a resource limit."""
        self.path = os.path.join(run_dir, HOST_FILE)
        self.pids = pids
        self.watch, self.watch_pids, self.on_limit = watch, watch_pids or pids, on_limit
        self.interval = interval
        self.samples = 0
        self.error: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._cgroups: Dict[int, Optional[Tuple[str, str]]] = {}
        self._before: Optional[Dict[str, Any]] = None

    def start(self) -> None:
        self._handle = open(self.path, "a", buffering=1)
        self._before = self._read()
        self._thread = threading.Thread(target=self._loop, name="host-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        self._sample()  # the interval up to now
        self._handle.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._sample()
            except Exception as exc:  # the run goes on; the manifest says why the samples stopped
                self.error = f"{type(exc).__name__}: {exc}"
                return

    def _read(self) -> Dict[str, Any]:
        now = {"t": time.time_ns(), "mono": time.monotonic(), "stat": read_proc_stat(),
               "cpu": read_pressure("cpu"), "memory": read_pressure("memory"), "nodes": {}}
        for node, pid in (self.pids() or {}).items():
            if pid not in self._cgroups:
                self._cgroups[pid] = cgroup_files(pid)
            files = self._cgroups[pid]
            if files is None:
                continue
            try:
                now["nodes"][node] = read_cgroup_cpu(files)
            except (OSError, ValueError):
                continue
        return now

    def _sample(self) -> None:
        before, now = self._before, self._read()
        self._before = now
        line = sample_line(before, now)
        line["mem_available_mib"] = round((read_mem_available_kib() or 0) / 1024, 1)
        self._handle.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.samples += 1
        if self.watch is not None and self.on_limit is not None:
            for node, event, count in self.watch.poll(self.watch_pids() or {}):
                self.on_limit(node, event, count)


def sample_line(before: Dict[str, Any], now: Dict[str, Any]) -> Dict[str, Any]:
    """One line of host.jsonl from two readings (see the module's description)."""
    interval_us = max((now["mono"] - before["mono"]) * 1e6, 1.0)
    stat0, stat1 = before["stat"], now["stat"]

    def share(pair0, pair1) -> float:
        busy, whole = pair1[0] - pair0[0], pair1[1] - pair0[1]
        return round(busy / whole, 4) if whole > 0 else 0.0

    cores = [share(a, b) for a, b in zip(stat0["cores"], stat1["cores"])]
    line: Dict[str, Any] = {"t": now["t"], "interval_s": round(interval_us / 1e6, 3),
                            "cores": len(cores), "cpu_busy": share(stat0["total"], stat1["total"]),
                            "cpu_busy_max_core": max(cores) if cores else None,
                            "procs_running": stat1.get("procs_running"), "procs_blocked": stat1.get("procs_blocked")}
    for resource, kinds in (("cpu", ("some",)), ("memory", ("some", "full"))):
        if before[resource] is not None and now[resource] is not None:
            for kind in kinds:
                stalled = now[resource].get(kind, 0) - before[resource].get(kind, 0)
                line[f"{resource}_{kind}"] = round(min(max(stalled / interval_us, 0.0), 1.0), 4)
    nodes = {}
    for node, (used, throttled) in now["nodes"].items():
        if node in before["nodes"]:
            used0, throttled0 = before["nodes"][node]
            nodes[node] = {"cpu_us": max(used - used0, 0), "throttled_us": max(throttled - throttled0, 0)}
    line["nodes"] = nodes
    return line
