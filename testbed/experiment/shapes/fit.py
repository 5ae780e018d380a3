"""`fit: linear|log|exponential|saturation, over: PARAM`: along the grid parameter PARAM, the
measure grows as the named curve ("about linearly", "only logarithmically", as a paper's prose
says), for every combination of the other free parameters. PARAM's values must be positive
numbers or quantities; at least three are needed to tell curves apart.

Tests, over every seed's value (stats.py):
- growth: the Theil–Sen slope's 95% interval lies above 0, and the fitted curve rises by at least
  MIN_RISE of the series' mean over the range (a 0.3 % rise is no growth to give a shape to);
- `linear` and `log`: the Box–Cox exponent λ of y = a + b·(x^λ − 1)/λ (a line at λ = 1, a + b·log x
  at λ = 0, a power of x elsewhere) and its 95% profile-likelihood interval, against λ = 1 or 0
  within ±EXPONENT_TOLERANCE; and neither an exponential a + b·e^(x/s) nor a saturation
  a + b·(1 − e^(−x/s)) fits better by AICc_MARGIN or more of the corrected Akaike criterion;
- `exponential` and `saturation`: the named curve has the smallest AICc, by AICc_MARGIN or more
  over every other family (line, log, a power of x, the other of the two).

Valid when the growth and the curve's test hold; invalid when the measure falls (slope interval
below 0), when the exponent's interval lies entirely outside the named curve's band, or when
another family fits better by AICc_REJECT or more; not shown otherwise (the curves cannot be told
apart with these seeds, or another family fits better by less than AICc_REJECT), and "not shown"
is then the honest answer.

With `judge: means` the means are fitted by a line and by a log and the named one (linear or log)
must leave the smaller residual with a positive slope, as the shape was judged before intervals."""

from __future__ import annotations

import math
from typing import Any, Dict, List

import numpy as np

from .. import stats
from .common import INVALID, NOT_SHOWN, VALID, Along, combine, fmt_interval, grid_values, mean, test

KEY = "fit"
FIELDS = ("over",)
CURVES = ("linear", "log", "exponential", "saturation")
SCHEMA = {KEY: {"enum": list(CURVES)}, "over": {"type": "string", "description": "a grid parameter"}}
#: the Box–Cox exponent a line (1) or a log (0) is read with: x^0.75 to x^1.25 grows "linearly"
EXPONENT_TOLERANCE = 0.25
#: the difference of AICc by which one curve fits better than another (Burnham and Anderson's 2),
#: and by which it fits so much better that the named curve is rejected (their "essentially no
#: support" beyond 10): between the two the verdict is "not shown", since the exponential and the
#: saturation contain a line as a limit and beat it by 2 by chance about one time in twenty
AICc_MARGIN = 2.0
AICc_REJECT = 10.0
#: the least rise over the range, a fraction of the series' mean, that counts as growth
MIN_RISE = 0.05
EXPONENT = {"linear": 1.0, "log": 0.0}


