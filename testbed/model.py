"""The validated description of a network, apart from its realisation.

Nothing here knows Mininet, Docker or the kernel: a `Topology` can be built from YAML, printed,
compared and tested alone, the way Mininet's `Topo` is apart from `Mininet`. `testbed.network`
turns it into namespaces, containers and links.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from .resources import DEFAULTS as DEFAULT_RESOURCES, Resources

#: The seven link impairments users ask for, in the user's words.
IMPAIRMENTS = ("delay", "jitter", "loss", "bandwidth", "corruption", "duplication", "reordering")


@dataclass(frozen=True)
class LinkProps:
    """Impairments of one direction of a link. Zero (or None for bandwidth) means none."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    bandwidth_mbit: Optional[float] = None
    corruption: float = 0.0
    duplication: float = 0.0
    reordering: float = 0.0

    def active(self) -> FrozenSet[str]:
        """The impairments this direction asks for, by their user-facing names."""
        names = {
            "delay": self.delay_ms > 0,
            "jitter": self.jitter_ms > 0,
            "loss": self.loss > 0,
            "bandwidth": self.bandwidth_mbit is not None,
            "corruption": self.corruption > 0,
            "duplication": self.duplication > 0,
            "reordering": self.reordering > 0,
        }
        return frozenset(name for name, on in names.items() if on)

    def merged(self, **changes: Any) -> "LinkProps":
        return replace(self, **changes)

    def dilated(self, k: float) -> "LinkProps":
        """The same link in a world k times slower than the wall clock: its rate divided by k, its
        delay and jitter multiplied by k; loss, corruption, duplication and reordering are
        probabilities per packet and stay as they are."""
        if k == 1:
            return self
        return replace(self, delay_ms=self.delay_ms * k, jitter_ms=self.jitter_ms * k,
                       bandwidth_mbit=None if self.bandwidth_mbit is None else self.bandwidth_mbit / k)

    def to_dict(self) -> Dict[str, Any]:
        """Only the impairments that are set, in the units the YAML uses."""
        out: Dict[str, Any] = {}
        if self.delay_ms:
            out["delay"] = f"{self.delay_ms:g}ms"
        if self.jitter_ms:
            out["jitter"] = f"{self.jitter_ms:g}ms"
        if self.loss:
            out["loss"] = self.loss
        if self.bandwidth_mbit is not None:
            out["bandwidth"] = f"{self.bandwidth_mbit:g}mbit"
        if self.corruption:
            out["corruption"] = self.corruption
        if self.duplication:
            out["duplication"] = self.duplication
        if self.reordering:
            out["reordering"] = self.reordering
        return out


NO_IMPAIRMENT = LinkProps()


@dataclass
class Node:
    """A host of the network: a container (runtime `docker`) or a plain process (`process`)."""

    name: str
    role: str = "idle"
    params: Dict[str, Any] = field(default_factory=dict)
    image: str = "testbed/agent:latest"
    command: Optional[List[str]] = None
    runtime: str = "docker"
    attributes: Dict[str, Any] = field(default_factory=dict)
    capabilities: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    kind: Optional[str] = None
    #: on a radio segment: where it starts (x, y, z metres) and how it moves (radio.spec.MobilitySpec)
    position: Optional[Tuple[float, float, float]] = None
    mobility: Any = None
    #: a scenario's workload `start: timeline`: the agent is not started with the network but by
    #: the timeline's `start` action (a node that joins mid-run); until then the node is down
    held: bool = False
    #: its limits (testbed/resources.py), the defaults where its files say nothing
    resources: Resources = field(default_factory=lambda: DEFAULT_RESOURCES)
    #: where each limit a file set came from: {key: (file, field, line)}, for error messages
    resource_origin: Dict[str, Tuple[str, str, Optional[int]]] = field(default_factory=dict, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        # Resolved fields only: the kind a node inherited from is already applied.
        out: Dict[str, Any] = {"role": self.role, "runtime": self.runtime, "image": self.image,
                               "resources": self.resources.to_dict()}
        for name in ("params", "attributes", "env"):
            if getattr(self, name):
                out[name] = dict(getattr(self, name))
        if self.command is not None:
            out["command"] = list(self.command)
        if self.capabilities:
            out["capabilities"] = list(self.capabilities)
        if self.position is not None:
            out["position"] = list(self.position)
        if self.mobility is not None and self.mobility.model != "static":
            out["mobility"] = self.mobility.to_dict()
        if self.held:
            out["start"] = "timeline"
        return out


@dataclass
class Switch:
    """A shared segment: a Linux bridge (default) or an Open vSwitch bridge; or a radio segment's
    broadcast domain (type `radio`, declared under `radio:` and realised by the radio medium)."""

    name: str
    type: str = "bridge"
    stp: bool = False

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"type": self.type}
        if self.stp:
            out["stp"] = True
        return out


