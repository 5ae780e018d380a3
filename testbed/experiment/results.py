"""An experiment's results: every complete run analysed (one Spark job for those not analysed
yet, or analysed by other analysis code), each run's measures in one tidy table, a summary per
point with the mean and a 95% confidence interval over seeds next to the reference values, the
expected shapes' verdicts with the intervals they rest on, the plots and an index.html
(report.py). docs/EXPERIMENTS.md describes the files for their readers.

Files written in the experiment directory:

    runs.parquet, runs.csv        one row per complete run: run, point, scenario, one column per
                                  grid parameter (and for quantities such as `50s` its number in
                                  base units beside it: duration_s), seed, host, wall_s, run_id,
                                  code (the digest of the code that made it), one column per measure
    summary.parquet, summary.csv  one row per point and measure: the grid columns, n, mean, sd,
                                  ci95_low, ci95_high (Student's t over seeds), reference (low,
                                  high, source), ratio
    shapes.parquet, shapes.csv    one row per interval a verdict rests on: shape, kind, measure,
                                  the shape's verdict, group, the group's verdict and reason, the
                                  test, its estimate, low, high and what was expected
    over_time.json                for measures with `over_time`: per point the mean curve over seeds
    shapes.json                   each expected shape: its verdict and reason, and per group the
                                  values and the intervals judged
    plots/<measure>.png, index.html

A measure a run's results do not have (or that is not a number) is empty in its row and left out
of the mean; the summary's n says how many seeds gave it. A measure that no analysed run has is
an error (measures.py), naming the nearest paths that exist.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import measures, stats
from .measures import lookup, number
from .spec import Experiment, Measure, Point, matches

__all__ = ["Data", "ci95", "lookup", "number", "summarise", "tidy", "judge", "write"]
from .runner import Runner, results_file

SUMMARY_COLUMNS = ("point", "scenario", "measure", "n", "mean", "sd", "ci95_low", "ci95_high", "reference",
                   "reference_low", "reference_high", "reference_source", "ratio_to_reference")


def ci95(values: List[float]) -> Tuple[Optional[float], Optional[float], Optional[float], Optional[float]]:
    """mean, sample standard deviation, and the 95% interval of the mean (Student's t, n − 1 degrees
    of freedom: stats.mean_interval's); the interval is None with one value."""
    mean, low, high = stats.mean_interval(values)
    sd = float(np.std(np.asarray(values, dtype=float), ddof=1)) if len(values) >= 2 else None
    return mean, sd, low, high


class Data:
    """What the shapes judge: each point's measures, one value per seed (the tidy rows: a `point`
    and a column per measure; a value that is None is left out)."""

    def __init__(self, exp: Experiment, rows: List[Dict[str, Any]]) -> None:
        self.exp = exp
        self._values: Dict[Tuple[str, str], List[float]] = {}
        #: point id → its runs' fidelity verdicts; the points a shape read, and each of its groups
        #: (label → point ids), which `judge` asks of the shape being judged
        self.fidelity: Dict[str, List[str]] = {}
        self.read: set = set()
        self.group_reads: Dict[str, set] = {}
        names = [m.name for m in exp.measures]
        for row in rows:
            self.fidelity.setdefault(row["point"], []).append(row.get("fidelity") or "unknown")
            for name in names:
                v = row.get(name)
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    self._values.setdefault((row["point"], name), []).append(float(v))

    @classmethod
    def of(cls, exp: Experiment, measure: str, values: Dict[str, List[float]]) -> "Data":
        """Data holding one measure's seeds' values per point id."""
        return cls(exp, [{"point": pid, measure: v} for pid, vs in values.items() for v in vs])

    def read_by(self, group: str, point_ids) -> None:
        """The shape's group `group` (its label) rests on these points."""
        self.group_reads.setdefault(group, set()).update(point_ids)

    def values(self, point_id: str, measure: str) -> List[float]:
        self.read.add(point_id)
        return list(self._values.get((point_id, measure), []))

    def mean(self, point_id: str, measure: str) -> Optional[float]:
        self.read.add(point_id)
        v = self._values.get((point_id, measure))
        return sum(v) / len(v) if v else None

    @staticmethod
    def fmt(v: Optional[float]) -> str:
        return "–" if v is None else f"{v:.4g}"


def analyse_runs(runner: Runner, master: Optional[str] = None, reanalyze: bool = False,
                 progress: bool = True) -> Dict[str, Dict[str, Any]]:
    """{run name: results.json} of every complete run; the runs without results, those analysed
    by other analysis code (the ledger records the digest of spark_analysis/ that analysed each
    run) or all, with `reanalyze`, are analysed first, together, in one Spark job."""
    from .. import provenance

    planned = runner.plan()
    complete = [p for p in planned if p.status == "complete"]
    code = provenance.analysis_code()
    missing = [p for p in complete if not os.path.isfile(results_file(runner.run_dir(p.name)))]
    older = [p for p in complete if p not in missing and p.entry.get("analysed_by") != code]
    todo = complete if reanalyze else missing + older
    if todo:
        from spark_analysis.job import analyze

        if progress:
            import sys
            why = f" ({len(older)} analysed by other analysis code)" if older and not reanalyze else ""
            print(f"analysing {len(todo)} run{'s' if len(todo) > 1 else ''} in one Spark job{why}", file=sys.stderr)
        analyze([runner.run_dir(p.name) for p in todo], master=master, progress=progress)
        for p in todo:
            p.entry["analysed_by"] = code
        runner.save_ledger()
    out = {}
    for p in complete:
        with open(results_file(runner.run_dir(p.name))) as fh:
            out[p.name] = json.load(fh)
    return out


def read_results(runner: Runner) -> Dict[str, Dict[str, Any]]:
    """{run name: results.json} of the complete runs analysed so far (nothing is analysed here)."""
    out = {}
    for p in runner.planned or runner.plan():
        path = results_file(runner.run_dir(p.name))
        if p.status == "complete" and os.path.isfile(path):
            try:
                with open(path) as fh:
                    out[p.name] = json.load(fh)
            except (OSError, ValueError):
                continue
    return out


def tidy(runner: Runner, results: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    exp = runner.exp
    rows = []
    for p in runner.planned:
        if p.name not in results:
            continue
        res = results[p.name]
        row: Dict[str, Any] = {"run": p.name, "point": p.point.id, "scenario": p.point.scenario.label}
        row.update(grid_cells(exp, p.point))
        row.update({"seed": p.seed, "host": p.host, "wall_s": p.wall_s,
                    "run_id": (res.get("run") or {}).get("id"), "code": (p.entry.get("parts") or {}).get("code"),
                    "fidelity": (res.get("fidelity") or {}).get("verdict", "unknown")})
        for m in exp.measures:
            row[m.name] = number(lookup(res, m.path))
        rows.append(row)
    return rows


def _cell(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v)


#: the column a grid parameter's quantity gets beside its text, by kind: PARAM_<suffix>
UNIT_SUFFIX = {"duration": "s", "rate": "bit_per_s", "size": "bytes", "probability": "fraction", "distance": "m"}


def grid_columns(exp: Experiment) -> List[str]:
    """The grid's columns: each parameter's value as the file gives it, and for a parameter of
    quantities (`50s`, `1mbit`, `10%`) its number in base units beside it (`duration_s`)."""
    out = []
    for p in exp.grid:
        out.append(p.short)
        q = p.quantity()
        if q is not None and q[0] in UNIT_SUFFIX:
            out.append(f"{p.short}_{UNIT_SUFFIX[q[0]]}")
    return out


def grid_cells(exp: Experiment, point: Point) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for p in exp.grid:
        value = point.get(p.short)
        out[p.short] = _cell(value)
        q = p.quantity()
        if q is not None and q[0] in UNIT_SUFFIX:
            out[f"{p.short}_{UNIT_SUFFIX[q[0]]}"] = q[2][p.values.index(value)]
    return out


#: the columns of shapes.parquet / shapes.csv: one row per interval a verdict rests on
SHAPE_COLUMNS = ("shape", "kind", "measure", "shape_verdict", "shape_reason", "unfaithful_points", "judge", "group",
                 "verdict", "reason", "test", "estimate", "low", "high", "expect")


def shape_rows(shapes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The verdicts as a table: per shape, per group (combination of free parameters), per interval
    judged (a group judged without intervals, or not judged, has one row without them)."""
    rows = []
    for s in shapes:
        for g in s.get("groups") or [{}]:
            unfaithful = (s.get("fidelity") or {}).get("unfaithful") or []
            base = {"shape": s["name"], "kind": s["kind"], "measure": s["measure"], "shape_verdict": s["verdict"],
                    "shape_reason": s.get("reason"), "unfaithful_points": " ".join(unfaithful) or None,
                    "judge": s.get("judge"), "group": g.get("group"), "verdict": g.get("verdict"),
                    "reason": g.get("reason")}
            for t in g.get("tests") or [{}]:
                rows.append({**base, "test": t.get("what"), "estimate": t.get("estimate"), "low": t.get("low"),
                             "high": t.get("high"), "expect": t.get("expect")})
    return rows


def summarise(exp: Experiment, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for point in exp.points:
        mine = [r for r in rows if r["point"] == point.id]
        for m in exp.measures:
            values = [r[m.name] for r in mine if r.get(m.name) is not None]
            mean, sd, low, high = ci95(values)
            ref = reference_for(exp, point, m)
            row = {"point": point.id, "scenario": point.scenario.label, **grid_cells(exp, point),
                   "measure": m.name, "n": len(values), "mean": mean, "sd": sd, "ci95_low": low, "ci95_high": high,
                   "reference": ref.value if ref else None, "reference_low": ref.low if ref else None,
                   "reference_high": ref.high if ref else None, "reference_source": ref.source if ref else None,
                   "ratio_to_reference": (mean / ref.value) if ref and mean is not None and ref.value else None}
            out.append(row)
    return out


def reference_for(exp: Experiment, point: Point, measure: Measure):
    for ref in exp.references:
        if ref.measure == measure.name and matches(point, ref.selector):
            return ref
    return None


def over_time(exp: Experiment, runner: Runner, results: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Per measure with `over_time`, per point: the mean over seeds of the runs' curves ([t, value]
    pairs), on the time points of the shortest run's curve."""
    out: Dict[str, Any] = {}
    for m in exp.measures:
        if not m.over_time:
            continue
        per_point: Dict[str, Any] = {}
        for point in exp.points:
            curves = []
            for p in runner.planned:
                if p.point.id != point.id or p.name not in results:
                    continue
                curve = _curve(lookup(results[p.name], m.over_time))
                if curve is not None:
                    curves.append(curve)
            if not curves:
                continue
            grid = min(curves, key=lambda c: c[0][-1])[0]
            stacked = np.vstack([np.interp(grid, t, v, left=np.nan, right=np.nan) for t, v in curves])
            with np.errstate(all="ignore"):
                mean = np.nanmean(stacked, axis=0)
            per_point[point.id] = [[float(t), None if np.isnan(v) else float(v)] for t, v in zip(grid, mean)]
        out[m.name] = per_point
    return out


def _curve(value: Any):
    if not isinstance(value, list) or not value:
        return None
    pts = [(number(p[0]), number(p[1])) for p in value if isinstance(p, (list, tuple)) and len(p) >= 2]
    pts = [(t, v) for t, v in pts if t is not None and v is not None]
    if not pts:
        return None
    t, v = zip(*sorted(pts))
    return np.asarray(t), np.asarray(v)


def judge(exp: Experiment, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every expected shape's verdict, judged on the runs' values (the tidy rows)."""
    data = Data(exp, rows)
    out = []
    for shape in exp.shapes:
        data.read.clear()
        data.group_reads.clear()
        verdict = shape.judge(data)
        verdict.update(fidelity_of(exp, data, verdict))
        out.append({"name": shape.name, "kind": shape.kind, "measure": shape.measure, "note": shape.note,
                    "judge": shape.judge_with, **verdict})
    return out


def fidelity_of(exp: Experiment, data: Data, verdict: Dict[str, Any]) -> Dict[str, Any]:
    """What the runs' fidelity does to a shape's verdict: a verdict (valid or invalid) that rests
    on a point with an unfaithful run is not shown, unless the experiment accepts unfaithful runs,
    and so is each group's that rests on one (whatever the shape's verdict: a shape still unknown
    for a point not run does not show its other groups as valid on unfaithful runs); `fidelity`
    names the points with unfaithful and degraded runs, and `judged` keeps the verdict the values
    alone gave."""
    from .shapes.common import INVALID, NOT_SHOWN, VALID

    points = sorted(data.read)
    unfaithful = [p for p in points if "unfaithful" in data.fidelity.get(p, [])]
    degraded = [p for p in points if "degraded" in data.fidelity.get(p, []) and p not in unfaithful]
    out: Dict[str, Any] = {"fidelity": {"unfaithful": unfaithful, "degraded": degraded,
                                        "accepted": bool(unfaithful) and exp.accept_unfaithful}}
    if not unfaithful or exp.accept_unfaithful:
        return out

    def hidden(judged: Dict[str, Any], at: List[str]) -> Dict[str, Any]:
        shown = ", ".join(at[:3]) + (f" and {len(at) - 3} more" if len(at) > 3 else "")
        return dict(verdict=NOT_SHOWN, judged=judged["verdict"],
                    reason=f"unfaithful runs at {shown}: the machine did not keep up (accept_unfaithful: true, or "
                           f"--accept-unfaithful, to judge them)")

    if verdict["verdict"] in (VALID, INVALID):
        out.update(hidden(verdict, unfaithful))
    if verdict.get("groups"):
        groups = []
        for g in verdict["groups"]:
            at = sorted(data.group_reads.get(g.get("group"), set()) & set(unfaithful))
            groups.append({**g, **hidden(g, at)} if at and g.get("verdict") in (VALID, INVALID) else g)
        out["groups"] = groups
    return out


def write(exp: Experiment, runner: Runner, master: Optional[str] = None, reanalyze: bool = False,
          progress: bool = True) -> Dict[str, Any]:
    """Analyse, tabulate, judge, plot; returns what the command prints."""
    import pandas as pd

    results = analyse_runs(runner, master=master, reanalyze=reanalyze, progress=progress)
    measures.check(exp, results, after="The runs and their analyses are kept: correct the path and run the same "
                                       "command with --no-run.")
    rows = tidy(runner, results)
    summary = summarise(exp, rows)
    shapes = judge(exp, rows)
    curves = over_time(exp, runner, results)
    out = runner.out
    columns = ["run", "point", "scenario"] + grid_columns(exp) + \
        ["seed", "host", "wall_s", "run_id", "code", "fidelity"] + [m.name for m in exp.measures]
    runs_df = pd.DataFrame(rows, columns=columns)
    summary_df = pd.DataFrame(summary, columns=["point", "scenario"] + grid_columns(exp) + list(SUMMARY_COLUMNS[2:]))
    shapes_df = pd.DataFrame(shape_rows(shapes), columns=list(SHAPE_COLUMNS))
    for df, stem in ((runs_df, "runs"), (summary_df, "summary"), (shapes_df, "shapes")):
        _parquet_safe(df).to_parquet(os.path.join(out, f"{stem}.parquet"), index=False)
        df.to_csv(os.path.join(out, f"{stem}.csv"), index=False)
    with open(os.path.join(out, "shapes.json"), "w") as fh:
        json.dump(finite(shapes), fh, indent=1, allow_nan=False)
    with open(os.path.join(out, "over_time.json"), "w") as fh:
        json.dump(curves, fh)
    from . import report

    report.write(exp, runner, rows, summary, shapes, curves)
    return {"runs": len(rows), "planned": len(runner.planned), "summary": summary, "shapes": shapes, "rows": rows,
            "index": os.path.join(out, "index.html")}


def finite(value: Any) -> Any:
    """A JSON-able copy with every infinite or NaN number as None (strict JSON has neither)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _parquet_safe(df):
    """Columns of mixed Python types (a grid parameter whose values are numbers and strings) as text."""
    for col in df.columns:
        kinds = {type(v) for v in df[col] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[col] = df[col].map(lambda v: None if v is None else str(v))
    return df
