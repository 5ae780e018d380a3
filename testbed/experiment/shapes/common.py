"""What the kinds of shape share: the combinations of free grid parameters a shape is judged
for, the points a selector picks in one of them, and how the verdicts of the combinations add up."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional

from ..model import Experiment, Point, matches


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


def means(data, measure: str, selectors: List[Any], where: Optional[Dict[str, Any]] = None):
    """For every combination of the free parameters (groups): (group, the measure's mean at the one
    point each selector picks in it, None where it picks no single point or has no value)."""
    for group in groups(data.exp, selectors, where):
        values = []
        for s in selectors:
            pts = pick(data.exp, s, group, where)
            values.append(data.mean(pts[0].id, measure) if len(pts) == 1 else None)
        yield group, values


def group_label(group: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items())


def combine(results: List[Dict[str, Any]]) -> str:
    verdicts = {r["verdict"] for r in results}
    if "invalid" in verdicts:
        return "invalid"
    if "unknown" in verdicts or not results:
        return "unknown"
    return "valid"


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


class Along:
    """A shape judged along a grid parameter (trend, flat, fit): its measure, the parameter `over`
    with its sorted values, and `where`."""

    def __init__(self, measure: str, over: str, values, where: Dict[str, Any]) -> None:
        self.measure, self.over, self.values, self.where = measure, over, values, where

    def series(self, data):
        """For every combination of the free parameters: (its entry, with the group and the means
        along `over` as detail, and verdict unknown when one is missing; the means, or None then)."""
        for group, values in means(data, self.measure, [{self.over: v} for v in self.values], self.where):
            entry: Dict[str, Any] = {"group": group_label(group), "detail": ", ".join(
                f"{self.over}={v}: {data.fmt(m)}" for v, m in zip(self.values, values))}
            if any(m is None for m in values):
                entry["verdict"] = "unknown"
                yield entry, None
            else:
                yield entry, values
