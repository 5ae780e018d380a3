"""Topology files: YAML → validated `Topology`.

A topology file lists nodes, switches and links, or asks a generator for one of the papers'
shapes (cluster, ring, tree) and adds to it. Node fields are inherited defaults → kind → node,
so a large network stays short. Every problem is reported as a ValidationError naming the file,
the line, the field and what is allowed; nothing here touches the machine.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import addressing, generators
from .errors import ValidationError
from .model import Endpoint, Link, LinkProps, Node, Switch, Topology
from .names import INTF_ALLOWED, INTF_RE, NAME_ALLOWED, NAME_RE
from .radio.propagation import ModelError
from .radio.spec import INTERFACE_PREFIX as RADIO_INTERFACE_PREFIX, parse_mobility, parse_position
from .radio.topology import check_radio_members, radio_section
from .units import DELAY_ALLOWED, FRACTION_ALLOWED, RATE_ALLOWED, parse_delay_ms, parse_fraction, parse_rate_mbit
from .yamlio import Located, Path, dotted, load_file, load_text


TOP_KEYS = ("name", "description", "defaults", "kinds", "nodes", "switches", "links",
            "link_defaults", "addressing", "accept_unemulated", "generate", "radio")
NODE_KEYS = ("kind", "role", "params", "image", "command", "runtime", "attributes", "capabilities", "env",
             "position", "mobility", "resources")
SWITCH_KEYS = ("type", "stp")
SWITCH_TYPES = ("bridge", "ovs")
IMPAIRMENT_KEYS = ("delay", "jitter", "loss", "bandwidth", "corruption", "duplication", "reordering")
LINK_KEYS = ("endpoints", "addresses", "a_to_b", "b_to_a") + IMPAIRMENT_KEYS
ADDRESSING_KEYS = ("pool", "routing")
ROUTING_MODES = ("static", "none")
CAPABILITY_RE = re.compile(r"^(CAP_)?[A-Z_]+$")


def _allowed(options: Tuple[str, ...] | List[str]) -> str:
    return ", ".join(options)


class Reader:
    """Validation helpers bound to one located document."""

    def __init__(self, doc: Located) -> None:
        self.doc = doc

    def fail(self, path: Path, message: str, allowed: Optional[str] = None) -> ValidationError:
        return ValidationError(self.doc.file, dotted(path), message, allowed, self.doc.line(path))

    def mapping(self, value: Any, path: Path, keys: Optional[Tuple[str, ...]] = None) -> Dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a mapping, got {_kind(value)}")
        if keys is not None:
            for key in value:
                if key not in keys:
                    raise self.fail(path + (key,), f"unknown field '{key}'", _allowed(keys))
        return value

    def string(self, value: Any, path: Path, pattern: Optional[re.Pattern] = None,
               allowed: Optional[str] = None) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, f"expected a non-empty string, got {_kind(value)}", allowed)
        if pattern is not None and not pattern.match(value):
            raise self.fail(path, f"'{value}' is not allowed", allowed)
        return value

    def choice(self, value: Any, path: Path, options: Tuple[str, ...] | List[str]) -> str:
        if value not in options:
            raise self.fail(path, f"unknown value {value!r}", _allowed(options))
        return value

    def boolean(self, value: Any, path: Path) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def node_setting(self, node: Node, *field: str) -> Path:
        """The path of the line that set a node's field: the node's own, its kind's, the defaults',
        else the node's entry or the generator that made it."""
        candidates = [("nodes", node.name) + field]
        if node.kind:
            candidates.append(("kinds", node.kind) + field)
        candidates += [("defaults",) + field, ("nodes", node.name), ("generate",)]
        return next((c for c in candidates if c in self.doc.lines), ("nodes", node.name))

    def quantity(self, value: Any, path: Path, parse: Callable[[Any], float], allowed: str) -> float:
        try:
            return parse(value)
        except ValueError as exc:
            raise self.fail(path, str(exc), allowed) from None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ('{value}')"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def load_topology(path: str, accept_unemulated: Tuple[str, ...] = ()) -> Topology:
    """Read, validate and resolve a topology file."""
    return parse_topology(load_file(path), accept_unemulated)


