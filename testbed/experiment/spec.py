"""Experiment files: which scenarios, which grid of parameters, how many seeds, which measures,
which reference values and which expected shapes.

    name: abc-dp
    scenarios:                      # a label per scenario file (relative to this file)
      tree: ../../scenarios/abc-paper/dp-tree-3-5-5.yaml
      tree-10:                      # the same file with fixed overrides
        file: ../../scenarios/abc-paper/dp-tree-3-5-5.yaml
        set: {workload.kinds.component.params.senders: 10}
    grid:                           # `--set` paths with lists of values; crossed with the scenarios
      rate: {path: workload.defaults.params.rate, values: [1, 2]}
      workload.defaults.params.size: [0, 100]
    seeds: 3                        # seeds 1..3 (or a list: [1, 7, 9])
    set: {duration: 200s}           # overrides for every run
    measures:                       # a dotted path into each run's results.json
      delivery_time: {path: abc.delivery_time.mean_ms, label: average delivery time (ms)}
      gap: abc.message_time_gap.mean_ms
    references:
      source: the paper, Figure 1
      values:
        - {measure: delivery_time, point: tree, value: 10}
        - {measure: delivery_time, point: {scenario: ring}, value: [250, 350]}
    expect:                         # shapes, one registered kind each (testbed/experiment/shapes)
      - {measure: delivery_time, order: [tree, ring, cluster]}
    judge: intervals                # verdicts from the seeds' spread (default); `means` for one seed
    hosts: [local, root@lab2]       # where the runs go (default: here)

A *point* is one scenario with one value of every grid parameter; a *run* is a point with a
seed. Points are named `<scenario>` plus `.<param>=<value>` per grid parameter (a parameter
named by its path is called by the path's last key). A *selector* picks points: a scenario
label, or a mapping of `scenario` and grid parameter names to values.

Every point is loaded as a scenario with its overrides before anything runs, so a bad value in
the grid is refused with the scenario's own message, prefixed by the point.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import ValidationError
from ..topology import Reader
from ..yamlio import Located, load_file
from .model import (LOCAL, Experiment, Host, Measure, Param, Point, Reference, ScenarioEntry, check_selector,
                    matches, measure_name, value_text)

__all__ = ["LOCAL", "Experiment", "Host", "Measure", "Param", "Point", "Reference", "ScenarioEntry",
           "load_experiment", "matches", "parse_experiment"]

TOP_KEYS = ("name", "description", "scenarios", "grid", "seeds", "set", "measures", "references", "expect", "hosts",
            "judge", "accept_unfaithful")
SCENARIO_KEYS = ("file", "set")
GRID_KEYS = ("path", "values")
MEASURE_KEYS = ("path", "label", "over_time")
REFERENCE_KEYS = ("source", "values")
REFERENCE_VALUE_KEYS = ("measure", "point", "value", "source", "note")
HOST_KEYS = ("target", "key", "known_hosts", "remote_dir", "remote_testbed")
LABEL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
LABEL_ALLOWED = "a letter, then letters, digits, '-' or '_' (at most 32)"
PATH_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$")
PATH_ALLOWED = "a dotted path of keys, such as workload.defaults.params.rate"
#: bounds that keep an experiment a plan one machine (or a few) can carry out
MAX_POINTS = 10_000
MAX_SEEDS = 1_000
MAX_RUNS = 100_000
MAX_SEED = 2**31 - 1


def _slug(value: Any) -> str:
    text = value if isinstance(value, str) else value_text(value)
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text)[:40]


def load_experiment(path: str, seeds: Union[int, List[int], None] = None, extra_sets: Tuple[str, ...] = (),
                    hosts: Optional[List[Host]] = None, check_points: bool = True) -> Experiment:
    """Read and check an experiment file. `seeds` (the CLI's --seeds) replaces the file's seeds (a
    number N: seeds 1..N; a list: those seeds), `extra_sets` (--set) are applied to every run after
    the file's own, `hosts` (--host) replace the file's. With `check_points`, every point is loaded
    as a scenario (bad values are refused here)."""
    doc = load_file(path)
    return parse_experiment(doc, seeds=seeds, extra_sets=extra_sets, hosts=hosts, check_points=check_points)


def parse_experiment(doc: Located, seeds: Union[int, List[int], None] = None, extra_sets: Tuple[str, ...] = (),
                     hosts: Optional[List[Host]] = None, check_points: bool = True) -> Experiment:
    from . import shapes as shape_registry

    r = Reader(doc)
    top = r.mapping(doc.data, (), TOP_KEYS)
    base = os.path.dirname(os.path.abspath(doc.file))
    name = r.string(top["name"], ("name",), LABEL_RE, LABEL_ALLOWED) if "name" in top else \
        re.sub(r"\.ya?ml$", "", os.path.basename(doc.file))
    if not LABEL_RE.match(name):
        raise r.fail(("name",), f"the file name {name!r} cannot name the experiment: give `name`", LABEL_ALLOWED)
    description = top.get("description", "")
    if not isinstance(description, str):
        raise r.fail(("description",), "expected a string")

    scenarios = _scenarios(r, top, base)
    grid = _grid(r, top.get("grid"))
    clash = {p.short for p in grid} & {"scenario"}
    if clash:
        raise r.fail(("grid",), "a grid parameter cannot be called 'scenario'", "another name")
    shorts = [p.short for p in grid]
    if len(set(shorts)) != len(shorts):
        dup = next(s for s in shorts if shorts.count(s) > 1)
        raise r.fail(("grid",), f"two grid parameters end in {dup!r}; their points could not be told apart",
                     "give them names: NAME: {path: ..., values: [...]}")
    seed_list = _seeds(r, top.get("seeds", 1), seeds)
    sets = _sets(r, top.get("set"), ("set",))
    measures = _measures(r, top.get("measures"))
    exp = Experiment(name=name, source=doc.file, description=description.strip(), scenarios=scenarios, grid=grid,
                     seeds=seed_list, sets=sets, measures=measures, references=[], shapes=[],
                     hosts=hosts if hosts else _hosts(r, top.get("hosts")))
    judge = top.get("judge", "intervals")
    if judge not in ("intervals", "means"):
        raise r.fail(("judge",), f"{judge!r} is not a way to judge",
                     "intervals (the seeds' spread, the default) or means (the means alone, for one seed)")
    exp.judge = judge
    if "accept_unfaithful" in top:
        exp.accept_unfaithful = r.boolean(top["accept_unfaithful"], ("accept_unfaithful",))
    exp.points = _points(r, exp, tuple(extra_sets))
    if len(exp.points) * len(seed_list) > MAX_RUNS:
        raise r.fail(("grid",), f"{len(exp.points)} points × {len(seed_list)} seeds is more than {MAX_RUNS:,} runs",
                     f"at most {MAX_RUNS:,} runs")
    if check_points:
        check_points_load(r, exp)
    exp.references = _references(r, top.get("references"), exp)
    exp.shapes = shape_registry.parse_all(r, top.get("expect"), exp)
    return exp


def _scenarios(r: Reader, top: Dict[str, Any], base: str) -> List[ScenarioEntry]:
    if "scenarios" not in top:
        raise r.fail(("scenarios",), "missing field 'scenarios'", "a mapping of labels to scenario files")
    raw = r.mapping(top["scenarios"], ("scenarios",))
    if not raw:
        raise r.fail(("scenarios",), "no scenario", "at least one LABEL: FILE")
    out = []
    for label, entry in raw.items():
        path = ("scenarios", label)
        if not isinstance(label, str) or not LABEL_RE.match(label):
            raise r.fail(path, f"{label!r} cannot label a scenario", LABEL_ALLOWED)
        if isinstance(entry, str):
            entry = {"file": entry}
        entry = r.mapping(entry, path, SCENARIO_KEYS)
        if "file" not in entry:
            raise r.fail(path, "missing field 'file'", "a scenario file, relative to the experiment file")
        file = r.string(entry["file"], path + ("file",))
        full = file if os.path.isabs(file) else os.path.normpath(os.path.join(base, file))
        if not os.path.isfile(full):
            raise r.fail(path + ("file",), f"no scenario file {file!r} (looked for {full})",
                         "a path relative to the experiment file")
        out.append(ScenarioEntry(label=label, file=full, sets=_sets(r, entry.get("set"), path + ("set",))))
    return out


def _sets(r: Reader, value: Any, path: Tuple) -> Tuple[Tuple[str, Any], ...]:
    raw = r.mapping(value, path)
    out = []
    for key, v in raw.items():
        if not isinstance(key, str) or not PATH_RE.match(key):
            raise r.fail(path + (key,), f"{key!r} is not a field path", PATH_ALLOWED)
        if key == "seed":
            raise r.fail(path + (key,), "the experiment gives each run its seed", "seeds: N or seeds: [...]")
        out.append((key, v))
    return tuple(out)


def _grid(r: Reader, value: Any) -> List[Param]:
    raw = r.mapping(value, ("grid",))
    out = []
    for name, entry in raw.items():
        path = ("grid", name)
        if not isinstance(name, str) or not (PATH_RE.match(name)):
            raise r.fail(path, f"{name!r} cannot name a grid parameter", PATH_ALLOWED + " or a name")
        if isinstance(entry, dict):
            entry = r.mapping(entry, path, GRID_KEYS)
            if "path" not in entry or "values" not in entry:
                raise r.fail(path, "expected both 'path' and 'values'", "{path: FIELD.PATH, values: [V1, V2, ...]}")
            target = r.string(entry["path"], path + ("path",), PATH_RE, PATH_ALLOWED)
            values, vpath = entry["values"], path + ("values",)
        else:
            if not PATH_RE.match(name) or "." not in name:
                raise r.fail(path, f"{name!r} is a name, so it needs {{path: ..., values: [...]}}",
                             "a dotted field path with a list of values, or NAME: {path: ..., values: [...]}")
            target, values, vpath = name, entry, path
        if target == "seed":
            raise r.fail(path, "the experiment gives each run its seed", "seeds: N or seeds: [...]")
        if not isinstance(values, list) or not values:
            raise r.fail(vpath, "expected a non-empty list of values", "such as [1, 2, 5]")
        for i, v in enumerate(values):
            if isinstance(v, float) and not math.isfinite(v):
                raise r.fail(vpath + (i,), f"{v!r} is not allowed", "a finite number, a string, a list or a mapping")
        texts = [value_text(v) for v in values]
        if len(set(texts)) != len(texts):
            dup = next(t for t in texts if texts.count(t) > 1)
            raise r.fail(vpath, f"the value {dup} is given twice", "distinct values")
        out.append(Param(name=name, path=target, values=tuple(values)))
    return out


def _seeds(r: Reader, value: Any, override: Union[int, List[int], None]) -> List[int]:
    if isinstance(override, list):  # --seeds 4,5: these seeds only (a slice of a larger experiment)
        bad = [s for s in override if not 0 <= s <= MAX_SEED]
        if not override or bad or len(override) > MAX_SEEDS or len(set(override)) != len(override):
            raise ValidationError("--seeds", "", f"{','.join(map(str, override))} is not allowed",
                                  f"distinct seeds from 0 to {MAX_SEED}, at most {MAX_SEEDS}")
        return list(override)
    if override is not None:
        if not 1 <= override <= MAX_SEEDS:
            raise ValidationError("--seeds", "", f"{override} is not allowed", f"a whole number from 1 to {MAX_SEEDS}")
        return list(range(1, override + 1))
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SEEDS:
            raise r.fail(("seeds",), f"{value} is not allowed", f"a whole number from 1 to {MAX_SEEDS}, or a list")
        return list(range(1, value + 1))
    if isinstance(value, list) and value:
        for i, s in enumerate(value):
            if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s <= MAX_SEED:
                raise r.fail(("seeds", i), f"{s!r} is not a seed", f"a whole number from 0 to {MAX_SEED}")
        if len(set(value)) != len(value):
            raise r.fail(("seeds",), "a seed is given twice", "distinct seeds")
        if len(value) > MAX_SEEDS:
            raise r.fail(("seeds",), f"{len(value)} seeds", f"at most {MAX_SEEDS}")
        return list(value)
    raise r.fail(("seeds",), f"{value!r} is not allowed", "a number of seeds (1, 2, ...) or a list of seeds")


def _measure_path(r: Reader, value: Any, path: Tuple) -> Tuple[str, ...]:
    text = r.string(value, path, PATH_RE, "a dotted path into results.json, such as abc.delivery_time.mean_ms")
    return tuple(text.split("."))


def _measures(r: Reader, value: Any) -> List[Measure]:
    if value is None:
        raise r.fail(("measures",), "missing field 'measures'", "NAME: PATH.INTO.RESULTS (results.json of each run)")
    raw = r.mapping(value, ("measures",))
    if not raw:
        raise r.fail(("measures",), "no measure", "at least one NAME: PATH")
    out = []
    for name, entry in raw.items():
        path = ("measures", name)
        if not isinstance(name, str) or not LABEL_RE.match(name):
            raise r.fail(path, f"{name!r} cannot name a measure", LABEL_ALLOWED)
        if isinstance(entry, str):
            entry = {"path": entry}
        entry = r.mapping(entry, path, MEASURE_KEYS)
        if "path" not in entry:
            raise r.fail(path, "missing field 'path'", "a dotted path into results.json")
        label = entry.get("label", name)
        if not isinstance(label, str) or not label.strip():
            raise r.fail(path + ("label",), "expected a non-empty string")
        over = _measure_path(r, entry["over_time"], path + ("over_time",)) if "over_time" in entry else None
        where = path + ("path",) if isinstance(raw[name], dict) else path
        out.append(Measure(name=name, path=_measure_path(r, entry["path"], path + ("path",)), label=label.strip(),
                           over_time=over, line=r.doc.line(where)))
    return out


def _hosts(r: Reader, value: Any) -> List[Host]:
    from ..remote.target import parse_target

    if value is None:
        return [Host(LOCAL)]
    if not isinstance(value, list) or not value:
        raise r.fail(("hosts",), "expected a non-empty list", "local and/or USER@HOST[:PORT] entries")
    out = []
    for i, entry in enumerate(value):
        path = ("hosts", i)
        if isinstance(entry, str):
            entry = {"target": entry}
        entry = r.mapping(entry, path, HOST_KEYS)
        target = r.string(entry.get("target"), path + ("target",), allowed="local or USER@HOST[:PORT]")
        if target != LOCAL:
            try:
                parse_target(target)
            except ValidationError as exc:
                raise r.fail(path + ("target",), exc.message, exc.allowed) from None
            except Exception as exc:  # the target parser's own usage error
                raise r.fail(path + ("target",), str(exc), "local or USER@HOST[:PORT]") from None
        extra = {}
        for key in HOST_KEYS[1:]:
            if key in entry:
                if target == LOCAL:
                    raise r.fail(path + (key,), f"'{key}' is for a remote host, not local")
                extra[key] = os.path.expanduser(r.string(entry[key], path + (key,)))
        host = Host(target, **extra)
        if host in out:
            raise r.fail(path, f"{target} is listed twice", "each host once (each runs one run at a time)")
        out.append(host)
    return out


def _points(r: Reader, exp: Experiment, extra_sets: Tuple[str, ...]) -> List[Point]:
    combos = list(itertools.product(*[p.values for p in exp.grid])) if exp.grid else [()]
    if len(combos) * len(exp.scenarios) > MAX_POINTS:
        raise r.fail(("grid",), f"{len(combos) * len(exp.scenarios):,} points", f"at most {MAX_POINTS:,}")
    points, seen = [], {}
    for scen in exp.scenarios:
        for combo in combos:
            pid = scen.label + "".join(f".{p.short}={_slug(v)}" for p, v in zip(exp.grid, combo))
            if pid in seen:
                raise r.fail(("grid",), f"two points would both be called {pid!r}", "values that differ as text")
            overrides = tuple(f"{k}={value_text(v)}" for k, v in scen.sets) \
                + tuple(f"{p.path}={value_text(v)}" for p, v in zip(exp.grid, combo)) \
                + tuple(f"{k}={value_text(v)}" for k, v in exp.sets) + extra_sets
            point = Point(id=pid, scenario=scen, values=tuple((p.short, v) for p, v in zip(exp.grid, combo)),
                          overrides=overrides)
            seen[pid] = point
            points.append(point)
    return points


def _number(r: Reader, value: Any, path: Tuple) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise r.fail(path, f"{value!r} is not a number", "a finite number, or [LOW, HIGH]")
    return float(value)


def _references(r: Reader, value: Any, exp: Experiment) -> List[Reference]:
    raw = r.mapping(value, ("references",), REFERENCE_KEYS)
    source = raw.get("source", "")
    if not isinstance(source, str):
        raise r.fail(("references", "source"), "expected a string (where the values come from)")
    values = raw.get("values") or []
    if not isinstance(values, list):
        raise r.fail(("references", "values"), "expected a list", "{measure: M, point: P, value: V} entries")
    out = []
    for i, entry in enumerate(values):
        path = ("references", "values", i)
        entry = r.mapping(entry, path, REFERENCE_VALUE_KEYS)
        for key in ("measure", "point", "value"):
            if key not in entry:
                raise r.fail(path, f"missing field '{key}'", "measure, point and value")
        measure = measure_name(r, exp, entry["measure"], path + ("measure",))
        selector = check_selector(r, exp, entry["point"], path + ("point",))
        v = entry["value"]
        if isinstance(v, list):
            if len(v) != 2:
                raise r.fail(path + ("value",), "a range is [LOW, HIGH]", "a number or [LOW, HIGH]")
            low, high = (_number(r, x, path + ("value", j)) for j, x in enumerate(v))
            if low > high:
                raise r.fail(path + ("value",), f"[{low:g}, {high:g}]: LOW is above HIGH", "[LOW, HIGH] with LOW ≤ HIGH")
        else:
            low = high = _number(r, v, path + ("value",))
        src = entry.get("source", source)
        note = entry.get("note", "")
        if not isinstance(src, str) or not isinstance(note, str):
            raise r.fail(path, "source and note are strings")
        if not src:
            raise r.fail(path + ("source",), "no source for this value", "a source here or references.source")
        out.append(Reference(measure=measure, selector=selector, low=low, high=high, source=src, note=note))
    return out


def check_points_load(r: Reader, exp: Experiment) -> None:
    """Load every point as a scenario (with the first seed), so a bad grid value is refused now."""
    from ..scenario import load_scenario

    for point in exp.points:
        try:
            load_scenario(point.scenario.file, seed=exp.seeds[0], overrides=point.overrides)
        except ValidationError as exc:
            where = ("grid",) if point.values else ("scenarios", point.scenario.label)
            raise r.fail(where, f"point {point.id}: {exc}") from None
