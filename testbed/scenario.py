"""Scenario files: a topology, a workload, capture settings, a seed and a timeline of faults.

The three pieces are independent, as Jepsen's generator, nemesis and checker are: the workload
says what the agents do (roles and parameters per node, kind or by default), the timeline says
what faults happen when (at fixed times, or `every` interval with random choices drawn from the
seed), and the analysis checks the history afterwards. The same scenario with the same seed
gives the same workload and the same fault schedule: `Scenario.schedule` is fully expanded at
load time.
"""

from __future__ import annotations

import math
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .actions import action_class, action_names
from .actions.base import COMMON_FIELDS, DIRECTIONS, TARGET_FIELDS, Planned, node_ref
from .errors import ValidationError
from .model import Topology
from .topology import (NAME_ALLOWED, NAME_RE, ImpairmentError, Reader, check_agent_resources, parse_topology,
                       set_resources)
from .units import TIME_ALLOWED, parse_time_ms
from .yamlio import Located, Path, load_file, load_text, load_value

TOP_KEYS = ("name", "description", "topology", "seed", "duration", "warmup", "quiet", "time_dilation", "workload",
            "capture", "fidelity", "timeline")
#: time dilation: the emulated world runs k times slower than the wall clock, k from 1 to this
MAX_DILATION = 100
DILATION_ALLOWED = (f"a number from 1 to {MAX_DILATION}: the emulated world runs that many times slower than the "
                    "wall clock (below 1 the machine would have to run faster than real time)")
WORKLOAD_KEYS = ("defaults", "kinds", "nodes")
WORKLOAD_NODE_KEYS = ("role", "params", "start", "resources")
#: a node's `start`: with the network (at once), or by the timeline's `start` action (a node that
#: joins mid-run; down until then)
STARTS = ("at-once", "timeline")
CAPTURE_KEYS = ("enabled", "snaplen", "buffer_mib")
MIN_QUIET_MS = 1500  # captures deliver buffered packets within a second; keep the tail
#: the most actions one `every` entry may expand to: far beyond any experiment's need, and few
#: enough that expanding and rehearsing them takes a fraction of a second
MAX_REPEATS = 100_000


@dataclass
class Scenario:
    name: str
    source: str
    topology: Topology
    topology_source: str
    seed: int
    duration_ms: float
    warmup_ms: float
    quiet_ms: float
    capture: Dict[str, Any]
    schedule: List[Planned]
    description: str = ""
    #: the run's own fidelity thresholds: indicator → [degraded above, unfaithful above] (testbed/monitor.py)
    fidelity: Dict[str, List[Optional[float]]] = field(default_factory=dict)
    #: the emulated world runs this many times slower than the wall clock (durations, the timeline,
    #: the agents' clocks, link rates, radio ticks and mobility are in virtual time)
    time_dilation: float = 1.0
    raw: Dict[str, Any] = field(default_factory=dict)

    def files(self) -> List[Tuple[str, str]]:
        """Every file the run reads, as (what it is, absolute path): the scenario, its topology
        file (none when inline) and the radio segments' mobility traces. Files named inside
        commands (`exec` actions, node `command`s) are the node's own and are not listed."""
        out = [("scenario", os.path.abspath(self.source))]
        if not self.topology_source.endswith("(inline)"):
            out.append(("topology", os.path.abspath(self.topology_source)))
        for name, segment in sorted(self.topology.radio.items()):
            trace = getattr(segment, "trace", None)
            if trace is not None and trace.sumo is None:  # SUMO's trace is made from the topology's settings
                out.append((f"trace of radio segment {name}", os.path.abspath(trace.path)))
        return out

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "source": self.source,
            "topology": self.topology_source, "seed": self.seed,
            "duration_s": self.duration_ms / 1000, "warmup_s": self.warmup_ms / 1000, "quiet_s": self.quiet_ms / 1000,
            "time_dilation": self.time_dilation,
            "capture": dict(self.capture), "fidelity": {k: list(v) for k, v in self.fidelity.items()},
            "workload": self.raw.get("workload") or {},
            "timeline": self.raw.get("timeline") or [],
            "schedule": [a.describe() for a in self.schedule],
        }


