"""What the kinds of shape share: the combinations of free grid parameters a shape is judged
for, the seeds' values a selector picks in one of them, the verdicts and how the verdicts of the
combinations add up.

A verdict is one of:

- `valid`: the data show the shape (every interval the kind judges lies on the expected side);
- `invalid`: the data show the contrary (an interval lies entirely on the other side);
- `not shown`: the data cannot tell (an interval straddles the line, one seed, curves that fit
  alike), with the reason;
- `unknown`: a point has no value.

With `judge: means` (in the experiment file, or on one shape) a shape is judged on the means over
seeds alone, as a reduced experiment may ask: its verdicts say "(means only)".
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..model import Experiment, Point, matches

VALID, INVALID, NOT_SHOWN, UNKNOWN = "valid", "invalid", "not shown", "unknown"
JUDGES = ("intervals", "means")
ONE_SEED = "1 seed"


def label(selector: Any) -> str:
    """A selector as a shape's name shows it."""
    return selector if isinstance(selector, str) else ",".join(f"{k}={v}" for k, v in selector.items())


def _keys(selector: Any) -> set:
    return {"scenario"} if isinstance(selector, str) else set(selector)


def groups(exp: Experiment, selectors: List[Any], where: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """The combinations of the grid parameters (and scenario) that neither a selector nor `where`
    mentions: one judgement per combination. [{}] when none is free."""
    taken = set().union(*[_keys(s) for s in selectors]) if selectors else set()
    taken |= set(where or {})
    free = [("scenario", [s.label for s in exp.scenarios])] if "scenario" not in taken else []
    free += [(p.short, list(p.values)) for p in exp.grid if p.short not in taken]
    return [dict(zip([n for n, _ in free], combo)) for combo in itertools.product(*[v for _, v in free])]


def pick(exp: Experiment, selector: Any, group: Dict[str, Any], where: Optional[Dict[str, Any]] = None) -> List[Point]:
    return [p for p in exp.points if matches(p, selector) and matches(p, group) and matches(p, where or {})]


def samples(data, measure: str, selectors: List[Any], where: Optional[Dict[str, Any]] = None):
    """For every combination of the free parameters (groups): (group, the seeds' values of the
    measure at the one point each selector picks in it: [] where it picks no single point)."""
    for group in groups(data.exp, selectors, where):
        values = []
        for s in selectors:
            pts = pick(data.exp, s, group, where)
            if len(pts) == 1:
                values.append(data.values(pts[0].id, measure))
                data.read_by(group_label(group), [pts[0].id])
            else:
                values.append([])
        yield group, values


def group_label(group: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items())


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def too_few(values: List[Sequence[float]], judge: str) -> Optional[Tuple[str, str]]:
    """(verdict, reason) when the values cannot be judged: a point without a value (unknown), or,
    judging intervals, a point with one seed (not shown)."""
    if any(len(v) == 0 for v in values):
        return UNKNOWN, "a point has no value"
    if judge == "intervals" and any(len(v) < 2 for v in values):
        return NOT_SHOWN, ONE_SEED
    return None


def test(what: str, estimate: Optional[float], low: Optional[float], high: Optional[float],
         expect: str) -> Dict[str, Any]:
    """One interval a verdict rests on, as shapes.json and the report show it."""
    return {"what": what, "estimate": estimate, "low": low, "high": high, "expect": expect}


def side(low: Optional[float], high: Optional[float], lower: float = -math.inf, upper: float = math.inf,
         strict: bool = True) -> str:
    """Where an interval lies against the expected region between lower and upper (open with
    `strict`, closed without; an infinite bound is no bound): 'in' (within it), 'out' (entirely
    beyond a bound: below `lower` or above `upper`) or 'across' (anything else: it reaches past a
    bound, or ends on one). None bounds of the interval are read as unbounded, NaN as unknown (across).
    An interval of one value (no spread between the seeds) is in, out, or across when it sits
    exactly on a bound of an open region."""
    lo = -math.inf if low is None else low
    hi = math.inf if high is None else high
    if math.isnan(lo) or math.isnan(hi):
        return "across"

    def above(v: float) -> bool:
        return lower == -math.inf or (v > lower if strict else v >= lower)

    def below(v: float) -> bool:
        return upper == math.inf or (v < upper if strict else v <= upper)

    if above(lo) and below(hi):
        return "in"
    if hi < lower or lo > upper:
        return "out"
    return "across"


def fmt_interval(estimate: Optional[float], low: Optional[float], high: Optional[float], fmt: str = "{:.4g}") -> str:
    """An estimate with its interval: `2.2 [1.9, 2.5]`, `2.2 [unbounded]`, or the estimate alone
    when the interval is that one value."""
    def text(v: float) -> str:
        return fmt.format(v + 0.0)  # + 0.0: no "-0"

    e = "–" if estimate is None else text(estimate)
    if low is None and high is None:
        return f"{e} [unbounded]"
    if low is not None and low == high:
        return e
    lo = "−∞" if low is None else text(low)
    hi = "∞" if high is None else text(high)
    return f"{e} [{lo}, {hi}]"


def group_verdict(group: Dict[str, Any]) -> str:
    """A group's verdict as text: 'not shown, judged valid' where the runs' fidelity hid what its
    values gave."""
    return (group.get("verdict") or "") + (f", judged {group['judged']}" if group.get("judged") else "")


def judged_groups(shape: Dict[str, Any], most: int, tests_each: int = 3, fmt: str = "{:.4g}"
                  ) -> Tuple[List[Tuple[str, str, str, str]], List[Dict[str, Any]]]:
    """A judged shape's groups as they are shown: those that are not valid first, at most `most`
    of them, each as (its label, verdict, reason, its tests' intervals as text); and the groups
    left out."""
    groups = sorted(shape.get("groups") or [], key=lambda g: g.get("verdict") == VALID)
    shown_groups = []
    for g in groups[:most]:
        tests = "; ".join(f"{t['what']} {fmt_interval(t.get('estimate'), t.get('low'), t.get('high'), fmt)}"
                          for t in (g.get("tests") or [])[:tests_each])
        shown_groups.append((g.get("group") or "", group_verdict(g), g.get("reason") or "", tests))
    return shown_groups, groups[most:]


ORDER = {INVALID: 0, UNKNOWN: 1, NOT_SHOWN: 2, VALID: 3}


def combine(results: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The shape's verdict from its groups': invalid anywhere, else unknown anywhere, else not
    shown anywhere (with the reasons), else valid."""
    if not results:
        return {"verdict": UNKNOWN, "reason": "no point to judge", "groups": results}
    verdict = min((r["verdict"] for r in results), key=ORDER.__getitem__)
    reasons = []
    for r in results:
        if r["verdict"] == verdict and r.get("reason") and r["reason"] not in reasons:
            reasons.append(r["reason"])
    out = {"verdict": verdict, "groups": results}
    if reasons and verdict != VALID:
        out["reason"] = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
    if any(r.get("means_only") for r in results):
        out["means_only"] = True
    return out


def shown(verdict: Dict[str, Any]) -> str:
    """A verdict as a line of text shows it: 'valid', 'not shown (1 seed)', 'valid (means only)'."""
    text = verdict["verdict"]
    if verdict["verdict"] == NOT_SHOWN and verdict.get("reason"):
        text += f" ({verdict['reason']})"
    if verdict.get("means_only"):
        text += " (means only)"
    return text


def grid_values(r, entry: Dict[str, Any], path, exp):
    """(the parameter `over` names, its values in order): what the shapes along a parameter share.
    Quantities (durations, rates, sizes, probabilities, distances) are ordered by value, other
    values are taken in the order the file lists them."""
    if "over" not in entry:
        raise r.fail(path, "missing field 'over'", "the grid parameter the shape runs along")
    params = {p.short: p for p in exp.grid}
    over = entry["over"]
    if over not in params:
        raise r.fail(path + ("over",), f"no grid parameter {over!r}", ", ".join(params) or "the file has no grid")
    if "where" in entry and over in entry["where"]:
        raise r.fail(path + ("where",), f"'where' fixes {over}, the parameter the shape runs along")
    param = params[over]
    if len(param.values) < 2:
        raise r.fail(path + ("over",), f"{over} has one value: no shape to see along it",
                     "a parameter with two values or more")
    return over, param.ordered()


class Along:
    """A shape judged along a grid parameter (trend, flat, fit): its measure, the parameter `over`
    with its values in order (and their positions: the values in base units, or ranks), and
    `where`."""

    def __init__(self, measure: str, over: str, values, where: Dict[str, Any], positions=None) -> None:
        self.measure, self.over, self.values, self.where = measure, over, list(values), where
        self.positions = list(positions) if positions is not None else list(range(len(self.values)))
        self.judge_with = "intervals"

    def series(self, data):
        """For every combination of the free parameters: (its entry, with the group and the means
        along `over` as detail; the seeds' values per value of `over`, or None when the series
        cannot be judged, the entry then saying why)."""
        for group, values in samples(data, self.measure, [{self.over: v} for v in self.values], self.where):
            entry: Dict[str, Any] = {"group": group_label(group), "detail": ", ".join(
                f"{self.over}={v}: {data.fmt(mean(s) if s else None)}" for v, s in zip(self.values, values))}
            problem = too_few(values, self.judge_with)
            if problem:
                entry["verdict"], entry["reason"] = problem
                yield entry, None
            else:
                if self.judge_with == "means":
                    entry["means_only"] = True
                yield entry, values

    def pairs(self, values: List[List[float]]) -> Tuple[List[float], List[float]]:
        """Every (position, seed value) of a series, for the tests over all seeds."""
        xs = [x for x, s in zip(self.positions, values) for _ in s]
        ys = [y for s in values for y in s]
        return xs, ys
