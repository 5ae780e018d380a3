"""Radio segments: a shared broadcast medium with positions, range, radio loss, airtime and
mobility, in the kernel's own bridge and nftables (no mac80211_hwsim, netem or userspace relay).

Each segment is a Linux bridge (`tb<lab id>r<n>`) with one port per member; a member's radio
interface (wlan0 unless named) is a veth into that port. Which copies of a frame arrive is
decided where the bridge hands a copy to each output port (the bridge family's forward hook,
which sees a flooded broadcast once per output port): after the sender's capture, before the
receiver's, silently, as the air loses a frame.

- Range and loss: one base chain per segment (`radio<n>`) looks up (input port, output port) in
  a verdict map; a pair in range maps to `accept` (probability 1) or to a shared class chain
  `radio_p<k>` that drops all but k per mille of the copies (`numgen random`), every copy drawn
  on its own; a pair that is not in the map (out of range) is dropped. One rule per segment and
  at most a thousand class chains, whatever the number of members: each tick only adds and
  removes the map elements of the pairs whose class changed, in one nftables transaction, so
  nothing is ever half-applied.
- Airtime: with a bitrate, each member's radio interface serialises its frames at that rate
  behind a queue of `queue` frames (tbf with a pfifo child; netem's rate and limit where the
  kernel has netem), and frames beyond the queue are dropped and counted. Per-hop delay and
  jitter need netem, as on wired links: refused here unless accepted as not emulated.
- Mobility: a ticker thread computes every member's position at each tick (static, random
  waypoint from the lab's seed, a trace file, or `move` actions), applies what changed, writes
  each moved node's position to `position.json` in its node directory (what an agent reads, see
  agents.runtime.position) and records positions and the neighbour graph in the run directory
  (testbed.radio.record). The experiment's clock starts at `begin` (a run's time zero); before
  it, members stay at their positions of time 0.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

import numpy as np

from ..errors import CapabilityError, TestbedError
from ..radio.spec import RadioSegment
from ..names import NODE_TABLE
from ..shaping import Port, nft_in_root, queue_counters
from .base import Build, Medium, ReceiverPorts

#: delivery probabilities are applied in steps of one per mille (class chains radio_p1..radio_p999)
CLASSES = 1000
#: a segment's members are its bridge's ports p1..p9999 (interface names are at most 15 bytes)
MAX_MEMBERS = 9999
POSITION_FILE = "position.json"
#: bytes of one position record (JSON padded with spaces, then a newline)
POSITION_RECORD = 256


class Radio(Medium):
    name = "radio"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.segments: Dict[str, RadioSegment] = dict(self.topo.radio)
        self._bridge: Dict[str, str] = {}
        self._port: Dict[Tuple[str, str], str] = {}  # (segment, node) → its bridge port
        self._egress: Dict[Tuple[str, str], Port] = {}  # (segment, node) → the member's radio interface
        self._unemulated: FrozenSet[str] = frozenset()
        self._lock = threading.Lock()
        self._tracks: Dict[str, Any] = {}
        self._classes: set = set()
        self._state: Dict[str, np.ndarray] = {}  # segment → applied per-mille matrix
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
        self._airtime: Dict[str, Dict[str, Dict[str, int]]] = {}
        self._finished = False
        self.error: Optional[str] = None

    # -- before anything is created ---------------------------------------------------------------

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        if not self.segments:
            return frozenset()
        caps = self.capabilities
        if not caps.has("nftables"):
            raise CapabilityError(f"{self.topo.source}: radio segments need nftables with the bridge family and "
                                  f"numgen ({caps.checks['nftables'].detail})")
        accepted = frozenset(accepted) | self.topo.accept_unemulated
        unemulated = set()
        for segment in self.segments.values():
            if len(segment.members) > MAX_MEMBERS:
                raise CapabilityError(f"{self.topo.source}: radio segment {segment.name} has {len(segment.members)} "
                                      f"members; at most {MAX_MEMBERS}")
            missing = segment.props().active() - self.shaper.emulates
            refused = sorted(missing - accepted)
            if refused:
                raise CapabilityError(
                    f"{self.topo.source}: radio segment {segment.name} asks for {', '.join(refused)}, which this "
                    f"machine cannot emulate: needs {caps.missing_feature(refused[0])}. Accept it as not emulated "
                    f"with 'accept_unemulated: [{', '.join(refused)}]' in the topology or --accept-unemulated "
                    f"{','.join(refused)}.")
            unemulated |= missing
        self._unemulated = frozenset(unemulated)
        return self._unemulated

    @property
    def unemulated(self) -> FrozenSet[str]:
        return self._unemulated

    # -- build ------------------------------------------------------------------------------------

    def add(self, build: Build) -> None:
        for index, (name, segment) in enumerate(self.segments.items(), start=1):
            bridge = self.names.radio_bridge(index)
            self._bridge[name] = bridge
            build.add_bridge(bridge)
            for node, interface in segment.members.items():
                port = build.new_port(bridge)
                end = build.node_end(node, interface)
                build.veth(end, port)
                self._port[(name, node)] = port.device
                self._egress[(name, node)] = Port(device=interface, netns_pid=end.netns_pid, table=NODE_TABLE)

    def receiver_ports(self) -> ReceiverPorts:
        return {(node, self.segments[seg].members[node]): port for (seg, node), port in self._port.items()}

    def start(self) -> None:
        if not self.segments:
            return
        from ..radio.mobility import load_trace, random_waypoint, static

        for segment in self.segments.values():
            if segment.trace is not None:
                order = segment.trace.nodes or list(segment.members)
                for node, track in load_trace(segment.trace.path, segment.trace.format, order, "trace").items():
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
        lines = []
        for index, (name, segment) in enumerate(self.segments.items(), start=1):
            chain, table = self.names.radio_chain(index), self.names.nft_table
            lines += [f"add map bridge {table} {chain}_pairs {{ type ifname . ifname : verdict ; }}",
                      f"add chain bridge {table} {chain} {{ type filter hook forward priority 1 ; policy accept ; }}",
                      f'add rule bridge {table} {chain} iifname "{self._bridge[name]}p*" '
                      f"iifname . oifname vmap @{chain}_pairs",
                      f'add rule bridge {table} {chain} iifname "{self._bridge[name]}p*" drop']
            self._state[name] = np.zeros((len(segment.members),) * 2, dtype=np.int32)
        nft_in_root("\n".join(lines) + "\n")
        for name, segment in self.segments.items():
            self._airtime_qdiscs(segment)
        if self.workdir is not None:
            from ..radio.record import Recorder

            self._recorder = Recorder(self.workdir)
        self._tick(0.0)

    def _airtime_qdiscs(self, segment: RadioSegment) -> None:
        props = segment.props().dilated(self.time_dilation)
        kbit = None if props.bandwidth_mbit is None else props.bandwidth_mbit * 1000
        active = props.active() & self.shaper.emulates
        if not active:
            return
        queue = segment.queue_frames
        for node in segment.members:
            port = self._egress[(segment.name, node)]
            interface = port.device
            if self.shaper.name == "netem":
                args = ["tc", "qdisc", "replace", "dev", interface, "root", "netem", "limit", str(queue)]
                if "delay" in active:
                    args += ["delay", f"{props.delay_ms:g}ms"] + ([f"{props.jitter_ms:g}ms"] if "jitter" in active else [])
                if "bandwidth" in active:
                    args += ["rate", f"{kbit:g}kbit"]
                commands = [args]
            else:
                # tbf's bucket holds one full frame: frames leave one at a time at the bitrate
                commands = [["tc", "qdisc", "replace", "dev", interface, "root", "handle", "1:", "tbf", "rate",
                             f"{kbit:g}kbit", "burst", "1600", "latency", "60s"],
                            ["tc", "qdisc", "replace", "dev", interface, "parent", "1:1", "handle", "10:", "pfifo",
                             "limit", str(queue)]]
            for args in commands:
                port.run(args)

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
            lines: List[str] = []
            records = []
            for index, (name, segment) in enumerate(self.segments.items(), start=1):
                members = list(segment.members)
                pos = np.array([where[n] for n in members], dtype=np.float64)
                delta = pos[:, None, :] - pos[None, :, :]
                distance = np.sqrt((delta * delta).sum(axis=2))
                heard = distance <= segment.range_m
                np.fill_diagonal(heard, False)
                prob = np.where(heard, segment.loss.probability(distance), 0.0)
                classes = np.rint(prob * CLASSES).astype(np.int32)
                lines += self._changes(index, name, members, classes)
                self._state[name] = classes
                src, dst = np.nonzero(classes)
                records.append((name, members, pos, src, dst, distance[src, dst], classes[src, dst] / CLASSES))
            from_ns = time.time_ns()
            if lines:
                nft_in_root("\n".join(lines) + "\n")
            t_ns = time.time_ns()
            self._ticks += 1
            self._tick_seconds.append(time.monotonic() - started)
            self._write_positions(where, t, t_ns)
            if self._recorder is not None:
                for name, members, pos, src, dst, dist, p in records:
                    names = np.array(members, dtype=object)
                    self._recorder.tick(t_ns, from_ns, t, name, members, pos, names[src], names[dst], dist, p)

    def _changes(self, index: int, segment: str, members: List[str], classes: np.ndarray) -> List[str]:
        """The nftables commands that turn the applied map into `classes`."""
        old = self._state[segment]
        changed = np.argwhere(old != classes)
        if not len(changed):
            return []
        table, chain = self.names.nft_table, self.names.radio_chain(index)
        ports = [self._port[(segment, n)] for n in members]
        lines = []
        gone = [f'"{ports[i]}" . "{ports[j]}"' for i, j in changed.tolist() if old[i, j]]
        added = []
        for i, j in changed.tolist():
            k = int(classes[i, j])
            if not k:
                continue
            if k >= CLASSES:
                verdict = "accept"
            else:
                verdict = f"goto radio_p{k}"
                if k not in self._classes:
                    lines += [f"add chain bridge {table} radio_p{k}",
                              f"add rule bridge {table} radio_p{k} numgen random mod {CLASSES} >= {k} drop"]
                    self._classes.add(k)
            added.append(f'"{ports[i]}" . "{ports[j]}" : {verdict}')
        for chunk in _chunks(gone):
            lines.append(f"delete element bridge {table} {chain}_pairs {{ {', '.join(chunk)} }}")
        for chunk in _chunks(added):
            lines.append(f"add element bridge {table} {chain}_pairs {{ {', '.join(chunk)} }}")
        return lines

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
        """Stop moving, read the airtime queues' counters while the nodes still exist, and close
        the run directory's tables."""
        if self._finished or not self.segments:
            return
        self._finished = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for name, segment in self.segments.items():
            if segment.bitrate_kbit is None and not segment.delay_ms:
                continue
            counters = {}
            for node in segment.members:
                port = self._egress.get((name, node))
                if port is not None:  # a lab that failed half-built has ports for some members only
                    counters[node] = queue_counters(port)
            self._airtime[name] = counters
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

    def manifest(self) -> Dict[str, Any]:
        """segment → its emulated properties, each member's mobility, the moves of its members,
        the ticks applied (how many, how long they took) and, with airtime, each member's queue."""
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
            entry["bridge"] = self._bridge.get(name)
            entry["mobility"] = {node: self._tracks[node].describe() for node in segment.members if node in self._tracks}
            entry["moves"] = [m for m in self._moves if m["node"] in segment.members]
            entry.update(ticks)
            if name in self._airtime:
                entry["airtime"] = self._airtime[name]
            if self.error:
                entry["error"] = self.error
            out[name] = entry
        return out


def _chunks(items: List[str], size: int = 2000) -> Iterable[List[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
