"""The tables of docs/REPRODUCTION.md, generated from the results files under benchmarks/results/:
our values with their seeds and 95% intervals beside the papers', and the expected shapes'
verdicts with the intervals they rest on. Nothing in those tables is typed by hand.

    python benchmarks/reproduction.py            # rewrite the generated blocks of docs/REPRODUCTION.md
    python benchmarks/reproduction.py --check    # exit 1, showing the difference, when they are stale

A block of the document is delimited by

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

where NAME is a key of BLOCKS: a function of the results that returns Markdown. The results files
are written by benchmarks/abc_paper.py, deeco_thesis.py, causal_paper.py and dilation.py
(`--rejudge` judges their stored runs again with the current shapes).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DOC = os.path.join(ROOT, "docs", "REPRODUCTION.md")
RESULTS = {"abc": "abc_paper.json", "deeco": "deeco_thesis.json", "causal": "causal_paper.json",
           "dilation": "dilation.json"}
MODEL = "abc_model.json"   # benchmarks/abc_model.py: the authors' model, not an experiment set
FLOOD = "deeco_flood.json"  # benchmarks/deeco_flood.py: not an experiment set
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w/.-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)

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


# -- cells ------------------------------------------------------------------------------------------

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


# -- tables -----------------------------------------------------------------------------------------

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
    seeds = "/".join(str(c) for c in counts)
    if counts == [1]:
        return "One seed a point: each value is one run's, with no interval."
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


# -- the blocks -------------------------------------------------------------------------------------

def _abc_table(name: str, rows: List[Tuple[str, str]], extra: List[Column]) -> str:
    exp = load("abc")[name]
    measures = ["delivery_time", "time_gap"]
    n = majority_seeds(exp, measures)
    p = exp["points"]
    columns: List[Column] = [
        ("delivery time, paper", lambda r: paper(p.get(r, {}).get("delivery_time"), "~{:g}")),
        ("delivery time, ours", lambda r: ours(p.get(r, {}).get("delivery_time"), "num", n)),
        ("time gap, paper", lambda r: paper(p.get(r, {}).get("time_gap"), "~{:g}")),
        ("time gap, ours", lambda r: ours(p.get(r, {}).get("time_gap"), "num", n)),
    ] + extra + [
        ("servers' median rate (per time unit)", lambda r: ours(p.get(r, {}).get("server_rate_median"), "num", n)),
        ("slowest server's rate", lambda r: ours(p.get(r, {}).get("server_rate_min"), "num", n)),
    ]
    if any(r.get("fidelity") for r in exp["runs"]):  # runs from before the monitor have none
        columns.append(("runs faithful", _faithful_column(exp["runs"])))
    labels = dict(rows)
    return seeds_line(exp, measures) + "\n\n" + table([r for r, _ in rows], columns, "configuration", labels.get)


def abc_dp() -> str:
    p = load("abc")["dp"]["points"]
    n = majority_seeds(load("abc")["dp"], ["delivery_time"])
    return _abc_table("dp", [("tree", "T[3,5,5], 15 senders"), ("tree-10", "T[3,5,5], 10 senders"),
                             ("ring", "R[31,5], 15 senders"), ("cluster", "C[31,155], 15 senders")],
                      [("dissemination, ours", lambda r: ours(p.get(r, {}).get("dissemination_time"), "num", n)),
                       ("wait for an id, ours", lambda r: ours(p.get(r, {}).get("id_wait"), "num", n))])


def abc_ci() -> str:
    exp = load("abc")["ci"]
    p = exp["points"]
    n = majority_seeds(exp, ["delivery_time"])
    # experiments/abc/ci.yaml runs C[10|20|31,155] under both dispatches (cluster-S and cluster-S-free);
    # its runs of before had C[10] and C[31] under the free one only, named cluster-S
    if "cluster-10-free" in p:
        dispatches = [("", ", " + READINGS["random"]), ("-free", ", " + READINGS["free"])]
    else:
        dispatches = [("", "")]
    clusters = [(f"cluster-{s}{suffix}", f"C[{s},155]{label}")
                for suffix, label in dispatches for s in (10, 20, 31) if f"cluster-{s}{suffix}" in p]
    return _abc_table("ci", clusters + [("ring-5", "R[5,31]"), ("ring-31", "R[31,5]"), ("tree-5-2-5", "T[5,2,5]"),
                                        ("tree-3-5-5", "T[3,5,5]")],
                      [("dissemination, ours", lambda r: ours(p.get(r, {}).get("dissemination_time"), "num", n)),
                       ("wait for an id, ours", lambda r: ours(p.get(r, {}).get("id_wait"), "num", n)),
                       ("agents started", _start_cell(exp))])


def values_cell(values: Sequence[Optional[float]], style: str = "num", seeds: Optional[int] = None) -> str:
    """The mean of the values given (None left out) ± the half-width of its 95% interval, as
    `ours` shows a point's summary."""
    from testbed.experiment import stats

    present = [v for v in values if v is not None]
    mean, _, high = stats.mean_interval(present)
    return ours(None if mean is None else {"mean": mean, "n": len(present), "ci95_high": high}, style, seeds)


def _cluster_point(servers: int, reading: str) -> str:
    """ci.yaml's point of C[servers,155] under a dispatch reading (random or free)."""
    return f"cluster-{servers}{'' if reading == 'random' else '-free'}"


