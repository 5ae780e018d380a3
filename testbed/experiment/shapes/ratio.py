"""`ratio: [A, B], range: [LOW, HIGH]`: the mean at point A divided by the mean at point B lies
within [LOW, HIGH] (simple gossip sends about 2.4 times what bounded gossip sends)."""

from __future__ import annotations

import math
from typing import Any, Dict, List

from ..model import check_selector
from .common import combine, group_label, label, means

KEY = "ratio"
FIELDS = ("range",)
SCHEMA = {KEY: {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["string", "object"]}},
          "range": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number"}}}


class Ratio:
    def __init__(self, measure: str, selectors: List[Any], low: float, high: float, where: Dict[str, Any]) -> None:
        self.measure, self.selectors, self.low, self.high, self.where = measure, selectors, low, high, where

    def describe(self) -> str:
        a, b = (label(s) for s in self.selectors)
        return f"{self.measure}: {a} / {b} in [{self.low:g}, {self.high:g}]"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for group, (a, b) in means(data, self.measure, self.selectors, self.where):
            if a is None or b is None or b == 0:
                out.append({"group": group_label(group), "verdict": "unknown", "ratio": None,
                            "detail": f"{data.fmt(a)} / {data.fmt(b)}"})
                continue
            q = a / b
            out.append({"group": group_label(group), "ratio": q,
                        "verdict": "valid" if self.low <= q <= self.high else "invalid",
                        "detail": f"{data.fmt(a)} / {data.fmt(b)} = {q:.3g}"})
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> Ratio:
    value = entry[KEY]
    if not isinstance(value, list) or len(value) != 2:
        raise r.fail(path + (KEY,), "expected two points", "[A, B]: the mean at A over the mean at B")
    selectors = [check_selector(r, exp, s, path + (KEY, i)) for i, s in enumerate(value)]
    rng = entry.get("range")
    if not isinstance(rng, list) or len(rng) != 2 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in rng):
        raise r.fail(path + ("range",), "expected [LOW, HIGH]", "two finite numbers, such as [2, 3]")
    if rng[0] > rng[1]:
        raise r.fail(path + ("range",), "LOW is above HIGH", "[LOW, HIGH] with LOW ≤ HIGH")
    return Ratio(entry["measure"], selectors, float(rng[0]), float(rng[1]), entry.get("where") or {})