def parse_topology_text(text: str, file: str = "<text>") -> Topology:
    return parse_topology(load_text(text, file))


def parse_topology(doc: Located, accept_unemulated: Tuple[str, ...] = ()) -> Topology:
    r = Reader(doc)
    top = r.mapping(doc.data, (), TOP_KEYS)
    name = r.string(top.get("name"), ("name",), NAME_RE, NAME_ALLOWED) if "name" in top else \
        _default_name(doc.file)
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail(("description",), f"expected a string, got {_kind(description)}")

    # Generators contribute nodes, switches and links that then pass the same checks as
    # hand-written ones; hand-written entries may add to or override generated nodes.
    generated: Optional[Dict[str, Any]] = None
    raw_nodes = dict(r.mapping(top.get("nodes"), ("nodes",)))
    raw_switches = dict(r.mapping(top.get("switches"), ("switches",)))
    raw_links = top.get("links") or []
    if not isinstance(raw_links, list):
        raise r.fail(("links",), f"expected a list of links, got {_kind(raw_links)}")
    link_paths: List[Path] = [("links", i) for i in range(len(raw_links))]
    if "generate" in top:
        spec = r.mapping(top["generate"], ("generate",))
        try:
            shape = generators.expand(spec)
        except generators.GeneratorError as exc:
            raise r.fail(("generate",) + exc.path, exc.message, exc.allowed) from None
        generated = dict(spec)
        for node_name, fields in shape.nodes.items():
            merged = dict(fields)
            if node_name in raw_nodes:
                merged.update(r.mapping(raw_nodes[node_name], ("nodes", node_name)))
            raw_nodes[node_name] = merged
        for sw_name, fields in shape.switches.items():
            raw_switches.setdefault(sw_name, fields)
        raw_links = list(shape.links) + list(raw_links)
        link_paths = [("generate",)] * len(shape.links) + link_paths

    defaults = r.mapping(top.get("defaults"), ("defaults",), NODE_KEYS[1:])
    kinds_raw = r.mapping(top.get("kinds"), ("kinds",))
    kinds: Dict[str, Dict[str, Any]] = {}
    for kind_name, kind_fields in kinds_raw.items():
        r.string(kind_name, ("kinds", kind_name), NAME_RE, NAME_ALLOWED)
        kinds[kind_name] = r.mapping(kind_fields, ("kinds", kind_name), NODE_KEYS[1:])

    nodes: Dict[str, Node] = {}
    for node_name, fields in raw_nodes.items():
        path = ("nodes", node_name)
        r.string(node_name if isinstance(node_name, str) else None, path, NAME_RE, NAME_ALLOWED)
        fields = r.mapping(fields, path, NODE_KEYS)
        nodes[node_name] = _node(r, node_name, fields, defaults, kinds, path)
        check_agent_resources(nodes[node_name])

    switches: Dict[str, Switch] = {}
    for sw_name, fields in raw_switches.items():
        path = ("switches", sw_name)
        r.string(sw_name if isinstance(sw_name, str) else None, path, NAME_RE, NAME_ALLOWED)
        if sw_name in nodes:
            raise r.fail(path, f"'{sw_name}' is already the name of a node", "names unique across nodes and switches")
        fields = r.mapping(fields, path, SWITCH_KEYS)
        sw_type = r.choice(fields.get("type", "bridge"), path + ("type",), SWITCH_TYPES)
        stp = r.boolean(fields.get("stp", False), path + ("stp",))
        switches[sw_name] = Switch(sw_name, sw_type, stp)

    link_defaults = _props(r, r.mapping(top.get("link_defaults"), ("link_defaults",), IMPAIRMENT_KEYS),
                           ("link_defaults",), LinkProps())
    links = [_link(r, raw, path if path != ("generate",) else ("generate",), nodes, switches, link_defaults, i)
             for i, (raw, path) in enumerate(zip(raw_links, link_paths))]
    # Radio segments: each is a switch of type radio and its memberships are links, so that
    # addressing, routes, captures and partitions treat it as the broadcast domain it is.
    radio = radio_section(r, top.get("radio"), nodes, switches)
    for segment, members, paths in radio:
        switches[segment.name] = Switch(segment.name, "radio")
        links.extend(Link(a=end, b=Endpoint(node=segment.name)) for end in members)
        link_paths.extend(paths)
    _assign_interface_names(r, links, link_paths, nodes, frozenset(segment.name for segment, _, _ in radio))
    check_radio_members(r, radio, nodes)
    _check_switch_loops(r, links, link_paths, switches)
    _check_parent_tree(r, nodes)
    _check_role_params(r, nodes)

    addr = r.mapping(top.get("addressing"), ("addressing",), ADDRESSING_KEYS)
    pool_text = addr.get("pool", "10.0.0.0/8")
    try:
        pool = ipaddress.IPv4Network(str(pool_text), strict=True)
    except ValueError as exc:
        raise r.fail(("addressing", "pool"), f"{pool_text!r} is not an IPv4 network ({exc})",
                     "an IPv4 network in CIDR form such as 10.0.0.0/8") from None
    routing = r.choice(addr.get("routing", "static"), ("addressing", "routing"), ROUTING_MODES)

    accepted_raw = top.get("accept_unemulated", [])
    if accepted_raw is True:
        accepted_raw = list(IMPAIRMENT_KEYS)
    if not isinstance(accepted_raw, list):
        raise r.fail(("accept_unemulated",), f"expected a list of impairments or true, got {_kind(accepted_raw)}",
                     _allowed(IMPAIRMENT_KEYS))
    accepted = {r.choice(item, ("accept_unemulated", i), IMPAIRMENT_KEYS) for i, item in enumerate(accepted_raw)}
    accepted.update(accept_unemulated)

    topo = Topology(name=name, nodes=nodes, switches=switches, links=links, source=doc.file,
                    description=description.strip(), pool=pool, routing=routing,
                    accept_unemulated=frozenset(accepted), generated_by=generated,
                    radio={segment.name: segment for segment, _, _ in radio})
    try:
        addressing.assign(topo)
    except addressing.AddressingError as exc:
        index = exc.link_index
        path = link_paths[index] + ("addresses",) if index is not None and link_paths[index] != ("generate",) \
            else ("addressing",)
        raise r.fail(path, exc.message, exc.allowed) from None
    return topo


