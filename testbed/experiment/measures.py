"""Reading a measure out of a run's results.json, and telling the user when a measure's path
leads nowhere: a path found in no analysed run is an error naming the nearest keys that exist
(`delivery.ratio` → `messages.all.delivery_ratio`), not a column of empty values."""

from __future__ import annotations

import difflib
import math
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..errors import UsageError, ValidationError
from .model import Experiment, Measure


def lookup(results: Dict[str, Any], path: Tuple[str, ...]) -> Any:
    value: Any = results
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def numeric_paths(results: Dict[str, Any], limit: int = 20_000) -> List[str]:
    """The dotted paths of every number in a results.json (list items by index, a list's first
    three only), at most `limit` of them."""
    out: List[str] = []

    def walk(value: Any, prefix: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value[:3]):
                walk(v, f"{prefix}.{i}" if prefix else str(i))
        elif number(value) is not None and prefix:
            out.append(prefix)

    walk(results, "")
    return out


def _plain(text: str) -> str:
    return re.sub(r"[._\-]", "", text.lower())


def nearest(path: str, candidates: Iterable[str], n: int = 5) -> List[str]:
    """The candidates closest to a misspelt path: each scored by the best likeness of the path
    (separators aside) to the candidate or to one of its endings (`delivery.ratio` is close to the
    ending `delivery_ratio` of `messages.all.delivery_ratio`). Among equals, summaries come before
    instances: a path with fewer list indices, then with fewer siblings that differ from it in one
    key only (`per_node.h1.x`, `per_node.h2.x`, ...), then the shorter, then by name."""
    pool = sorted(set(candidates))
    want = _plain(path)
    shapes: Dict[Tuple[str, ...], int] = {}
    for c in pool:
        keys = c.split(".")
        for i in range(len(keys)):
            shape = tuple(keys[:i]) + ("*",) + tuple(keys[i + 1:])
            shapes[shape] = shapes.get(shape, 0) + 1
    scored = []
    for c in pool:
        keys = c.split(".")
        endings = {_plain(".".join(keys[i:])) for i in range(len(keys))}
        score = max(difflib.SequenceMatcher(None, want, e).ratio() for e in endings)
        indices = sum(k.isdigit() for k in keys)
        siblings = max(shapes[tuple(keys[:i]) + ("*",) + tuple(keys[i + 1:])] for i in range(len(keys)))
        scored.append((-round(score, 6), indices, siblings, len(keys), c.lower(), c))
    return [row[-1] for row in sorted(scored)[:n] if -row[0] >= 0.5]


class UnresolvedMeasures(UsageError):
    """Measures whose paths lead to no number in any analysed run."""

    def __init__(self, problems: List[ValidationError], after: str = "") -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems) + (f"\n{after}" if after else ""))


def check(exp: Experiment, results: Dict[str, Dict[str, Any]], after: str = "") -> None:
    """Raise UnresolvedMeasures for every measure whose path gives a number in none of the runs'
    results (none when there are no results yet); `after` is a last line for the user."""
    if not results:
        return
    problems = []
    candidates: Optional[List[str]] = None
    for m in exp.measures:
        problem = _problem(m, results)
        if problem is None:
            continue
        message, found = problem
        if found is None:
            if candidates is None:
                candidates = sorted({p for r in results.values() for p in numeric_paths(r)})
            close = nearest(".".join(m.path), candidates)
            allowed = "the nearest paths that exist: " + ", ".join(close) if close else \
                "a dotted path to a number in runs/*/report/results.json"
        else:
            allowed = found
        problems.append(ValidationError(exp.source, f"measures.{m.name}.path", message, allowed, m.line))
    if problems:
        raise UnresolvedMeasures(problems, after)


def _names_a_key(results: Dict[str, Any], path: Tuple[str, ...]) -> bool:
    """Whether `path` is a key of `results`, whatever its value (null included)."""
    parent = lookup(results, path[:-1]) if len(path) > 1 else results
    return isinstance(parent, dict) and path[-1] in parent


def _problem(m: Measure, results: Dict[str, Dict[str, Any]]) -> Optional[Tuple[str, Optional[str]]]:
    path = ".".join(m.path)
    values = [lookup(r, m.path) for r in results.values()]
    if any(number(v) is not None for v in values):
        return None
    if all(v is None for v in values) and any(_names_a_key(r, m.path) for r in results.values()):
        return None  # a real path, null in these runs: a rate without any attempt, in a slice without the others
    present = [v for v in values if v is not None]
    runs = f"{len(results)} analysed run{'s' if len(results) > 1 else ''}"
    if not present:
        return f"{path} is in none of the {runs}' results", None
    first = present[0]
    if isinstance(first, dict):
        keys = [k for k, v in first.items() if number(v) is not None] or list(first)
        return f"{path} is a mapping in the {runs}' results, not a number", \
            "one of its keys: " + ", ".join(f"{path}.{k}" for k in keys[:8])
    return f"{path} is {type(first).__name__} {str(first)[:40]!r} in the {runs}' results, not a number", \
        "a path to a number"
