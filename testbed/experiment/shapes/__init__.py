"""Expected shapes of an experiment's results: each kind is one module here, registered in KINDS.

An entry of the experiment's `expect` list names a measure and exactly one kind's key:

    - {measure: delivery_time, order: [tree, ring, cluster]}          # order.py
    - {measure: messages, trend: increasing, over: P}                  # trend.py
    - {measure: messages, ratio: [simple, boundary], range: [2, 3]}    # ratio.py
    - {measure: delivery_time, near_reference: 1.5}                    # reference.py
    - {measure: throughput, flat: 0.1, over: N}                        # flat.py
    - {measure: latency, fit: log, over: N}                            # fit.py

and optionally `where` (a selector fixing some grid parameters), `name`, `note` and `judge`.
Shapes are judged from the seeds' spread: each kind's module says its test, every verdict carries
the intervals it rests on, and a verdict is valid, invalid, not shown (with the reason: one seed,
an interval across the line) or unknown (a point has no value); common.py has the words. Where
grid parameters are left free (neither in the shape's selectors nor in `where`), the shape is
judged for every combination of their values and holds when it holds in each. `judge: means`
(on the entry, or for every shape at the experiment's top) judges the means alone, for a reduced
experiment that runs one seed; its verdicts say so.

A kind module provides KEY (its entry key), FIELDS (the other keys it reads), SCHEMA (the JSON
Schema of those keys), `parse(r, entry, path, exp) -> Shape`; a Shape has `measure`,
`judge_with` ("intervals" or "means"), `describe()` and `judge(data) -> dict(verdict=...,
reason=..., groups=[...])`, each group with its `tests` (what, estimate, low, high, expect).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..model import Experiment, check_selector, measure_name
from . import fit, flat, order, ratio, reference, trend
from .common import JUDGES

KINDS = [order, trend, ratio, reference, flat, fit]
COMMON = ("measure", "where", "name", "note", "judge")


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
        judge = entry.get("judge", exp.judge)
        if judge not in JUDGES:
            raise r.fail(path + ("judge",), f"{judge!r} is not a way to judge", ", ".join(JUDGES))
        shape = kind.parse(r, entry, path, exp)
        shape.judge_with = judge
        shape.kind = kind.KEY
        shape.name = entry.get("name") or shape.describe()
        shape.note = entry.get("note", "")
        out.append(shape)
    return out


def schema() -> Dict[str, Any]:
    """The JSON Schema of one `expect` entry."""
    common = {"measure": {"type": "string"}, "where": {"type": "object"}, "name": {"type": "string"},
              "note": {"type": "string"}, "judge": {"enum": list(JUDGES)}}
    return {"oneOf": [{"type": "object", "required": ["measure", k.KEY], "additionalProperties": False,
                       "properties": {**common, k.KEY: k.SCHEMA[k.KEY],
                                      **{f: k.SCHEMA[f] for f in k.FIELDS}}} for k in KINDS]}
