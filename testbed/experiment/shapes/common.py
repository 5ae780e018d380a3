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
