"""`near_reference: FACTOR`: at every point with a reference value for the measure, the mean is
within a factor FACTOR of it (for a reference range [LOW, HIGH]: within [LOW / FACTOR,
HIGH × FACTOR]). Differences are reported either way; this says which are outside the factor.

Test: the 95% Student t interval of the point's mean over the seeds (the reference is a constant,
so the interval of ours / reference is that interval divided by it). Valid when it lies within
the band, invalid when it lies entirely outside, not shown otherwise."""

from __future__ import annotations

import math
from typing import Any, Dict

from .. import stats
from ..model import matches
from .common import INVALID, NOT_SHOWN, VALID, combine, fmt_interval, side, test, too_few

KEY = "near_reference"
FIELDS = ()
SCHEMA = {KEY: {"type": "number", "minimum": 1, "description": "the largest factor between ours and the reference"}}


class NearReference:
    def __init__(self, measure: str, factor: float, where: Dict[str, Any]) -> None:
        self.measure, self.factor, self.where = measure, factor, where
        self.judge_with = "intervals"

    def describe(self) -> str:
        return f"{self.measure} within a factor {self.factor:g} of the reference"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for ref in data.exp.references:
            if ref.measure != self.measure:
                continue
            for p in data.exp.select(ref.selector):
                if not matches(p, self.where):
                    continue
                values = data.values(p.id, self.measure)
                data.read_by(p.id, [p.id])
                target = f"{ref.low:g}" if ref.low == ref.high else f"{ref.low:g}–{ref.high:g}"
                entry: Dict[str, Any] = {"group": p.id}
                problem = too_few([values], self.judge_with)
                if problem:
                    entry["verdict"], entry["reason"] = problem
                    entry["detail"] = f"reference {target}, " + ("no value" if not values else f"ours {values[0]:.4g}")
                    out.append(entry)
                    continue
                m, low, high = stats.mean_interval(values)
                factor = max(1.0, m / ref.high, ref.low / m) if m > 0 and ref.low > 0 else \
                    (1.0 if m == ref.low == ref.high else math.inf)
                entry["factor"] = factor
                band = (ref.low / self.factor, ref.high * self.factor)
                if self.judge_with == "means":
                    entry.update(verdict=VALID if band[0] <= m <= band[1] else INVALID, means_only=True)
                    entry["detail"] = f"ours {data.fmt(m)}, reference {target} (factor {factor:.2g})"
                else:
                    where = side(low, high, band[0], band[1], strict=False)
                    entry["verdict"] = {"in": VALID, "out": INVALID, "across": NOT_SHOWN}[where]
                    if where == "across":
                        entry["reason"] = f"the interval of ours crosses [{band[0]:.4g}, {band[1]:.4g}]'s bounds"
                    elif where == "out":
                        entry["reason"] = f"ours lies outside [{band[0]:.4g}, {band[1]:.4g}]"
                    ref_value = ref.value
                    entry["tests"] = [test("ours", m, low, high, f"within [{band[0]:.4g}, {band[1]:.4g}]")]
                    if ref_value > 0:
                        entry["tests"].append(test("ours / reference", m / ref_value, low / ref_value,
                                                   high / ref_value,
                                                   f"within [{band[0] / ref_value:.4g}, {band[1] / ref_value:.4g}]"))
                    entry["detail"] = f"ours {fmt_interval(m, low, high)}, reference {target} (factor {factor:.2g})"
                out.append(entry)
        return combine(out)


def parse(r, entry: Dict[str, Any], path, exp) -> NearReference:
    factor = entry[KEY]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor < 1:
        raise r.fail(path + (KEY,), f"{factor!r} is not allowed", "a factor, a number at least 1 such as 1.5")
    if not any(ref.measure == entry["measure"] for ref in exp.references):
        raise r.fail(path + ("measure",), f"no reference value for {entry['measure']}",
                     "references.values entries for this measure")
    negative = [ref for ref in exp.references if ref.measure == entry["measure"] and ref.low < 0]
    if negative:
        raise r.fail(path + (KEY,), f"a factor of a negative reference ({negative[0].low:g}) has no meaning",
                     "references of 0 or more for this measure, or a ratio shape")
    return NearReference(entry["measure"], float(factor), entry.get("where") or {})
