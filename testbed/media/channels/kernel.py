"""The kernel range medium: a radio segment as a Linux bridge whose nftables forward hook lets
through only the copies of a frame that range and loss allow (no mac80211_hwsim, netem or
userspace relay).

Each segment is a bridge (`tb<lab id>r<n>`) with one port per member; a member's radio
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

What it does not have is a shared channel: no carrier sense, collisions or contention for
airtime (ten senders in one neighbourhood get ten times the bitrate); `channel: wifi` has them.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, List, Tuple

import numpy as np

from ...errors import CapabilityError
from ..base import Build, ReceiverPorts
from ...names import NODE_TABLE
from ...shaping import Port, nft_in_root, queue_counters
from ...radio.spec import RadioSegment
from .base import CLASSES, Channel



class KernelChannel(Channel):
    name = "kernel"

    def __init__(self, medium, segments: Dict[str, Tuple[int, RadioSegment]]) -> None:
        super().__init__(medium, segments)
        self._bridge: Dict[str, str] = {}
        self._port: Dict[Tuple[str, str], str] = {}  # (segment, node) → its bridge port
        self._egress: Dict[Tuple[str, str], Port] = {}  # (segment, node) → the member's radio interface
        self._classes: set = set()
        self._state: Dict[str, np.ndarray] = {}  # segment → applied per-mille matrix
        self._airtime: Dict[str, Dict[str, Dict[str, int]]] = {}
        self._unemulated: FrozenSet[str] = frozenset()

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        medium = self.medium
        caps = medium.capabilities
        topo = medium.topo
        if not caps.has("nftables"):
            raise CapabilityError(f"{topo.source}: radio segments need nftables with the bridge family and "
                                  f"numgen ({caps.checks['nftables'].detail})")
        accepted = frozenset(accepted) | topo.accept_unemulated
        unemulated = set()
        for _, segment in self.segments.values():
            missing = segment.props().active() - medium.shaper.emulates
            refused = sorted(missing - accepted)
            if refused:
                raise CapabilityError(
                    f"{topo.source}: radio segment {segment.name} asks for {', '.join(refused)}, which this "
                    f"machine cannot emulate: needs {caps.missing_feature(refused[0])}. Accept it as not emulated "
                    f"with 'accept_unemulated: [{', '.join(refused)}]' in the topology or --accept-unemulated "
                    f"{','.join(refused)}.")
            unemulated |= missing
        self._unemulated = frozenset(unemulated)
        return self._unemulated

    def add(self, build: Build) -> None:
        for name, (index, segment) in self.segments.items():
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
        return {(node, self.segments[seg][1].members[node]): port for (seg, node), port in self._port.items()}

    def start(self) -> None:
        lines = []
        for name, (index, segment) in self.segments.items():
            chain, table = self.names.radio_chain(index), self.names.nft_table
            lines += [f"add map bridge {table} {chain}_pairs {{ type ifname . ifname : verdict ; }}",
                      f"add chain bridge {table} {chain} {{ type filter hook forward priority 1 ; policy accept ; }}",
                      f'add rule bridge {table} {chain} iifname "{self._bridge[name]}p*" '
                      f"iifname . oifname vmap @{chain}_pairs",
                      f'add rule bridge {table} {chain} iifname "{self._bridge[name]}p*" drop']
            self._state[name] = np.zeros((len(segment.members),) * 2, dtype=np.int32)
        nft_in_root("\n".join(lines) + "\n")
        for _, segment in self.segments.values():
            self._airtime_qdiscs(segment)

    def _airtime_qdiscs(self, segment: RadioSegment) -> None:
        medium = self.medium
        props = segment.props().dilated(medium.time_dilation)
        kbit = None if props.bandwidth_mbit is None else props.bandwidth_mbit * 1000
        active = props.active() & medium.shaper.emulates
        if not active:
            return
        queue = segment.queue_frames
        for node in segment.members:
            port = self._egress[(segment.name, node)]
            interface = port.device
            if medium.shaper.name == "netem":
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

    def apply(self, t: float, ticks: List[Tuple[str, List[str], np.ndarray, np.ndarray]]) -> None:
        lines: List[str] = []
        for name, members, _, classes in ticks:
            lines += self._changes(self.segments[name][0], name, members, classes)
            self._state[name] = classes
        if lines:
            nft_in_root("\n".join(lines) + "\n")

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

    def finish(self) -> None:
        """Read the airtime queues' counters while the nodes still exist."""
        for name, (_, segment) in self.segments.items():
            if segment.bitrate_kbit is None and not segment.delay_ms:
                continue
            counters = {}
            for node in segment.members:
                port = self._egress.get((name, node))
                if port is not None:  # a lab that failed half-built has ports for some members only
                    counters[node] = queue_counters(port)
            self._airtime[name] = counters

    def manifest(self, segment: str) -> Dict[str, Any]:
        out: Dict[str, Any] = {"bridge": self._bridge.get(segment)}
        if segment in self._airtime:
            out["airtime"] = self._airtime[segment]
        return out


def _chunks(items: List[str], size: int = 2000) -> Iterable[List[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