def abc_ci_id_chain() -> str:
    """The CI clusters' id chain, ours beside the model's (benchmarks/abc_model.py, the same
    measures): from one id's data send to its handling by the next id's owner (`reach`), that
    owner's rank among the message's handlers, and what is left of `reach` once the next owner's
    place in the forwarding is taken out, (1 + (C − 2)·rank) / rate transmissions of the
    forwarding server (C − 1 receivers; rate λt = 15 in the model, the run's servers' median
    rate in ours): the wait behind a slot's backlog and the hand-over. Then the dispatch's effect
    on the gap, random − free, ours and the model's (Welch's interval)."""
    from testbed.experiment import stats

    exp = load("abc")["ci"]
    model = load_model()["results"]
    components = 155
    rows = [(s, reading) for reading in ("random", "free") for s in (10, 20, 31)
            if _cluster_point(s, reading) in exp["points"]]

    def ours_runs(s: int, reading: str) -> List[Dict[str, Any]]:
        return [r for r in exp["runs"] if r.get("point") == _cluster_point(s, reading)]

    def model_runs(s: int, reading: str) -> List[Dict[str, Any]]:
        return (model.get(f"ci/C[{s},155]/{reading}") or {}).get("runs") or []

    def left(r: Dict[str, Any], rate: Optional[float]) -> Optional[float]:
        if None in (r.get("reach_next_owner"), r.get("next_owner_rank"), rate):
            return None
        return r["reach_next_owner"] - (1 + (components - 2) * r["next_owner_rank"]) / rate

    def measure(where: Callable[[int, str], List[Dict[str, Any]]], name: str) -> Callable[[Tuple[int, str]], str]:
        return lambda row: values_cell([r.get(name) for r in where(*row)])

    started = _start_cell(exp)
    columns: List[Column] = [
        ("agents started", lambda row: started(_cluster_point(*row))),
        ("next owner's rank, model", measure(model_runs, "next_owner_rank")),
        ("next owner's rank, ours", measure(ours_runs, "next_owner_rank")),
        ("reach the next owner, model", measure(model_runs, "reach_next_owner")),
        ("reach the next owner, ours", measure(ours_runs, "reach_next_owner")),
        ("left beside the place, model", lambda row: values_cell([left(r, 15.0) for r in model_runs(*row)])),
        ("left beside the place, ours",
         lambda row: values_cell([left(r, r.get("server_rate_median")) for r in ours_runs(*row)])),
        ("time gap, model", measure(model_runs, "time_gap")),
        ("time gap, ours", measure(ours_runs, "time_gap")),
    ]
    out = (seeds_line(exp, ["time_gap"]) + f" The model's: {len(model_runs(10, 'random'))} runs.\n\n"
           + table(rows, columns, "configuration", lambda row: f"C[{row[0]},155], {READINGS[row[1]]}"))
    lines = []
    for s in (10, 20, 31):
        cells = []
        for label, where in (("ours", ours_runs), ("model", model_runs)):
            if label == "ours" and started(_cluster_point(s, "random")) != started(_cluster_point(s, "free")):
                cells.append("ours – (the two started differently)")
                continue
            a = [r["time_gap"] for r in where(s, "free") if r.get("time_gap") is not None]
            b = [r["time_gap"] for r in where(s, "random") if r.get("time_gap") is not None]
            d = stats.difference(a, b) if len(a) >= 2 and len(b) >= 2 else None
            cells.append(f"{label} {number(d[0])} [{number(d[1])}, {number(d[2])}]" if d else f"{label} –")
        lines.append(f"C[{s},155]: " + ", ".join(cells))
    return out + "\n\nTime gap, authors' dispatch − free servers (Welch's 95% interval): " + "; ".join(lines) + "."


#: the code digests (a run's `code`, testbed.provenance; None: made before runs recorded it) of
#: the AbC runs whose agents started one by one as the testbed found each, in node order: every
#: run made before commit d88efb1. Later code signals them in one sweep in an order drawn from the
#: seed (d88efb1 and 3c267ec; reverted in e3a450d with no AbC run made meanwhile, and back since
#: the causal roles draw their cluster rounds' phases, docs/CAUSAL-READING.md I17); a run's
#: results say how its agents started (fidelity.start: spread and order against the nodes)
STARTED_ONE_BY_ONE = frozenset({None, "b096b00c684d1e2a"})


def _one_sweep(run: Dict[str, Any]) -> bool:
    return run.get("code") not in STARTED_ONE_BY_ONE


def _start_cell(exp: Dict[str, Any]) -> Callable[[str], str]:
    def cell(point: str) -> str:
        runs = [r for r in exp["runs"] if r.get("point") == point]
        swept = sum(_one_sweep(r) for r in runs)
        return "–" if not runs else "one sweep" if swept == len(runs) else "one by one" if not swept else \
            f"{swept} of {len(runs)} in one sweep"
    return cell


#: ci.yaml's points and the model's keys (CI, the testbed's readings where they differ)
CI_MODEL_KEYS = ([(_cluster_point(s, reading), f"C[{s},155]/{reading}")
                  for reading in ("random", "free") for s in (10, 20, 31)]
                 + [("ring-5", "R[5,31]/in-order"), ("ring-31", "R[31,5]/in-order"),
                    ("tree-5-2-5", "T[5,2,5]/authors"), ("tree-3-5-5", "T[3,5,5]/authors")])


def abc_start_order() -> str:
    """The CI configurations' gap and next owner's rank: the model with every component starting
    together (the authors') and with the first requests 0.2 time units apart in node order (the
    testbed's start, abc_model.STAGGER), beside ours started one by one (the
    ci-staggered set) and in one sweep (ci.yaml's runs made after STARTED_ONE_BY_ONE)."""
    abc = load("abc")
    before, now = abc.get("ci-staggered") or {"runs": []}, abc["ci"]
    model = load_model()["results"]

    def model_cell(scenario: str, key: str, measure: str) -> str:
        return _model_cell((model.get(f"{scenario}/{key}") or {}).get(measure))

    def ours_cell(exp: Dict[str, Any], point: str, measure: str, swept: bool) -> str:
        return values_cell([r.get(measure) for r in exp["runs"]
                           if r.get("point") == point and _one_sweep(r) == swept])

    rows = list(CI_MODEL_KEYS)
    columns: List[Column] = []
    for measure, name in (("time_gap", "gap"), ("next_owner_rank", "next owner's rank")):
        columns += [
            (f"{name}, model, together", lambda r, m=measure: model_cell("ci", r[1], m)),
            (f"{name}, model, staggered", lambda r, m=measure: model_cell("ci-staggered", r[1], m)),
            (f"{name}, ours, one by one", lambda r, m=measure: ours_cell(before, r[0], m, False)),
            (f"{name}, ours, one sweep", lambda r, m=measure: ours_cell(now, r[0], m, True)),
        ]
    def label(row: Tuple[str, str]) -> str:
        infra, reading = row[1].split("/")
        return f"{infra}, {READINGS[reading]}" if reading in ("random", "free") else infra
    return ("Ours: the mean over each point's runs ± the half-width of its 95% interval (3 seeds where both "
            "exist; – where none were made that way, or where the runs predate the id-chain measures); "
            "the model's: 10 runs.\n\n" + table(rows, columns, "configuration", label))


