"""Radio segments: a shared broadcast medium with positions, range, radio loss, airtime and
mobility. The medium keeps what every segment has (members' positions and mobility, the ticks
that apply them, the records) and hands each segment to its channel (testbed.radio.channels):
the kernel range medium (`channel: kernel`, the default: a bridge whose nftables forward hook lets
through the copies that range and loss allow) or an 802.11 channel emulated by ns-3 in real time
(`channel: wifi`).

- Mobility: a ticker thread computes every member's position at each tick (static, random
  waypoint from the lab's seed, a trace file, or `move` actions), hands the positions and the
  pairs' delivery probabilities to the channels, writes each moved node's position to
  `position.json` in its node directory (what an agent reads, see agents.runtime.position) and
  records positions and the neighbour graph in the run directory (testbed.radio.record). The
  experiment's clock starts at `begin` (a run's time zero); before it, members stay at their
  positions of time 0.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

import numpy as np

from ..errors import TestbedError
from ..errors import CapabilityError
from ..radio.channels import channel_class
from ..radio.spec import RadioSegment
from .base import Build, Medium, ReceiverPorts
from .channels.base import CLASSES, MAX_MEMBERS

POSITION_FILE = "position.json"
#: bytes of one position record (JSON padded with spaces, then a newline)
POSITION_RECORD = 256


class Radio(Medium):
    name = "radio"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.segments: Dict[str, RadioSegment] = dict(self.topo.radio)
        #: channel name → the channel carrying the segments that name it
        self.channels: Dict[str, Any] = {}
        by_channel: Dict[str, Dict[str, Tuple[int, RadioSegment]]] = {}
        for index, (name, segment) in enumerate(self.segments.items(), start=1):
            by_channel.setdefault(segment.channel, {})[name] = (index, segment)
        for channel, segments in by_channel.items():
            self.channels[channel] = channel_class(channel)(self, segments)
        self._unemulated: FrozenSet[str] = frozenset()
        self._lock = threading.Lock()
        self._tracks: Dict[str, Any] = {}
        self._written: Dict[str, Tuple[float, float, float]] = {}
        self._position_fds: Dict[str, int] = {}
        self._sequence = 0
        self._segment_of = {node: name for name, segment in reversed(list(self.segments.items()))
                            for node in segment.members}
        self._origin: Optional[float] = None  # monotonic time of the clock's zero
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._recorder = None
        self._ticks = 0
        self._tick_seconds: List[float] = []
        self._tick_late: List[float] = []  # how late each scheduled tick started (s)
        self._ticks_skipped = 0  # scheduled ticks skipped because the ticker fell a tick behind
        self._moves: List[Dict[str, Any]] = []
        self._sumo_traces: Dict[str, Dict[str, Any]] = {}  # segment → the SUMO trace it moved by
        self._finished = False
        self.error: Optional[str] = None

    def channel(self, name: str):
        """The channel of that name (KeyError when no segment uses it)."""
        return self.channels[name]

    # -- before anything is created ---------------------------------------------------------------

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        for segment in self.segments.values():
            if len(segment.members) > MAX_MEMBERS:
                raise CapabilityError(f"{self.topo.source}: radio segment {segment.name} has {len(segment.members)} "
                                      f"members; at most {MAX_MEMBERS}")
        unemulated: FrozenSet[str] = frozenset()
        for channel in self.channels.values():
            unemulated |= channel.check(accepted)
        self._unemulated = unemulated
        return self._unemulated

    def warnings(self) -> List[str]:
        return [w for channel in self.channels.values() for w in channel.warnings()]

    def problems(self) -> List[str]:
        found = [f"radio: {self.error}"] if self.error else []
        return found + [f"radio channel {name}: {c.error}" for name, c in self.channels.items() if c.error]

    @property
    def unemulated(self) -> FrozenSet[str]:
        return self._unemulated

    # -- build ------------------------------------------------------------------------------------

    def add(self, build: Build) -> None:
        for channel in self.channels.values():
            channel.add(build)

    def receiver_ports(self) -> ReceiverPorts:
        out: ReceiverPorts = {}
        for channel in self.channels.values():
            out.update(channel.receiver_ports())
        return out

    def partition(self, groups: List[List[str]], addresses: Dict[str, List[str]]) -> None:
        """Channels without bridge ports drop the other groups' frames themselves."""
        group_of = {node: i for i, group in enumerate(groups) for node in group}
        for channel in self.channels.values():
            blocked: Dict[Tuple[str, str], List[str]] = {}
            for _, segment in channel.segments.values():
                for node, interface in segment.members.items():
                    if node in group_of:
                        blocked[(node, interface)] = [a for other, g in group_of.items() if g != group_of[node]
                                                      for a in addresses.get(other, [])]
            channel.partition(blocked)

    def heal(self) -> None:
        for channel in self.channels.values():
            channel.partition({})

    def start(self) -> None:
        if not self.segments:
            return
        from ..radio.mobility import load_trace, random_waypoint, static

        for segment in self.segments.values():
            if segment.trace is not None:
                order = segment.trace.nodes or list(segment.members)
                path, fmt = segment.trace.path, segment.trace.format
                if segment.trace.sumo is not None:  # made now (or found in the cache), from the run's seed
                    from ..radio.sumo import Streets, cached

                    streets = Streets(**{**segment.trace.sumo, "seed": segment.trace.sumo["seed"] or max(self.seed, 1)})
                    path, fmt = cached(streets), "ns2"
                    self._sumo_traces[segment.name] = {"path": path, **segment.trace.sumo, "seed": streets.seed}
                for node, track in load_trace(path, fmt, order, "trace").items():
                    self._tracks.setdefault(node, track)
        for node in sorted({n for s in self.segments.values() for n in s.members}):
            if node in self._tracks:
                continue
            spec = self.topo.nodes[node]
            mobility = spec.mobility
            if mobility is not None and mobility.model == "random-waypoint":
                z = spec.position[2] if spec.position is not None else 0.0
                self._tracks[node] = random_waypoint(self.seed, node, mobility.area, mobility.speed, mobility.pause,
                                                     start=spec.position, z=z)
            else:
                self._tracks[node] = static(spec.position)
        for channel in self.channels.values():
            channel.start()
        if self.workdir is not None:
            from ..radio.record import Recorder

            self._recorder = Recorder(self.workdir)
        self._tick(0.0)

    def begin(self, t0_ns: Optional[int] = None) -> None:
        """The experiment's clock starts now: members start moving, ticks follow every tick."""
        if not self.segments or self._thread is not None:
            return
        self._origin = time.monotonic()
        self._thread = threading.Thread(target=self._ticker, name="radio-ticker", daemon=True)
        self._thread.start()

    # -- while running ----------------------------------------------------------------------------

    def model_time(self) -> float:
        """Seconds of virtual time since the experiment's clock started (mobility moves in it)."""
        return 0.0 if self._origin is None else (time.monotonic() - self._origin) / self.time_dilation

    def position(self, node: str) -> Tuple[float, float, float]:
        """Where the medium places the node now."""
        return self._tracks[node].at(self.model_time())

    def move(self, node: str, to: Tuple[float, float, float], speed: Optional[float]) -> None:
        """From now on the node goes to `to` at `speed` m/s (None: it is there at once); the
        medium applies its new position at once, without waiting for the next tick."""
        if node not in self._tracks:
            raise TestbedError(f"move {node}: the node is on no radio segment")
        with self._lock:
            t = self.model_time()
            self._tracks[node].redirect(t, to, speed)
            self._moves.append({"t_s": round(t, 6), "node": node, "to": list(to), "speed": speed})
        self._tick(t)

    def _ticker(self) -> None:
        tick = min(s.tick_s for s in self.segments.values()) * self.time_dilation  # wall seconds
        k = 1
        while not self._stop.is_set():
            due = self._origin + k * tick
            delay = due - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            self._tick_late.append(max(time.monotonic() - due, 0.0) / self.time_dilation)  # virtual
            try:
                self._tick(self.model_time())
            except Exception as exc:  # the run goes on; the problem goes into the manifest
                self.error = f"radio tick at t={self.model_time():.3f}s: {exc}"
                return
            # behind schedule: skip the ticks that are already past instead of piling them up
            following = max(k + 1, int((time.monotonic() - self._origin) / tick) + 1)
            self._ticks_skipped += following - k - 1
            k = following

    def _tick(self, t: float) -> None:
        with self._lock:
            started = time.monotonic()
            nodes = list(self._tracks)
            where = {node: self._tracks[node].at(t) for node in nodes}
            records = []
            per_channel: Dict[str, list] = {name: [] for name in self.channels}
            for name, segment in self.segments.items():
                members = list(segment.members)
                pos = np.array([where[n] for n in members], dtype=np.float64)
                delta = pos[:, None, :] - pos[None, :, :]
                distance = np.sqrt((delta * delta).sum(axis=2))
                classes = np.rint(segment.delivery(distance) * CLASSES).astype(np.int32)
                np.fill_diagonal(classes, 0)
                per_channel[segment.channel].append((name, members, pos, classes))
                src, dst = np.nonzero(classes)
                records.append((name, members, pos, src, dst, distance[src, dst], classes[src, dst] / CLASSES))
            from_ns = time.time_ns()
            for channel_name, ticks in per_channel.items():
                self.channels[channel_name].apply(t, ticks)
            t_ns = time.time_ns()
            self._ticks += 1
            self._tick_seconds.append(time.monotonic() - started)
            self._write_positions(where, t, t_ns)
            if self._recorder is not None:
                for name, members, pos, src, dst, dist, p in records:
                    names = np.array(members, dtype=object)
                    self._recorder.tick(t_ns, from_ns, t, name, members, pos, names[src], names[dst], dist, p)

    def _write_positions(self, where: Dict[str, Tuple[float, float, float]], t: float, t_ns: int) -> None:
        """Each moved member's position.json, rewritten in place as one fixed-size record (a
        create-and-rename per node and tick costs a journal commit each on ext4; this costs a
        write). The record repeats its sequence number at its end, so that a reader that caught
        a write half-done sees the two differ and reads again (agents.runtime.read_position)."""
        if self.node_dirs is None:
            return
        for node, point in where.items():
            if self._written.get(node) == point:
                continue
            fd = self._position_fds.get(node)
            if fd is None:
                directory = self.node_dirs.get(node)
                if directory is None or not os.path.isdir(directory):
                    continue
                fd = os.open(os.path.join(directory, POSITION_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                self._position_fds[node] = fd
            self._sequence += 1
            record = json.dumps({"seq": self._sequence, "segment": self._segment_of[node], "x": point[0],
                                 "y": point[1], "z": point[2], "t_s": round(t, 6), "t_ns": t_ns,
                                 "end": self._sequence}).encode()
            os.pwrite(fd, record.ljust(POSITION_RECORD - 1) + b"\n", 0)
            self._written[node] = point

    # -- the end ----------------------------------------------------------------------------------

    def finish(self) -> None:
        """Stop moving, read the channels' counters while the nodes still exist, and close the
        run directory's tables."""
        if self._finished or not self.segments:
            return
        self._finished = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for channel in self.channels.values():
            channel.finish()
        with self._lock:
            for fd in self._position_fds.values():
                os.close(fd)
            self._position_fds = {}
            if self._recorder is not None:
                self._recorder.close()

    def teardown(self) -> None:
        try:
            self.finish()
        except Exception:
            pass
        for channel in self.channels.values():
            try:
                channel.teardown()
            except Exception:
                pass

    def manifest(self) -> Dict[str, Any]:
        """segment → its emulated properties, each member's mobility, the moves of its members,
        the ticks applied (how many, how long they took) and what its channel records (the
        kernel's bridge and airtime queues; the wifi channel's statistics)."""
        if not self.segments:
            return {}
        seconds = sorted(self._tick_seconds)
        late = sorted(self._tick_late)
        ticks = {"ticks": self._ticks,
                 "tick_ms_median": round(1000 * seconds[len(seconds) // 2], 3) if seconds else None,
                 "tick_ms_max": round(1000 * seconds[-1], 3) if seconds else None,
                 # the ticker's own lateness (fidelity): scheduled ticks, how late they started, skipped
                 "ticks_scheduled": len(late) + self._ticks_skipped,
                 "tick_late_ms_p99": round(1000 * late[min(len(late) - 1, int(0.99 * len(late)))], 3) if late else None,
                 "tick_late_ms_max": round(1000 * late[-1], 3) if late else None,
                 "ticks_skipped": self._ticks_skipped}
        out: Dict[str, Any] = {}
        for name, segment in self.segments.items():
            entry = segment.manifest()
            entry.update(self.channels[segment.channel].manifest(name))
            entry["mobility"] = {node: self._tracks[node].describe() for node in segment.members if node in self._tracks}
            entry["moves"] = [m for m in self._moves if m["node"] in segment.members]
            if name in self._sumo_traces:
                entry["trace"] = {**(entry.get("trace") or {}), "made": self._sumo_traces[name]}
            entry.update(ticks)
            errors = [e for e in (self.error, self.channels[segment.channel].error) if e]
            if errors:
                entry["error"] = "; ".join(errors)
            out[name] = entry
        return out
