"""The AbC paper's generated blocks of docs/REPRODUCTION.md (abc/..., and dilation/abc-tree):
our values beside the paper's and the authors' model's (benchmarks/abc_model.py, abc_hops.py),
from benchmarks/results/abc_paper.json, abc_model.json, abc_hops.json and dilation.json.
Registered in benchmarks/reproduction.py."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from repro_common import (HERE, load, load_model, point_summary, number, plus_minus, ours, paper, run_values,
                          ratio_cell, Column, table, seeds_line, majority_seeds, values_cell, verdicts_of,
                          faithful_column, points_table, fidelity_counts, ours_column)


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
        columns.append(("runs faithful", faithful_column(exp["runs"])))
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
#: the testbed's default reading per kind of infrastructure (the first letter of C[..], R[..], T[..])
DEFAULT_READING = {"C": "random", "R": "in-order", "T": "authors"}


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
        return ("dp-scale", f"{kind}-{size}") if reading == DEFAULT_READING[infrastructure[0]] else None
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
                 ("DP R[31,5], k = 4", "dp/R[31,5]/in-order", "dp-h400/R[31,5]/in-order", "dp-dilation", "ring.k=4"),
                 ("DP T[3,5,5], k = 1", "dp/T[3,5,5]/authors", "dp-h100/T[3,5,5]/authors", "dp-dilation", "tree.k=1"),
                 ("DP T[3,5,5], k = 2", "dp/T[3,5,5]/authors", "dp-h200/T[3,5,5]/authors", "dp-dilation", "tree.k=2"),
                 ("DP T[3,5,5], k = 4", "dp/T[3,5,5]/authors", "dp-h400/T[3,5,5]/authors", "dp-dilation", "tree.k=4")]


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


#: benchmarks/abc_hops.py's results: the time per hop in the rings' and trees' server logs
HOPS = "abc_hops.json"


#: the rows of the per-hop table: (label, the model's configuration and its slowed one, our
#: experiment directory and point), the DP ring and tree at time dilation k = 1, 2, 4, whose model
#: takes a handling of 1 ms of wall clock as k times shorter (λh = 100 k)
HOP_ROWS = [(f"DP {name}, k = {k}", f"dp/{infra}", f"dp-h{100 * k}/{infra}", "abc-dp-dilation", f"{point}.k={k}")
            for name, infra, point in (("R[31,5]", "R[31,5]/in-order", "ring"), ("T[3,5,5]", "T[3,5,5]/authors", "tree"))
            for k in (1, 2, 4)]


def _scaled(summary: Optional[Dict[str, Any]], scale: float, shift: float = 0.0) -> Optional[Dict[str, Any]]:
    """A summary (mean, ci95) times `scale`, minus `shift`."""
    if not summary or summary.get("mean") is None:
        return None
    ci = summary.get("ci95")
    return {"mean": summary["mean"] * scale - shift, "ci95": [c * scale - shift for c in ci] if ci else None}


def abc_hops() -> str:
    """The time per hop of the DP ring and tree at time dilation 1, 2, 4: measured in our runs'
    server logs (benchmarks/abc_hops.py) beside the model's same interval (abc_model.py's
    `hop_time`), with the authors' handling and with 1 ms of wall clock a handling."""
    with open(os.path.join(HERE, "results", HOPS)) as fh:
        measured = json.load(fh)["experiments"]
    model_doc = load_model()
    res = model_doc["results"]

    def point(r) -> Dict[str, Any]:
        return (measured.get(r[3]) or {}).get(r[4]) or {}

    def unit_ms(r) -> float:   # the components' time unit, from our runs (the model's times are in units)
        p = point(r)
        return p["hop_ms"]["mean"] / p["hop_time"]["mean"] if p.get("hop_time", {}).get("mean") else 100.0

    def model(r, key: int) -> Optional[Dict[str, Any]]:
        return _scaled((res.get(r[key]) or {}).get("hop_time"), unit_ms(r))

    def excess(r) -> str:
        m, ours_ms = model(r, 1), point(r).get("hop_ms")
        return _model_cell(_scaled(ours_ms, 1.0, m["mean"])) if m and ours_ms else "–"

    def fidelity(r) -> str:
        return fidelity_counts([x.get("fidelity") for x in (point(r).get("runs") or {}).values()])

    columns: List[Column] = [
        ("model, 0.1 ms a handling (ms)", lambda r: _model_cell(model(r, 1))),
        ("model, 1 ms of wall clock a handling (ms)", lambda r: _model_cell(model(r, 2))),
        ("ours (virtual ms)", lambda r: _model_cell(point(r).get("hop_ms"))),
        ("ours − model (ms)", excess),
        ("hops a run", lambda r: number(sum(x["hops"] for x in point(r)["runs"].values()) / len(point(r)["runs"]))
         if point(r).get("runs") else "–"),
        ("runs faithful / degraded / unfaithful", fidelity),
    ]
    seeds = "/".join(str(n) for n in sorted({point(r)["hop_ms"]["n"] for r in HOP_ROWS if point(r).get("hop_ms")}))
    return (f"A hop: from a data message's first arrival at a server to its copy's arrival from that server at "
            f"another, in the agents' (virtual) milliseconds. The model's values: mean over {model_doc['seeds']} "
            f"runs ± the half-width of the 95% interval; ours: the mean over {seeds or 'no'} seeds of each run's "
            "mean hop ± the same; ours − model: against the model with the authors' handling.\n\n"
            + table(HOP_ROWS, columns, "configuration", lambda r: r[0]))


