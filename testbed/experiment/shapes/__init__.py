"""Expected shapes of an experiment's results: each kind is one module here, registered in KINDS.

An entry of the experiment's `expect` list names a measure and exactly one kind's key:

    - {measure: delivery_time, order: [tree, ring, cluster]}          # order.py
    - {measure: messages, trend: increasing, over: P}                  # trend.py
    - {measure: messages, ratio: [simple, boundary], range: [2, 3]}    # ratio.py
    - {measure: delivery_time, near_reference: 1.5}                    # reference.py
    - {measure: throughput, flat: 0.1, over: N}                        # flat.py
    - {measure: latency, fit: log, over: N}                            # fit.py

and optionally `where` (a selector fixing some grid parameters), `name` and `note`. Shapes are
judged on the mean over seeds of each point. Where grid parameters are left free (neither in the
shape's selectors nor in `where`), the shape is judged for every combination of their values and
holds when it holds in each. A verdict is valid, invalid, or unknown (a point has no value).

A kind module provides KEY (its entry key), FIELDS (the other keys it reads), SCHEMA (the JSON
Schema of those keys), `parse(r, entry, path, exp) -> Shape`; a Shape has `measure`, `describe()`
and `judge(data) -> dict(verdict=..., detail=..., groups=[...])`.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..model import Experiment, check_selector, measure_name
from . import fit, flat, order, ratio, reference, trend

KINDS = [order, trend, ratio, reference, flat, fit]
COMMON = ("measure", "where", "name", "note")


def parse_all(r, value: Any, exp: Experiment) -> List[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise r.fail(("expect",), "expected a list of shapes", "entries such as {measure: M, order: [A, B]}")
    keys = [k.KEY for k in KINDS]
    out = []
    for i, entry in enumerate(value):
        path = ("expect", i)
        entry = r.mapping(entry, path)
        kinds = [k for k in KINDS if k.KEY in entry]
        if len(kinds) != 1:
            raise r.fail(path, "expected exactly one kind of shape" if kinds else "no kind of shape",
                         ", ".join(keys))
        kind = kinds[0]
        r.mapping(entry, path, COMMON + (kind.KEY,) + kind.FIELDS)
        if "measure" not in entry:
            raise r.fail(path, "missing field 'measure'", ", ".join(m.name for m in exp.measures))
        measure_name(r, exp, entry["measure"], path + ("measure",))
        if "where" in entry:
            if not isinstance(entry["where"], dict):
                raise r.fail(path + ("where",), "expected a mapping", "{PARAM: VALUE, ...}")
            check_selector(r, exp, entry["where"], path + ("where",))
        for key in ("name", "note"):
            if key in entry and not isinstance(entry[key], str):
                raise r.fail(path + (key,), "expected a string")
        shape = kind.parse(r, entry, path, exp)
        shape.kind = kind.KEY
        shape.name = entry.get("name") or shape.describe()
        shape.note = entry.get("note", "")
        out.append(shape)
    return out


def schema() -> Dict[str, Any]:
    """The JSON Schema of one `expect` entry."""
    common = {"measure": {"type": "string"}, "where": {"type": "object"}, "name": {"type": "string"},
              "note": {"type": "string"}}
    return {"oneOf": [{"type": "object", "required": ["measure", k.KEY], "additionalProperties": False,
                       "properties": {**common, k.KEY: k.SCHEMA[k.KEY],
                                      **{f: k.SCHEMA[f] for f in k.FIELDS}}} for k in KINDS]}
