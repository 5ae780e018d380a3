"""JSON Schemas: of the input files, for editors (completion and checking as you type), and of
the contracts the testbed writes (`testbed schema KIND`).

- topology, scenario, experiment: the loaders (`topology.py`, `scenario.py`, `experiment/spec.py`) are the authority and give the
  precise messages; these schemas describe the same fields so that an editor with a YAML
  language server catches most mistakes before the testbed runs. The scenario's timeline entries
  come from the action registry (testbed/actions). Tests check every shipped file against them.
- events: one line of an event log (agents/events.py, docs/EVENTS.md).
- manifest: a run directory's manifest.json (testbed/rundir.py, docs/RUNDIR.md).
"""

from __future__ import annotations

from typing import Any, Dict

from .generators import SHAPES
from .topology import IMPAIRMENT_KEYS, ROUTING_MODES, SWITCH_TYPES
from .units import MAX_DELAY_MS, MAX_RATE_MBIT, MAX_TIME_MS, MIN_RATE_MBIT

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"

# The bounds of a string (240s, 100gbit) are left to the loader, which names them.
_delay = {"description": "a delay from 0 to 240s: 20ms, 1.5s, 300us, or a number of milliseconds",
          "oneOf": [{"type": "number", "minimum": 0, "maximum": MAX_DELAY_MS},
                    {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(us|µs|ms|s|m)?\s*$"}]}
_duration = {"description": "a duration up to 365 days: 20ms, 1.5s, 300us, or a number of milliseconds",
             "oneOf": [{"type": "number", "minimum": 0, "maximum": MAX_TIME_MS},
                       {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(us|µs|ms|s|m)?\s*$"}]}
_fraction = {"description": "a probability 0..1 or a percentage such as 10%",
             "oneOf": [{"type": "number", "minimum": 0, "maximum": 1},
                       {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"}]}
_rate = {"description": "a rate from 1kbit to 100gbit: 10mbit, 500kbit, 1gbit, or a number of Mbit/s",
         "oneOf": [{"type": "number", "minimum": MIN_RATE_MBIT, "maximum": MAX_RATE_MBIT},
                   {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kKmMgG]?(bit|bps|bit/s|b/s)?\s*$"}]}


_distance = {"description": "metres: 120, 120m or 1.5km",
             "oneOf": [{"type": "number"}, {"type": "string", "pattern": r"^\s*-?\d+(\.\d+)?\s*(m|km)?\s*$"}]}
_position = {"description": "[X, Y] or [X, Y, Z] in metres", "type": "array", "items": _distance,
             "minItems": 2, "maxItems": 3}
_resources = {
    "description": "the node's limits (testbed/resources.py); null lifts a default. Defaults: memory 1GiB, "
                   "pids 1024, no CPU cap",
    "type": "object", "additionalProperties": False,
    "properties": {
        "memory": {"description": "RAM without swap: 256MiB, 1GiB, 512m, or a number of bytes (6MiB to 1024GiB; "
                                  "48MiB at least where the agent runs)",
                   "oneOf": [{"type": "null"}, {"type": "integer", "minimum": 6 * 1024 ** 2},
                             {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*([kKmMgG]|[bB]|[kKmMgG][iI]?[bB])\s*$"}]},
        "pids": {"description": "processes and threads at once (1 to 4194304; 16 at least where the agent runs)",
                 "oneOf": [{"type": "null"}, {"type": "integer", "minimum": 1, "maximum": 4194304}]},
        "cpus": {"description": "a share of one core, 0.01 to 1024",
                 "oneOf": [{"type": "null"}, {"type": "number", "minimum": 0.01, "maximum": 1024}]},
    },
}
_pair_or_one = {"oneOf": [{"type": "number", "exclusiveMinimum": 0},
                          {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0},
                           "minItems": 2, "maxItems": 2}]}
_mobility = {
    "description": "static, or random waypoint in an area",
    "oneOf": [{"const": "static"},
              {"type": "object", "required": ["model", "area", "speed"], "additionalProperties": False,
               "properties": {"model": {"const": "random-waypoint"},
                              "area": {"description": "[[X0, Y0], [X1, Y1]] or [WIDTH, HEIGHT]", "type": "array"},
                              "speed": {"description": "m/s, or [MIN, MAX]", **_pair_or_one},
                              "pause": {"description": "a duration, or [MIN, MAX]",
                                        "oneOf": [_duration, {"type": "array", "items": _duration,
                                                              "minItems": 2, "maxItems": 2}]}}}]}


def _radio_segment() -> Dict[str, Any]:
    from .radio.propagation import LOG_DISTANCE_FIELDS
    from .radio.wifi import PROPAGATION_ALLOWED, PROPAGATION_MODELS, STANDARDS

    loss = {"oneOf": [
        {"const": "none"},
        {"type": "object", "required": ["model"], "additionalProperties": False,
         "properties": {"model": {"const": "none"}}},
        {"type": "object", "required": ["model"], "additionalProperties": False,
         "properties": {"model": {"const": "log-distance"},
                        **{key: {"description": text, **({"type": "number"} if key != "reference_distance" else _distance)}
                           for key, (_, _, text) in LOG_DISTANCE_FIELDS.items()}}},
        {"type": "object", "required": ["model", "table"], "additionalProperties": False,
         "properties": {"model": {"const": "table"},
                        "table": {"description": "[[DISTANCE, PROBABILITY], ...] with increasing distances",
                                  "oneOf": [{"type": "array", "minItems": 1,
                                             "items": {"type": "array", "minItems": 2, "maxItems": 2}},
                                            {"type": "object"}]}}},
    ]}
    return {
        "type": "object", "required": ["members", "range"], "additionalProperties": False,
        "properties": {
            "members": {"type": "array", "minItems": 1,
                        "items": {"type": "string", "description": "NODE, NODE:INTERFACE or a kind"}},
            "channel": {"enum": ["kernel", "wifi"], "description": "kernel: the kernel range medium (default); "
                                                                   "wifi: an 802.11 channel emulated by ns-3"},
            "standard": {"enum": list(STANDARDS), "description": "channel wifi: the 802.11 standard"},
            "data_rate": {**_rate, "description": "channel wifi: unicast data rate, one of the standard's"},
            "basic_rate": {**_rate, "description": "channel wifi: broadcasts and control frames, one of the "
                                                   "standard's rates"},
            "propagation": {"description": "channel wifi: " + PROPAGATION_ALLOWED,
                            "oneOf": [{"enum": list(PROPAGATION_MODELS)},
                                      {"type": "object", "required": ["model"],
                                       "properties": {"model": {"enum": list(PROPAGATION_MODELS)},
                                                      "tx_power": {"type": "number"},
                                                      "sensitivity": {"type": "number"},
                                                      "exponent": {"type": "number"},
                                                      "reference_loss": {"type": "number"},
                                                      "reference_distance": _distance,
                                                      "sigma": {"type": "number"},
                                                      "height": {"type": "number"},
                                                      "fading": {"oneOf": [{"enum": ["none", "nakagami"]},
                                                                           {"type": "object"}]}},
                                       "additionalProperties": False}]},
            "range": _distance, "loss": loss, "bitrate": _rate,
            "queue": {"type": "integer", "minimum": 1, "description": "frames waiting for the air per sender"},
            "delay": _delay, "jitter": _delay,
            "tick": _duration,
            "trace": {"oneOf": [{"type": "string"},
                                {"type": "object", "required": ["file"], "additionalProperties": False,
                                 "properties": {"file": {"type": "string"}, "format": {"enum": ["ns2", "csv"]},
                                                "nodes": {"type": "array", "items": {"type": "string"}}}},
                                {"type": "object", "required": ["sumo"], "additionalProperties": False,
                                 "description": "cars and walkers SUMO moves in a street grid when the lab starts",
                                 "properties": {"sumo": {"type": "object", "additionalProperties": False,
                                                         "properties": {k: {"type": "number"} for k in (
                                                             "size", "block", "cars", "walkers", "duration",
                                                             "seed")}},
                                                "nodes": {"type": "array", "items": {"type": "string"}}}}]},
        },
    }


def impairment_schemas() -> Dict[str, Any]:
    """The seven impairments' JSON Schemas, for links and for the actions that change them."""
    return _impairments()


def _impairments() -> Dict[str, Any]:
    return {"delay": _delay, "jitter": _delay, "loss": _fraction, "bandwidth": _rate,
            "corruption": _fraction, "duplication": _fraction, "reordering": _fraction}


def topology_schema() -> Dict[str, Any]:
    from agents.roles import role_names
    from .runtimes import runtime_names

    node_fields = {
        "role": {"enum": role_names(), "description": "the agent role the node runs"},
        "params": {"type": "object", "description": "role parameters"},
        "image": {"type": "string", "description": "Docker image (runtime docker)"},
        "command": {"description": "command line instead of the image's",
                    "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
        "runtime": {"enum": runtime_names()},
        "attributes": {"type": "object", "description": "the node's attribute environment"},
        "capabilities": {"type": "array", "items": {"type": "string", "pattern": r"^(CAP_)?[A-Z_]+$"}},
        "env": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
        "position": _position,
        "mobility": _mobility,
        "resources": _resources,
    }
    impairments = _impairments()
    impairment_object = {"type": "object", "properties": impairments, "additionalProperties": False}
    endpoint = {"type": "string", "description": "NODE, NODE:INTERFACE or SWITCH"}
    link = {
        "oneOf": [
            {"type": "array", "items": endpoint, "minItems": 2, "maxItems": 2},
            {"type": "object", "required": ["endpoints"], "additionalProperties": False,
             "properties": {
                 "endpoints": {"type": "array", "items": endpoint, "minItems": 2, "maxItems": 2},
                 "addresses": {"type": "array", "minItems": 2, "maxItems": 2,
                               "items": {"type": ["string", "null"], "description": "ADDRESS/PREFIX"}},
                 "a_to_b": impairment_object, "b_to_a": impairment_object, **impairments}},
        ]
    }
    count = {"type": "integer", "minimum": 0}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "testbed topology",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "pattern": NAME_PATTERN},
            "description": {"type": "string"},
            "defaults": {"type": "object", "properties": node_fields, "additionalProperties": False},
            "kinds": {"type": "object", "propertyNames": {"pattern": NAME_PATTERN},
                      "additionalProperties": {"type": "object", "properties": node_fields,
                                               "additionalProperties": False}},
            "nodes": {"type": "object", "propertyNames": {"pattern": NAME_PATTERN},
                      "additionalProperties": {"type": ["object", "null"],
                                               "properties": {"kind": {"type": "string"}, **node_fields},
                                               "additionalProperties": False}},
            "switches": {"type": "object", "propertyNames": {"pattern": NAME_PATTERN},
                         "additionalProperties": {"type": ["object", "null"], "additionalProperties": False,
                                                  "properties": {"type": {"enum": list(SWITCH_TYPES)},
                                                                 "stp": {"type": "boolean"}}}},
            "links": {"type": "array", "items": link},
            "link_defaults": impairment_object,
            "addressing": {"type": "object", "additionalProperties": False,
                           "properties": {"pool": {"type": "string"}, "routing": {"enum": list(ROUTING_MODES)}}},
            "accept_unemulated": {"oneOf": [{"const": True},
                                            {"type": "array", "items": {"enum": list(IMPAIRMENT_KEYS)}}]},
            "radio": {"type": "object", "propertyNames": {"pattern": NAME_PATTERN},
                      "additionalProperties": _radio_segment()},
            "generate": {"type": "object", "required": ["shape"],
                         "properties": {"shape": {"enum": list(SHAPES)}, "servers": count, "components": count,
                                        "levels": {"type": "integer", "minimum": 1}, "children": count,
                                        "server": {"type": "object"}, "component": {"type": "object"},
                                        "server_links": impairment_object, "component_links": impairment_object,
                                        "switch": {"type": "string"}, "links": impairment_object,
                                        "groups": {"type": "object", "minProperties": 1,
                                                   "additionalProperties": {
                                                       "type": "object", "required": ["count"],
                                                       "properties": {"count": {"type": "integer", "minimum": 1}}}}},
                         "additionalProperties": False},
        },
    }


def scenario_schema() -> Dict[str, Any]:
    from .actions import action_class, action_names
    from .actions.base import DIRECTIONS
    from .monitor import MEANING, THRESHOLDS
    from .scenario import CAPTURE_KEYS, MAX_DILATION, STARTS, TOP_KEYS, WORKLOAD_KEYS
    from agents.roles import role_names

    time_field = {"description": "a time after the end of the warm-up", **_duration}
    node_or_nodes = {"node": {"type": "string"},
                     "nodes": {"oneOf": [{"const": "all"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
                     "pick": {"type": "integer", "minimum": 1}}
    targets = {"node": node_or_nodes,
               "link": {"link": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                        "direction": {"enum": list(DIRECTIONS)}},
               "lab": {}}
    entries = []
    for name in action_names():
        cls = action_class(name)
        own = cls().field_schemas
        properties = {"action": {"const": name, "description": cls.summary},
                      "at": time_field, "every": _duration, "start": time_field, "until": time_field,
                      **targets[cls.target],
                      **{f: own.get(f, {"description": text}) for f, text in cls.fields.items()}}
        if cls.inverse:
            properties["for"] = {"description": f"undo with {cls.inverse} after this long", **_duration}
        entries.append({"type": "object", "required": ["action"], "properties": properties,
                        "additionalProperties": False})
    workload_node = {"type": "object", "additionalProperties": False,
                     "properties": {"role": {"enum": role_names()}, "params": {"type": "object"},
                                    "resources": _resources,
                                    "start": {"enum": list(STARTS), "description": "at-once: the agent starts with "
                                              "the network; timeline: the timeline's start action starts it "
                                              "(a node that joins mid-run), and it is down until then"}}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "testbed scenario",
        "type": "object",
        "additionalProperties": False,
        "required": ["topology"],
        "properties": {
            **{key: {} for key in TOP_KEYS},
            "name": {"type": "string", "pattern": NAME_PATTERN},
            "description": {"type": "string"},
            "topology": {"oneOf": [{"type": "string", "description": "a topology file, relative to the scenario"},
                                   {"type": "object", "description": "an inline topology"}]},
            "seed": {"type": "integer", "minimum": 0},
            "duration": _duration, "warmup": _duration, "quiet": _duration,
            "capture": {"type": "object", "additionalProperties": False,
                        "properties": {"enabled": {"type": "boolean"},
                                       "snaplen": {"type": "integer", "minimum": 96, "maximum": 262144},
                                       "buffer_mib": {"type": "integer", "minimum": 1, "maximum": 1024}},
                        "propertyNames": {"enum": list(CAPTURE_KEYS)}},
            "time_dilation": {"type": "number", "minimum": 1, "maximum": MAX_DILATION,
                              "description": "the emulated world runs this many times slower than the wall clock"},
            "fidelity": {"type": "object", "additionalProperties": False,
                         "description": "the run's own fidelity thresholds (docs/ANALYSIS.md, Fidelity)",
                         "properties": {key: {"type": "array", "minItems": 2, "maxItems": 2,
                                              "description": f"{MEANING[key]}: [degraded above, unfaithful above]",
                                              "items": {"type": ["number", "null"], "minimum": 0}}
                                        for key in THRESHOLDS}},
            "workload": {"type": "object", "additionalProperties": False,
                         "propertyNames": {"enum": list(WORKLOAD_KEYS)},
                         "properties": {"defaults": workload_node,
                                        "kinds": {"type": "object", "additionalProperties": workload_node},
                                        "nodes": {"type": "object", "additionalProperties": workload_node}}},
            "timeline": {"type": "array", "items": {"oneOf": entries}},
        },
    }


def experiment_schema() -> Dict[str, Any]:
    from .experiment import shapes
    from .experiment.spec import (HOST_KEYS, LABEL_RE, MAX_SEED, MAX_SEEDS, MEASURE_KEYS, PATH_RE,
                                  REFERENCE_VALUE_KEYS, TOP_KEYS)

    label, path = {"type": "string", "pattern": LABEL_RE.pattern}, {"type": "string", "pattern": PATH_RE.pattern}
    selector = {"description": "a scenario label, or {scenario: LABEL, PARAM: VALUE, ...}",
                "oneOf": [label, {"type": "object", "minProperties": 1}]}
    sets = {"type": "object", "description": "field paths (as --set takes them) and their values",
            "propertyNames": path}
    number = {"type": "number"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "testbed experiment",
        "type": "object",
        "additionalProperties": False,
        "required": ["scenarios", "measures"],
        "properties": {
            **{key: {} for key in TOP_KEYS},
            "name": label,
            "description": {"type": "string"},
            "scenarios": {"type": "object", "minProperties": 1, "propertyNames": label, "additionalProperties": {
                "oneOf": [{"type": "string", "description": "a scenario file, relative to the experiment file"},
                          {"type": "object", "required": ["file"], "additionalProperties": False,
                           "properties": {"file": {"type": "string"}, "set": sets}}]}},
            "grid": {"type": "object", "description": "PATH: [VALUES] or NAME: {path: PATH, values: [VALUES]}",
                     "additionalProperties": {"oneOf": [
                         {"type": "array", "minItems": 1},
                         {"type": "object", "required": ["path", "values"], "additionalProperties": False,
                          "properties": {"path": path, "values": {"type": "array", "minItems": 1}}}]}},
            "seeds": {"oneOf": [{"type": "integer", "minimum": 1, "maximum": MAX_SEEDS},
                                {"type": "array", "minItems": 1, "maxItems": MAX_SEEDS, "uniqueItems": True,
                                 "items": {"type": "integer", "minimum": 0, "maximum": MAX_SEED}}]},
            "set": sets,
            "measures": {"type": "object", "minProperties": 1, "propertyNames": label, "additionalProperties": {
                "oneOf": [dict(path, description="a dotted path into each run's report/results.json"),
                          {"type": "object", "required": ["path"], "additionalProperties": False,
                           "propertyNames": {"enum": list(MEASURE_KEYS)},
                           "properties": {"path": path, "label": {"type": "string"}, "over_time": path}}]}},
            "references": {"type": "object", "additionalProperties": False, "properties": {
                "source": {"type": "string"},
                "values": {"type": "array", "items": {
                    "type": "object", "required": ["measure", "point", "value"], "additionalProperties": False,
                    "propertyNames": {"enum": list(REFERENCE_VALUE_KEYS)},
                    "properties": {"measure": {"type": "string"}, "point": selector,
                                   "value": {"oneOf": [number, {"type": "array", "items": number,
                                                                "minItems": 2, "maxItems": 2}]},
                                   "source": {"type": "string"}, "note": {"type": "string"}}}}}},
            "expect": {"type": "array", "items": shapes.schema()},
            "judge": {"enum": ["intervals", "means"],
                      "description": "how the shapes are judged: from the seeds' spread (intervals, the default) "
                                     "or from the means alone (for a reduced experiment of one seed)"},
            "accept_unfaithful": {"type": "boolean",
                                  "description": "judge shapes on points with runs the fidelity monitor called "
                                                 "unfaithful (by default such shapes are not shown)"},
            "hosts": {"type": "array", "minItems": 1, "items": {"oneOf": [
                {"type": "string", "description": "local, or USER@HOST[:PORT]"},
                {"type": "object", "required": ["target"], "additionalProperties": False,
                 "properties": {k: {"type": "string"} for k in HOST_KEYS}}]}},
        },
    }


def events_schema() -> Dict[str, Any]:
    from agents.events import schema

    return schema()


def manifest_schema() -> Dict[str, Any]:
    from .rundir import manifest_schema as schema

    return schema()


SCHEMAS = {"topology": topology_schema, "scenario": scenario_schema, "experiment": experiment_schema,
           "events": events_schema, "manifest": manifest_schema}