def _default_name(file: str) -> str:
    base = re.sub(r"\.ya?ml$", "", file.rsplit("/", 1)[-1])
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", base) or "lab"
    return cleaned if cleaned[0].isalpha() else "t" + cleaned


def _node(r: Reader, name: str, fields: Dict[str, Any], defaults: Dict[str, Any],
          kinds: Dict[str, Dict[str, Any]], path: Path) -> Node:
    from agents.roles import role_names
    from .runtimes import runtime_names

    kind = fields.get("kind")
    resolved: Dict[str, Any] = {}
    sources: Dict[str, Path] = {}
    layers: List[Tuple[Dict[str, Any], Path]] = [(defaults, ("defaults",))]
    if kind is not None:
        if kind not in kinds:
            raise r.fail(path + ("kind",), f"unknown kind {kind!r}",
                         _allowed(sorted(kinds)) if kinds else "no kinds are defined in this file")
        layers.append((kinds[kind], ("kinds", kind)))
    layers.append((fields, path))
    limits: Dict[str, Tuple[Any, Path]] = {}  # resources, merged field by field like params
    for layer, layer_path in layers:
        for key, value in layer.items():
            if key == "kind":
                continue
            if key == "resources":
                for field_name, limit in r.mapping(value, layer_path + (key,)).items():
                    limits[field_name] = (limit, layer_path + (key, field_name))
                continue
            if key in ("params", "attributes", "env") and isinstance(value, dict) and isinstance(resolved.get(key), dict):
                resolved[key] = {**resolved[key], **value}
            else:
                resolved[key] = value
            sources[key] = layer_path + (key,)

    node = Node(name=name, kind=kind)
    if "role" in resolved:
        node.role = r.choice(resolved["role"], sources["role"], role_names())
    if "runtime" in resolved:
        node.runtime = r.choice(resolved["runtime"], sources["runtime"], runtime_names())
    if "image" in resolved:
        node.image = r.string(resolved["image"], sources["image"], re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$"),
                              "a Docker image reference such as testbed/agent:latest (lower case)")
    if "command" in resolved:
        command = resolved["command"]
        if isinstance(command, str) and command.strip():
            node.command = command.split()
        elif isinstance(command, list) and command and all(isinstance(c, str) for c in command):
            node.command = list(command)
        else:
            raise r.fail(sources["command"], f"expected a command line, got {_kind(command)}",
                         "a string or a non-empty list of strings")
    for key in ("params", "attributes"):
        if key in resolved:
            setattr(node, key, dict(r.mapping(resolved[key], sources[key])))
    if "env" in resolved:
        env = r.mapping(resolved["env"], sources["env"])
        for env_key, env_value in env.items():
            if not isinstance(env_value, (str, int, float)) or isinstance(env_value, bool):
                raise r.fail(sources["env"] + (env_key,), f"expected a string, got {_kind(env_value)}")
        node.env = {str(k): str(v) for k, v in env.items()}
    if "capabilities" in resolved:
        caps = resolved["capabilities"]
        if not isinstance(caps, list):
            raise r.fail(sources["capabilities"], f"expected a list, got {_kind(caps)}",
                         "Linux capability names such as NET_RAW")
        for i, cap in enumerate(caps):
            r.string(cap, sources["capabilities"] + (i,), CAPABILITY_RE, "Linux capability names such as NET_RAW")
        node.capabilities = [c.upper().removeprefix("CAP_") for c in caps]
    for key, parse in (("position", parse_position), ("mobility", parse_mobility)):
        if key in resolved:
            try:
                setattr(node, key, parse(resolved[key]))
            except ModelError as exc:
                raise r.fail(sources[key] + exc.key, exc.message, exc.allowed) from None
    set_resources(node, {k: (v, r.doc, where) for k, (v, where) in limits.items()})
    return node


