"""The event log's contract: the fields every event has, the fields each kind of event has, and
the fields each role adds (declared in the role's module as EVENT_FIELDS), as data.

docs/EVENTS.md explains it; `schema()` is its JSON Schema (`testbed schema events`); the
analysis reads exactly the columns `columns()` names, so a field a role declares is never
dropped, and a field nobody declared is reported, not read (spark_analysis.logreader).

A log is a file of JSON lines, one event per line, appended as things happen. Any program can
write one (a node whose image is not the testbed's agent, say): the analysis judges its
deliveries with the same checks.

Field types are JSON Schema types: "integer", "string", "boolean", "array", "object", or a list
of them. In the analysis's tables an integer field is a 64-bit integer column, a boolean field a
boolean column, and every other field a text column: a string as it is, an array or object as its
JSON text.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Tuple, Union

Type = Union[str, List[str]]
Field = Tuple[Type, str]  # (JSON type(s), what it means)

#: the version of this contract; readers accept logs of this version and earlier
EVENTS_VERSION = 1

#: every event
COMMON: Dict[str, Field] = {
    "t": ("integer", "when, in nanoseconds of CLOCK_REALTIME: the clock every node and the captures share"),
    "node": ("string", "the node that logged the event (its name in the topology)"),
    "event": ("string", "what happened: one of the kinds below"),
}

NAME_OR_ID: Type = ["string", "integer"]  # a node name; its wire id when the sender does not know the name
NAMES: Type = ["string", "array"]  # one node name, "broadcast", or a list of node names

#: the fields of each kind of event: the ones the agent runtime writes, and the ones the analysis
#: reads when a protocol logs them (the property checks' inputs, spark_analysis.checks)
EVENTS: Dict[str, Dict[str, Field]] = {
    "send": {
        "type": ("string", "the message type (a name of agents.wire.MessageType, or the protocol's own)"),
        "origin": (NAME_OR_ID, "the node that created the message; a relay logs the original origin"),
        "seq": ("integer", "the origin's sequence number of the message (1, 2, ...): (origin, seq, type) is its id"),
        "to": (NAMES, "the receivers: a node, a list of nodes, or \"broadcast\" (the sender's segments)"),
        "bytes": ("integer", "body length"),
        "frags": ("integer", "datagrams the message took"),
        "reliable": ("boolean", "sent on the reliable channel (acknowledged, retransmitted)"),
        "message_id": ("integer", "an id the protocol gives the message (0 when none)"),
        "hops": ("integer", "0 for the origin's own send, more for a relay"),
        "eligible": (NAMES, "the nodes that should deliver the message (a predicate's or group's members); "
                            "without it the intended receivers are `to`, or the segment for a broadcast"),
        "order": ("integer", "the number a sequencer gave the message (total order)"),
        "sequencer": ("string", "which sequencer numbered it (absent: the one global sequencer)"),
        "priority": ("integer", "larger is more urgent (priority order)"),
        "vc": (["array", "object"], "the message's vector timestamp (causal order)"),
        "deps": ("array", "ids (origin:seq) of messages this one depends on (causal order)"),
    },
    "receive": {
        "type": ("string", "the message type"),
        "origin": (NAME_OR_ID, "the node that created the message"),
        "seq": ("integer", "its sequence number"),
        "sender": (NAME_OR_ID, "the node that transmitted this copy"),
        "hops": ("integer", "times this copy was relayed"),
        "bytes": ("integer", "body length"),
        "message_id": ("integer", "the protocol's id of the message"),
        "retransmission": ("boolean", "the copy was a retransmission"),
    },
    "deliver": {
        "type": ("string", "the message type"),
        "origin": (NAME_OR_ID, "the node that created the message"),
        "seq": ("integer", "its sequence number"),
        "message_id": ("integer", "the protocol's id of the message"),
        "sender": (NAME_OR_ID, "the node the message came from"),
        "hops": ("integer", "hops of the copy delivered"),
        "produced_ns": ("integer", "when the content was produced (knowledge age = t - produced_ns)"),
        "accepted": ("boolean", "whether the application took it (an attribute predicate held) or discarded it"),
    },
    "drop": {
        "reason": ("string", "why the agent dropped something"),
        "origin": (NAME_OR_ID, "the dropped message's origin"),
        "seq": ("integer", "its sequence number"),
        "to": (NAMES, "where it was going"),
        "peer": ("string", "the address it came from"),
        "frag": ("integer", "the fragment"),
        "tries": ("integer", "transmissions made before giving up"),
        "fragments": ("integer", "fragments that had arrived"),
        "expected": ("integer", "fragments the message has"),
        "message_id": ("integer", "the protocol's id of the message"),
        "sender": (NAME_OR_ID, "the node it came from"),
    },
    "retransmit": {
        "origin": (NAME_OR_ID, "the message's origin"),
        "seq": ("integer", "its sequence number"),
        "frag": ("integer", "the fragment sent again"),
        "to": (NAMES, "the receiver"),
        "attempt": ("integer", "the transmission's number, from 2"),
    },
    "state": {
        "state": ("string", "the new state: started, workload started, quiesced, stopped, failed, or the role's own"),
        "role": ("string", "the role (on started)"),
        "pid": ("integer", "the agent's process (on started)"),
        "node_id": ("integer", "the node's wire id (on started)"),
        "during": ("string", "what was going on when it stopped early"),
        "error": ("string", "why it failed (on failed)"),
        "sent_datagrams": ("integer", "datagrams sent (on stopped)"),
        "received_datagrams": ("integer", "datagrams received (on stopped)"),
        "retransmissions": ("integer", "retransmissions (on stopped)"),
        "pending_reliable": ("integer", "reliable datagrams still unacknowledged (on stopped)"),
    },
    "fidelity": {
        "window_us": ("integer", "the window's length in wall-clock microseconds (about a second)"),
        "wakeups": ("integer", "timer wake-ups in the window (sleeps and periodic ticks of the role)"),
        "late_p50_us": ("integer", "the median lateness of those wake-ups, virtual microseconds"),
        "late_p99_us": ("integer", "their 99th percentile lateness, virtual microseconds"),
        "late_max_us": ("integer", "their largest lateness, virtual microseconds"),
        "late_hist": ("object", "lateness histogram: bucket b → wake-ups late by [2^(b/4), 2^((b+1)/4)) "
                                "virtual microseconds (bucket 0 from 0)"),
        "periodic": ("integer", "wake-ups of tasks with a period (a tick, a paced send)"),
        "late_periodic": ("integer", "of those, the wake-ups late by more than a tenth of their period and "
                                     "by more than 2 ms"),
        "skipped": ("integer", "ticks periodic tasks skipped because they fell more than a period behind"),
        "loop_lag_us": ("integer", "the event loop's largest lag: how late it ran a timer, the role's or the "
                                   "runtime's own probe (every 200 ms while the agent handles datagrams and no "
                                   "timer of its role woke, once a window otherwise; virtual microseconds)"),
        "cpu_us": ("integer", "CPU time the agent's process used in the window, microseconds"),
    },
    "error": {
        "where": ("string", "what raised: the role's run, its message handler (on_message) or its stop"),
        "error": ("string", "the exception's type and message"),
        "traceback": ("string", "the Python traceback"),
        "type": ("string", "the type of the message being handled (on_message)"),
        "origin": (NAME_OR_ID, "its origin (on_message)"),
        "seq": ("integer", "its sequence number (on_message)"),
    },
}

#: fields that keep no particular meaning for the analysis but that third-party logs use
EXTRA: Dict[str, Field] = {
    "msg": ("string", "a protocol's own text id of the message"),
}


def role_fields() -> Dict[str, Dict[str, Dict[str, Field]]]:
    """role → event kind → the fields the role adds, from each role module's EVENT_FIELDS."""
    from .roles import role_module, role_names

    out = {}
    for role in role_names():
        declared = getattr(importlib.import_module(role_module(role)), "EVENT_FIELDS", None)
        if declared:
            out[role] = declared
    return out


