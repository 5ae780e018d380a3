"""The interface every radio channel implements (the registry: testbed.radio.channels)."""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, List, Tuple

import numpy as np

from ..base import Build, ReceiverPorts
from ...radio.spec import RadioSegment

#: delivery probabilities reach the channels, and the run's records, in steps of one per mille
#: (the kernel channel's class chains radio_p1..radio_p999)
CLASSES = 1000
#: a segment's members are the ports p1..p9999 of its bridge's name (interface names are at most
#: 15 bytes), whether or not its channel makes the bridge
MAX_MEMBERS = 9999


class Channel:
    """One kind of radio channel, carrying the frames of every segment of a lab that names it.

    The radio medium calls, in order: `check` before anything is created, `add` while the
    network is described, `start` once the nodes have their addresses, `apply` at every tick
    (the first at `start`, with the positions of time 0), `finish` before the nodes go and
    `teardown` when the lab goes; `partition` and `heal` when the timeline asks, `manifest` for
    the run manifest. `segments` maps each segment's name to (its index in the lab, from 1,
    and the segment)."""

    name = "base"

    def __init__(self, medium, segments: Dict[str, Tuple[int, RadioSegment]]) -> None:
        self.medium = medium
        self.segments = segments
        self.names = medium.names

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        """Raise if this machine cannot realise the channel; return what it runs without
        (accepted as not emulated). Creates nothing."""
        return frozenset()

    def warnings(self) -> List[str]:
        """What `check` found worth saying without refusing."""
        return []

    def add(self, build: Build) -> None:
        """Describe the segments' bridges and veth pairs."""

    def receiver_ports(self) -> ReceiverPorts:
        """Where frames towards each member's radio interface leave a bridge (partitions drop
        there); a channel without bridges partitions itself (`partition`)."""
        return {}

    def start(self) -> None:
        """The nodes have their addresses: set the channel up (`apply` follows at once)."""

    def apply(self, t: float, ticks: List[Tuple[str, List[str], np.ndarray, np.ndarray]]) -> None:
        """Positions at model time t: for each segment (name, members, positions as an n×3
        array, delivery probability in per mille (CLASSES) as an n×n integer array, 0 out of
        range)."""

    def partition(self, blocked: Dict[Tuple[str, str], List[str]]) -> None:
        """(node, interface) → the IPv4 addresses whose frames it must not receive ({}: heal)."""

    def finish(self) -> None:
        """The nodes are about to stop: read counters and statistics."""

    def manifest(self, segment: str) -> Dict[str, Any]:
        """What the run manifest records of the channel for one segment."""
        return {}

    @property
    def error(self) -> str:
        """What went wrong while the run went on ('' when nothing did)."""
        return ""

    def teardown(self) -> None:
        """Remove what the channel made that does not go with the lab's named objects."""