def set_resources(node: Node, limits: Dict[str, Tuple[Any, Located, Path]]) -> None:
    """Apply `resources` fields (value, document, path) over the node's limits; raise the file's
    ValidationError for a bad one."""
    from .resources import ResourceError, parse_value

    changes = {}
    for key, (value, doc, where) in limits.items():
        try:
            changes[key] = parse_value(key, value)
        except ResourceError as exc:
            raise Reader(doc).fail(where, exc.message, exc.allowed) from None
        node.resource_origin[key] = (doc.file, dotted(where), doc.line(where))
    if changes:
        node.resources = replace(node.resources, **changes)


def check_agent_resources(node: Node) -> None:
    """A node that runs the agent must have the memory and pids it needs to start: refused at the
    line that set the limit."""
    from .agent_config import has_agent
    from .resources import agent_problem

    problem = agent_problem(node.resources) if has_agent(node) else None
    if problem is None:
        return
    file, where, line = node.resource_origin.get(problem.key, ("", f"resources.{problem.key}", None))
    raise ValidationError(file, where, f"{problem.message} (node {node.name}, role {node.role})", problem.allowed, line)


_IMPAIRMENT_FIELDS = {
    "delay": ("delay_ms", parse_delay_ms, DELAY_ALLOWED),
    "jitter": ("jitter_ms", parse_delay_ms, DELAY_ALLOWED),
    "bandwidth": ("bandwidth_mbit", parse_rate_mbit, RATE_ALLOWED),
    "loss": ("loss", parse_fraction, FRACTION_ALLOWED),
    "corruption": ("corruption", parse_fraction, FRACTION_ALLOWED),
    "duplication": ("duplication", parse_fraction, FRACTION_ALLOWED),
    "reordering": ("reordering", parse_fraction, FRACTION_ALLOWED),
}


class ImpairmentError(ValueError):
    def __init__(self, key: str, message: str, allowed: str) -> None:
        super().__init__(message)
        self.key, self.message, self.allowed = key, message, allowed


def impairment_value(key: str, value: Any) -> Tuple[str, Any]:
    """(LinkProps field, value) of one impairment as a YAML file gives it (delay: 20ms, loss: 10%,
    bandwidth: null for no limit). Raises ImpairmentError naming the key."""
    attr, parse, allowed = _IMPAIRMENT_FIELDS[key]
    if key == "bandwidth" and value is None:
        return attr, None
    try:
        return attr, parse(value)
    except ValueError as exc:
        raise ImpairmentError(key, str(exc), allowed) from None


