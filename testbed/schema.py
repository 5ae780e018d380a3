"""JSON Schema of topology files, for editors (completion and checking as you type).

The loader in `topology.py` is the authority and gives the precise messages; this schema
describes the same fields so that an editor with a YAML language server catches most mistakes
before the testbed runs. A test checks that every shipped topology validates against it.
"""

from __future__ import annotations

from typing import Any, Dict

from .generators import SHAPES
from .topology import IMPAIRMENT_KEYS, ROUTING_MODES, SWITCH_TYPES
from .units import MAX_DELAY_MS, MAX_RATE_MBIT, MIN_RATE_MBIT

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"

# The bounds of a string (240s, 100gbit) are left to the loader, which names them.
_delay = {"description": "a delay from 0 to 240s: 20ms, 1.5s, 300us, or a number of milliseconds",
          "oneOf": [{"type": "number", "minimum": 0, "maximum": MAX_DELAY_MS},
                    {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(us|µs|ms|s|m)?\s*$"}]}
_fraction = {"description": "a probability 0..1 or a percentage such as 10%",
             "oneOf": [{"type": "number", "minimum": 0, "maximum": 1},
                       {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"}]}
_rate = {"description": "a rate from 1kbit to 100gbit: 10mbit, 500kbit, 1gbit, or a number of Mbit/s",
         "oneOf": [{"type": "number", "minimum": MIN_RATE_MBIT, "maximum": MAX_RATE_MBIT},
                   {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kKmMgG]?(bit|bps|bit/s|b/s)?\s*$"}]}


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
            "generate": {"type": "object", "required": ["shape"],
                         "properties": {"shape": {"enum": list(SHAPES)}, "servers": count, "components": count,
                                        "levels": {"type": "integer", "minimum": 1}, "children": count,
                                        "server": {"type": "object"}, "component": {"type": "object"},
                                        "server_links": impairment_object, "component_links": impairment_object},
                         "additionalProperties": False},
        },
    }


SCHEMAS = {"topology": topology_schema}
