"""`move`: move a node on its radio segment, at once (`to:` only) or from where it is at `speed`
metres per second; the medium applies the new position at once and the node then stays there
(the move replaces its mobility from that time on). See testbed.media.radio."""

from __future__ import annotations

from ..radio.propagation import ModelError
from ..radio.spec import POSITION_ALLOWED, parse_position
from .base import FaultAction

SPEED_ALLOWED = "a speed in metres per second above 0 (leave it out to move at once)"


class Move(FaultAction):
    name = "move"
    summary = "move the node on its radio segment to a point, at once or at a speed (m/s)"
    target = "node"
    fields = {"to": POSITION_ALLOWED, "speed": SPEED_ALLOWED}
    field_schemas = {
        "to": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 3},
        "speed": {"type": "number", "exclusiveMinimum": 0},
    }

    def parse(self, reader, entry, path, topology):
        node = entry.get("node")
        if isinstance(node, str) and node in topology.nodes and \
                not any(node in segment.members for segment in topology.radio.values()):
            members = sorted({n for segment in topology.radio.values() for n in segment.members})
            raise reader.fail(path + ("node",), f"node {node!r} is on no radio segment, so it has no position",
                              ", ".join(members[:12]) if members else "no radio segments in the topology")
        if "to" not in entry:
            raise reader.fail(path, "move needs where to", POSITION_ALLOWED)
        try:
            to = parse_position(entry["to"])
        except ModelError as exc:
            raise reader.fail(path + ("to",) + exc.key, exc.message, exc.allowed) from None
        params = {"to": list(to)}
        if entry.get("speed") is not None:
            speed = entry["speed"]
            if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed <= 1e5:
                raise reader.fail(path + ("speed",), f"{speed!r} is not a speed", SPEED_ALLOWED)
            params["speed"] = float(speed)
        return params

    def apply(self, nemesis, planned):
        nemesis.lab.move(planned.node, tuple(planned.params["to"]), planned.params.get("speed"))
        return None