def abc_ci_bends() -> str:
    """Each cluster's mean delivery-time curve (the mean over its runs, benchmarks/results'
    over_time): its mean slope over t = 100-1000 (the first round of ids, whose messages waited
    from nothing to a whole round) and over t = 1500-2000, and its steepest 50-time-unit rise
    after t = 500 (a bend upward, where there is one)."""
    exp = load("abc")["ci"]
    curves = (exp.get("over_time") or {}).get("delivery_time") or {}
    started = _start_cell(exp)

    def slope(c: List[Tuple[float, float]], a: float, b: float) -> Optional[float]:
        inside = [(t, v) for t, v in c if a <= t <= b]
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0]) if len(inside) >= 2 else None

    rows = [p for p, _ in CI_MODEL_KEYS if p in curves and p.startswith("cluster-")]

    def curve(point: str) -> List[Tuple[float, float]]:
        return [(t, v) for t, v in curves[point] if v is not None]

    def steepest(point: str) -> str:
        c = curve(point)
        steps = [((c[i][1] - c[i - 1][1]) / (c[i][0] - c[i - 1][0]), c[i - 1][0], c[i][0])
                 for i in range(1, len(c)) if c[i - 1][0] >= 500 and c[i][0] > c[i - 1][0]]
        if not steps:
            return "–"
        rise, a, b = max(steps)
        return f"{rise:.2f} (t = {a:g}–{b:g})"

    def cell(a: float, b: float) -> Callable[[str], str]:
        return lambda point: (lambda v: "–" if v is None else f"{v:.2f}")(slope(curve(point), a, b))

    columns: List[Column] = [("agents started", started), ("slope, t = 100–1000", cell(100, 1000)),
                             ("slope, t = 1500–2000", cell(1500, 2000)),
                             ("steepest rise after t = 500", steepest)]
    labels = {_cluster_point(s, reading): f"C[{s},155], {READINGS[reading]}"
              for s in (10, 20, 31) for reading in ("random", "free")}
    return ("Slopes of the mean delivery-time curve, time units of delivery time per time unit.\n\n"
            + table(rows, columns, "configuration", labels.get))


def abc_ring_time_unit() -> str:
    exp = load("abc")["ring-time-unit"]
    p = exp["points"]
    n = majority_seeds(exp, ["time_gap"])
    rows = [("ring-100ms", "100 ms"), ("ring-200ms", "200 ms")]
    columns: List[Column] = [
        ("time gap, paper", lambda r: paper(p.get(r, {}).get("time_gap"), "~{:g}")),
        ("time gap, ours", lambda r: ours(p.get(r, {}).get("time_gap"), "num", n)),
        ("delivery time, ours", lambda r: ours(p.get(r, {}).get("delivery_time"), "num", n)),
        ("seeds' gaps", lambda r: ", ".join(f"{v:.3g}" for v in run_values(exp, r, "time_gap"))),
    ]
    labels = dict(rows)
    ratio = ratio_cell(exp, "ring-200ms", "ring-100ms", "time_gap")
    return (seeds_line(exp, ["time_gap"]) + "\n\n" + table([r for r, _ in rows], columns, "time unit", labels.get)
            + f"\n\nTime gap at 200 ms ÷ at 100 ms (Fieller's 95% interval): {ratio}.")


def _model_cell(summary: Optional[Dict[str, Any]]) -> str:
    if not summary or summary.get("mean") is None:
        return "–"
    low_high = summary.get("ci95")
    return plus_minus(summary["mean"], low_high[1] - summary["mean"]) if low_high else number(summary["mean"])


#: the paper's values per (scenario, infrastructure): time gap, delivery time (section 4's text)
ABC_PAPER = {("ci", "C[10,155]"): ("6 / 5.5", "~800"), ("ci", "C[20,155]"): ("6 / 5.5", "~800"),
             ("ci", "C[31,155]"): ("6 / 5.5", "~800"), ("ci", "R[5,31]"): ("~2.6", "~350"),
             ("ci", "R[31,5]"): ("~1.8", "~250"), ("ci", "T[5,2,5]"): ("~1.1", "~120"),
             ("ci", "T[3,5,5]"): ("~1.1", "~120"), ("dp", "C[31,155]"): ("~5.5", "~90"), ("dp", "R[31,5]"): ("~1.9", "~25"),
             ("dp", "T[3,5,5]"): ("~1.1", "~10"), ("dp-10", "T[3,5,5]"): ("~1.1", "~10"),
             # Figures 1-2 plot 310 and 620 components too; the text gives no value for them
             **{(f"dp-{n}", infra): ("–", "–") for n, per in ((310, 10), (620, 20))
                for infra in (f"C[31,{n}]", f"R[31,{per}]", f"T[3,5,{per}]")}}
READINGS = {"random": "authors' dispatch", "free": "free servers", "arrival": "authors' relay (on arrival)",
            "in-order": "testbed's relay (in id order)", "authors": "–"}


def _emulated_point(scenario: str, infrastructure: str, reading: str) -> Optional[Tuple[str, str]]:
    """The experiment and point of our runs that match a model configuration, or None. The ci
    experiment's clusters ran `free` before it had both dispatches (its cluster-S-free points);
    the dp experiment's cluster is from `free` until it is run again; rings run `in-order`."""
    abc = load("abc")
    ci = (abc.get("ci") or {}).get("points", {})
    both = "cluster-10-free" in ci
    if scenario in ("dp-310", "dp-620"):  # experiments/abc/dp-scale.yaml: the default readings
        size = scenario[3:]
        kind = {"C": "cluster", "R": "ring", "T": "tree"}[infrastructure[0]]
        default = {"C": "random", "R": "in-order", "T": "authors"}[infrastructure[0]]
        return ("dp-scale", f"{kind}-{size}") if reading == default else None
    if infrastructure.startswith("C["):
        servers = infrastructure[2:infrastructure.index(",")]
        if scenario == "ci":
            if reading == "random":
                return ("ci", f"cluster-{servers}") if both else None
            return ("ci", f"cluster-{servers}-free" if both else f"cluster-{servers}")
        if scenario == "dp" and servers == "31":
            # dp.yaml's cluster ran the free dispatch until it was run again under the authors' (the
            # default since): the runs of then predate the id-chain measures, those of now carry them
            dp_cluster = ((abc.get("dp") or {}).get("points") or {}).get("cluster") or {}
            now = "send_interval" in dp_cluster
            if reading == "free":
                return None if now else ("dp", "cluster")
            return ("dp", "cluster") if now else ("dp-scale", "cluster-155")
        return None
    if infrastructure.startswith("R["):
        if reading != "in-order":
            return None
        return ("ci", "ring-5" if infrastructure == "R[5,31]" else "ring-31") if scenario == "ci" else ("dp", "ring")
    if scenario == "ci":
        return ("ci", "tree-5-2-5" if infrastructure == "T[5,2,5]" else "tree-3-5-5")
    return ("dp", "tree-10" if scenario == "dp-10" else "tree")


