"""What the kinds of shape share: the combinations of free grid parameters a shape is judged
for, the points a selector picks in one of them, and how the verdicts of the combinations add up."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

from ..model import Experiment, Point, matches


def label(selector: Any) -> str:
    """A selector as a shape's name shows it."""
    return selector if isinstance(selector, str) else ",".join(f"{k}={v}" for k, v in selector.items())


def _keys(selector: Any) -> set:
    return {"scenario"} if isinstance(selector, str) else set(selector)


def groups(exp: Experiment, selectors: List[Any], where: Optional[Dict[str, Any]] = None,
           fixed: Tuple[str, ...] = ()) -> List[Dict[str, Any]]:
    """The combinations of the grid parameters (and scenario) that no selector, `where` or `fixed`
    mentions: one judgement per combination. [{}] when none is free."""
    taken = set().union(*[_keys(s) for s in selectors]) if selectors else set()
    taken |= set(where or {}) | set(fixed)
    free = [("scenario", [s.label for s in exp.scenarios])] if "scenario" not in taken else []
    free += [(p.short, list(p.values)) for p in exp.grid if p.short not in taken]
    return [dict(zip([n for n, _ in free], combo)) for combo in itertools.product(*[v for _, v in free])]


def pick(exp: Experiment, selector: Any, group: Dict[str, Any], where: Optional[Dict[str, Any]] = None) -> List[Point]:
    return [p for p in exp.points if matches(p, selector) and matches(p, group) and matches(p, where or {})]


def group_label(group: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items())


def combine(results: List[Dict[str, Any]]) -> str:
    verdicts = {r["verdict"] for r in results}
    if "invalid" in verdicts:
        return "invalid"
    if "unknown" in verdicts or not results:
        return "unknown"
    return "valid"
