"""`trend: increasing|decreasing|non-decreasing|non-increasing, over: PARAM`: along the grid
parameter PARAM (sorted by value), the measure's mean rises (falls) at every step, for every
combination of the other free parameters (and scenario)."""

from __future__ import annotations

from typing import Any, Dict

from .common import Along, combine, grid_values

KEY = "trend"
FIELDS = ("over",)
TRENDS = {"increasing": lambda a, b: b > a, "decreasing": lambda a, b: b < a,
          "non-decreasing": lambda a, b: b >= a, "non-increasing": lambda a, b: b <= a}
SCHEMA = {KEY: {"enum": sorted(TRENDS)}, "over": {"type": "string", "description": "a grid parameter"}}


class Trend(Along):
    def __init__(self, measure: str, trend: str, over: str, values, where: Dict[str, Any]) -> None:
        super().__init__(measure, over, values, where)
        self.trend = trend

    def describe(self) -> str:
        return f"{self.measure} {self.trend} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        rule = TRENDS[self.trend]
        out = []
        for entry, values in self.series(data):
            if values is not None:
                entry["verdict"] = "valid" if all(rule(a, b) for a, b in zip(values, values[1:])) else "invalid"
            out.append(entry)
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> Trend:
    trend = entry[KEY]
    if trend not in TRENDS:
        raise r.fail(path + (KEY,), f"unknown trend {trend!r}", ", ".join(TRENDS))
    over, values = grid_values(r, entry, path, exp)
    return Trend(entry["measure"], trend, over, values, entry.get("where") or {})
