"""`trend: increasing|decreasing|non-decreasing|non-increasing, over: PARAM`: along the grid
parameter PARAM (its values in order: quantities by value), the measure rises (falls), for every
combination of the other free parameters (and scenario).

Tests, over every seed's value:
- the trend: the Theil–Sen slope of the measure against PARAM and Sen's 95% interval for it
  (Kendall's rank test of a monotone trend, read as a slope; PARAM's values in base units, or
  their ranks when they are names), times PARAM's range: the rise over the range. With two
  values of PARAM the trend is the one step, by Welch's interval;
- the steps: the Welch interval of each adjacent step's difference of means, each at
  1 − 0.05 / (the number of steps) (Bonferroni), so that the steps together point the other way
  by chance at most one time in twenty.

`increasing` is valid when the slope's interval lies above 0 and no step's interval lies entirely
below 0; invalid when the slope's interval lies below 0 or a step's does; not shown otherwise.
`decreasing` is its mirror. `non-decreasing` ("does not fall") allows a fall of at most
`tolerance` × the series' mean (default 0) over the whole range: valid when the slope's lower
bound times the range is above −tolerance × mean and no step falls by more than that, invalid
when the slope's upper bound or a step's lies below it; `non-increasing` is its mirror."""

from __future__ import annotations

import math
from typing import Any, Dict, List

from .. import stats
from .common import INVALID, NOT_SHOWN, VALID, Along, combine, fmt_interval, grid_values, mean, side, test

KEY = "trend"
FIELDS = ("over", "tolerance")
TRENDS = {"increasing": (+1, False), "decreasing": (-1, False),
          "non-decreasing": (+1, True), "non-increasing": (-1, True)}
SCHEMA = {KEY: {"enum": sorted(TRENDS)}, "over": {"type": "string", "description": "a grid parameter"},
          "tolerance": {"type": "number", "minimum": 0, "exclusiveMaximum": 10,
                        "description": "non-decreasing / non-increasing: the largest move the wrong way over "
                                       "the range, a fraction of the mean (default 0)"}}

_MEANS = {"increasing": lambda a, b: b > a, "decreasing": lambda a, b: b < a,
          "non-decreasing": lambda a, b: b >= a, "non-increasing": lambda a, b: b <= a}


class Trend(Along):
    def __init__(self, measure: str, trend: str, over: str, values, where: Dict[str, Any], positions=None,
                 tolerance: float = 0.0) -> None:
        super().__init__(measure, over, values, where, positions)
        self.trend, self.tolerance = trend, tolerance

    def describe(self) -> str:
        within = f" (within {self.tolerance:.0%})" if self.tolerance else ""
        return f"{self.measure} {self.trend} over {self.over}{within}"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for entry, values in self.series(data):
            if values is not None:
                if self.judge_with == "means":
                    means = [mean(v) for v in values]
                    rule = _MEANS[self.trend]
                    entry["verdict"] = VALID if all(rule(a, b) for a, b in zip(means, means[1:])) else INVALID
                else:
                    self._judge_series(entry, values)
            out.append(entry)
        return combine(out)

    def _judge_series(self, entry: Dict[str, Any], values: List[List[float]]) -> None:
        sign, loose = TRENDS[self.trend]
        xs, ys = self.pairs(values)
        span = max(self.positions) - min(self.positions)
        slack = self.tolerance * abs(mean([mean(v) for v in values])) if loose else 0.0
        # every interval read in the trend's direction (a rise for increasing, a fall for
        # decreasing), against the bound 0 (strict) or −slack (non-decreasing / non-increasing)
        word = "rise" if sign > 0 else "fall"
        bound = f"−{slack:.4g}" if slack else "0"
        expect = "> 0" if not loose else f"≥ {bound}"
        if len(values) == 2:  # two values: the trend is the step, a two-sample comparison (Welch)
            d, d_low, d_high = stats.difference(values[0], values[1])
            low, high = sorted((sign * d_low, sign * d_high))
            change = (sign * d, low, high)
            method = "Welch"
        else:
            s, s_low, s_high = stats.slope(xs, ys)
            low, high = (None, None) if s_low is None else sorted((sign * s_low * span, sign * s_high * span))
            change = (sign * s * span, low, high)
            method = "Theil–Sen"
        entry["tests"] = [test(f"{method} {word} over the range of {self.over}", *change, expect)]
        trend_side = side(low, high, lower=-slack, strict=not loose)
        against: List[str] = []
        level: List[str] = []
        steps = len(values) - 1 if len(values) > 2 else 0
        for i in range(steps):
            # Bonferroni: the steps together say "the other way" by chance at most 5 % of the time
            d, d_low, d_high = stats.difference(values[i], values[i + 1], level=1 - (1 - stats.LEVEL) / steps)
            what = f"{word} from {self.over}={self.values[i]} to {self.values[i + 1]}"
            lo, hi = sorted((sign * d_low, sign * d_high))
            entry["tests"].append(test(what, sign * d, lo, hi, expect))
            where = side(lo, hi, lower=-slack, strict=not loose)
            if where == "out":
                against.append(what)
            elif where == "across" and lo == hi:  # seeds without spread, a step exactly on the line
                level.append(what)
        if trend_side == "out" or against:
            entry["verdict"] = INVALID
            entry["reason"] = f"the {word} over the range is {fmt_interval(*change)}" if trend_side == "out" else \
                f"the {against[0]} goes the other way"
        elif trend_side == "in" and level:
            entry["verdict"], entry["reason"] = NOT_SHOWN, f"the {level[0]} is exactly level"
        elif trend_side == "in":
            entry["verdict"] = VALID
        else:
            entry["verdict"] = NOT_SHOWN
            entry["reason"] = f"the interval of the {word} over the range, {fmt_interval(*change)}, " + \
                ("contains 0" if not loose else f"reaches below {bound}")
        entry["detail"] += f"; {method} {word} over the range {fmt_interval(*change)}"


def parse(r, entry: Dict[str, Any], path, exp) -> Trend:
    trend = entry[KEY]
    if trend not in TRENDS:
        raise r.fail(path + (KEY,), f"unknown trend {trend!r}", ", ".join(TRENDS))
    tolerance = entry.get("tolerance", 0.0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance) \
            or not 0 <= tolerance < 10:
        raise r.fail(path + ("tolerance",), f"{tolerance!r} is not a tolerance",
                     "a fraction of the mean from 0, such as 0.05")
    if tolerance and not TRENDS[trend][1]:
        raise r.fail(path + ("tolerance",), f"a tolerance is for non-decreasing or non-increasing, not {trend}",
                     "no tolerance, or trend: non-decreasing / non-increasing")
    over, values = grid_values(r, entry, path, exp)
    param = next(p for p in exp.grid if p.short == over)
    return Trend(entry["measure"], trend, over, values, entry.get("where") or {}, param.positions(values),
                 float(tolerance))
