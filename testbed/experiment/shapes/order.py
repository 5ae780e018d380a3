"""`order: [A, B, C]`: the measure grows from point A to B to C (tree < ring < cluster). Each entry
is a selector of one point (per combination of the free grid parameters).

Test: for each adjacent pair, the 95% Welch interval of the difference of the means (B − A, over
the seeds' values, variances unequal). Valid when every interval lies above 0, invalid when one
lies entirely below 0, not shown otherwise (an interval that contains 0)."""

from __future__ import annotations

from typing import Any, Dict, List

from .. import stats
from ..model import check_selector
from .common import (INVALID, NOT_SHOWN, VALID, combine, group_label, label, mean, samples, side, test,
                     too_few)

KEY = "order"
FIELDS = ()
SCHEMA = {KEY: {"type": "array", "minItems": 2, "items": {"type": ["string", "object"]},
                "description": "point selectors, in increasing order of the measure"}}


class Order:
    def __init__(self, measure: str, selectors: List[Any], where: Dict[str, Any]) -> None:
        self.measure, self.selectors, self.where = measure, selectors, where
        self.judge_with = "intervals"

    def describe(self) -> str:
        return f"{self.measure}: " + " < ".join(label(s) for s in self.selectors)

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for group, values in samples(data, self.measure, self.selectors, self.where):
            entry: Dict[str, Any] = {"group": group_label(group), "detail": " < ".join(
                f"{label(s)} {data.fmt(mean(v) if v else None)}" for s, v in zip(self.selectors, values))}
            problem = too_few(values, self.judge_with)
            if problem:
                entry["verdict"], entry["reason"] = problem
            elif self.judge_with == "means":
                means = [mean(v) for v in values]
                entry["verdict"] = VALID if all(a < b for a, b in zip(means, means[1:])) else INVALID
                entry["means_only"] = True
            else:
                entry["tests"], sides = [], []
                for (sa, a), (sb, b) in zip(zip(self.selectors, values), list(zip(self.selectors, values))[1:]):
                    d, low, high = stats.difference(a, b)
                    entry["tests"].append(test(f"{label(sb)} − {label(sa)}", d, low, high, "> 0"))
                    sides.append(side(low, high, lower=0.0))
                if "out" in sides:
                    entry["verdict"] = INVALID
                    bad = entry["tests"][sides.index("out")]
                    entry["reason"] = f"{bad['what']} lies below 0"
                elif all(s == "in" for s in sides):
                    entry["verdict"] = VALID
                else:
                    entry["verdict"] = NOT_SHOWN
                    across = entry["tests"][sides.index("across")]
                    entry["reason"] = f"the interval of {across['what']} contains 0"
            out.append(entry)
        return combine(out)


def parse(r, entry: Dict[str, Any], path, exp) -> Order:
    value = entry[KEY]
    if not isinstance(value, list) or len(value) < 2:
        raise r.fail(path + (KEY,), "expected a list of at least two points", "[A, B, ...] in increasing order")
    selectors = [check_selector(r, exp, s, path + (KEY, i)) for i, s in enumerate(value)]
    return Order(entry["measure"], selectors, entry.get("where") or {})