class Fit(Along):
    def __init__(self, measure: str, curve: str, over: str, values, where: Dict[str, Any], positions) -> None:
        super().__init__(measure, over, values, where, positions)
        self.curve = curve

    def describe(self) -> str:
        words = {"log": "logarithmically", "linear": "linearly", "exponential": "exponentially",
                 "saturation": "towards a saturation"}
        return f"{self.measure} grows {words[self.curve]} over {self.over}"

    def judge(self, data) -> Dict[str, Any]:
        out = []
        for entry, values in self.series(data):
            if values is not None:
                if self.judge_with == "means":
                    self._judge_means(entry, values)
                else:
                    self._judge_seeds(entry, values)
            out.append(entry)
        return combine(out)

    def _judge_means(self, entry: Dict[str, Any], values: List[List[float]]) -> None:
        means = [mean(v) for v in values]
        if self.curve not in EXPONENT:
            entry["verdict"], entry["reason"] = NOT_SHOWN, "means alone cannot tell three-parameter curves"
            return
        fits = {"linear": stats._lsq_rows(np.asarray([self.positions], dtype=float), np.asarray(means)),
                "log": stats._lsq_rows(np.log(np.asarray([self.positions], dtype=float)), np.asarray(means))}
        _, b, rss = (float(v[0]) for v in fits[self.curve])
        other = float(fits["log" if self.curve == "linear" else "linear"][2][0])
        entry.update(verdict=VALID if b > 0 and rss < other else INVALID, slope=b, residual=rss,
                     other_residual=other)
        entry["detail"] += f"; {self.curve} fit b = {b:.4g}, residual {rss:.4g} against {other:.4g} for the other curve"

    def _judge_seeds(self, entry: Dict[str, Any], values: List[List[float]]) -> None:
        xs, ys = self.pairs(values)
        level = abs(mean(ys)) or 1.0
        s, raw_low, raw_high = stats.slope(xs, ys)
        s_low = -math.inf if raw_low is None else raw_low   # an interval too wide to compute is unbounded
        s_high = math.inf if raw_high is None else raw_high
        fits = stats.fit_curves(xs, ys)
        named = fits[self.curve]
        x = np.asarray(xs, dtype=float)
        fitted = named.curve(x)  # on the data's own x: the bases are relative to them
        rise = float(fitted[int(np.argmax(x))] - fitted[int(np.argmin(x))]) / level
        entry["tests"] = [test(f"Theil–Sen slope over {self.over}", s, raw_low, raw_high, "> 0")]
        entry["fits"] = {name: {"aicc": f.aicc, "r2": f.r2, "p": f.p} for name, f in fits.items()}
        best = min(fits.values(), key=lambda f: f.aicc)
        rivals = [f for f in fits.values() if f.family != self.curve
                  and (self.curve not in EXPONENT or f.family in ("exponential", "saturation"))]
        better = sorted((f for f in rivals if named.aicc - f.aicc >= AICc_MARGIN), key=lambda f: f.aicc)
        much_better = [f for f in better if named.aicc - f.aicc >= AICc_REJECT]
        rival = f"{better[0].family} ({better[0].words}) fits better by {named.aicc - better[0].aicc:.1f} of AICc" \
            if better else ""
        verdict, reason = None, None
        if s_high < 0:
            verdict, reason = INVALID, f"the measure falls (Theil–Sen slope {fmt_interval(s, raw_low, raw_high)})"
        if self.curve in EXPONENT and verdict is None:
            target = EXPONENT[self.curve]
            lam, low, high = stats.exponent_interval(xs, ys)
            band = (target - EXPONENT_TOLERANCE, target + EXPONENT_TOLERANCE)
            entry["tests"].append(test("Box–Cox exponent λ of x", lam, low, high,
                                       f"within [{band[0]:g}, {band[1]:g}]"))
            entry["exponent"] = lam
            lo = -math.inf if low is None else low
            hi = math.inf if high is None else high
            if hi < band[0] or lo > band[1]:
                verdict, reason = INVALID, f"it grows as x^{lam:.2g} (λ {fmt_interval(lam, low, high)}), " \
                                           f"not as {'a line' if target else 'a log'}"
            elif better:
                verdict, reason = INVALID if much_better else NOT_SHOWN, rival
            elif lo < band[0] or hi > band[1]:
                verdict, reason = NOT_SHOWN, f"the exponent's interval {fmt_interval(lam, low, high)} reaches " \
                                             f"beyond [{band[0]:g}, {band[1]:g}]"
        elif verdict is None:
            gap = min(f.aicc for f in fits.values() if f.family != self.curve) - named.aicc
            if better:
                verdict, reason = INVALID if much_better else NOT_SHOWN, rival
            elif gap < AICc_MARGIN:
                runner_up = min((f for f in fits.values() if f.family != self.curve), key=lambda f: f.aicc)
                verdict, reason = NOT_SHOWN, f"{runner_up.family} fits as well (AICc {gap:+.1f})"
        if verdict is None:
            if s_low <= 0:
                verdict = NOT_SHOWN
                reason = f"no significant rise (Theil–Sen slope {fmt_interval(s, raw_low, raw_high)})"
            elif rise < MIN_RISE:
                verdict, reason = NOT_SHOWN, f"it rises by {rise:.1%} of its mean over the range, less than " \
                                             f"{MIN_RISE:.0%}"
            else:
                verdict = VALID
        entry["verdict"] = verdict
        if reason:
            entry["reason"] = reason
        entry["detail"] += f"; best fit {best.family} ({best.words}), {self.curve} R² {named.r2:.3f}, " \
                           f"rise {rise:.1%} of the mean"


def parse(r, entry: Dict[str, Any], path, exp) -> Fit:
    curve = entry[KEY]
    if curve not in CURVES:
        raise r.fail(path + (KEY,), f"unknown curve {curve!r}", ", ".join(CURVES))
    over, values = grid_values(r, entry, path, exp)
    if len(values) < 3:
        raise r.fail(path + ("over",), f"{over} has {len(values)} values: too few to tell a log from a line",
                     "a parameter with three values or more")
    param = next(p for p in exp.grid if p.short == over)
    positions = param.positions(values)
    if param.quantity() is None or not all(x > 0 for x in positions):
        raise r.fail(path + ("over",), f"the values of {over} are not all positive numbers",
                     "numbers or quantities above 0, such as 25, 50, 100 or 50s, 100s")
    return Fit(entry["measure"], curve, over, values, entry.get("where") or {}, positions)