def _types(t: Type) -> List[str]:
    return [t] if isinstance(t, str) else list(t)


def _declarations() -> List[Tuple[str, Type, str]]:
    """(field, type, meaning) of every declaration, in order: the common fields, each kind of
    event's, the extra ones, then each role's (the role modules are read once here)."""
    out = [(name, t, meaning) for name, (t, meaning) in COMMON.items()]
    out += [(name, t, f"{kind}: {meaning}") for kind, fields in EVENTS.items() for name, (t, meaning) in fields.items()]
    out += [(name, t, meaning) for name, (t, meaning) in EXTRA.items()]
    out += [(name, t, f"{kind} of role {role}: {meaning}") for role, by_event in role_fields().items()
            for kind, fields in by_event.items() for name, (t, meaning) in fields.items()]
    return out


def _fields(declarations: List[Tuple[str, Type, str]]) -> Dict[str, Tuple[List[str], List[str]]]:
    """field → (the union of its JSON types, its meanings), in declaration order."""
    out: Dict[str, Tuple[List[str], List[str]]] = {}
    for name, t, meaning in declarations:
        types, meanings = out.setdefault(name, ([], []))
        types.extend(x for x in _types(t) if x not in types)
        meanings.append(meaning)
    return out


def field_types() -> Dict[str, List[str]]:
    """Every field anyone declares → the union of its JSON types (in declaration order)."""
    return {name: types for name, (types, _) in _fields(_declarations()).items()}


def columns() -> List[Tuple[str, str]]:
    """(field, column kind) of every declared field, kind "long", "bool" or "string": the
    analysis's events table, in a stable order (the common fields first)."""
    out = []
    for name, types in field_types().items():
        kinds = set(types) - {"null"}
        if kinds == {"integer"}:
            out.append((name, "long"))
        elif kinds == {"boolean"}:
            out.append((name, "bool"))
        else:
            out.append((name, "string"))
    return out


def schema() -> Dict[str, Any]:
    """The JSON Schema of one line of an event log."""
    properties: Dict[str, Any] = {
        name: {"type": types[0] if len(types) == 1 else types, "description": "; ".join(meanings)}
        for name, (types, meanings) in _fields(_declarations()).items()}
    properties["t"]["minimum"] = 0
    properties["event"]["enum"] = list(EVENTS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"testbed event log line (version {EVENTS_VERSION})",
        "description": "One JSON object per line of logs/<node>.jsonl; see docs/EVENTS.md.",
        "type": "object",
        "required": list(COMMON),
        "properties": properties,
        "additionalProperties": True,
    }
