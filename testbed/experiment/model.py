"""What an experiment is made of once its file is read (spec.py reads it): scenarios, grid
parameters, points, measures, references, hosts; and how selectors pick points. The expected
shapes (shapes/) judge these, so this module imports neither."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..units import quantities

LOCAL = "local"


@dataclass(frozen=True)
class ScenarioEntry:
    label: str
    file: str                      # absolute path
    sets: Tuple[Tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Param:
    name: str
    path: str
    values: Tuple[Any, ...]

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def quantity(self):
        """(kind, base unit, the values in that unit) when the values are numbers or quantities of
        one kind (units.quantities: `50s`, `10%`, `1mbit`), else None."""
        return quantities(self.values)

    def ordered(self) -> List[Any]:
        """The values in order: by value for numbers and quantities (`50s` before `100s`), else as
        the file lists them."""
        q = self.quantity()
        if q is None:
            return list(self.values)
        return [v for _, v in sorted(zip(q[2], self.values), key=lambda pair: pair[0])]

    def positions(self, ordered: List[Any]) -> List[float]:
        """Where the values lie on an axis: in base units for quantities, else their ranks."""
        q = self.quantity()
        if q is None:
            return [float(i) for i in range(len(ordered))]
        by_value = dict(zip([value_text(v) for v in self.values], q[2]))
        return [by_value[value_text(v)] for v in ordered]


@dataclass(frozen=True)
class Point:
    id: str
    scenario: ScenarioEntry
    values: Tuple[Tuple[str, Any], ...]        # (grid parameter name, value)
    overrides: Tuple[str, ...]                 # `--set PATH=VALUE` texts: the scenario's, the grid's, the file's

    def get(self, name: str) -> Any:
        if name == "scenario":
            return self.scenario.label
        return dict(self.values)[name]

    def labels(self) -> Dict[str, Any]:
        return {"scenario": self.scenario.label, **dict(self.values)}


@dataclass(frozen=True)
class Measure:
    name: str
    path: Tuple[str, ...]
    label: str
    over_time: Optional[Tuple[str, ...]] = None
    line: Optional[int] = None     # where the file gives its path, for errors


@dataclass(frozen=True)
class Reference:
    measure: str
    selector: Any
    low: float
    high: float
    source: str
    note: str = ""

    @property
    def value(self) -> float:
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class Host:
    target: str                    # "local" or USER@HOST[:PORT]
    key: Optional[str] = None
    known_hosts: Optional[str] = None
    remote_dir: Optional[str] = None
    remote_testbed: Optional[str] = None

    @property
    def local(self) -> bool:
        return self.target == LOCAL


@dataclass
class Experiment:
    name: str
    source: str
    description: str
    scenarios: List[ScenarioEntry]
    grid: List[Param]
    seeds: List[int]
    sets: Tuple[Tuple[str, Any], ...]
    measures: List[Measure]
    references: List[Reference]
    shapes: List[Any]
    hosts: List[Host]
    points: List[Point] = field(default_factory=list)
    judge: str = "intervals"       # how the shapes are judged unless one says otherwise: intervals or means
    #: judge shapes on points whose runs the fidelity monitor called unfaithful (else: not shown)
    accept_unfaithful: bool = False

    def runs(self) -> List[Tuple[Point, int]]:
        """Every point × seed, seed-major: the first seed of every point, then the second, ... so
        an experiment stopped half-way has every point at fewer seeds rather than half the points."""
        return [(p, s) for s in self.seeds for p in self.points]

    def select(self, selector: Any) -> List[Point]:
        return [p for p in self.points if matches(p, selector)]


def matches(point: Point, selector: Any) -> bool:
    if isinstance(selector, str):
        return point.scenario.label == selector
    return all(_same(point.get(k), v) for k, v in selector.items())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def value_text(value: Any) -> str:
    """A value as `--set` reads it back (JSON is YAML)."""
    return json.dumps(value, separators=(",", ":"))


def check_selector(r, exp: Experiment, selector: Any, path: Tuple, one: bool = False) -> Any:
    """A point selector (a scenario label, or {scenario: LABEL, PARAM: VALUE, ...}) that selects at
    least one point (exactly one with `one`)."""
    labels = [s.label for s in exp.scenarios]
    names = ["scenario"] + [p.short for p in exp.grid]
    if isinstance(selector, str):
        if selector not in labels:
            raise r.fail(path, f"no scenario {selector!r}", ", ".join(labels))
    elif isinstance(selector, dict):
        if not selector:
            raise r.fail(path, "an empty selector", "a scenario label or {scenario: ..., PARAM: VALUE}")
        for k in selector:
            if k not in names:
                raise r.fail(path + (k,), f"no grid parameter {k!r}", ", ".join(names))
    else:
        raise r.fail(path, "expected a scenario label or a mapping", "LABEL or {scenario: LABEL, PARAM: VALUE}")
    chosen = exp.select(selector)
    if not chosen:
        raise r.fail(path, f"{selector!r} selects no point", "values of the grid: " + "; ".join(
            f"{p.short}: {', '.join(value_text(v) for v in p.values)}" for p in exp.grid) or ", ".join(labels))
    if one and len(chosen) > 1:
        raise r.fail(path, f"{selector!r} selects {len(chosen)} points ({', '.join(p.id for p in chosen[:4])}...)",
                     "one point: add the grid parameters' values")
    return selector


def measure_name(r, exp: Experiment, value: Any, path: Tuple) -> str:
    names = [m.name for m in exp.measures]
    if value not in names:
        raise r.fail(path, f"no measure {value!r}", ", ".join(names))
    return value


