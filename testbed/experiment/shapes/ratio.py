"""`ratio: [A, B], range: [LOW, HIGH]`: the mean at point A divided by the mean at point B lies
within [LOW, HIGH] (simple gossip sends about 2.4 times what bounded gossip sends).

Test: Fieller's 95% interval of mean(A) / mean(B) over the seeds' values (stats.ratio). Valid
when it lies within [LOW, HIGH], invalid when it lies entirely outside, not shown otherwise (it
straddles a bound, or is unbounded because mean(B) cannot be told from 0)."""

from __future__ import annotations

import math
from typing import Any, Dict, List

from .. import stats
from ..model import check_selector
from .common import (INVALID, NOT_SHOWN, UNKNOWN, VALID, combine, fmt_interval, group_label, label, mean,
                     samples, side, test, too_few)

KEY = "ratio"
FIELDS = ("range",)
SCHEMA = {KEY: {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["string", "object"]}},
          "range": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number"}}}


class Ratio:
    def __init__(self, measure: str, selectors: List[Any], low: float, high: float, where: Dict[str, Any]) -> None:
        self.measure, self.selectors, self.low, self.high, self.where = measure, selectors, low, high, where
        self.judge_with = "intervals"

    def describe(self) -> str:
        a, b = (label(s) for s in self.selectors)
        return f"{self.measure}: {a} / {b} in [{self.low:g}, {self.high:g}]"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        expect = f"within [{self.low:g}, {self.high:g}]"
        for group, (a, b) in samples(data, self.measure, self.selectors, self.where):
            ma, mb = (mean(v) if v else None for v in (a, b))
            entry: Dict[str, Any] = {"group": group_label(group), "ratio": None,
                                     "detail": f"{data.fmt(ma)} / {data.fmt(mb)}"}
            problem = too_few([a, b], self.judge_with)
            if problem is None and mb == 0:
                problem = UNKNOWN, f"the mean at {label(self.selectors[1])} is 0"
            if problem:
                entry["verdict"], entry["reason"] = problem
            elif self.judge_with == "means":
                q = ma / mb
                entry.update(ratio=q, means_only=True, verdict=VALID if self.low <= q <= self.high else INVALID)
                entry["detail"] += f" = {q:.3g}"
            elif stats.ratio(a, b) is None:  # the seeds' mean at B is 0 to the float
                entry["verdict"], entry["reason"] = UNKNOWN, f"the mean at {label(self.selectors[1])} is 0"
            else:
                q, low, high = stats.ratio(a, b)
                entry["ratio"] = q
                entry["tests"] = [test(f"{label(self.selectors[0])} / {label(self.selectors[1])}", q, low, high,
                                       expect)]
                entry["detail"] += f" = {fmt_interval(q, low, high)}"
                where = side(low, high, self.low, self.high, strict=False)
                entry["verdict"] = {"in": VALID, "out": INVALID, "across": NOT_SHOWN}[where]
                if where == "across":
                    entry["reason"] = "the ratio's interval is unbounded" if low is None or high is None else \
                        f"the ratio's interval crosses [{self.low:g}, {self.high:g}]'s bounds"
                elif where == "out":
                    entry["reason"] = f"the ratio lies outside [{self.low:g}, {self.high:g}]"
            out.append(entry)
        return combine(out)


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
