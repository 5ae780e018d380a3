"""The run directory: its layout, its manifest, and finishing one whose run was killed.

    runs/<run-id>/
      manifest.json       what docs/RUNDIR.md describes (schema: `testbed schema manifest`)
      timeline.jsonl      the timeline as executed, one action per line, written as it happens
      pcap/<node>.pcap    captures (<node>.<interface>.pcap while a node with several is captured)
      pcap/<node>[.<interface>].capture.log   tcpdump's report: packets captured, kernel drops
      logs/<node>.jsonl   event logs (under nodes/<node>/events.jsonl while the run goes on)
      nodes/<node>/       each node's directory: config.json, and its event log during the run
      teardown-stacks.txt only when the run's ending took over TEARDOWN_STACKS_S: its threads'
                          stacks every TEARDOWN_STACKS_S, to tell where it hung

A run that ends in any way (completed, failed, interrupted) moves the logs, merges the captures
and writes the final manifest itself. A run whose process was killed (SIGKILL, a crash of the
machine's Python) cannot: `testbed clean` then finishes its directory with `finish` (status
`aborted`, ended at its last packet) once the run's processes are gone, so that nothing captured
is lost and the analysis reads it like any other. Each running run records its directory in a
pointer file (names.run_pointer) for that.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import struct
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .agent_config import LOG_NAME
from .names import RUNS_DIR, run_pointer

#: the manifest's format; the analysis refuses manifests of a newer format than it reads
MANIFEST_VERSION = 1
MANIFEST = "manifest.json"
TIMELINE = "timeline.jsonl"
TEARDOWN_STACKS = "teardown-stacks.txt"
#: a run's ending (stopping agents, merging captures, removing the lab) takes seconds to a minute
#: or two; one still under way after this writes its threads' stacks, and again every as long
TEARDOWN_STACKS_S = 300


def write_manifest(run_dir: str, manifest: Dict[str, Any]) -> None:
    """Replace the manifest atomically (a reader never sees half of it)."""
    path = os.path.join(run_dir, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(manifest, handle, indent=2, default=str)
    os.replace(tmp, path)


def read_manifest(run_dir: str) -> Dict[str, Any]:
    with open(os.path.join(run_dir, MANIFEST)) as handle:
        return json.load(handle)


class TimelineLog:
    """The timeline as executed, appended action by action, so that a killed run keeps it."""

    def __init__(self, run_dir: str) -> None:
        self._file = open(os.path.join(run_dir, TIMELINE), "a", buffering=1)

    def append(self, record: Dict[str, Any]) -> None:
        self._file.write(json.dumps(record, default=str) + "\n")

    def close(self) -> None:
        self._file.close()


def read_timeline(run_dir: str) -> List[Dict[str, Any]]:
    """The executed actions of timeline.jsonl (a line cut short by a kill is left out)."""
    records = []
    try:
        with open(os.path.join(run_dir, TIMELINE)) as handle:
            for line in handle:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        pass
    return records


def collect_logs(run_dir: str, node_dirs: Dict[str, str]) -> Dict[str, int]:
    """Move each node's event log to logs/<node>.jsonl; the number of events of each."""
    logs = os.path.join(run_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    counts = {}
    for name, node_dir in node_dirs.items():
        source = os.path.join(node_dir, LOG_NAME)
        target = os.path.join(logs, f"{name}.jsonl")
        if os.path.exists(source):
            shutil.move(source, target)
        if os.path.exists(target):
            with open(target, "rb") as handle:
                counts[name] = sum(1 for _ in handle)
    return counts


# -- pointers to running runs ----------------------------------------------------------------------

def _start_time(pid: int) -> Optional[int]:
    """The process's start time (clock ticks since boot), to tell it from a later one with its pid."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def record_running(lab: str, run_dir: str) -> None:
    """Say that this process is running the run in `run_dir` (removed by `forget_running`)."""
    os.makedirs(RUNS_DIR, exist_ok=True)
    pid = os.getpid()
    with open(run_pointer(lab) + ".tmp", "w") as handle:
        json.dump({"lab": lab, "run_dir": run_dir, "pid": pid, "pid_start": _start_time(pid)}, handle)
    os.replace(run_pointer(lab) + ".tmp", run_pointer(lab))


def forget_running(lab: str) -> None:
    try:
        os.remove(run_pointer(lab))
    except FileNotFoundError:
        pass


def _live_pointer(run_dir: str) -> Optional[Dict[str, Any]]:
    target = os.path.realpath(run_dir)
    for pointer in live_runs():
        if os.path.realpath(pointer.get("run_dir") or "/") == target:
            return pointer
    return None


def running_in(run_dir: str) -> Optional[int]:
    """The pid of a live `testbed run` writing `run_dir`, if one is recorded."""
    pointer = _live_pointer(run_dir)
    return int(pointer["pid"]) if pointer else None


def lab_running_in(run_dir: str) -> Optional[str]:
    """The lab of a live `testbed run` writing `run_dir`, if one is recorded."""
    pointer = _live_pointer(run_dir)
    return pointer.get("lab") if pointer else None


def _pointers() -> List[Dict[str, Any]]:
    """The recorded runs, each with `alive`: whether its process still runs."""
    found = []
    if not os.path.isdir(RUNS_DIR):
        return found
    for entry in sorted(os.listdir(RUNS_DIR)):
        if not entry.endswith(".json"):
            continue
        try:
            with open(os.path.join(RUNS_DIR, entry)) as handle:
                pointer = json.load(handle)
        except (OSError, ValueError):
            continue
        pid = pointer.get("pid")
        pointer["alive"] = bool(pid and pointer.get("pid_start") is not None
                                and _start_time(pid) == pointer["pid_start"])
        found.append(pointer)
    return found


def killed_runs(lab: Optional[str] = None) -> List[Dict[str, Any]]:
    """The recorded runs whose process is gone (or one lab's)."""
    return [p for p in _pointers() if not p["alive"] and (lab is None or p.get("lab") == lab)]


def live_runs() -> List[Dict[str, Any]]:
    """The recorded runs whose process still runs."""
    return [p for p in _pointers() if p["alive"]]


def finish_killed_runs(runs: Iterable[Dict[str, Any]]) -> Tuple[List[str], List[str]]:
    """Finish the directories of killed runs (their processes must be gone); (finished, problems)."""
    finished, problems = [], []
    for pointer in runs:
        run_dir = pointer.get("run_dir") or ""
        try:
            if os.path.isfile(os.path.join(run_dir, MANIFEST)):
                finish(run_dir, reason=f"its process (pid {pointer.get('pid')}) was killed")
                finished.append(run_dir)
        except Exception as exc:  # keep the pointer: a later clean tries again
            problems.append(f"finishing the run directory {run_dir}: {exc}")
            continue
        forget_running(pointer.get("lab", ""))
    return finished, problems


# -- finishing a killed run's directory ------------------------------------------------------------

def finish(run_dir: str, reason: str) -> Dict[str, Any]:
    """What the run would have done at its end, from what it left: captures merged, logs moved to
    logs/, the timeline and capture statistics in the manifest, status `aborted`, ended at its last
    packet (or last event). Safe to call again."""
    from collect.capture import merge_interfaces, statistics_of

    manifest = read_manifest(run_dir)
    if manifest.get("status") not in ("running", "aborted"):
        return manifest
    pcap_dir = os.path.join(run_dir, "pcap")
    merge_interfaces(pcap_dir)
    interfaces = {n: list(intfs) for n, intfs in (manifest.get("addresses") or {}).items()}
    manifest["capture"] = statistics_of(pcap_dir, interfaces)
    nodes_dir = os.path.join(run_dir, "nodes")
    node_dirs = {n: os.path.join(nodes_dir, n) for n in (sorted(os.listdir(nodes_dir)) if os.path.isdir(nodes_dir)
                                                         else [])}
    manifest["log_events"] = collect_logs(run_dir, node_dirs)
    manifest["timeline"] = read_timeline(run_dir)
    from .radio.record import to_parquet

    problem = to_parquet(run_dir)  # the radio tables it recorded tick by tick
    if problem:
        manifest.setdefault("problems", []).append(problem)
    last = last_packet_ns(pcap_dir)
    manifest["ended_by"] = "last packet" if last is not None else "last event"
    if last is None:
        last = last_event_ns(os.path.join(run_dir, "logs")) or manifest.get("started_ns")
    manifest["status"] = "aborted"
    manifest["error"] = f"the run did not finish: {reason}; finished by 'testbed clean'"
    manifest["ended_ns"] = last
    if last:
        manifest["ended_at"] = datetime.datetime.fromtimestamp(last / 1e9, datetime.timezone.utc).isoformat()
    manifest["finished_at"] = datetime.datetime.fromtimestamp(time.time(), datetime.timezone.utc).isoformat()
    write_manifest(run_dir, manifest)
    return manifest


def last_packet_ns(pcap_dir: str) -> Optional[int]:
    """The time of the last whole record of any capture in the directory (classic pcap)."""
    last = None
    for name in os.listdir(pcap_dir) if os.path.isdir(pcap_dir) else []:
        if name.endswith(".pcap"):
            t = _last_record_ns(os.path.join(pcap_dir, name))
            if t is not None and (last is None or t > last):
                last = t
    return last


_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
          b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}


def _last_record_ns(path: str) -> Optional[int]:
    """Walk the record headers of a pcap file to its last whole record; its time in ns."""
    with open(path, "rb") as handle:
        data = handle.read()
    if len(data) < 24 or data[:4] not in _MAGIC:
        return None
    order, unit = _MAGIC[data[:4]]
    header = struct.Struct(order + "IIII")
    offset, last = 24, None
    while offset + 16 <= len(data):
        sec, frac, incl, _ = header.unpack_from(data, offset)
        if offset + 16 + incl > len(data):
            break  # cut short by the kill
        last = sec * 1_000_000_000 + frac * unit
        offset += 16 + incl
    return last


def last_event_ns(logs_dir: str) -> Optional[int]:
    """The largest "t" of the last lines of the event logs."""
    last = None
    for name in os.listdir(logs_dir) if os.path.isdir(logs_dir) else []:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(logs_dir, name), "rb") as handle:
            handle.seek(max(0, os.path.getsize(handle.name) - 65536))
            for line in handle.read().splitlines()[-20:]:
                try:
                    t = int(json.loads(line).get("t"))
                except (ValueError, TypeError, AttributeError):
                    continue
                last = t if last is None or t > last else last
    return last