@dataclass
class Endpoint:
    """One end of a link: a node's interface (named as the node sees it) or a switch port."""

    node: str
    interface: Optional[str] = None
    address: Optional[ipaddress.IPv4Interface] = None

    def __str__(self) -> str:
        return f"{self.node}:{self.interface}" if self.interface else self.node


@dataclass
class Link:
    """A point-to-point cable. `forward` shapes a→b, `backward` b→a."""

    a: Endpoint
    b: Endpoint
    forward: LinkProps = NO_IMPAIRMENT
    backward: LinkProps = NO_IMPAIRMENT

    @property
    def name(self) -> str:
        return f"{self.a}--{self.b}"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"endpoints": [str(self.a), str(self.b)]}
        if self.forward == self.backward:
            out.update(self.forward.to_dict())
        else:
            if self.forward.active():
                out["a_to_b"] = self.forward.to_dict()
            if self.backward.active():
                out["b_to_a"] = self.backward.to_dict()
        addresses = [str(e.address) if e.address else None for e in (self.a, self.b)]
        if any(addresses):
            out["addresses"] = addresses
        return out


@dataclass
class Segment:
    """A layer-2 broadcast domain and its IPv4 subnet: switches joined by links, or one cable."""

    name: str
    subnet: ipaddress.IPv4Network
    switches: Tuple[str, ...]
    members: Tuple[Tuple[str, str], ...]  # (node, interface)


@dataclass
class Route:
    destination: ipaddress.IPv4Network
    via: ipaddress.IPv4Address
    interface: str


@dataclass
class Topology:
    """A whole network description after validation, defaults applied and generators expanded."""

    name: str
    nodes: Dict[str, Node]
    switches: Dict[str, Switch]
    links: List[Link]
    source: str = "<memory>"
    description: str = ""
    pool: ipaddress.IPv4Network = ipaddress.IPv4Network("10.0.0.0/8")
    routing: str = "static"
    accept_unemulated: FrozenSet[str] = frozenset()
    segments: List[Segment] = field(default_factory=list)
    routes: Dict[str, List[Route]] = field(default_factory=dict)
    generated_by: Optional[Dict[str, Any]] = None
    #: radio segment name → radio.spec.RadioSegment; each is also a Switch of type "radio" and its
    #: members are links to it, so that addressing, routes and partitions treat it as a segment
    radio: Dict[str, Any] = field(default_factory=dict)

    def is_radio_link(self, link: "Link") -> bool:
        """Whether the link is a node's membership of a radio segment rather than a cable."""
        return link.b.node in self.radio

    def interfaces(self, node: str) -> List[Endpoint]:
        """The node's interfaces in link order."""
        found = []
        for link in self.links:
            for end in (link.a, link.b):
                if end.node == node:
                    found.append(end)
        return found

    def link_between(self, a: str, b: str) -> Optional[int]:
        """The index of the first link between a and b (in either order), None when there is none."""
        for index, link in enumerate(self.links):
            if {link.a.node, link.b.node} == {a, b} and not self.is_radio_link(link):
                return index
        return None

    def address_of(self, node: str) -> Optional[ipaddress.IPv4Interface]:
        """The node's first address: the one peers use unless they pick an interface."""
        for end in self.interfaces(node):
            if end.address is not None:
                return end.address
        return None

    def to_dict(self) -> Dict[str, Any]:
        """The resolved, explicit form: what `testbed topo show` prints and manifests record."""
        out: Dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["addressing"] = {"pool": str(self.pool), "routing": self.routing}
        if self.accept_unemulated:
            out["accept_unemulated"] = sorted(self.accept_unemulated)
        out["nodes"] = {name: node.to_dict() for name, node in self.nodes.items()}
        out["switches"] = {name: sw.to_dict() for name, sw in self.switches.items() if name not in self.radio}
        out["links"] = [link.to_dict() for link in self.links if not self.is_radio_link(link)]
        if self.radio:
            out["radio"] = {name: segment.to_dict() for name, segment in self.radio.items()}
        return out


def link_prop_fields() -> Tuple[str, ...]:
    return tuple(f.name for f in fields(LinkProps))
