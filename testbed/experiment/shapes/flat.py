"""`flat: 0.1, over: PARAM`: along the grid parameter PARAM, the measure stays within ±10 % (the
given fraction) of the series' own mean, for every combination of the other free parameters (and
scenario). "Throughput remains constant" read with a tolerance the file states.

Test, an equivalence test: each point's 95% Student t interval over its seeds against the band
mean × (1 ± tolerance), the mean being the mean of the points' means. Valid when every interval
lies within the band, invalid when one lies entirely outside it, not shown otherwise (an
interval wider than the band can tell)."""

from __future__ import annotations

from typing import Any, Dict

from .. import stats
from .common import INVALID, NOT_SHOWN, VALID, Along, combine, grid_values, mean, side, test

KEY = "flat"
FIELDS = ("over",)
SCHEMA = {KEY: {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10,
               "description": "the tolerance, a fraction of the mean"},
          "over": {"type": "string", "description": "a grid parameter"}}


class Flat(Along):
    def __init__(self, measure: str, tolerance: float, over: str, values, where: Dict[str, Any]) -> None:
        super().__init__(measure, over, values, where)
        self.tolerance = tolerance

    def describe(self) -> str:
        return f"{self.measure} flat within ±{self.tolerance:.0%} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for entry, values in self.series(data):
            if values is not None:
                means = [mean(v) for v in values]
                centre = mean(means)
                lower, upper = centre - self.tolerance * abs(centre), centre + self.tolerance * abs(centre)
                if max(means) == min(means):
                    spread = 0.0
                else:
                    spread = max(abs(m - centre) for m in means) / abs(centre) if centre else float("inf")
                entry["spread"] = spread
                entry["detail"] += f"; farthest {spread:.1%} from the mean"
                if self.judge_with == "means":
                    entry["verdict"] = VALID if spread <= self.tolerance else INVALID
                else:
                    entry["tests"], sides = [], []
                    for v, seeds in zip(self.values, values):
                        m, low, high = stats.mean_interval(seeds)
                        entry["tests"].append(test(f"{self.over}={v}", m, low, high,
                                                   f"within [{lower:.4g}, {upper:.4g}]"))
                        sides.append(side(low, high, lower, upper, strict=False))
                    if "out" in sides:
                        entry["verdict"] = INVALID
                        entry["reason"] = f"{entry['tests'][sides.index('out')]['what']} lies outside " \
                                          f"[{lower:.4g}, {upper:.4g}]"
                    elif all(s == "in" for s in sides):
                        entry["verdict"] = VALID
                    else:
                        entry["verdict"] = NOT_SHOWN
                        entry["reason"] = f"the interval at {entry['tests'][sides.index('across')]['what']} " \
                                          f"crosses ±{self.tolerance:.0%} of the mean"
            out.append(entry)
        return combine(out)


def parse(r, entry: Dict[str, Any], path, exp) -> Flat:
    tolerance = entry[KEY]
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 10:
        raise r.fail(path + (KEY,), f"{tolerance!r} is not a tolerance", "a fraction of the mean above 0, such as 0.1")
    over, values = grid_values(r, entry, path, exp)
    return Flat(entry["measure"], float(tolerance), over, values, entry.get("where") or {})
