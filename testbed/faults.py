"""The nemesis: timeline actions carried out on a lab, and rehearsed on a lab that does nothing.

The nemesis keeps the state faults share and dispatches each planned action to its class in the
action registry (testbed.actions). Link faults are kept as state and the shaping of a link
direction is rebuilt from the merged set of active faults each time one changes (set_link
overrides on top of the topology's values, and a link that is down drops everything), so faults
stack and every value can return to where it was.

The nemesis acts on a lab only through the methods `DryLab` lists. `DryLab` implements them by
recording the call and doing nothing: scenario validation rehearses a whole timeline on it
(`rehearse`), so that an action that cannot work where it stands in the schedule (a jitter
change on a link without delay, a start of a node killed before) is refused, with its line,
before anything is created; and tests check the nemesis against it without a network.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from .actions import action_class
from .actions.base import Planned
from .errors import TestbedError
from .model import LinkProps, Topology
from .topology import apply_impairments


class Nemesis:
    def __init__(self, lab) -> None:
        self.lab = lab  # a network.Lab, or a DryLab
        self.link_overrides: Dict[Tuple[int, int], Dict[str, Any]] = {}  # (link, side) → impairments
        self.links_down: Set[Tuple[int, int]] = set()
        self.paused: Set[str] = set()
        self.killed: Set[str] = set()
        self.partitioned = False

    def apply(self, planned: Planned) -> Optional[Dict[str, Any]]:
        """Carry out one action; returns details worth recording (or None)."""
        return action_class(planned.action)().apply(self, planned)

    def heal_all(self) -> List[str]:
        """Undo every active fault but kills and stops: links back to the topology's values,
        partitions healed, paused nodes resumed."""
        done = []
        if self.partitioned:
            self.lab.heal()
            self.partitioned = False
            done.append("partition healed")
        links = {index for index, _ in list(self.link_overrides) + list(self.links_down)}
        self.link_overrides.clear()
        self.links_down.clear()
        for index in sorted(links):
            self.reshape(index)
        if links:
            done.append(f"{len(links)} link(s) restored")
        for node in sorted(self.paused):
            self.resume_node(node)
            done.append(f"{node} resumed")
        return done

    # -- what actions share ------------------------------------------------------------------------

    def resume_node(self, node: str) -> None:
        self.lab.resume_node(node)
        self.paused.discard(node)

    def sides(self, planned: Planned) -> Tuple[int, List[int]]:
        """The planned link's index and the sides (0: a→b of the topology's link, 1: b→a) it acts on."""
        a, b = planned.link
        index = self.lab.link_index(a, b)
        link = self.lab.topo.links[index]
        forward = 0 if link.a.node == a else 1  # side whose egress carries a → b
        if planned.direction == "a_to_b":
            return index, [forward]
        if planned.direction == "b_to_a":
            return index, [1 - forward]
        return index, [0, 1]

    def set_down(self, planned: Planned, down: bool) -> None:
        """Take the planned link's sides down (they drop everything) or bring them up again."""
        index, sides = self.sides(planned)
        if down:
            self.links_down.update((index, side) for side in sides)
        else:
            self.links_down.difference_update((index, side) for side in sides)
        self.reshape(index)

    def effective(self, index: int, side: int) -> LinkProps:
        """One direction's shaping: the topology's values, the active set_link overrides, down."""
        link = self.lab.topo.links[index]
        base = link.forward if side == 0 else link.backward
        props = apply_impairments(base, self.link_overrides.get((index, side), {}))
        if (index, side) in self.links_down:
            props = props.merged(loss=1.0)
        return props

    def reshape(self, index: int) -> None:
        self.lab.set_link(index, self.effective(index, 0), self.effective(index, 1))


class DryLab:
    """The lab interface the nemesis uses, recording every call and doing nothing.

    `calls` lists (method, arguments) in order. Agents are taken to run on every node that has
    one (from the timeline's `start` on for a node held back by `start: timeline`), until stopped
    or killed."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.calls: List[Tuple[str, tuple]] = []
        self._agent_running = {name: not node.held for name, node in topo.nodes.items()}

    def _record(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))

    def link_index(self, a: str, b: str) -> int:
        index = self.topo.link_between(a, b)
        if index is None:
            raise TestbedError(f"no link between {a!r} and {b!r}")
        return index

    def set_link(self, index: int, forward: LinkProps, backward: Optional[LinkProps] = None) -> None:
        self._record("set_link", index, forward, backward)

    def partition(self, groups: List[List[str]]) -> None:
        self._record("partition", groups)

    def heal(self) -> None:
        self._record("heal")

    def move(self, node: str, to, speed=None) -> None:
        self._record("move", node, to, speed)

    def kill_node(self, node: str) -> None:
        self._agent_running[node] = False
        self._record("kill_node", node)

    def pause_node(self, node: str) -> None:
        self._record("pause_node", node)

    def resume_node(self, node: str) -> None:
        self._record("resume_node", node)

    def stop_agents(self, nodes=None, timeout_s: float = 3.0) -> Dict[str, bool]:
        nodes = list(nodes) if nodes is not None else list(self.topo.nodes)
        for node in nodes:
            self._agent_running[node] = False
        self._record("stop_agents", nodes)
        return {node: True for node in nodes}

    def start_agent(self, node: str) -> None:
        self._agent_running[node] = True
        self._record("start_agent", node)

    def agent_pid(self, node: str) -> Optional[int]:
        return 1 if self._agent_running.get(node) else None

    def exec_in_node(self, node: str, command: str, timeout: float = 30) -> Tuple[Optional[int], str]:
        self._record("exec_in_node", node, command)
        return 0, ""


def rehearse(schedule: List[Planned], topology: Topology) -> None:
    """Play a schedule on a DryLab; the first action that cannot work where it stands raises
    (ImpairmentError for a shaping that cannot be, TestbedError otherwise), with the planned
    action as the exception's `planned` attribute."""
    nemesis = Nemesis(DryLab(topology))
    for planned in schedule:
        try:
            nemesis.apply(planned)
        except Exception as exc:
            exc.planned = planned
            raise