#: experiments/dilation/abc-tree.yaml: T[3,5,5] at k = 1 and 8 (issue 29), the paper's tree values beside
DILATION_COLUMNS = {
    "abc-tree": [("server_rate", "servers' pooled rate (λt = 15)", "num"), ("server_rate_min", "slowest server", "num"),
                 ("shortfall", "transmitters' shortfall beyond chance (as judged then: a share of λt)", "pct"),
                 ("late_share", "wake-ups late by a tenth of their period", "pct"),
                 ("loop_lag_ms", "loop lag p99 (ms)", "num"), ("delivery_time", "delivery time (paper ~120)", "num"),
                 ("time_gap", "time gap (paper ~1.1)", "num")],
}


#: experiments/abc/dp-dilation.yaml: the data-provider ring and tree at time dilation 1, 2 and 4 (issue 32)
DP_DILATION_COLUMNS = [("time_gap", "time gap", "num"), ("delivery_time", "delivery time", "num"),
                       ("dissemination_time", "dissemination time", "num"),
                       ("server_rate", "servers' pooled rate (λt = 15)", "num"),
                       ("loop_lag_ms", "loop lag p99 (ms)", "num")]


#: experiments/abc/dp-scale.yaml's infrastructures and sizes: the model's configuration of each point
DP_SCALE_MODEL = {("tree", 155): "dp/T[3,5,5]/authors", ("ring", 155): "dp/R[31,5]/in-order",
                  ("cluster", 155): "dp/C[31,155]/random"}
DP_SCALE_MODEL.update({(kind, n): f"dp-{n}/{infra}" for n, per in ((310, 10), (620, 20)) for kind, infra in
                       (("tree", f"T[3,5,{per}]/authors"), ("ring", f"R[31,{per}]/in-order"),
                        ("cluster", f"C[31,{n}]/random"))})


def _dilations(file: str) -> Dict[str, float]:
    """Each point's time dilation in an experiment file: its scenario loaded with the point's
    overrides, as a run loads it (the scenario file's own value, the `set:`s, the grid's)."""
    from testbed.experiment.spec import load_experiment   # repro_common puts the repository on the path
    from testbed.scenario import load_scenario

    exp = load_experiment(os.path.join(os.path.dirname(HERE), file), check_points=False)
    return {p.id: load_scenario(p.scenario.file, overrides=p.overrides).time_dilation for p in exp.points}


