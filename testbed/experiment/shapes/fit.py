"""`fit: log|linear, over: PARAM`: along the grid parameter PARAM, the measure's means are fitted
by least squares both as a + b·log x and as a + b·x; the shape holds when the named curve leaves
the smaller residual and its slope b is positive (growth "about logarithmically" or "about
linearly", as a paper's prose says), for every combination of the other free parameters. The
parameter's values must be positive numbers; at least three are needed to tell the curves apart."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

from .common import Along, combine, grid_values

KEY = "fit"
FIELDS = ("over",)
CURVES = ("linear", "log")
SCHEMA = {KEY: {"enum": list(CURVES)}, "over": {"type": "string", "description": "a grid parameter"}}


def least_squares(xs: List[float], ys: List[float]) -> Tuple[float, float, float]:
    """(a, b, residual sum of squares) of y = a + b·x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    return a, b, sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))


class Fit(Along):
    def __init__(self, measure: str, curve: str, over: str, values, where: Dict[str, Any]) -> None:
        super().__init__(measure, over, values, where)
        self.curve = curve

    def describe(self) -> str:
        return f"{self.measure} grows {'logarithmically' if self.curve == 'log' else 'linearly'} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        xs = [float(v) for v in self.values]
        for entry, values in self.series(data):
            if values is not None:
                fits = {"linear": least_squares(xs, values), "log": least_squares([math.log(x) for x in xs], values)}
                a, b, rss = fits[self.curve]
                other = fits["log" if self.curve == "linear" else "linear"][2]
                entry.update(verdict="valid" if b > 0 and rss < other else "invalid",
                             slope=b, residual=rss, other_residual=other)
                entry["detail"] += (f"; {self.curve} fit a = {a:.4g}, b = {b:.4g}, residual {rss:.4g} against "
                                    f"{other:.4g} for the other curve")
            out.append(entry)
        return {"verdict": combine(out), "groups": out}


def parse(r, entry: Dict[str, Any], path, exp) -> Fit:
    curve = entry[KEY]
    if curve not in CURVES:
        raise r.fail(path + (KEY,), f"unknown curve {curve!r}", ", ".join(CURVES))
    over, values = grid_values(r, entry, path, exp)
    if len(values) < 3:
        raise r.fail(path + ("over",), f"{over} has {len(values)} values: too few to tell a log from a line",
                     "a parameter with three values or more")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
        raise r.fail(path + ("over",), f"the values of {over} are not all positive numbers", "numbers above 0")
    return Fit(entry["measure"], curve, over, values, entry.get("where") or {})
