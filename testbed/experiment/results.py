"""An experiment's results: every complete run analysed (one Spark job for those not analysed
yet), each run's measures in one tidy table, a summary per point with the mean and a 95%
confidence interval over seeds next to the reference values, the expected shapes' verdicts, the
plots and an index.html (report.py).

Files written in the experiment directory:

    runs.parquet, runs.csv        one row per complete run: run, point, scenario, one column per
                                  grid parameter, seed, host, wall_s, run_id, one column per measure
    summary.parquet, summary.csv  one row per point and measure: n, mean, sd, ci95_low, ci95_high
                                  (Student's t over seeds), reference (low, high, source), ratio
    over_time.json                for measures with `over_time`: per point the mean curve over seeds
    shapes.json                   each expected shape: its verdict, and per group the values judged
    plots/<measure>.png, index.html

A measure a run's results do not have (or that is not a number) is empty in its row and left out
of the mean; the summary's n says how many seeds gave it.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .spec import Experiment, Measure, Point, matches
from .runner import Runner

SUMMARY_COLUMNS = ("point", "scenario", "measure", "n", "mean", "sd", "ci95_low", "ci95_high", "reference",
                   "reference_low", "reference_high", "reference_source", "ratio_to_reference")


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


def ci95(values: List[float]) -> Tuple[Optional[float], Optional[float], Optional[float], Optional[float]]:
    """mean, sample standard deviation, and the 95% interval of the mean (Student's t, n − 1 degrees
    of freedom); the interval is None with one value."""
    if not values:
        return None, None, None, None
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    if len(a) < 2:
        return mean, None, None, None
    sd = float(a.std(ddof=1))
    from scipy.stats import t

    half = float(t.ppf(0.975, len(a) - 1)) * sd / math.sqrt(len(a))
    return mean, sd, mean - half, mean + half


class Data:
    """What the shapes judge: the mean of each point's measure."""

    def __init__(self, exp: Experiment, summary: List[Dict[str, Any]]) -> None:
        self.exp = exp
        self._mean = {(row["point"], row["measure"]): row["mean"] for row in summary}

    def mean(self, point_id: str, measure: str) -> Optional[float]:
        return self._mean.get((point_id, measure))

    @staticmethod
    def fmt(v: Optional[float]) -> str:
        return "–" if v is None else f"{v:.4g}"


def analyse_runs(runner: Runner, master: Optional[str] = None, reanalyze: bool = False,
                 progress: bool = True) -> Dict[str, Dict[str, Any]]:
    """{run name: results.json} of every complete run; the runs without results (or all, with
    `reanalyze`) are analysed first, together, in one Spark job."""
    planned = runner.plan()
    complete = [p for p in planned if p.status == "complete"]
    todo = [p for p in complete if reanalyze or not os.path.isfile(_results_file(runner.run_dir(p.name)))]
    if todo:
        from spark_analysis.job import analyze

        if progress:
            import sys
            print(f"analysing {len(todo)} run{'s' if len(todo) > 1 else ''} in one Spark job", file=sys.stderr)
        analyze([runner.run_dir(p.name) for p in todo], master=master, progress=progress)
    out = {}
    for p in complete:
        with open(_results_file(runner.run_dir(p.name))) as fh:
            out[p.name] = json.load(fh)
    return out


def _results_file(run_dir: str) -> str:
    return os.path.join(run_dir, "report", "results.json")


def tidy(runner: Runner, results: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    exp = runner.exp
    rows = []
    for p in runner.planned:
        if p.name not in results:
            continue
        res = results[p.name]
        row: Dict[str, Any] = {"run": p.name, "point": p.point.id, "scenario": p.point.scenario.label}
        row.update({name: _cell(v) for name, v in p.point.values})
        row.update({"seed": p.seed, "host": p.host, "wall_s": p.wall_s,
                    "run_id": (res.get("run") or {}).get("id")})
        for m in exp.measures:
            row[m.name] = number(lookup(res, m.path))
        rows.append(row)
    return rows


def _cell(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v)


def summarise(exp: Experiment, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for point in exp.points:
        mine = [r for r in rows if r["point"] == point.id]
        for m in exp.measures:
            values = [r[m.name] for r in mine if r.get(m.name) is not None]
            mean, sd, low, high = ci95(values)
            ref = reference_for(exp, point, m)
            row = {"point": point.id, "scenario": point.scenario.label,
                   **{name: _cell(v) for name, v in point.values},
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


def judge(exp: Experiment, summary: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    data = Data(exp, summary)
    out = []
    for shape in exp.shapes:
        verdict = shape.judge(data)
        out.append({"name": shape.name, "kind": shape.kind, "measure": shape.measure, "note": shape.note, **verdict})
    return out


def write(exp: Experiment, runner: Runner, master: Optional[str] = None, reanalyze: bool = False,
          progress: bool = True) -> Dict[str, Any]:
    """Analyse, tabulate, judge, plot; returns what the command prints."""
    import pandas as pd

    results = analyse_runs(runner, master=master, reanalyze=reanalyze, progress=progress)
    rows = tidy(runner, results)
    summary = summarise(exp, rows)
    shapes = judge(exp, summary)
    curves = over_time(exp, runner, results)
    out = runner.out
    columns = ["run", "point", "scenario"] + [p.short for p in exp.grid] + \
        ["seed", "host", "wall_s", "run_id"] + [m.name for m in exp.measures]
    runs_df = pd.DataFrame(rows, columns=columns)
    summary_df = pd.DataFrame(summary, columns=["point", "scenario"] + [p.short for p in exp.grid] +
                              list(SUMMARY_COLUMNS[2:]))
    for df, stem in ((runs_df, "runs"), (summary_df, "summary")):
        _parquet_safe(df).to_parquet(os.path.join(out, f"{stem}.parquet"), index=False)
        df.to_csv(os.path.join(out, f"{stem}.csv"), index=False)
    with open(os.path.join(out, "shapes.json"), "w") as fh:
        json.dump(shapes, fh, indent=1)
    with open(os.path.join(out, "over_time.json"), "w") as fh:
        json.dump(curves, fh)
    from . import report

    report.write(exp, runner, rows, summary, shapes, curves)
    return {"runs": len(rows), "planned": len(runner.planned), "summary": summary, "shapes": shapes,
            "index": os.path.join(out, "index.html")}


def _parquet_safe(df):
    """Columns of mixed Python types (a grid parameter whose values are numbers and strings) as text."""
    for col in df.columns:
        kinds = {type(v) for v in df[col] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[col] = df[col].map(lambda v: None if v is None else str(v))
    return df
