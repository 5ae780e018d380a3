"""What docs/REPRODUCTION.md's generated blocks are made of: the results files they read
(benchmarks/results/), the cells (a paper's value, ours with its interval, a ratio), the tables
and the verdicts' table. The blocks themselves are one module per paper (repro_abc.py,
repro_deeco.py, repro_causal.py), registered in benchmarks/reproduction.py."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = {"abc": "abc_paper.json", "deeco": "deeco_thesis.json", "causal": "causal_paper.json",
           "dilation": "dilation.json"}
MODEL = "abc_model.json"   # benchmarks/abc_model.py: the authors' model, not an experiment set

sys.path.insert(0, ROOT)


def load(paper: str) -> Dict[str, Any]:
    with open(os.path.join(HERE, "results", RESULTS[paper])) as fh:
        return json.load(fh)["experiments"]


def load_model() -> Dict[str, Any]:
    """benchmarks/abc_model.py's results file: its seeds, horizon and per-configuration `results`."""
    with open(os.path.join(HERE, "results", MODEL)) as fh:
        return json.load(fh)


def point_summary(exp: Optional[Dict[str, Any]], point: str, measure: str) -> Optional[Dict[str, Any]]:
    """One measure's summary at a point of an experiment's results (None where either is missing)."""
    return (((exp or {}).get("points") or {}).get(point) or {}).get(measure)


def _fmt(value: float, fmt: str) -> str:
    return fmt.format(value)


def number(value: float, style: str = "num") -> str:
    """A value shown alone: thousands with separators, else three significant digits; `pct` as a
    percentage."""
    if style == "pct":
        return f"{value * 100:.3g}%"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def plus_minus(mean: float, half: float, style: str = "num") -> str:
    """mean ± half-width, the half-width to two significant digits and the mean to the same place."""
    scale = 100.0 if style == "pct" else 1.0
    m, h = mean * scale, half * scale
    unit = "%" if style == "pct" else ""
    if h <= 0 or not math.isfinite(h):
        return f"{number(mean, style)} ± 0"
    places = max(0, 1 - int(math.floor(math.log10(h))))
    sep = "," if abs(m) >= 1000 else ""
    return f"{m:{sep}.{places}f}{unit} ± {h:{sep}.{places}f}{unit}"


def ours(summary: Optional[Dict[str, Any]], style: str = "num", seeds: Optional[int] = None) -> str:
    """A point's mean ± the half-width of its 95% interval; "(1 seed)" for one run's value in a
    table of several seeds, and the seeds where they differ from the table's."""
    if not summary or summary.get("mean") is None:
        return "–"
    mean, n = summary["mean"], summary.get("n") or 0
    if n < 2 or summary.get("ci95_high") is None:
        return number(mean, style) + (" (1 seed)" if seeds and seeds > 1 else "")
    text = plus_minus(mean, summary["ci95_high"] - mean, style)
    return text + (f" ({n} seeds)" if seeds is not None and n != seeds else "")


def paper(summary: Optional[Dict[str, Any]], fmt: str = "{:,.4g}") -> str:
    if not summary or summary.get("reference_low") is None:
        return "–"
    low, high = summary["reference_low"], summary["reference_high"]
    return _fmt(low, fmt) if low == high else f"{_fmt(low, fmt)}–{_fmt(high, fmt.lstrip('~'))}"


def run_values(exp: Dict[str, Any], point: str, measure: str) -> List[float]:
    return [r[measure] for r in exp["runs"] if r.get("point") == point and r.get(measure) is not None
            and not (isinstance(r[measure], float) and math.isnan(r[measure]))]


def ratio_cell(exp: Dict[str, Any], a: str, b: str, measure: str, fmt: str = "{:.3g}") -> str:
    """mean(a) / mean(b) with Fieller's 95% interval over the runs (the ratio of the means alone
    with one seed)."""
    from testbed.experiment import stats

    va, vb = run_values(exp, a, measure), run_values(exp, b, measure)
    if not va or not vb or sum(vb) == 0:
        return "–"
    if len(va) < 2 or len(vb) < 2:
        return _fmt((sum(va) / len(va)) / (sum(vb) / len(vb)), fmt)
    from testbed.experiment.shapes.common import fmt_interval

    return fmt_interval(*stats.ratio(va, vb), fmt)


Column = Tuple[str, Callable[[Any], str]]