# -- the manifest's JSON Schema --------------------------------------------------------------------

STATUSES = ("running", "completed", "failed", "interrupted", "aborted")


def manifest_schema() -> Dict[str, Any]:
    """The JSON Schema of manifest.json (`testbed schema manifest`; docs/RUNDIR.md explains it)."""
    ns = {"type": "integer", "minimum": 0}
    seconds = {"type": "number", "minimum": 0}
    obj = {"type": "object"}
    executed = {
        "type": "object", "required": ["action", "t_ns", "ok", "from"],
        "properties": {
            "action": {"type": "string", "description": "a timeline action (testbed/actions), heal_all at the "
                                                        "end of the scenario, or what the run observed: oom (the "
                                                        "OOM killer ended a process of the node at its memory "
                                                        "limit), pids_limit (the node's forks were refused)"},
            "observed": {"type": "boolean", "description": "true for an event the run observed, not played"},
            "count": {"type": "integer", "minimum": 1, "description": "an observed event: how many (kills, forks "
                                                                      "refused) since the last sample"},
            "limit": {"type": "string", "description": "an observed event: the limit met, e.g. memory limit (64MiB)"},
            "planned_s": {"type": "number", "description": "when the schedule wanted it, s after t0"},
            "t_s": {"type": "number", "description": "when it began, s after t0"},
            "t_ns": {**ns, "description": "when it began (CLOCK_REALTIME ns)"},
            "done_ns": {**ns, "description": "when it was done"},
            "ok": {"type": "boolean", "description": "false when it failed; the run went on"},
            "error": {"type": "string", "description": "why it failed"},
            "details": {"description": "what it reported (an exec's exit code and output, a partition's groups)"},
            "from": {"type": "string", "description": "the timeline entry it came from, e.g. timeline[2] or "
                                                      "timeline[2] for 4s (an undo)"},
            "node": {"type": "string"}, "link": {"type": "array", "items": {"type": "string"}},
            "direction": {"enum": ["a_to_b", "b_to_a"]},
        },
    }
    capture = {"type": "object", "additionalProperties": {
        "type": "object", "required": ["captured", "kernel_drops", "interfaces"],
        "properties": {"captured": ns, "kernel_drops": ns, "interfaces": {"type": "array", "items": {"type": "string"}},
                       "incomplete_statistics": {"type": "boolean"}}}}
    number_or_null = {"type": ["number", "null"]}
    radio = {"type": "object", "description": "radio segment -> what the radio medium emulated and did "
                                             "(testbed/media/radio.py; docs/RUNDIR.md)",
             "additionalProperties": {
                 "type": "object", "required": ["range_m", "loss", "members", "tick_s"],
                 "properties": {
                     "range_m": seconds, "loss": obj, "bitrate_kbit": number_or_null,
                     "queue_frames": {"type": "integer", "minimum": 1}, "delay_ms": seconds, "jitter_ms": seconds,
                     "tick_s": seconds, "trace": {"type": ["object", "null"]}, "bridge": {"type": ["string", "null"]},
                     "members": {"type": "object", "additionalProperties": {"type": "string"},
                                 "description": "member -> its radio interface"},
                     "mobility": {"type": "object", "description": "member -> its track's description"},
                     "moves": {"type": "array", "items": obj}, "ticks": ns,
                     "tick_ms_median": number_or_null, "tick_ms_max": number_or_null,
                     "ticks_scheduled": ns, "ticks_skipped": ns, "tick_late_ms_p99": number_or_null,
                     "tick_late_ms_max": number_or_null,
                     "airtime": {"type": "object", "additionalProperties": obj,
                                 "description": "member -> frames, bytes and dropped by its airtime queue"},
                     "channel": {"enum": ["kernel", "wifi"], "description": "what carried the frames"},
                     "wifi": {"type": "object", "description": "the 802.11 channel's standard, rates, modes and "
                                                               "propagation (channel wifi)"},
                     "macs": {"type": "object", "description": "member -> the MAC address of its ns-3 device"},
                     "ports": {"type": "object", "description": "member -> its veth end on the machine"},
                     "wifi_statistics": {
                         "type": "object", "additionalProperties": {"type": ["object", "null"]},
                         "description": "member -> what happened to its frames in ns-3: frames from and to its "
                                        "interface, PHY transmissions, receptions, losses and drops by reason, MAC "
                                        "retries and drops, queueing delay (docs/RUNDIR.md)"},
                     "realtime_lag_ms": {"type": ["object", "null"],
                                         "description": "ns-3's lag behind the wall clock: samples, p50, p99, max"},
                     "ns3_seed": {"type": ["integer", "null"]}, "ns3_run": {"type": ["integer", "null"]},
                     "mac_queue_max_delay_ms": {"type": "number"},
                     "error": {"type": "string"}}}}
    cables = {"type": "object", "description": "what the cables medium did (testbed/media/cable.py)",
              "properties": {"queues": {
                  "type": "array", "description": "each direction of a link that had a bandwidth: its queue's "
                                                  "counters at the run's end (docs/RUNDIR.md)",
                  "items": {"type": "object", "required": ["link", "from", "to"],
                            "properties": {"link": {"type": "string"}, "from": {"type": "string"},
                                           "to": {"type": "string"}, "bandwidth_mbit": seconds,
                                           "frames": ns, "bytes": ns, "dropped": ns, "overlimits": ns}}}}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"testbed run manifest (format {MANIFEST_VERSION})",
        "description": "runs/<run-id>/manifest.json; see docs/RUNDIR.md. Readers refuse a manifest_version above "
                       "the one they know and ignore fields they do not know.",
        "type": "object",
        "required": ["manifest_version", "run_id", "status", "started_ns", "seed", "node_ids", "addresses"],
        "properties": {
            "manifest_version": {"type": "integer", "minimum": 1, "maximum": MANIFEST_VERSION},
            "run_id": {"type": "string", "description": "<date>-<time>-<scenario>-s<seed>"},
            "status": {"enum": list(STATUSES), "description": "running (or a killed run not yet finished by "
                                                               "testbed clean), completed, failed, interrupted "
                                                               "(Ctrl-C, SIGTERM), aborted (killed; finished by "
                                                               "testbed clean)"},
            "error": {"type": "string"}, "problems": {"type": "array", "items": {"type": "string"}},
            "started_at": {"type": "string", "format": "date-time"}, "started_ns": ns,
            "t0_ns": {**ns, "description": "the scenario clock's zero: the workload started at every agent"},
            "workload_end_ns": ns,
            "ended_at": {"type": "string", "format": "date-time"},
            "ended_ns": {**ns, "description": "an aborted run's last packet (or last event)"},
            "ended_by": {"enum": ["last packet", "last event"]},
            "finished_at": {"type": "string", "format": "date-time"},
            "clock": {"type": "string"}, "seed": {"type": "integer", "minimum": 0},
            "scenario": {**obj, "description": "the scenario as resolved, with its schedule"},
            "topology": {**obj, "description": "the topology as resolved (testbed topo show)"},
            "node_ids": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
                         "description": "node -> its id in the wire header"},
            "addresses": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": {"type": "string"}},
                "description": "node -> interface -> address/prefix"},
            "command": {"type": "array", "items": {"type": "string"}},
            "promises": {"type": "array", "items": {"type": "string"},
                         "description": "what the roles' protocols promise the checks (contiguous-order)"},
            "warnings": {"type": "array", "items": {"type": "string"},
                         "description": "what the lab's checks warned of before anything was created"},
            "versions": obj, "capabilities": obj, "build_seconds": obj, "teardown_seconds": seconds,
            "capture": capture,
            "log_events": {"type": "object", "additionalProperties": ns},
            "timeline": {"type": "array", "items": executed},
            "radio": radio,
            "cables": cables,
            "time_dilation": {"type": "number", "minimum": 1,
                              "description": "the emulated world ran this many times slower than the wall clock"},
            "clock_origin_ns": {**ns, "description": "the wall-clock instant every node's virtual clock counts from: "
                                                     "virtual = origin + (wall - origin) / time_dilation"},
            "limits_hit": {"type": "object", "description": "node -> what its resource limits stopped over the run: "
                                                            "oom (processes the OOM killer ended), pids_limit (forks "
                                                            "refused)",
                           "additionalProperties": {"type": "object", "properties": {"oom": ns, "pids_limit": ns}}},
            "host_monitor": {"type": "object", "description": "host.jsonl: the machine sampled every second",
                             "properties": {"file": {"type": "string"}, "samples": ns, "interval_s": seconds,
                                            "error": {"type": "string"}}},
        },
    }
