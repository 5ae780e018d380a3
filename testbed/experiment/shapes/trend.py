"""`trend: increasing|decreasing|non-decreasing|non-increasing, over: PARAM`: along the grid
parameter PARAM (sorted by value), the measure's mean rises (falls) at every step, for every
combination of the other free parameters (and scenario)."""

from __future__ import annotations

from typing import Any, Dict

from .common import combine, group_label, means

KEY = "trend"
FIELDS = ("over",)
TRENDS = {"increasing": lambda a, b: b > a, "decreasing": lambda a, b: b < a,
          "non-decreasing": lambda a, b: b >= a, "non-increasing": lambda a, b: b <= a}
SCHEMA = {KEY: {"enum": sorted(TRENDS)}, "over": {"type": "string", "description": "a grid parameter"}}


class Trend:
    def __init__(self, measure: str, trend: str, over: str, values, where: Dict[str, Any]) -> None:
        self.measure, self.trend, self.over, self.values, self.where = measure, trend, over, values, where

    def describe(self) -> str:
        return f"{self.measure} {self.trend} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        rule = TRENDS[self.trend]
        out = []
        steps = [{self.over: v} for v in self.values]
        for group, values in means(data, self.measure, steps, self.where):
            series = list(zip(self.values, values))
            known = [(v, m) for v, m in series if m is not None]
            if len(known) < len(series):
                verdict = "unknown"
            else:
                ok = all(rule(a[1], b[1]) for a, b in zip(known, known[1:]))
                verdict = "valid" if ok else "invalid"
            out.append({"group": group_label(group), "verdict": verdict,
                        "detail": ", ".join(f"{self.over}={v}: {data.fmt(m)}" for v, m in series)})
        return {"verdict": combine(out), "groups": out}


def grid_values(r, entry: Dict[str, Any], path, exp):
    """(the parameter `over` names, its values sorted): what the shapes along a parameter share."""
    if "over" not in entry:
        raise r.fail(path, "missing field 'over'", "the grid parameter the shape runs along")
    params = {p.short: p for p in exp.grid}
    over = entry["over"]
    if over not in params:
        raise r.fail(path + ("over",), f"no grid parameter {over!r}", ", ".join(params) or "the file has no grid")
    if "where" in entry and over in entry["where"]:
        raise r.fail(path + ("where",), f"'where' fixes {over}, the parameter the shape runs along")
    values = list(params[over].values)
    try:
        values = sorted(values)
    except TypeError:
        raise r.fail(path + ("over",), f"the values of {over} cannot be ordered", "numbers, or strings") from None
    if len(values) < 2:
        raise r.fail(path + ("over",), f"{over} has one value: no shape to see along it",
                     "a parameter with two values or more")
    return over, values


def parse(r, entry: Dict[str, Any], path, exp) -> Trend:
    trend = entry[KEY]
    if trend not in TRENDS:
        raise r.fail(path + (KEY,), f"unknown trend {trend!r}", ", ".join(TRENDS))
    over, values = grid_values(r, entry, path, exp)
    return Trend(entry["measure"], trend, over, values, entry.get("where") or {})