def abc_dp_scale() -> str:
    """Figures 1-2 at 155, 310 and 620 components (10% sending), with the pilots of the dilation
    each size needs (dp-scale-pilots): each point's time dilation, the model's values and ours,
    the servers' rate, the late wake-ups and the runs' fidelity."""
    abc = load("abc")
    sets = [name for name in ("dp-scale", "dp-scale-pilots") if abc.get(name)]
    if not sets:
        return "No values yet."
    res = load_model()["results"]
    k = {(name, pid): v for name in sets for pid, v in _dilations(abc[name]["file"]).items()}
    # one table over both files: the seeds line and the "(1 seed)" marks read the points of both,
    # the marks going to the points with fewer seeds than the most any point has
    both = {"points": {pid: v for name in sets for pid, v in abc[name]["points"].items()}}
    n = max((s[m]["n"] for s in both["points"].values() for m in ("time_gap", "delivery_time")
             if m in s and s[m].get("n")), default=1)

    def model(row: Tuple[str, str], measure: str) -> str:
        kind, size = row[1].split("-")[:2]
        key = DP_SCALE_MODEL.get((kind, int(size)))
        return _model_cell(res.get(key, {}).get(measure)) if key else "–"

    def cell(measure: str, style: str = "num") -> Callable[[Tuple[str, str]], str]:
        return lambda row: ours((abc[row[0]]["points"].get(row[1]) or {}).get(measure), style, n)

    def fidelity(row: Tuple[str, str]) -> str:
        return fidelity_counts([r.get("fidelity") for r in abc[row[0]]["runs"] if r.get("point") == row[1]])

    columns: List[Column] = [
        ("k", lambda row: f"{k[row]:g}"),
        ("senders", lambda row: str(int(row[1].split("-")[1]) // 10)),
        ("gap, model", lambda row: model(row, "time_gap")),
        ("gap, ours", cell("time_gap")),
        ("delivery, model", lambda row: model(row, "delivery_time")),
        ("delivery, ours", cell("delivery_time")),
        ("servers' pooled rate (λt = 15)", cell("server_rate")),
        ("wake-ups late by a tenth", cell("late_share", "pct")),
        ("runs faithful / degraded / unfaithful", fidelity),
    ]
    order = {"tree": 0, "ring": 1, "cluster": 2}
    rows = sorted(k, key=lambda row: (order[row[1].split("-")[0]], int(row[1].split("-")[1]), row[0], row[1]))
    return (seeds_line(both, ["time_gap", "delivery_time"]) + " The model: benchmarks/abc_model.py, 10 runs, the same readings (the authors' "
            "dispatch, the testbed's relay in id order). k: the run's time dilation; the points named -k2 and -k4 "
            "are the pilots (experiments/abc/dp-scale-pilots.yaml).\n\n"
            + table(rows, columns, "point", lambda row: row[1]))


#: the communication-intensive points (named as in ci.yaml, ci-dilation.yaml's with a .k=K after the
#: name) and their configurations
CI_POINTS = {"cluster-10": "C[10,155]", "cluster-20": "C[20,155]", "cluster-31": "C[31,155]", "ring-5": "R[5,31]",
             "ring-31": "R[31,5]", "tree-5-2-5": "T[5,2,5]", "tree-3-5-5": "T[3,5,5]"}


def _ci_dilated(name: str, about: str) -> Callable[[], str]:
    """A dilated communication-intensive experiment's table (ci-dilation.yaml, ci-faithful.yaml):
    each point's time dilation beside the paper, the model and the same configuration undilated
    (ci.yaml, the authors' dispatch for the clusters), the servers' rates and the runs' fidelity."""

    def block() -> str:
        abc = load("abc")
        exp = abc.get(name)
        if not exp or not exp.get("points"):
            return "No values yet."
        undilated = (abc.get("ci") or {}).get("points", {})
        n = majority_seeds(exp, ["time_gap", "delivery_time"])
        n_ci = majority_seeds(abc["ci"], ["time_gap", "delivery_time"]) if undilated else 0
        res = load_model()["results"]
        k = _dilations(exp["file"])
        # each point's configuration (its name before any .k=K) and the model's reading that is the
        # testbed's default
        infra = {pid: CI_POINTS[pid.split(".")[0]] for pid in exp["points"]}
        config = {pid: (c, DEFAULT_READING[c[0]]) for pid, c in infra.items()}
        rows = sorted(exp["points"], key=lambda pid: list(CI_POINTS.values()).index(infra[pid]))

        def model(measure: str) -> Callable[[str], str]:
            return lambda pid: _model_cell(res.get(f"ci/{config[pid][0]}/{config[pid][1]}", {}).get(measure))

        # ci.yaml's point of each configuration, where its runs have the model's reading
        match = {pid: _emulated_point("ci", *config[pid]) for pid in rows}

        def k1(measure: str) -> Callable[[str], str]:
            return lambda pid: ours(undilated.get(match[pid][1], {}).get(measure), "num", n_ci) if match[pid] else "–"

        def fidelity(pid: str) -> str:
            return fidelity_counts([r.get("fidelity") for r in exp["runs"] if r.get("point") == pid])

        columns: List[Column] = [
            ("k", lambda pid: f"{k[pid]:g}"),
            ("gap, paper", lambda pid: ABC_PAPER[("ci", config[pid][0])][0]),
            ("gap, model", model("time_gap")),
            ("gap, ours", ours_column(exp["points"], "time_gap", "num", n)),
            (f"gap, ours undilated ({n_ci} seeds, unfaithful)", k1("time_gap")),
            ("delivery, paper", lambda pid: ABC_PAPER[("ci", config[pid][0])][1]),
            ("delivery, model", model("delivery_time")),
            ("delivery, ours", ours_column(exp["points"], "delivery_time", "num", n)),
            ("delivery, ours undilated", k1("delivery_time")),
            ("servers' pooled rate (λt = 15)", ours_column(exp["points"], "server_rate", "num", n)),
            ("slowest server", ours_column(exp["points"], "server_rate_min", "num", n)),
            ("wake-ups late by a tenth", ours_column(exp["points"], "late_share", "pct", n)),
        ]
        if any("loop_lag_ms" in v for v in exp["points"].values()):
            columns.append(("loop lag p99 (ms)", ours_column(exp["points"], "loop_lag_ms", "num", n)))
        columns.append(("runs faithful / degraded / unfaithful", fidelity))
        return (seeds_line(exp, ["time_gap", "delivery_time"]) + f" The model: benchmarks/abc_model.py, 10 runs, "
                f"{about}; undilated: experiments/abc/ci.yaml's same configurations (every run unfaithful).\n\n"
                + table(rows, columns, "point", lambda pid: config[pid][0]))

    block.__name__ = block.__qualname__ = "abc_" + name.replace("-", "_")
    return block


abc_ci_dilation = _ci_dilated("ci-dilation", "the authors' dispatch")
abc_ci_faithful = _ci_dilated("ci-faithful", "the authors' dispatch for the clusters, the testbed's relay (in id order) "
                              "for the rings")


#: this paper's blocks, by name (the name after `generated:` in the document)
BLOCKS: Dict[str, Callable[[], str]] = {
    "abc/dp": abc_dp,
    "abc/dp/verdicts": verdicts_of("abc", "dp"),
    "abc/ring-time-unit": abc_ring_time_unit,
    "abc/ring-time-unit/verdicts": verdicts_of("abc", "ring-time-unit"),
    "abc/ci": abc_ci,
    "abc/ci/verdicts": verdicts_of("abc", "ci"),
    "abc/ci/id-chain": abc_ci_id_chain,
    "abc/ci/start-order": abc_start_order,
    "abc/ci/bends": abc_ci_bends,
    "abc/dp-dilation": points_table("abc", "dp-dilation", DP_DILATION_COLUMNS),
    "abc/dp-dilation/verdicts": verdicts_of("abc", "dp-dilation"),
    "abc/dp-scale": abc_dp_scale,
    "abc/dp-scale/verdicts": verdicts_of("abc", "dp-scale"),
    "abc/ci-dilation": abc_ci_dilation,
    "abc/ci-dilation/verdicts": verdicts_of("abc", "ci-dilation"),
    "abc/ci-faithful": abc_ci_faithful,
    "abc/ci-faithful/verdicts": verdicts_of("abc", "ci-faithful"),
    "abc/model": abc_model,
    "abc/hop-cost": abc_hop_cost,
    "abc/hops": abc_hops,
    "dilation/abc-tree": points_table("dilation", "abc-tree", DILATION_COLUMNS["abc-tree"]),
    "dilation/abc-tree/verdicts": verdicts_of("dilation", "abc-tree"),
}
