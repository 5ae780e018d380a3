"""Cables: each topology link, node to node, node to switch or switch to switch.

Every cable passes through a bridge port in the machine's namespace, where loss and partitions
are applied (testbed.shaping): a cable into a switch is a veth pair between the node (or the
other switch) and a port of the switch's bridge; a node-to-node cable gets an internal two-port
bridge (`tb<lab id>c<link index>`). Each direction of a cable is a `shaping.Direction`: its
sending end, and how the lab's bridge table matches its frames.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from ..errors import CapabilityError, TestbedError
from ..model import LinkProps
from ..names import NODE_TABLE
from ..shaping import Direction, Port, check_topology, emulated_part, queue_counters
from .base import Build, End, Medium, ReceiverPorts


class Cables(Medium):
    name = "cables"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: (link index, 0 for a→b or 1 for b→a) → where that direction is shaped
        self.directions: Dict[Tuple[int, int], Direction] = {}
        self._receivers: ReceiverPorts = {}
        self._props: Dict[Tuple[int, int], LinkProps] = {}  # what is applied now
        self._accepted: FrozenSet[str] = frozenset()
        self._unemulated: FrozenSet[str] = frozenset()
        self._rated: set = set()  # directions that had a bandwidth, so a queue, at some time
        self._queues: List[Dict[str, Any]] = []

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        self._accepted = frozenset(accepted) | self.topo.accept_unemulated
        self._unemulated = check_topology(self.topo, self.shaper, self.capabilities, accepted)
        return self._unemulated

    def add(self, build: Build) -> None:
        for index, link in enumerate(self.topo.links):
            if self.topo.is_radio_link(link):
                continue  # a radio membership: testbed.media.radio
            a = self._end(build, link.a.node, link.a.interface)
            b = self._end(build, link.b.node, link.b.interface)
            a_port: Optional[End] = None
            b_port: Optional[End] = None
            if not a.on_bridge and not b.on_bridge:  # node to node: through an internal bridge
                bridge = self.names.internal_bridge(index)
                build.add_bridge(bridge)
                a_port, b_port = build.new_port(bridge), build.new_port(bridge)
                build.veth(a, a_port)
                build.veth(b_port, b)
                a_recv, b_recv = a_port.device, b_port.device  # the bridge ports that transmit to a and to b
            else:
                build.veth(a, b)
                a_recv = b.device if b.on_bridge else None
                b_recv = a.device if a.on_bridge else None
            for end, receiver in ((link.a, a_recv), (link.b, b_recv)):
                if end.node in self.topo.nodes:
                    self._receivers[(end.node, end.interface)] = receiver
            # a→b: frames are sent by a's end; they are matched where they enter a bridge port, or,
            # when b's end is a bridge port, where they come in through it
            for side, (src, dst, src_port) in enumerate(((a, b, a_port), (b, a, b_port))):
                if src_port is not None:
                    match = f'iifname "{src_port.device}"'
                elif dst.on_bridge:
                    match = f'iifname "{dst.device}"'
                else:
                    match = f'oifname "{src.device}"'
                table = self.names.nft_table if src.on_bridge else NODE_TABLE
                self.directions[(index, side)] = Direction(
                    egress=Port(device=src.device, netns_pid=src.netns_pid, table=table),
                    match=match, chain=self.names.direction_chain(index, side))

    @staticmethod
    def _end(build: Build, name: str, interface: Optional[str]) -> End:
        if name in build.bridges:
            return build.new_port(build.bridges[name])
        return build.node_end(name, interface)

    def start(self) -> None:
        for index, link in enumerate(self.topo.links):
            if self.topo.is_radio_link(link):
                continue
            self.shape(index, link.forward, link.backward)

    def receiver_ports(self) -> ReceiverPorts:
        return dict(self._receivers)

    @property
    def unemulated(self) -> FrozenSet[str]:
        return self._unemulated

    # -- while running ----------------------------------------------------------------------------

    def index(self, a: str, b: str) -> int:
        """The index of the first link between a and b (in either order)."""
        index = self.topo.link_between(a, b)
        if index is None:
            raise TestbedError(f"no link between {a!r} and {b!r}")
        return index

    def missing_properties(self, names: Iterable[str]) -> FrozenSet[str]:
        """Of these impairments, those this machine cannot emulate and nobody accepted."""
        return (frozenset(names) - self.shaper.emulates) - self._accepted

    def shape(self, index: int, forward: LinkProps, backward: Optional[LinkProps] = None) -> None:
        """Replace the shaping of link `index` (a→b `forward`, b→a `backward`, default the same)."""
        backward = forward if backward is None else backward
        for props in (forward, backward):
            refused = self.missing_properties(props.active())
            if refused:
                raise CapabilityError(f"cannot emulate {', '.join(sorted(refused))} on link "
                                      f"{self.topo.links[index].name}: needs "
                                      f"{self.capabilities.missing_feature(sorted(refused)[0])}")
        for side, props in ((0, forward), (1, backward)):
            self._unemulated = self._unemulated | (props.active() - self.shaper.emulates)
            effective = emulated_part(props, self.shaper)
            # Nothing was ever applied to a fresh link: skip the no-op instead of spawning tools.
            if self._props.get((index, side), LinkProps()) != effective:
                self.shaper.apply(self.directions[(index, side)], effective, self.time_dilation)
            self._props[(index, side)] = effective
            if effective.bandwidth_mbit is not None:
                self._rated.add((index, side))

    # -- at the end -------------------------------------------------------------------------------

    def finish(self) -> None:
        """Read the queue counters of every direction that had a bandwidth while the nodes still
        exist: what its queue passed and dropped since it was set (a bottleneck's own drops, the
        emulated link at work, on the sending end's egress: the receiver's capture never sees
        them). A direction whose bandwidth was lifted before the end has no queue left to read."""
        if self._queues or not self._rated:
            return
        keys = sorted(self._rated)

        def read(key: Tuple[int, int]) -> Dict[str, Any]:
            index, side = key
            link = self.topo.links[index]
            ends = (link.a.node, link.b.node) if side == 0 else (link.b.node, link.a.node)
            entry: Dict[str, Any] = {"link": link.name, "from": ends[0], "to": ends[1]}
            props = self._props.get(key)
            if props is not None and props.bandwidth_mbit is not None:
                entry["bandwidth_mbit"] = props.bandwidth_mbit
            entry.update(queue_counters(self.directions[key].egress))
            return entry

        with ThreadPoolExecutor(max_workers=8) as pool:
            self._queues = list(pool.map(read, keys))

    def manifest(self) -> Dict[str, object]:
        """With shaped bandwidth: `queues`, one entry a direction that had one (link, from, to,
        the bandwidth at the end, frames, bytes, dropped, overlimits), read at the run's end."""
        return {"queues": list(self._queues)} if self._queues else {}