def load_scenario(path: str, seed: Optional[int] = None, overrides: Tuple[str, ...] = ()) -> Scenario:
    doc = load_file(path)
    apply_overrides(doc, overrides)
    return parse_scenario(doc, seed)


def parse_scenario_text(text: str, file: str = "<text>", seed: Optional[int] = None) -> Scenario:
    return parse_scenario(load_text(text, file), seed)


def apply_overrides(doc: Located, overrides: Tuple[str, ...]) -> None:
    """`--set path.to.param=value`: the value is parsed as YAML (numbers, booleans, lists), within
    the same bounds as a file; text that is not YAML is taken as a string."""
    for item in overrides:
        if "=" not in item:
            raise ValidationError("--set", item, "expected PATH=VALUE", "such as workload.defaults.params.rate=50")
        path, _, text = item.partition("=")
        keys = [k for k in path.split(".") if k]
        if not keys:
            raise ValidationError("--set", item, "empty path", "such as seed=3")
        value = load_value(text, f"--set {path}", text_if_not_yaml=True)
        target = doc.data
        if not isinstance(target, dict):
            return
        for key in keys[:-1]:
            target = target.setdefault(key, {})
            if not isinstance(target, dict):
                raise ValidationError("--set", item, f"'{key}' is not a mapping in {doc.file}")
        target[keys[-1]] = value