def apply_impairments(base: LinkProps, fields: Dict[str, Any], check_combination: bool = True) -> LinkProps:
    """`base` with the impairments of a YAML mapping (delay: 20ms, loss: 10%, ...) applied.
    A bandwidth of null removes the limit. Raises ImpairmentError naming the bad key, also for a
    combination that cannot be (jitter or reordering without a delay) unless told not to check."""
    props = base.merged(**dict(impairment_value(key, value) for key, value in fields.items()))
    if not check_combination:
        return props
    if props.reordering > 0 and props.delay_ms <= 0:
        raise ImpairmentError("reordering", "reordering needs a delay to reorder against",
                              "set delay above 0 on the same link")
    if props.jitter_ms > 0 and props.delay_ms <= 0:
        raise ImpairmentError("jitter", "jitter varies a delay and needs one", "set delay above 0 on the same link")
    return props


def _props(r: Reader, fields: Dict[str, Any], path: Path, base: LinkProps) -> LinkProps:
    try:
        return apply_impairments(base, fields)
    except ImpairmentError as exc:
        raise r.fail(path + (exc.key,), exc.message, exc.allowed) from None


def _endpoint(r: Reader, raw: Any, path: Path, nodes: Dict[str, Node], switches: Dict[str, Switch]) -> Endpoint:
    text = r.string(raw, path, allowed="'NODE', 'NODE:INTERFACE' or 'SWITCH'")
    name, _, intf = text.partition(":")
    if name not in nodes and name not in switches:
        known = sorted(nodes) + sorted(switches)
        shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        raise r.fail(path, f"unknown node or switch {name!r}", shown or "no nodes are defined")
    if intf:
        if name in switches:
            raise r.fail(path, f"'{text}' names a port of switch {name!r}; switch ports are named by the testbed",
                         f"just '{name}'")
        r.string(intf, path, INTF_RE, INTF_ALLOWED)
        if intf == "lo":
            raise r.fail(path, "'lo' is the loopback interface", INTF_ALLOWED)
    return Endpoint(node=name, interface=intf or None)


def _link(r: Reader, raw: Any, path: Path, nodes: Dict[str, Node], switches: Dict[str, Switch],
          defaults: LinkProps, index: int) -> Link:
    if isinstance(raw, list):
        raw = {"endpoints": raw}
    fields = r.mapping(raw, path, LINK_KEYS)
    ends = fields.get("endpoints")
    if not isinstance(ends, list) or len(ends) != 2:
        raise r.fail(path + ("endpoints",), f"expected two endpoints, got {_kind(ends) if not isinstance(ends, list) else f'{len(ends)}'}",
                     "a list of two names: [NODE or NODE:INTERFACE or SWITCH, ...]")
    a = _endpoint(r, ends[0], path + ("endpoints", 0), nodes, switches)
    b = _endpoint(r, ends[1], path + ("endpoints", 1), nodes, switches)
    if a.node == b.node:
        raise r.fail(path + ("endpoints",), f"both ends are {a.node!r}", "two different nodes or switches")
    both = _props(r, {k: v for k, v in fields.items() if k in IMPAIRMENT_KEYS}, path, defaults)
    forward = _props(r, r.mapping(fields.get("a_to_b"), path + ("a_to_b",), IMPAIRMENT_KEYS), path + ("a_to_b",), both)
    backward = _props(r, r.mapping(fields.get("b_to_a"), path + ("b_to_a",), IMPAIRMENT_KEYS), path + ("b_to_a",), both)
    if "addresses" in fields:
        addrs = fields["addresses"]
        if not isinstance(addrs, list) or len(addrs) != 2:
            raise r.fail(path + ("addresses",), "expected two addresses, one per endpoint",
                         "[ADDRESS/PREFIX or null, ADDRESS/PREFIX or null]")
        for end, value, i in ((a, addrs[0], 0), (b, addrs[1], 1)):
            if value is None:
                continue
            if end.node in switches:
                raise r.fail(path + ("addresses", i), f"{end.node!r} is a switch and has no address on its ports", "null")
            try:
                end.address = ipaddress.IPv4Interface(str(value))
            except ValueError:
                raise r.fail(path + ("addresses", i), f"{value!r} is not an IPv4 address with prefix",
                             "such as 10.1.0.5/24") from None
            if "/" not in str(value):
                raise r.fail(path + ("addresses", i), f"{value!r} has no prefix length", "such as 10.1.0.5/24")
            net = end.address.network
            if net.prefixlen < 31 and end.address.ip in (net.network_address, net.broadcast_address):
                raise r.fail(path + ("addresses", i), f"{value} is the network or broadcast address of {net}",
                             "a host address inside the subnet")
    return Link(a=a, b=b, forward=forward, backward=backward)


