"""`order: [A, B, C]`: the measure's mean grows strictly from point A to B to C (tree < ring <
cluster). Each entry is a selector of one point (per combination of the free grid parameters)."""

from __future__ import annotations

from typing import Any, Dict, List

from ..model import check_selector
from .common import combine, group_label, label, means

KEY = "order"
FIELDS = ()
SCHEMA = {KEY: {"type": "array", "minItems": 2, "items": {"type": ["string", "object"]},
                "description": "point selectors, in increasing order of the measure"}}


class Order:
    def __init__(self, measure: str, selectors: List[Any], where: Dict[str, Any]) -> None:
        self.measure, self.selectors, self.where = measure, selectors, where

    def describe(self) -> str:
        return f"{self.measure}: " + " < ".join(label(s) for s in self.selectors)

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for group, values in means(data, self.measure, self.selectors, self.where):
            if any(v is None for v in values):
                verdict = "unknown"
            else:
                verdict = "valid" if all(a < b for a, b in zip(values, values[1:])) else "invalid"
            out.append({"group": group_label(group), "verdict": verdict,
                        "detail": " < ".join(f"{label(s)} {data.fmt(v)}" for s, v in zip(self.selectors, values))})
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> Order:
    value = entry[KEY]
    if not isinstance(value, list) or len(value) < 2:
        raise r.fail(path + (KEY,), "expected a list of at least two points", "[A, B, ...] in increasing order")
    selectors = [check_selector(r, exp, s, path + (KEY, i)) for i, s in enumerate(value)]
    return Order(entry["measure"], selectors, entry.get("where") or {})