def parse_scenario(doc: Located, seed_override: Optional[int] = None) -> Scenario:
    r = Reader(doc)
    top = r.mapping(doc.data, (), TOP_KEYS)
    name = r.string(top["name"], ("name",), NAME_RE, NAME_ALLOWED) if "name" in top else \
        re.sub(r"\.ya?ml$", "", os.path.basename(doc.file))
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail(("description",), "expected a string")

    if "topology" not in top:
        raise r.fail(("topology",), "missing field 'topology'", "a topology file path or an inline topology mapping")
    topo_value = top["topology"]
    if isinstance(topo_value, str):
        topo_path = topo_value if os.path.isabs(topo_value) else \
            os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(doc.file)), topo_value))
        if not os.path.isfile(topo_path):
            raise r.fail(("topology",), f"no topology file {topo_value!r} (looked for {topo_path})",
                         "a path relative to the scenario file")
        topo_doc = load_file(topo_path)
        topology_source = topo_path
    elif isinstance(topo_value, dict):
        topo_doc = Located(topo_value, {k[1:]: v for k, v in doc.lines.items() if k[:1] == ("topology",)}, doc.file)
        topology_source = f"{doc.file} (inline)"
    else:
        raise r.fail(("topology",), "expected a file path or a mapping", "a topology file path or an inline mapping")

    seed = top.get("seed", 0) if seed_override is None else seed_override
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise r.fail(("seed",), f"{seed!r} is not allowed", "a whole number, at least 0")
    duration = r.quantity(top.get("duration", "10s"), ("duration",), parse_time_ms, TIME_ALLOWED)
    if duration <= 0:
        raise r.fail(("duration",), "the duration must be above 0", "a duration above 0 such as 30s")
    warmup = r.quantity(top.get("warmup", "1s"), ("warmup",), parse_time_ms, TIME_ALLOWED)
    quiet = r.quantity(top.get("quiet", "2s"), ("quiet",), parse_time_ms, TIME_ALLOWED)
    if quiet < MIN_QUIET_MS:
        raise r.fail(("quiet",), f"{quiet:g} ms is too short to tell lost from late and to flush captures",
                     f"at least {MIN_QUIET_MS / 1000:g}s")

    capture_raw = r.mapping(top.get("capture"), ("capture",), CAPTURE_KEYS)
    capture = {"enabled": True, "snaplen": 256, "buffer_mib": 8}
    if "enabled" in capture_raw:
        capture["enabled"] = r.boolean(capture_raw["enabled"], ("capture", "enabled"))
    for key, low, high in (("snaplen", 96, 262144), ("buffer_mib", 1, 1024)):
        if key in capture_raw:
            value = capture_raw[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise r.fail(("capture", key), f"{value!r} is not allowed", f"a whole number from {low} to {high}")
            capture[key] = value

    fidelity = _fidelity(r, top.get("fidelity"))
    dilation = top.get("time_dilation", 1)
    if not (isinstance(dilation, (int, float)) and not isinstance(dilation, bool) and math.isfinite(dilation)
            and 1 <= dilation <= MAX_DILATION):
        raise r.fail(("time_dilation",), f"{dilation!r} is not allowed", DILATION_ALLOWED)
    workload = r.mapping(top.get("workload"), ("workload",), WORKLOAD_KEYS)
    try:
        topology = parse_topology(topo_doc)
    except ValidationError as exc:
        if topology_source.endswith("(inline)") and exc.field:
            exc.field = "topology." + exc.field
            exc.args = (str(exc),)
        raise
    _apply_workload(r, topology, workload)
    _check_role_params(r, topology)

    timeline = top.get("timeline") or []
    if not isinstance(timeline, list):
        raise r.fail(("timeline",), "expected a list of actions")
    schedule = _expand_timeline(r, timeline, topology, duration, seed)
    started = {a.node for a in schedule if a.action == "start"}
    for node_name, node in topology.nodes.items():
        if node.held and node_name not in started:
            raise r.fail(_held_path(workload, topology, node_name), f"node {node_name!r} waits for the timeline to "
                         "start it, and no timeline entry does",
                         f"a timeline entry {{at: ..., action: start, node: {node_name}}}, or start: at-once")
    return Scenario(name=name, source=doc.file, topology=topology, topology_source=topology_source, seed=seed,
                    duration_ms=duration, warmup_ms=warmup, quiet_ms=quiet, capture=capture, schedule=schedule,
                    description=description.strip(), raw=dict(top), fidelity=fidelity, time_dilation=float(dilation))


FIDELITY_ALLOWED = ("[degraded above, unfaithful above]: two numbers from 0 (shares from 0 to 1; loop_lag_ms in "
                    "ms), or null for no such level, the first not above the second")


def _fidelity(r: Reader, value: Any) -> Dict[str, List[Optional[float]]]:
    """The scenario's own fidelity thresholds (testbed/monitor.py's THRESHOLDS names them)."""
    from .monitor import THRESHOLDS

    raw = r.mapping(value, ("fidelity",), tuple(THRESHOLDS))
    out: Dict[str, List[Optional[float]]] = {}
    for key, pair in raw.items():
        path = ("fidelity", key)
        if not isinstance(pair, list) or len(pair) != 2:
            raise r.fail(path, f"{pair!r} is not allowed", FIDELITY_ALLOWED)
        levels: List[Optional[float]] = []
        for level in pair:
            ok = level is None or (isinstance(level, (int, float)) and not isinstance(level, bool)
                                   and math.isfinite(level) and level >= 0 and (key.endswith("_ms") or level <= 1))
            if not ok:
                raise r.fail(path, f"{level!r} is not allowed", FIDELITY_ALLOWED)
            levels.append(None if level is None else float(level))
        if None not in levels and levels[0] > levels[1]:
            raise r.fail(path, f"degraded above {levels[0]:g} is above unfaithful above {levels[1]:g}", FIDELITY_ALLOWED)
        out[key] = levels
    return out


def _apply_workload(r: Reader, topology: Topology, workload: Dict[str, Any]) -> None:
    """Lay the workload over the resolved topology: for each node, the workload's defaults,
    then its kind's entry, then its own entry set the role and add to the parameters, and
    `start` says whether the agent starts with the network or by the timeline."""
    from agents.roles import role_names

    from .agent_config import has_agent

    defaults = r.mapping(workload.get("defaults"), ("workload", "defaults"), WORKLOAD_NODE_KEYS)
    kinds = r.mapping(workload.get("kinds"), ("workload", "kinds"))
    nodes = r.mapping(workload.get("nodes"), ("workload", "nodes"))
    topo_kinds = {n.kind for n in topology.nodes.values() if n.kind}
    for kind, fields in kinds.items():
        r.mapping(fields, ("workload", "kinds", kind), WORKLOAD_NODE_KEYS)
        if kind not in topo_kinds:
            raise r.fail(("workload", "kinds", kind), f"no node of the topology has kind {kind!r}",
                         ", ".join(sorted(topo_kinds)) or "the topology's nodes have no kinds")
    for name, fields in nodes.items():
        r.mapping(fields, ("workload", "nodes", name), WORKLOAD_NODE_KEYS)
        node_ref(r, name, ("workload", "nodes", name), topology)
    layers = [(defaults, ("workload", "defaults"))]
    for name, node in topology.nodes.items():
        where: Path = ("workload", "defaults", "start")
        node_layers = list(layers)
        if node.kind in kinds:
            node_layers.append((kinds[node.kind], ("workload", "kinds", node.kind)))
        if name in nodes:
            node_layers.append((nodes[name], ("workload", "nodes", name)))
        for fields, path in node_layers:
            if "role" in fields:
                node.role = r.choice(fields["role"], path + ("role",), role_names())
            if "params" in fields:
                node.params = {**node.params, **r.mapping(fields["params"], path + ("params",))}
            if "start" in fields:
                node.held = r.choice(fields["start"], path + ("start",), STARTS) == "timeline"
                where = path + ("start",)
            if "resources" in fields:
                set_resources(node, {k: (v, r.doc, path + ("resources", k))
                                     for k, v in r.mapping(fields["resources"], path + ("resources",)).items()})
        check_agent_resources(node)
        if node.held and not has_agent(node):
            raise r.fail(where, f"node {name!r} runs no testbed agent (role {node.role!r}"
                         f"{', a command of its own' if node.command else ''}), so the timeline has none to start",
                         "start: timeline on a node with an agent role")


def _held_path(workload: Dict[str, Any], topology: Topology, name: str) -> Path:
    """The workload entry that set a node's `start` (its own, its kind's, or the defaults)."""
    if "start" in ((workload.get("nodes") or {}).get(name) or {}):
        return ("workload", "nodes", name, "start")
    kind = topology.nodes[name].kind
    if kind and "start" in ((workload.get("kinds") or {}).get(kind) or {}):
        return ("workload", "kinds", kind, "start")
    return ("workload", "defaults", "start")


def _check_role_params(r: Reader, topology: Topology) -> None:
    from agents.roles import check_params, check_structure

    nodes = {name: {"id": i, "role": node.role, "params": node.params}
             for i, (name, node) in enumerate(topology.nodes.items(), start=1)}
    for name, node in topology.nodes.items():
        problem = check_params(node.role, node.params) or check_structure(node.role, name, nodes)
        if not problem:
            continue
        param, message, allowed = problem
        # Point at the line that set the parameter: the node's workload, its kind's, the default.
        candidates = [("workload", "nodes", name, "params", param)]
        if node.kind:
            candidates.append(("workload", "kinds", node.kind, "params", param))
        candidates.append(("workload", "defaults", "params", param))
        path = next((c for c in candidates if c in r.doc.lines), None)
        if path is None:
            raise r.fail(("topology",), f"node {name}: params.{param}: {message}", allowed)
        raise r.fail(path, f"{message} (node {name})", allowed)
    for name, node in topology.nodes.items():
        to = node.params.get("to") if node.role == "probe" else None
        if isinstance(to, list):
            for peer in to:
                if peer not in topology.nodes:
                    raise r.fail(("workload",), f"node {name}: params.to names unknown node {peer!r}",
                                 "names of nodes of the topology")


def _link_ref(r: Reader, value: Any, path: Path, topology: Topology) -> Tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise r.fail(path, "expected the two ends of a link", "[NODE_OR_SWITCH, NODE_OR_SWITCH]")
    for i, end in enumerate(value):
        if end not in topology.nodes and end not in topology.switches:
            raise r.fail(path + (i,), f"unknown node or switch {end!r}")
    if topology.link_between(value[0], value[1]) is None:
        raise r.fail(path, f"there is no link between {value[0]!r} and {value[1]!r}", "the ends of a link of the topology")
    return value[0], value[1]


def _expand_timeline(r: Reader, timeline: List[Any], topology: Topology, duration: float,
                     seed: int) -> List[Planned]:
    """Every timeline entry as planned actions, at fixed times; random choices (`pick`) are drawn
    from the seed. The schedule is then rehearsed (faults.rehearse), so that an action that
    cannot work where it stands in it is refused here, with its line."""
    from .faults import rehearse

    rng = random.Random(f"timeline:{seed}")
    actions: List[Planned] = []
    names = action_names()
    for index, raw in enumerate(timeline):
        path: Path = ("timeline", index)
        entry = r.mapping(raw, path)
        cls = _action_of(r, entry, path, COMMON_FIELDS)
        kind = cls.name
        times = _times(r, entry, path, duration)
        length = None
        if "for" in entry:
            if cls.inverse is None:
                undoable = ", ".join(n for n in names if action_class(n).inverse)
                raise r.fail(path + ("for",), f"action {kind} cannot be undone after a while", "for: with " + undoable)
            length = r.quantity(entry["for"], path + ("for",), parse_time_ms, TIME_ALLOWED)
            if length <= 0:
                raise r.fail(path + ("for",), "must be above 0", "a duration above 0 such as 2s")

        action = cls()
        candidates, pick, link, direction, params = _targets_and_params(r, entry, path, topology, action)

        for t in times:
            chosen = rng.sample(candidates, pick) if len(candidates) > pick else candidates
            for node in chosen:
                actions.append(Planned(t, kind, node=node, link=link, direction=direction, params=params,
                                       source=f"timeline[{index}]", path=path))
                if length is not None:
                    actions.append(Planned(min(t + length, duration), cls.inverse, node=node, link=link,
                                           direction=direction, params=action.undo_params(params),
                                           source=f"timeline[{index}] for {length / 1000:g}s", path=path))
    actions.sort(key=lambda a: a.at_ms)  # stable: same-time actions keep the file's order
    try:
        rehearse(actions, topology)
    except ImpairmentError as exc:
        planned = exc.planned
        entry = timeline[planned.path[1]]
        where = planned.path + (exc.key,) if exc.key in entry else planned.path
        raise r.fail(where, f"at {planned.at_ms / 1000:g}s on link {planned.link[0]}--{planned.link[1]} "
                     f"(with the topology's values and the faults active then): {exc.message}", exc.allowed) from None
    except Exception as exc:  # an action that cannot happen where it stands (a start of a killed node)
        planned = getattr(exc, "planned", None)
        if planned is None:
            raise
        raise r.fail(planned.path, f"at {planned.at_ms / 1000:g}s: {exc}") from None
    return actions


def _targets_and_params(r: Reader, entry: Dict[str, Any], path: Path, topology: Topology, action):
    """(candidate nodes, how many to pick, link, direction, params) of a timeline entry: what it
    acts on, then the action's own fields."""
    candidates: List[Optional[str]] = [None]
    pick = 1
    if action.target == "node":
        candidates, pick = _node_targets(r, entry, path, topology, action.name)
    link = None
    direction = "both"
    if action.target == "link":
        link = _link_ref(r, entry.get("link"), path + ("link",), topology)
        direction = r.choice(entry.get("direction", "both"), path + ("direction",), DIRECTIONS)
    return candidates, pick, link, direction, action.parse(r, entry, path, topology)


def plan_action(entry: Dict[str, Any], topology: Topology, source: str = "<python>") -> Planned:
    """One action given as a timeline entry's fields, without a time (`action`, and `node`, or
    `link` and `direction`, and the action's own fields), validated as a scenario's would be: the
    Python API acts on a running lab through it. ValidationError names `source` and the field."""
    path: Path = ()
    r = Reader(Located(entry, {}, source))
    action = _action_of(r, entry, path, ("action",), leave_out=("nodes", "pick"))()  # one node, now
    candidates, _, link, direction, params = _targets_and_params(r, entry, path, topology, action)
    return Planned(0.0, action.name, node=candidates[0], link=link, direction=direction, params=params, source=source)


def _action_of(r: Reader, entry: Dict[str, Any], path: Path, common: Tuple[str, ...], leave_out: Tuple[str, ...] = ()):
    """The action class an entry names, once its fields are known to be `common`, its target's and
    its own (less `leave_out`)."""
    names = action_names()
    kind = entry.get("action")
    if kind not in names:
        raise r.fail(path + ("action",), f"unknown action {kind!r}" if kind is not None else "missing field 'action'",
                     ", ".join(names))
    cls = action_class(kind)
    allowed = [k for k in list(common) + list(TARGET_FIELDS[cls.target]) + list(cls.fields) if k not in leave_out]
    for key in entry:
        if key not in allowed:
            raise r.fail(path + (key,), f"unknown field '{key}' for action {kind}", ", ".join(allowed))
    return cls


def _times(r: Reader, entry: Dict[str, Any], path: Path, duration: float) -> List[float]:
    """When an entry happens: `at`, or `every` interval from `start` until `until` (ms)."""
    if ("at" in entry) == ("every" in entry):
        raise r.fail(path, "give exactly one of 'at' and 'every'", "at: TIME, or every: INTERVAL")

    def when(key: str, default: Optional[float] = None) -> Optional[float]:
        if key not in entry:
            return default
        value = r.quantity(entry[key], path + (key,), parse_time_ms, TIME_ALLOWED)
        if value > duration:
            raise r.fail(path + (key,), f"{value / 1000:g}s is beyond the scenario's duration "
                         f"({duration / 1000:g}s)", f"a time from 0 to {duration / 1000:g}s")
        return value

    if "every" not in entry:
        return [when("at")]
    interval = r.quantity(entry["every"], path + ("every",), parse_time_ms, TIME_ALLOWED)
    if interval <= 0:
        raise r.fail(path + ("every",), "the interval must be above 0", "a duration above 0 such as 2s")
    start = when("start", interval)
    until = when("until", duration)
    if until >= start and (until - start) / interval + 1 > MAX_REPEATS:
        raise r.fail(path + ("every",), f"every {interval / 1000:g}s from {start / 1000:g}s until {until / 1000:g}s "
                     f"makes {int((until - start) / interval) + 1:,} actions", f"at most {MAX_REPEATS:,} per entry")
    times = []
    t = start
    while t <= until + 1e-9:
        times.append(t)
        t += interval
    return times


def _node_targets(r: Reader, entry: Dict[str, Any], path: Path, topology: Topology,
                  kind: str) -> Tuple[List[Optional[str]], int]:
    """(candidate nodes, how many to pick each time) of a node action."""
    if ("node" in entry) == ("nodes" in entry):
        raise r.fail(path, f"action {kind} needs exactly one of 'node' and 'nodes'",
                     "node: NAME, or nodes: [NAME, ...] with pick: N (random choice from the seed)")
    if "node" in entry:
        return [node_ref(r, entry["node"], path + ("node",), topology)], 1
    names = entry["nodes"]
    if names == "all":
        names = list(topology.nodes)
    if not isinstance(names, list) or not names:
        raise r.fail(path + ("nodes",), "expected a non-empty list of nodes, or all")
    candidates = [node_ref(r, n, path + ("nodes", i), topology) for i, n in enumerate(names)]
    if len(set(candidates)) != len(candidates):
        raise r.fail(path + ("nodes",), "a node is named twice", "each node once")
    pick = entry.get("pick", 1)
    if not isinstance(pick, int) or isinstance(pick, bool) or not 1 <= pick <= len(candidates):
        raise r.fail(path + ("pick",), f"{pick!r} is not allowed", f"a whole number from 1 to {len(candidates)}")
    return candidates, pick
