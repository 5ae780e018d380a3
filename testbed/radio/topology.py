"""Reading a topology file's `radio:` section (see radio.spec for the fields), for
testbed.topology: segments, their members as endpoints, and the checks that need the whole
topology (every member has a position, a trace names only members, positions only on members).
Errors are located like every other topology error: file, line, field, what is allowed."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ..model import Endpoint, Node, Switch
from ..names import INTF_ALLOWED, INTF_RE, NAME_ALLOWED, NAME_RE
from .propagation import ModelError
from .spec import SEGMENT_KEYS, RadioSegment, parse_segment_fields

#: the bridge name has room for three digits (see names.LabNames.radio_bridge)
MAX_SEGMENTS = 999

Parsed = List[Tuple[RadioSegment, List[Endpoint], List[tuple]]]


def radio_section(r, raw: Any, nodes: Dict[str, Node], switches: Dict[str, Switch]) -> Parsed:
    """The segments of a `radio:` mapping, each with its member endpoints and their paths."""
    segments = r.mapping(raw, ("radio",))
    if len(segments) > MAX_SEGMENTS:
        raise r.fail(("radio",), f"{len(segments)} radio segments", f"at most {MAX_SEGMENTS}")
    out: Parsed = []
    for name, fields in segments.items():
        path = ("radio", name)
        r.string(name if isinstance(name, str) else None, path, NAME_RE, NAME_ALLOWED)
        if name in nodes or name in switches:
            raise r.fail(path, f"'{name}' is already the name of a {'node' if name in nodes else 'switch'}",
                         "names unique across nodes, switches and radio segments")
        fields = r.mapping(fields, path, SEGMENT_KEYS)
        try:
            segment = parse_segment_fields(name, fields, r.doc.file)
        except ModelError as exc:
            raise r.fail(path + exc.key, exc.message, exc.allowed) from None
        members, paths = _members(r, fields.get("members"), path + ("members",), nodes)
        out.append((segment, members, paths))
    return out


def _members(r, raw: Any, path: tuple, nodes: Dict[str, Node]) -> Tuple[List[Endpoint], List[tuple]]:
    allowed = "a list of NODE, NODE:INTERFACE or the name of a kind (all its nodes)"
    if not isinstance(raw, list) or not raw:
        raise r.fail(path, "a radio segment needs its member nodes", allowed)
    kinds: Dict[str, List[str]] = {}
    for node in nodes.values():
        if node.kind:
            kinds.setdefault(node.kind, []).append(node.name)
    ends: List[Endpoint] = []
    paths: List[tuple] = []
    seen: Dict[str, int] = {}
    for i, item in enumerate(raw):
        text = r.string(item, path + (i,), allowed=allowed)
        name, _, interface = text.partition(":")
        if name in nodes:
            names = [name]
        elif name in kinds and not interface:
            names = kinds[name]
        else:
            known = sorted(nodes)
            shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
            raise r.fail(path + (i,), f"unknown node or kind {name!r}", shown or "no nodes are defined")
        if interface and (not INTF_RE.match(interface) or interface == "lo"):
            raise r.fail(path + (i,), f"interface {interface!r} is not allowed", INTF_ALLOWED)
        for node in names:
            if node in seen:
                raise r.fail(path + (i,), f"node {node!r} is already a member (entry {seen[node]})",
                             "each node once per segment")
            seen[node] = i
            ends.append(Endpoint(node=node, interface=interface or None))
            paths.append(path + (i,))
    return ends, paths


def check_radio_members(r, parsed: Parsed, nodes: Dict[str, Node]) -> None:
    """Once interface names are assigned: record each segment's members, load its trace, and
    check that every member has a position and that positions and mobility are on members only."""
    from .mobility import load_trace, trace_file_problem

    on_radio: Dict[str, str] = {}
    for segment, members, _ in parsed:
        segment.members = {end.node: end.interface for end in members}
        for node in segment.members:
            on_radio.setdefault(node, segment.name)
    for node in nodes.values():
        if node.name not in on_radio and (node.position is not None or node.mobility is not None):
            field = "position" if node.position is not None else "mobility"
            raise r.fail(r.node_setting(node, field), f"node {node.name!r} has a {field} but is on no radio segment",
                         "a position or mobility only for members of a segment under radio:")
    traced: Dict[str, str] = {}
    for segment, _, _ in parsed:
        path = ("radio", segment.name)
        if segment.trace is None:
            continue
        trace = segment.trace
        for i, node in enumerate(trace.nodes):
            if node not in segment.members:
                raise r.fail(path + ("trace", "nodes", i), f"{node!r} is not a member of segment {segment.name!r}",
                             ", ".join(segment.members))
        where = path + ("trace",) if ("radio", segment.name, "trace") in r.doc.lines else path
        order = trace.nodes or list(segment.members)
        if trace.sumo is not None:  # made by SUMO when the lab starts, from the run's seed: it moves them all
            moved = trace.sumo["cars"] + trace.sumo["walkers"]
            if moved != len(order):
                raise r.fail(where + ("sumo",), f"the SUMO trace moves {trace.sumo['cars']} cars and "
                             f"{trace.sumo['walkers']} walkers ({moved} nodes), and the segment has {len(order)} "
                             f"{'nodes in trace.nodes' if trace.nodes else 'members'}",
                             "as many cars and walkers as the nodes the trace moves (the cars first)")
            tracks = dict.fromkeys(order)
        else:
            problem = trace_file_problem(trace.path)
            if problem:  # refused at the topology's line, before the trace's own errors
                raise r.fail(where, f"{problem[0]}: {trace.path}", problem[1])
            tracks = load_trace(trace.path, trace.format, order, "trace")
        for node in tracks:
            if node not in segment.members:
                raise r.fail(path + ("trace",), f"the trace moves {node!r}, which is not a member of segment "
                             f"{segment.name!r}", ", ".join(segment.members))
            if nodes[node].mobility is not None and nodes[node].mobility.model != "static":
                raise r.fail(r.node_setting(nodes[node], "mobility"),
                             f"node {node!r} follows the trace of segment {segment.name!r} and cannot also move by "
                             f"{nodes[node].mobility.model}", "static, or leave the node out of the trace")
            traced[node] = segment.name
    for segment, _, paths in parsed:
        for (node, _), path in zip(segment.members.items(), paths):
            spec = nodes[node]
            moving = spec.mobility is not None and spec.mobility.model != "static"
            if spec.position is None and not moving and node not in traced:
                raise r.fail(path, f"node {node!r} is on radio segment {segment.name!r} without a position",
                             "position: [X, Y] on the node (or its kind, or defaults), random-waypoint mobility, "
                             "or the node in the segment's trace")