def abc_model() -> str:
    """The authors' model (benchmarks/abc_model.py) of every configuration, under each reading,
    beside the paper and our emulated runs where they match the reading."""
    model_doc = load_model()
    res, seeds, h = model_doc["results"], model_doc["seeds"], model_doc["horizon_time_units"]
    abc = load("abc")
    keys = [k for k in res if tuple(k.split("/")[:2]) in ABC_PAPER]

    def part(key: str, i: int) -> str:
        return key.split("/")[i]

    def emulated(key: str, measure: str) -> str:
        where = _emulated_point(part(key, 0), part(key, 1), part(key, 2))
        if where is None:
            return "–"
        text = ours(point_summary(abc.get(where[0]), where[1], measure))
        runs = [r for r in (abc.get(where[0]) or {}).get("runs", []) if r.get("point") == where[1]]
        if where[0] == "ci" and text != "–" and not all(_one_sweep(r) for r in runs):
            text += " (one by one)"  # the CI runs whose agents started one by one (the testbed's start)
        return text

    columns: List[Column] = [
        ("reading", lambda k: READINGS.get(part(k, 2), part(k, 2))),
        ("gap, paper", lambda k: ABC_PAPER[(part(k, 0), part(k, 1))][0]),
        ("gap, model", lambda k: _model_cell(res[k].get("time_gap"))),
        ("gap, ours", lambda k: emulated(k, "time_gap")),
        ("delivery, paper", lambda k: ABC_PAPER[(part(k, 0), part(k, 1))][1]),
        ("delivery, model", lambda k: _model_cell(res[k].get("delivery_time"))),
        (f"delivery, model, completed in ({0.9 * h:g}, {h:g}]", lambda k: _model_cell(res[k].get("delivery_time_last_tenth"))),
        ("delivery, ours", lambda k: emulated(k, "delivery_time")),
    ]
    label = {"ci": "CI", "dp": "DP, 15 senders", "dp-10": "DP, 10 senders", "dp-310": "DP, 31 of 310 sending",
             "dp-620": "DP, 62 of 620 sending"}
    return (f"The model's values: mean over {seeds} runs ± the half-width of the 95% interval, at t = {h:g} "
            "time units; ours as in the tables above, where our runs had the same reading (– where none did), "
            "\"one by one\" where our CI runs started their agents one by one (the others in one sweep).\n\n"
            + table(keys, columns, "configuration", lambda k: f"{label[part(k, 0)]} {part(k, 1)}"))


#: the rows of the hop-cost table: (label, the model's configuration and its slowed one, our experiment
#: and point; the DP ring's dilated points take the model's handling k times shorter)
HOP_COST_ROWS = [("CI R[5,31]", "ci/R[5,31]/in-order", "ci-h100/R[5,31]/in-order", "ci", "ring-5"),
                 ("CI R[31,5]", "ci/R[31,5]/in-order", "ci-h100/R[31,5]/in-order", "ci", "ring-31"),
                 ("CI T[5,2,5]", "ci/T[5,2,5]/authors", "ci-h100/T[5,2,5]/authors", "ci", "tree-5-2-5"),
                 ("CI T[3,5,5]", "ci/T[3,5,5]/authors", "ci-h100/T[3,5,5]/authors", "ci", "tree-3-5-5"),
                 ("DP R[31,5], k = 1", "dp/R[31,5]/in-order", "dp-h100/R[31,5]/in-order", "dp-dilation", "ring.k=1"),
                 ("DP R[31,5], k = 2", "dp/R[31,5]/in-order", "dp-h200/R[31,5]/in-order", "dp-dilation", "ring.k=2"),
                 ("DP R[31,5], k = 4", "dp/R[31,5]/in-order", "dp-h400/R[31,5]/in-order", "dp-dilation", "ring.k=4")]


def abc_hop_cost() -> str:
    """The rings and trees: the authors' model, the model with every handling taking 1 ms of wall
    clock (λh = 100, 200 and 400 at time dilation 1, 2 and 4: benchmarks/abc_model.py's ci-h100 and
    dp-hN configurations), and ours, in gap and delivery time."""
    model_doc = load_model()
    res = model_doc["results"]
    abc = load("abc")

    def model(key: str, measure: str) -> str:
        return _model_cell((res.get(key) or {}).get(measure))

    def emulated(row, measure: str) -> str:
        return ours(point_summary(abc.get(row[3]), row[4], measure))

    columns: List[Column] = []
    for measure, name in (("time_gap", "gap"), ("delivery_time", "delivery")):
        columns += [(f"{name}, model (0.1 ms)", lambda r, m=measure: model(r[1], m)),
                    (f"{name}, model (1 ms)", lambda r, m=measure: model(r[2], m)),
                    (f"{name}, ours", lambda r, m=measure: emulated(r, m))]
    return (f"The model's values: mean over {model_doc['seeds']} runs ± the half-width of the 95% interval; "
            "a handling of 0.1 ms (the authors' λh = 1000 at 100 ms a time unit) or of 1 ms of wall clock "
            "(λh = 100, and 200 and 400 where our runs are dilated 2 and 4 times); ours as in the tables above.\n\n"
            + table(HOP_COST_ROWS, columns, "configuration", lambda r: r[0]))


def _verdicts_of(paper_name: str, name: str) -> Callable[[], str]:
    return lambda: verdicts(load(paper_name)[name])


