"""What every timeline action is: `FaultAction`, and `Planned`, one action as scheduled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, FrozenSet, Optional, Tuple

from ..model import Topology

#: the fields every timeline entry may have: when it happens and for how long
COMMON_FIELDS = ("at", "every", "start", "until", "action", "for")
#: the fields that say what an action acts on, by target kind
TARGET_FIELDS = {"node": ("node", "nodes", "pick"), "link": ("link", "direction"), "lab": ()}
DIRECTIONS = ("both", "a_to_b", "b_to_a")


@dataclass
class Planned:
    """One action as scheduled (or executed): when, relative to the end of the warm-up, and on what."""

    at_ms: float
    action: str
    node: Optional[str] = None
    link: Optional[Tuple[str, str]] = None
    direction: str = "both"
    #: the action's own fields after validation, under the names the manifest records them by
    params: Dict[str, Any] = field(default_factory=dict)
    source: str = ""  # which timeline entry produced it, e.g. "timeline[2]" or "timeline[2] for 4s"
    path: Tuple[Any, ...] = ()  # where that entry is in the scenario file (validation messages)

    def describe(self) -> Dict[str, Any]:
        """The action as the manifest's schedule and timeline record it."""
        out: Dict[str, Any] = {"at_s": round(self.at_ms / 1000, 3), "action": self.action}
        if self.node:
            out["node"] = self.node
        if self.link:
            out["link"] = list(self.link)
            if self.direction != "both":
                out["direction"] = self.direction
        out.update(self.params)
        out["from"] = self.source
        return out


class FaultAction:
    """One kind of timeline action. Subclasses set the class attributes and override `apply`
    (and `parse` when they have fields of their own)."""

    #: the name scenarios use (`action: kill`)
    name: ClassVar[str] = ""
    #: one line for users: what the action does
    summary: ClassVar[str] = ""
    #: what it acts on: "node" (node, or nodes with pick), "link" (link, direction) or "lab"
    target: ClassVar[str] = "lab"
    #: the action's own fields in a timeline entry, with what each allows
    fields: ClassVar[Dict[str, str]] = {}
    #: JSON Schemas of those fields for `testbed schema scenario` (a field without one is described
    #: by its text in `fields`)
    field_schemas: ClassVar[Dict[str, Dict[str, Any]]] = {}
    #: the action that undoes this one after `for: DURATION`, None if it cannot be undone
    inverse: ClassVar[Optional[str]] = None
    #: its effect on its node's liveness, which the analysis reads: "down" (the node stops taking
    #: part in the protocol until an "up"), "up", or None
    liveness: ClassVar[Optional[str]] = None
    #: its effect on the node's clock, which the fidelity analysis reads: "held" (the node's
    #: processes are frozen: their timers will wake late, by the scenario's doing), "released",
    #: or None. A "down" action holds the node's timers too, and an "up" releases them.
    timers: ClassVar[Optional[str]] = None

    def parse(self, reader, entry: Dict[str, Any], path: Tuple[Any, ...], topology: Topology) -> Dict[str, Any]:
        """Validate the action's own fields of a timeline entry (raise reader.fail(...)); return
        its params (Planned.params)."""
        return {}

    def undo_params(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """The params of the inverse action that undoes one with these params."""
        return {}

    def requires(self, planned: Planned) -> FrozenSet[str]:
        """Link properties the machine must emulate for this action (checked before the run)."""
        return frozenset()

    def apply(self, nemesis, planned: Planned) -> Optional[Dict[str, Any]]:
        """Carry the action out on the nemesis's lab; return details worth recording, or None.
        Raise TestbedError for a failure the user should read."""
        raise NotImplementedError


def node_ref(reader, value: Any, path: Tuple[Any, ...], topology: Topology) -> str:
    """A node of the topology named in a scenario, or a validation error listing some names."""
    if not isinstance(value, str) or value not in topology.nodes:
        shown = ", ".join(list(topology.nodes)[:12]) + (", ..." if len(topology.nodes) > 12 else "")
        raise reader.fail(path, f"unknown node {value!r}", shown)
    return value
