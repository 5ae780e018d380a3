"""Generators for the network shapes of the AbC paper (section 4), as explicit graphs.

- cluster C[x,y]: x servers and y components, all on one switch (`lan`).
- ring R[x,y]: x servers in a ring of cables (srv1 -- srv2 -- ... -- srvx -- srv1); each server
  manages y components that share a switch with it (`lan<i>`).
- tree T[x,y,z]: x levels of servers; every server above the last level has y child servers
  (a cable each) and z components; a leaf server has z components. A server and its components
  share a switch (`lan<i>`). Servers are numbered breadth first from the root `srv1`.

Servers are `srv<i>`, components `c<j>`. Each generated node carries its place in the structure
as role parameters (`infrastructure`, `parent`, `next`) for the agents that the roles run.

- nodes: a population without links, for radio segments and mobility, where hand-writing 200
  node lines is the only other way: `groups` maps a name prefix to a count and the node fields
  every member gets (`d: {count: 100, kind: driver}` makes d1..d100). Groups keep their order.
  With `switch: NAME` every node is cabled to that switch (`links`: the cables' impairments), a
  switched LAN; without it the nodes have no links (a radio segment joins them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

SHAPES = ("cluster", "ring", "tree", "nodes")
MAX_NODES = 5000
_COMMON = ("shape", "server", "component", "server_links", "component_links")
_KEYS = {
    "cluster": _COMMON + ("servers", "components"),
    "ring": _COMMON + ("servers", "components"),
    "tree": _COMMON + ("levels", "children", "components"),
    "nodes": ("shape", "groups", "switch", "links"),
}
_PREFIX_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,23}$")
_PREFIX_ALLOWED = "a letter, then up to 23 letters, digits, '-' or '_' (the number follows)"


class GeneratorError(Exception):
    def __init__(self, path: Tuple[Any, ...], message: str, allowed: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.allowed = allowed


@dataclass
class Shape:
    nodes: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    switches: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    links: List[Dict[str, Any]] = field(default_factory=list)


def _count(spec: Dict[str, Any], key: str, minimum: int) -> int:
    if key not in spec:
        raise GeneratorError((key,), f"missing field '{key}'", f"a whole number, at least {minimum}")
    value = spec[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise GeneratorError((key,), f"{value!r} is not allowed", f"a whole number, at least {minimum}")
    return value


def _fields(spec: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = spec.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GeneratorError((key,), "expected a mapping of node fields (kind, role, image, ...)")
    return value


def _link_fields(spec: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = spec.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GeneratorError((key,), "expected a mapping of impairments (delay, loss, bandwidth, ...)")
    return value


def expand(spec: Dict[str, Any]) -> Shape:
    """Expand a `generate:` mapping into nodes, switches and links (raw YAML-like fields)."""
    shape = spec.get("shape")
    if shape not in SHAPES:
        raise GeneratorError(("shape",), f"unknown shape {shape!r}", ", ".join(SHAPES))
    for key in spec:
        if key not in _KEYS[shape]:
            raise GeneratorError((key,), f"unknown field '{key}' for shape {shape}", ", ".join(_KEYS[shape]))
    if shape == "nodes":
        return _population(spec)
    server_fields = _fields(spec, "server")
    component_fields = _fields(spec, "component")
    server_links = _link_fields(spec, "server_links")
    component_links = _link_fields(spec, "component_links")

    if shape == "tree":
        levels = _count(spec, "levels", 1)
        children = _count(spec, "children", 0)
        components = _count(spec, "components", 0)
        servers = sum(children ** level for level in range(levels)) if children != 1 else levels
        total = servers * (1 + components)
    else:
        servers = _count(spec, "servers", 1)
        components = _count(spec, "components", 0)
        total = servers + (components if shape == "cluster" else servers * components)
    if total > MAX_NODES:
        raise GeneratorError((), f"shape {shape} would have {total} nodes", f"at most {MAX_NODES} nodes")

    out = Shape()

    def server(index: int, params: Dict[str, Any]) -> str:
        name = f"srv{index}"
        out.nodes[name] = {**server_fields, "params": {**server_fields.get("params", {}), **params}}
        return name

    def component(index: int, params: Dict[str, Any]) -> str:
        name = f"c{index}"
        out.nodes[name] = {**component_fields, "params": {**component_fields.get("params", {}), **params}}
        return name

    def cable(a: str, b: str, impairments: Dict[str, Any]) -> None:
        out.links.append({"endpoints": [a, b], **impairments})

    if shape == "cluster":
        out.switches["lan"] = {}
        for i in range(1, servers + 1):
            cable(server(i, {"infrastructure": "cluster"}), "lan", server_links)
        for j in range(1, components + 1):
            cable(component(j, {"infrastructure": "cluster"}), "lan", component_links)
        return out

    next_component = 1

    def group(server_name: str, index: int, infrastructure: str) -> None:
        nonlocal next_component
        if components == 0:
            return
        lan = f"lan{index}"
        out.switches[lan] = {}
        cable(server_name, lan, component_links)
        for _ in range(components):
            cable(component(next_component, {"infrastructure": infrastructure, "parent": server_name}), lan,
                  component_links)
            next_component += 1

    if shape == "ring":
        names = [server(i, {"infrastructure": "ring", "next": f"srv{i % servers + 1}"})
                 for i in range(1, servers + 1)]
        for i, name in enumerate(names, start=1):
            group(name, i, "ring")
        for i in range(servers - 1):
            cable(names[i], names[i + 1], server_links)
        if servers >= 3:
            cable(names[-1], names[0], server_links)
        return out

    # tree: breadth-first numbering, root srv1
    level_of = {1: 1}
    order = [(1, None)]
    next_index = 2
    position = 0
    while position < len(order):
        index, parent = order[position]
        position += 1
        if level_of[index] < levels:
            for _ in range(children):
                level_of[next_index] = level_of[index] + 1
                order.append((next_index, index))
                next_index += 1
    for index, parent in order:
        params: Dict[str, Any] = {"infrastructure": "tree"}
        if parent is not None:
            params["parent"] = f"srv{parent}"
        server(index, params)
    for index, _ in order:
        group(f"srv{index}", index, "tree")
    for index, parent in order:
        if parent is not None:
            cable(f"srv{parent}", f"srv{index}", server_links)
    return out


def _population(spec: Dict[str, Any]) -> Shape:
    groups = spec.get("groups")
    allowed = "a mapping of name prefix to {count: N, and node fields (kind, role, params, ...)}"
    if not isinstance(groups, dict) or not groups:
        raise GeneratorError(("groups",), "missing field 'groups'" if groups is None
                             else f"{groups!r} is not allowed", allowed)
    out = Shape()
    total = 0
    for prefix, fields in groups.items():
        if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
            raise GeneratorError(("groups", prefix), f"name prefix {prefix!r} is not allowed", _PREFIX_ALLOWED)
        if not isinstance(fields, dict):
            raise GeneratorError(("groups", prefix), f"{fields!r} is not allowed", allowed)
        try:
            count = _count(fields, "count", 1)
        except GeneratorError as exc:
            raise GeneratorError(("groups", prefix) + exc.path, exc.message, exc.allowed) from None
        total += count
        if total > MAX_NODES:
            raise GeneratorError(("groups", prefix), f"the groups would have {total} nodes",
                                 f"at most {MAX_NODES} nodes")
        node_fields = {k: v for k, v in fields.items() if k != "count"}
        for i in range(1, count + 1):
            name = f"{prefix}{i}"
            if name in out.nodes:
                raise GeneratorError(("groups", prefix), f"node {name} is made by two groups",
                                     "prefixes that do not make the same name (d and d1 both make d11)")
            out.nodes[name] = dict(node_fields)
    switch = spec.get("switch")
    if switch is not None:
        if not isinstance(switch, str) or not _PREFIX_RE.match(switch) or switch in out.nodes:
            raise GeneratorError(("switch",), f"switch name {switch!r} is not allowed",
                                 "a letter, then letters, digits, '-' or '_', not a generated node's name")
        impairments = _link_fields(spec, "links")
        out.switches[switch] = {}
        for name in out.nodes:
            out.links.append({"endpoints": [name, switch], **impairments})
    elif "links" in spec:
        raise GeneratorError(("links",), "link impairments without a switch to cable the nodes to", "switch: NAME")
    return out