#: Table 5's values of P
TABLE_5_P = (0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _p_point(points: Dict[str, Any], scenario: str, v: float) -> str:
    """The point of `scenario` at P = v as the experiment names it (P=1 or P=1.0)."""
    return f"{scenario}.P={v:g}" if f"{scenario}.P={v:g}" in points else f"{scenario}.P={v}"


def _deeco_p_table(name: str, values: Sequence[float], medium: str = "", ages: bool = False) -> str:
    """Table 5 beside ours; `medium` ("kernel", "wifi") picks the scenarios of an experiment that
    runs both (named MEDIUM-simple, MEDIUM-boundary); `ages` adds our median knowledge ages."""
    exp = load("deeco")[name]
    p = exp["points"]
    n = majority_seeds(exp, ["messages"])

    def pt(scenario: str, v: float) -> str:
        return _p_point(p, f"{medium}-{scenario}" if medium else scenario, v)

    def thesis_ratio(v: float) -> str:
        a, b = p.get(pt("simple", v), {}).get("messages"), p.get(pt("boundary", v), {}).get("messages")
        if not a or not b or a.get("reference_low") is None or b.get("reference_low") is None:
            return "–"
        return f"{a['reference_low'] / b['reference_low']:.2f}"

    columns: List[Column] = [
        ("thesis simple", lambda v: paper(p.get(pt("simple", v), {}).get("messages"), "{:,.0f}")),
        ("thesis boundary", lambda v: paper(p.get(pt("boundary", v), {}).get("messages"), "{:,.0f}")),
        ("thesis ratio", thesis_ratio),
        ("ours simple", lambda v: ours(p.get(pt("simple", v), {}).get("messages"), "num", n)),
        ("ours boundary", lambda v: ours(p.get(pt("boundary", v), {}).get("messages"), "num", n)),
        ("ours ratio", lambda v: ratio_cell(exp, pt("simple", v), pt("boundary", v), "messages", "{:.2f}")),
    ]
    if ages:
        columns += [
            ("ours simple: median age (ms)", lambda v: ours(p.get(pt("simple", v), {}).get("age_median"), "num", n)),
            ("ours boundary: median age (ms)",
             lambda v: ours(p.get(pt("boundary", v), {}).get("age_median"), "num", n)),
        ]
    rows = [v for v in values if pt("simple", v) in p or pt("boundary", v) in p]
    return seeds_line(exp, ["messages"]) + "\n\n" + table(rows, columns, "P", lambda v: f"{v:g}")


def _paired_difference(exp: Dict[str, Any], a: str, b: str, measure: str) -> str:
    """b − a over the seeds both points have, seed by seed (the two scenarios of one seed share
    their SUMO trace, so pairing takes the mobility's spread out), with the t interval of the
    mean difference; "–" below two pairs."""
    from testbed.experiment import stats

    def by_seed(point: str) -> Dict[int, float]:
        return {r["seed"]: r[measure] for r in exp["runs"] if r.get("point") == point
                and r.get(measure) is not None and r.get("seed") is not None}

    va, vb = by_seed(a), by_seed(b)
    diffs = [vb[s] - va[s] for s in sorted(set(va) & set(vb))]
    mean, low, high = stats.mean_interval(diffs)
    if mean is None or low is None:
        return "–"
    return f"{plus_minus(mean, high - mean)} ({len(diffs)} pairs)"


def deeco_sumo_p_coverage() -> str:
    """Figures 29 and 30 on the sumo-p runs, both media: the distinct components whose knowledge a
    node received (its median over the nodes: Figure 30), boundary minus simple paired by seed,
    and the age quartiles of Figure 29's box plot at P above 0.5."""
    exp = load("deeco")["sumo-p"]
    p = exp["points"]
    n = majority_seeds(exp, ["sources"])
    media = ("kernel", "wifi")

    def pt(medium: str, scenario: str, v: float) -> str:
        return _p_point(p, f"{medium}-{scenario}", v)

    def cell(medium: str, scenario: str, measure: str) -> Callable[[float], str]:
        return lambda v: ours(p.get(pt(medium, scenario, v), {}).get(measure), "num", n)

    sources: List[Column] = []
    for m in media:
        sources += [(f"{m}: simple", cell(m, "simple", "sources")), (f"{m}: boundary", cell(m, "boundary", "sources")),
                    (f"{m}: boundary − simple",
                     lambda v, m=m: _paired_difference(exp, pt(m, "simple", v), pt(m, "boundary", v), "sources"))]
    rows = [v for v in TABLE_5_P if any(pt(m, s, v) in p for m in media for s in ("simple", "boundary"))]
    box: List[Column] = [(f"{s}: {q} (ms)", lambda r, s=s, measure=measure: cell(r[0], s, measure)(r[1]))
                         for s in ("simple", "boundary")
                         for q, measure in (("Q1", "age_q1"), ("median", "age_median"), ("Q3", "age_q3"))]
    high = [(m, v) for m in media for v in rows if v > 0.5]
    return (seeds_line(exp, ["sources"]) + " Figure 30: the distinct components whose knowledge a node received, "
            "the median over the nodes (the thesis gives no numbers; of 199 others).\n\n" +
            table(rows, sources, "P", lambda v: f"{v:g}") +
            "\n\nFigure 29: the knowledge age's quartiles at P above 0.5 (the thesis's box plot gives no numbers).\n\n" +
            table(high, box, "medium, P", lambda r: f"{r[0]}, {r[1]:g}"))


def deeco_flood() -> str:
    """benchmarks/deeco_flood.py's replay of the sumo-p runs' floods on their own positions: the
    expected figures beside the measured ones, then the expected ones at longer reaches."""
    with open(os.path.join(HERE, "results", FLOOD)) as fh:
        data = json.load(fh)
    thesis, rows = data["thesis"], data["runs"]

    def pair(row: Dict[str, Any], key: str, measured: str) -> str:
        e, m = row["expected"][0].get(key), row["measured"].get(measured)
        return "–" if e is None or m is None else f"{e:.2f} / {m:.2f}"

    first = table(rows, [
        ("a broadcast's receivers (P = 0)", lambda r: pair(r, "receivers_per_broadcast", "receivers_per_broadcast")),
        ("messages a publication, simple (P = 1)", lambda r: pair(r, "flood_P1", "flood_P1")),
        ("messages a publication, boundary (P = 1)", lambda r: pair(r, "boundary_P1", "boundary_P1")),
        (f"reach at which a publication costs Table 5's {thesis['flood_P1']:.1f}",
         lambda r: "beyond the replayed reaches" if r["thesis_reach_scale"] is None
         else f"{r['thesis_reach_scale']:.2f} × ours"),
    ], "medium, seed (expected / measured)", lambda r: f"{r['medium']}, {r['seed']}")
    scales = [e["range_scale"] for e in rows[0]["expected"]]

    def at(row: Dict[str, Any], scale: float) -> str:
        e = next(x for x in row["expected"] if x["range_scale"] == scale)
        ratio = f", {e['flood_P1'] / e['boundary_P1']:.2f}" if e.get("boundary_P1") else ""
        return f"{e['receivers_per_broadcast']:.2f}, {e['flood_P1']:.1f}{ratio}"

    second = table(scales, [(f"{r['medium']}, seed {r['seed']}", lambda v, r=r: at(r, v)) for r in rows],
                   "reach × ours", lambda v: f"{v:g}")
    spread = ("Each row is one medium and seed: each value is one run's (the expected ones means over its "
              "replayed floods), with no interval. ")
    return (f"{spread}Replayed on every {data['every']}th position snapshot of the runs, each node publishing once "
            f"in each.\n\n{first}\n\nExpected at longer reaches (receivers of a broadcast, messages a publication "
            f"at P = 1, simple over boundary); Table 5: {thesis['flood_P1']:.1f} messages a publication, "
            f"simple over boundary {thesis['ratio_P1']:.2f}.\n\n{second}")


def _deeco_age_table(name: str, rows: List[Tuple[str, str]]) -> str:
    exp = load("deeco")[name]
    p = exp["points"]
    n = majority_seeds(exp, ["age_median"])
    columns: List[Column] = [
        ("median knowledge age (ms)", lambda r: ours(p.get(r, {}).get("age_median"), "num", n)),
        ("first quartile (ms)", lambda r: ours(p.get(r, {}).get("age_q1"), "num", n)),
        ("third quartile (ms)", lambda r: ours(p.get(r, {}).get("age_q3"), "num", n)),
        ("messages", lambda r: ours(p.get(r, {}).get("messages"), "num", n)),
    ]
    labels = dict(rows)
    present = [r for r, _ in rows if r in p]
    return seeds_line(exp, ["age_median"]) + "\n\n" + table(present, columns, "point", labels.get)


#: experiments/deeco/sumo-age.yaml's push-pull overrides, shown as a configuration's HD/PL/L/G
SUMO_AGE_FILE = os.path.join(ROOT, "experiments", "deeco", "sumo-age.yaml")
PULL_PARAMS = ("header_period_ms", "pull_period_ms", "message_timeout_ms", "pull_timeout_ms")


def _sumo_age_rows() -> List[Tuple[str, str]]:
    """(point suffix, label) in the thesis's order: simple, boundary, then Table 6's configurations
    by number, each labelled with its HD/PL/L/G in seconds as the experiment file sets them."""
    import yaml

    with open(SUMO_AGE_FILE) as fh:
        scenarios = yaml.safe_load(fh)["scenarios"]
    rows = [("simple", "simple gossip"), ("boundary", "boundary (0.5 km)")]
    configs = sorted((int(name.split("-")[-1]), spec.get("set", {})) for name, spec in scenarios.items()
                     if name.startswith("kernel-pp-"))
    for number_, overrides in configs:
        seconds = [overrides.get(f"workload.defaults.params.{p}", 0) / 1000 for p in PULL_PARAMS]
        rows.append((f"pp-{number_}", f"push-pull {number_} ({'/'.join(f'{s:g}' for s in seconds)})"))
    return rows


def deeco_sumo_age(which: str) -> str:
    """The sumo-age experiment with the two media side by side: knowledge ages (the thesis's
    medians beside ours) or the messages of Figure 35 (all kinds, headers, pull requests)."""
    exp = load("deeco")["sumo-age"]
    p = exp["points"]
    measures = ["age_median", "age_q1", "age_q3"] if which == "ages" else ["messages", "headers", "pulls"]
    n = majority_seeds(exp, measures)
    media = ("kernel", "wifi")

    def cell(medium: str, measure: str) -> Callable[[str], str]:
        return lambda r: ours(p.get(f"{medium}-{r}", {}).get(measure), "num", n)

    if which == "ages":
        def thesis(r: str) -> str:
            ref = p.get(f"kernel-{r}", {}).get("age_median") or {}
            return "–" if ref.get("reference_low") is None else f"{ref['reference_low'] / 1000:g}"

        columns: List[Column] = [("thesis: median (s)", thesis)] + [
            (f"{m}: {label} (ms)", cell(m, measure)) for m in media
            for measure, label in (("age_median", "median"), ("age_q1", "Q1"), ("age_q3", "Q3"))]
    else:
        columns = [(f"{m}: {label}", cell(m, measure)) for m in media
                   for measure, label in (("messages", "messages"), ("headers", "headers"), ("pulls", "pull requests"))]
    rows = _sumo_age_rows()
    labels = dict(rows)
    present = [r for r, _ in rows if any((p.get(f"{m}-{r}", {}).get(measures[0]) or {}).get("mean") is not None
                                         for m in media)]
    return seeds_line(exp, measures) + "\n\n" + table(present, columns, "configuration (HD/PL/L/G s)", labels.get)


def deeco_sumo_age_ways() -> str:
    """benchmarks/deeco_ages.py's split of the sumo-age runs' deliveries by the way they came
    (from the publisher, a pushed rebroadcast, a pulled one): per point, means over its runs."""
    with open(os.path.join(HERE, "results", "deeco_ages.json")) as fh:
        runs = json.load(fh)["runs"]
    by_point: Dict[str, List[Dict[str, Any]]] = {}
    for r in runs:
        by_point.setdefault(r["point"], []).append(r)
    counts = sorted({len(v) for v in by_point.values()})

    def cell(point: str, get: Callable[[Dict[str, Any]], Optional[float]], style: str = "num") -> str:
        return values_cell([get(r) for r in by_point.get(point, [])], style, max(counts))

    columns: List[Column] = [
        ("deliveries", lambda r: cell(r, lambda x: x["deliveries"])),
        ("from the publisher", lambda r: cell(r, lambda x: x["publisher"]["share"], "pct")),
        ("pushed", lambda r: cell(r, lambda x: x["pushed"]["share"], "pct")),
        ("pulled", lambda r: cell(r, lambda x: x["pulled"]["share"], "pct")),
        ("median age (ms)", lambda r: cell(r, lambda x: x["median_ms"])),
        ("publisher's (ms)", lambda r: cell(r, lambda x: x["publisher"]["median_ms"])),
        # the run's median over its own hop-0 one: the machine's speed, which moves both, divides out
        ("median ÷ publisher's", lambda r: cell(r, lambda x: x["median_ms"] / x["publisher"]["median_ms"]
                                                 if x["median_ms"] and x["publisher"]["median_ms"] else None)),
        ("pushed (ms)", lambda r: cell(r, lambda x: x["pushed"]["median_ms"])),
        ("pulled (ms)", lambda r: cell(r, lambda x: x["pulled"]["median_ms"])),
        ("without the pulled (ms)", lambda r: cell(r, lambda x: x["median_without_pulled_ms"])),
        ("frames on the air", lambda r: cell(r, lambda x: x.get("frames_sent"))),
        ("MAC queueing, p99 of the worst node (ms)", lambda r: cell(r, lambda x: x.get("queue_delay_ms_p99_max"))),
    ]
    configurations = _sumo_age_rows()
    labels = dict(configurations)
    rows = [f"{m}-{r}" for r, _ in configurations for m in ("kernel", "wifi") if f"{m}-{r}" in by_point]
    head = (f"Each value is the mean over {'/'.join(map(str, counts))} runs of a point ± the half-width of its 95% "
            "interval (Student's t); shares of the run's deliveries, median ages of each way's, and each run's "
            "median divided by its publisher's.")
    return head + "\n\n" + table(rows, columns, "point", lambda p: f"{p.split('-')[0]}: {labels[p.split('-', 1)[1]]}")


def deeco_ip() -> str:
    exp = load("deeco")["ip-groupers"]
    p = exp["points"]
    n = majority_seeds(exp, ["messages"])
    rows = [(c, v) for c in (1, 2, 3) for v in (0, 0.1, 0.2, 0.3, 0.4, 0.5)]

    def pid(scenario: str, row) -> str:
        c, v = row
        for key in (f"{scenario}.P={v}.C={c}", f"{scenario}.P={v:g}.C={c}"):
            if key in p:
                return key
        return f"{scenario}.P={v}.C={c}"

    columns: List[Column] = [
        ("simple: messages", lambda r: ours(p.get(pid("simple", r), {}).get("messages"), "num", n)),
        ("groupers: messages", lambda r: ours(p.get(pid("groupers", r), {}).get("messages"), "num", n)),
        ("simple ÷ groupers", lambda r: ratio_cell(exp, pid("simple", r), pid("groupers", r), "messages", "{:.2f}")),
        ("simple: median age (ms)", lambda r: ours(p.get(pid("simple", r), {}).get("age_median"), "num", n)),
        ("groupers: median age (ms)", lambda r: ours(p.get(pid("groupers", r), {}).get("age_median"), "num", n)),
        ("fresh at the end, simple / groupers", lambda r: " / ".join(
            ours(p.get(pid(s, r), {}).get("fresh"), "pct", n) for s in ("simple", "groupers"))),
    ]
    return seeds_line(exp, ["messages"]) + "\n\n" + table(rows, columns, "point",
                                                          lambda r: f"P = {r[1]:g}, C = {r[0]}")


CAUSAL_COLUMNS = {
    "fig5": [("gossip_lost", "lost, gossip only", "pct"), ("lost", "lost, two-layer", "pct"),
             ("forced", "forced", "num"), ("latency_ms", "median latency (ms)", "num"),
             ("latency_rounds", "(rounds)", "num"), ("latency_p95_ms", "p95 latency (ms)", "num"),
             ("gossip_latency_ms", "gossip only: median latency (ms)", "num"),
             ("recovery_requests", "recovery requests", "num"), ("recovery_success", "recovered", "pct"),
             ("gossip_delivery", "gossip messages received", "pct"), ("created", "events created", "num"),
             ("disconnections", "coordinators disconnected", "num")],
    "fig4": [("throughput", "throughput (events / member / s)", "num"), ("latency_ms", "median latency (ms)", "num"),
             ("latency_rounds", "(rounds)", "num"), ("latency_hops", "(mean hops)", "num"),
             ("latency_p95_ms", "p95 latency (ms)", "num"), ("message_bytes", "message size (bytes)", "num"),
             ("record_bytes", "bytes per event record", "num"), ("lost", "lost", "pct"),
             ("gossip_delivery", "gossip messages received", "pct")],
}
#: experiments/dilation/abc-tree.yaml: T[3,5,5] at k = 1 and 8 (issue 29), the paper's tree values beside
DILATION_COLUMNS = {
    "abc-tree": [("server_rate", "servers' pooled rate (λt = 15)", "num"), ("server_rate_min", "slowest server", "num"),
                 ("shortfall", "transmitters' shortfall beyond chance", "pct"),
                 ("late_share", "wake-ups late by a tenth of their period", "pct"),
                 ("loop_lag_ms", "loop lag p99 (ms)", "num"), ("delivery_time", "delivery time (paper ~120)", "num"),
                 ("time_gap", "time gap (paper ~1.1)", "num")],
}
#: experiments/abc/dp-dilation.yaml: the data-provider ring and tree at time dilation 1, 2 and 4 (issue 32)
DP_DILATION_COLUMNS = [("time_gap", "time gap", "num"), ("delivery_time", "delivery time", "num"),
                       ("dissemination_time", "dissemination time", "num"),
                       ("server_rate", "servers' pooled rate (λt = 15)", "num"),
                       ("loop_lag_ms", "loop lag p99 (ms)", "num")]


def _ours_column(points: Dict[str, Any], measure: str, style: str, seeds: int) -> Callable[[str], str]:
    return lambda pid: ours(points[pid].get(measure), style, seeds)


def measures_of(exp: Dict[str, Any]) -> set:
    """The measures an experiment's stored points carry (older results lack the newer ones)."""
    return {m for point in exp["points"].values() for m in point}


def _faithful_column(runs: List[Dict[str, Any]]) -> Callable[[str], str]:
    """Each point's runs the fidelity monitor called faithful, of those it judged ("–" when the
    runs predate it)."""
    from spark_analysis.fidelity import VERDICTS

    def cell(pid: str) -> str:
        judged = [r["fidelity"] for r in runs if r.get("point") == pid and r.get("fidelity") in VERDICTS]
        return f"{judged.count('faithful')} of {len(judged)}" if judged else "–"
    return cell


def _point_key(point: str):
    """Points sort by scenario, then by their grid values as numbers."""
    head, _, rest = point.partition(".")
    values = []
    for part in re.findall(r"=([^.=]+(?:\.\d+)?)", point):
        try:
            values.append(float(part))
        except ValueError:
            values.append(math.inf)
    return head, values


def causal_table(name: str) -> Callable[[], str]:
    return points_table("causal", name, CAUSAL_COLUMNS[name])


def points_table(paper_name: str, name: str, spec: List[Tuple[str, str, str]]) -> Callable[[], str]:
    """An experiment's points, one row each in grid order, with the measures of `spec` (measure,
    heading, style) it stores and, where its runs have verdicts, how many were faithful."""
    def make() -> str:
        exp = load(paper_name)[name]
        p = exp["points"]
        measures = [m for m, _, _ in spec]
        n = majority_seeds(exp, measures)
        stored = measures_of(exp)
        columns: List[Column] = [(h, _ours_column(p, m, style, n)) for m, h, style in spec if m in stored]
        if any(r.get("fidelity") for r in exp["runs"]):   # runs from before the monitor have none
            columns.append(("runs faithful", _faithful_column(exp["runs"])))
        return seeds_line(exp, measures) + "\n\n" + table(sorted(p, key=_point_key), columns, "point")
    return make


def _run_column(measure: str, style: str) -> Callable[[Dict[str, Any]], str]:
    return lambda run: "–" if run.get(measure) is None else number(run[measure], style)


def causal_churn() -> str:
    exp = load("causal")["churn"]
    columns = [("shared_tickets", "shared tickets (Theorem 4.2)", "num"),
               ("repeated_ids", "event names given twice", "num"), ("exclusions", "exclusions", "num"),
               ("leaves", "leaves (Algorithm 1)", "num"), ("joins", "joins", "num"),
               ("exclusion_rounds", "fault to exclusion, largest (rounds)", "num"),
               ("disconnect_paper", "cut-off within Corollary 4.1's i rounds", "num"),
               ("disconnect_ok", "within i + 1 rounds and (2i − 1)δ", "num"),
               ("alive_max", "most ALIVEs a round (2k+1 = 3)", "num"), ("lost", "lost", "pct")]
    columns = [c for c in columns if c[0] in measures_of(exp)]
    runs = sorted(exp["runs"], key=lambda r: r["seed"])
    n = majority_seeds(exp, [m for m, _, _ in columns])
    per_run: List[Column] = [(h, _run_column(m, style)) for m, h, style in columns]
    means: List[Column] = [(h, _ours_column(exp["points"], m, style, n)) for m, h, style in columns]
    return (table(runs, per_run, "seed", lambda r: str(r["seed"])) + "\n\n" +
            seeds_line(exp, [m for m, _, _ in columns]) + "\n\n" + table(list(exp["points"]), means, "all seeds"))


BLOCKS: Dict[str, Callable[[], str]] = {
    "abc/dp": abc_dp,
    "abc/dp/verdicts": _verdicts_of("abc", "dp"),
    "abc/ring-time-unit": abc_ring_time_unit,
    "abc/ring-time-unit/verdicts": _verdicts_of("abc", "ring-time-unit"),
    "abc/ci": abc_ci,
    "abc/ci/verdicts": _verdicts_of("abc", "ci"),
    "abc/ci/id-chain": abc_ci_id_chain,
    "abc/ci/start-order": abc_start_order,
    "abc/ci/bends": abc_ci_bends,
    "abc/dp-dilation": points_table("abc", "dp-dilation", DP_DILATION_COLUMNS),
    "abc/dp-dilation/verdicts": _verdicts_of("abc", "dp-dilation"),
    "abc/model": abc_model,
    "abc/hop-cost": abc_hop_cost,
    "deeco/manet-p": lambda: _deeco_p_table("manet-p", [0, 0.5, 0.9, 1.0]),
    "deeco/manet-p/age": lambda: _deeco_age_table("manet-p", [("simple.P=0.9", "simple, P = 0.9"),
                                                               ("boundary.P=0.9", "boundary, P = 0.9")]),
    "deeco/manet-p/verdicts": _verdicts_of("deeco", "manet-p"),
    "deeco/manet-p-sparse": lambda: _deeco_p_table("manet-p-sparse", [0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
    "deeco/manet-p-sparse/verdicts": _verdicts_of("deeco", "manet-p-sparse"),
    "deeco/manet-200": lambda: _deeco_p_table("manet-200", [0.5, 1.0]),
    "deeco/manet-200/verdicts": _verdicts_of("deeco", "manet-200"),
    "deeco/age": lambda: _deeco_age_table("age", [("simple", "simple gossip"), ("boundary", "boundary"),
                                                  ("pp-27", "push-pull, configuration 27")]),
    "deeco/age-sparse": lambda: _deeco_age_table("age-sparse", [
        ("simple", "simple gossip"), ("boundary", "boundary")] + [
        (f"pp-{c}", f"push-pull, configuration {c}") for c in (24, 27, 28, 29, 34, 40, 54)]),
    "deeco/age-sparse/verdicts": _verdicts_of("deeco", "age-sparse"),
    # the thesis's scale on both media (issue 31): placed in the document once their runs are in
    "deeco/sumo-p/kernel": lambda: _deeco_p_table("sumo-p", TABLE_5_P, "kernel", ages=True),
    "deeco/sumo-p/wifi": lambda: _deeco_p_table("sumo-p", TABLE_5_P, "wifi", ages=True),
    "deeco/sumo-p/verdicts": _verdicts_of("deeco", "sumo-p"),
    "deeco/sumo-p/flood": deeco_flood,
    "deeco/sumo-p/coverage": deeco_sumo_p_coverage,
    "deeco/sumo-age": lambda: deeco_sumo_age("ages"),
    "deeco/sumo-age/messages": lambda: deeco_sumo_age("messages"),
    "deeco/sumo-age/ways": deeco_sumo_age_ways,
    "deeco/sumo-age/verdicts": _verdicts_of("deeco", "sumo-age"),
    "deeco/ip-groupers": deeco_ip,
    "deeco/ip-groupers/verdicts": _verdicts_of("deeco", "ip-groupers"),
    "causal/fig5": causal_table("fig5"),
    "causal/fig5/verdicts": _verdicts_of("causal", "fig5"),
    "causal/fig4": causal_table("fig4"),
    "causal/fig4/verdicts": _verdicts_of("causal", "fig4"),
    "causal/churn": causal_churn,
    "causal/churn/verdicts": _verdicts_of("causal", "churn"),
    "dilation/abc-tree": points_table("dilation", "abc-tree", DILATION_COLUMNS["abc-tree"]),
    "dilation/abc-tree/verdicts": _verdicts_of("dilation", "abc-tree"),
}


def render(text: str) -> Tuple[str, List[str]]:
    """The document with every generated block rewritten; and the names of blocks it has that
    BLOCKS does not know."""
    unknown = []

    def one(match: "re.Match[str]") -> str:
        name = match.group("name")
        if name not in BLOCKS:
            unknown.append(name)
            return match.group(0)
        return f"{match.group(1)}{BLOCKS[name]().rstrip()}\n{match.group(4)}"

    return BLOCK.sub(one, text), unknown


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the document is up to date")
    args = parser.parse_args(argv)
    with open(DOC) as fh:
        text = fh.read()
    new, unknown = render(text)
    if unknown:
        print(f"{DOC}: unknown generated blocks: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.check:
        if new != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), DOC, "generated"))
            return 1
        return 0
    if new != text:
        with open(DOC, "w") as fh:
            fh.write(new)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