def _assign_interface_names(r: Reader, links: List[Link], paths: List[Path], nodes: Dict[str, Node],
                            radio: frozenset = frozenset()) -> None:
    """Explicit names first; the rest get eth0, eth1, ... in link order (radio memberships
    wlan0, wlan1, ...), skipping taken names."""
    taken: Dict[str, Dict[str, int]] = {name: {} for name in nodes}
    for i, link in enumerate(links):
        for j, end in enumerate((link.a, link.b)):
            if end.node in nodes and end.interface:
                if end.interface in taken[end.node]:
                    raise r.fail(paths[i] + ("endpoints", j),
                                 f"interface {end.interface!r} of {end.node!r} is already used by another link",
                                 "each interface of a node in one link")
                taken[end.node][end.interface] = i
    counters: Dict[Tuple[str, str], int] = {}
    for link in links:
        prefix = RADIO_INTERFACE_PREFIX if link.b.node in radio else "eth"
        for end in (link.a, link.b):
            if end.node in nodes and not end.interface:
                key = (end.node, prefix)
                counters.setdefault(key, 0)
                while f"{prefix}{counters[key]}" in taken[end.node]:
                    counters[key] += 1
                end.interface = f"{prefix}{counters[key]}"
                taken[end.node][end.interface] = -1


def _check_switch_loops(r: Reader, links: List[Link], paths: List[Path], switches: Dict[str, Switch]) -> None:
    """Switches joined in a cycle flood broadcasts forever unless spanning tree is on."""
    parent = {name: name for name in switches}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, link in enumerate(links):
        if link.a.node in switches and link.b.node in switches:
            ra, rb = find(link.a.node), find(link.b.node)
            if ra == rb:
                if switches[link.a.node].stp and switches[link.b.node].stp:
                    continue
                raise r.fail(paths[i], f"switches {link.a.node!r} and {link.b.node!r} are already connected: "
                             "this link closes a loop of switches, which floods broadcasts forever",
                             "a loop-free set of switch links, or stp: true on the switches of the loop")
            parent[ra] = rb


def _check_role_params(r: Reader, nodes: Dict[str, Node]) -> None:
    """The parameters of each node's role, as the role declares them: `testbed up` starts the
    agents with them, so a rate of .inf must not get past here. A scenario checks them again once
    its workload has set roles and parameters."""
    from agents.roles import check_params

    for name, node in nodes.items():
        problem = check_params(node.role, node.params)
        if not problem:
            continue
        param, message, allowed = problem
        raise r.fail(r.node_setting(node, "params", param), f"{message} (node {name})", allowed)



def _check_parent_tree(r: Reader, nodes: Dict[str, Node]) -> None:
    """Nodes that name a `parent` (tree servers, tree components) must form a tree."""
    for name, node in nodes.items():
        if "parent" not in node.params:
            continue
        seen = [name]
        current = node
        while "parent" in current.params and current.params["parent"] is not None:
            parent = current.params["parent"]
            path = ("nodes", current.name, "params", "parent")
            if parent not in nodes:
                raise r.fail(path, f"parent {parent!r} is not a node", "the name of another node")
            if parent in seen:
                cycle = " -> ".join(seen[seen.index(parent):] + [parent])
                raise r.fail(path, f"the parents form a cycle ({cycle}); a tree has none",
                             "parents that lead to one root")
            seen.append(parent)
            current = nodes[parent]