def table(rows: Sequence[Any], columns: Sequence[Column], first: str, label: Callable[[Any], str] = str) -> str:
    out = [f"| {first} | " + " | ".join(h for h, _ in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for row in rows:
        out.append(f"| {label(row)} | " + " | ".join(cell(row) for _, cell in columns) + " |")
    return "\n".join(out)


def seeds_line(exp: Dict[str, Any], measures: Sequence[str]) -> str:
    """What the table's values are: the seeds per point, and how intervals read."""
    counts = sorted({s[m]["n"] for s in exp["points"].values() for m in measures if m in s and s[m].get("n")})
    if not counts:
        return "No values yet."
    if counts == [1]:
        return "One seed a point: each value is one run's, with no interval."
    *most, last = (str(c) for c in counts)
    seeds = f"{', '.join(most)} or {last}" if most else last
    return (f"Each value is the mean over {seeds} seeds ± the half-width of its 95% interval (Student's t)" +
            (", or one run's where it says 1 seed." if 1 in counts else "."))


def majority_seeds(exp: Dict[str, Any], measures: Sequence[str]) -> int:
    ns = [s[m]["n"] for s in exp["points"].values() for m in measures if m in s and s[m].get("n")]
    return max(set(ns), key=ns.count) if ns else 0


def verdicts(exp: Dict[str, Any], most: int = 4) -> str:
    """Every expected shape: its verdict (with the reason) and the intervals it rests on, per
    combination of the free parameters, those that are not valid first."""
    from testbed.experiment.shapes.common import judged_groups, shown

    out = ["| expected shape | verdict | intervals judged (95%) |", "|---|---|---|"]
    for s in exp["shapes"]:
        groups, rest = judged_groups(s, most, tests_each=2, fmt="{:.3g}")
        parts = []
        for group, verdict, _, tests in groups:
            several = len(groups) + len(rest) > 1
            parts.append(f"{f'[{group}] ' if group else ''}{tests}{f' ({verdict})' if several else ''}")
        if rest:
            counts = [(v, sum(1 for g in rest if g.get("verdict") == v)) for v in ("valid", "not shown", "invalid",
                                                                                  "unknown")]
            parts.append(f"and {len(rest)} more: " + ", ".join(f"{c} {v}" for v, c in counts if c))
        cells = "<br>".join(p.replace("|", "\\|") for p in parts)
        out.append(f"| {s['name']} | **{shown(s)}** | {cells} |")
    return "\n".join(out)


def values_cell(values: Sequence[Optional[float]], style: str = "num", seeds: Optional[int] = None) -> str:
    """The mean of the values given (None left out) ± the half-width of its 95% interval, as
    `ours` shows a point's summary."""
    from testbed.experiment import stats

    present = [v for v in values if v is not None]
    mean, _, high = stats.mean_interval(present)
    return ours(None if mean is None else {"mean": mean, "n": len(present), "ci95_high": high}, style, seeds)


def verdicts_of(paper_name: str, name: str) -> Callable[[], str]:
    """The verdicts of one stored experiment ("No values yet." until it has run)."""
    def make() -> str:
        exp = load(paper_name).get(name)
        return verdicts(exp) if exp else "No values yet."
    return make


def ours_column(points: Dict[str, Any], measure: str, style: str, seeds: int) -> Callable[[str], str]:
    return lambda pid: ours(points[pid].get(measure), style, seeds)


def measures_of(exp: Dict[str, Any]) -> set:
    """The measures an experiment's stored points carry (older results lack the newer ones)."""
    return {m for point in exp["points"].values() for m in point}


def faithful_column(runs: List[Dict[str, Any]]) -> Callable[[str], str]:
    """Each point's runs the fidelity monitor called faithful, of those it judged ("–" when the
    runs predate it)."""
    from spark_analysis.fidelity import VERDICTS

    def cell(pid: str) -> str:
        judged = [r["fidelity"] for r in runs if r.get("point") == pid and r.get("fidelity") in VERDICTS]
        return f"{judged.count('faithful')} of {len(judged)}" if judged else "–"
    return cell


def fidelity_counts(verdicts: Sequence[Optional[str]]) -> str:
    """How many runs the fidelity monitor called faithful, degraded and unfaithful: "a / b / c"
    ("–" when the runs predate it, as faithful_column)."""
    from spark_analysis.fidelity import VERDICTS

    judged = [v for v in verdicts if v in VERDICTS]
    return " / ".join(str(judged.count(f)) for f in ("faithful", "degraded", "unfaithful")) if judged else "–"


def point_key(point: str):
    """Points sort by scenario, then by their grid values as numbers."""
    head, _, rest = point.partition(".")
    values = []
    for part in re.findall(r"=([^.=]+(?:\.\d+)?)", point):
        try:
            values.append(float(part))
        except ValueError:
            values.append(math.inf)
    return head, values


def points_table(paper_name: str, name: str, spec: List[Tuple[str, str, str]]) -> Callable[[], str]:
    """An experiment's points, one row each in grid order, with the measures of `spec` (measure,
    heading, style) it stores and, where its runs have verdicts, how many were faithful."""
    def make() -> str:
        exp = load(paper_name)[name]
        p = exp["points"]
        measures = [m for m, _, _ in spec]
        n = majority_seeds(exp, measures)
        stored = measures_of(exp)
        columns: List[Column] = [(h, ours_column(p, m, style, n)) for m, h, style in spec if m in stored]
        if any(r.get("fidelity") for r in exp["runs"]):   # runs from before the monitor have none
            columns.append(("runs faithful", faithful_column(exp["runs"])))
        return seeds_line(exp, measures) + "\n\n" + table(sorted(p, key=point_key), columns, "point")
    return make


def run_column(measure: str, style: str) -> Callable[[Dict[str, Any]], str]:
    return lambda run: "–" if run.get(measure) is None else number(run[measure], style)
