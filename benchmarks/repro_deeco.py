"""The DEECo thesis's generated blocks of docs/REPRODUCTION.md (deeco/...): Table 5 and the
knowledge ages beside ours, from benchmarks/results/deeco_thesis.json, deeco_flood.json and
deeco_ages.json. Registered in benchmarks/reproduction.py."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from repro_common import (HERE, ROOT, load, plus_minus, ours, paper, ratio_cell, Column, table, seeds_line,
                          majority_seeds, values_cell, verdicts_of)


FLOOD = "deeco_flood.json"  # benchmarks/deeco_flood.py: not an experiment set


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


#: this paper's blocks, by name (the name after `generated:` in the document)
BLOCKS: Dict[str, Callable[[], str]] = {
    "deeco/manet-p": lambda: _deeco_p_table("manet-p", [0, 0.5, 0.9, 1.0]),
    "deeco/manet-p/age": lambda: _deeco_age_table("manet-p", [("simple.P=0.9", "simple, P = 0.9"),
                                                               ("boundary.P=0.9", "boundary, P = 0.9")]),
    "deeco/manet-p/verdicts": verdicts_of("deeco", "manet-p"),
    "deeco/manet-p-sparse": lambda: _deeco_p_table("manet-p-sparse", [0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
    "deeco/manet-p-sparse/verdicts": verdicts_of("deeco", "manet-p-sparse"),
    "deeco/manet-200": lambda: _deeco_p_table("manet-200", [0.5, 1.0]),
    "deeco/manet-200/verdicts": verdicts_of("deeco", "manet-200"),
    "deeco/age": lambda: _deeco_age_table("age", [("simple", "simple gossip"), ("boundary", "boundary"),
                                                  ("pp-27", "push-pull, configuration 27")]),
    "deeco/age-sparse": lambda: _deeco_age_table("age-sparse", [
        ("simple", "simple gossip"), ("boundary", "boundary")] + [
        (f"pp-{c}", f"push-pull, configuration {c}") for c in (24, 27, 28, 29, 34, 40, 54)]),
    "deeco/age-sparse/verdicts": verdicts_of("deeco", "age-sparse"),
    # the thesis's scale on both media (issue 31): placed in the document once their runs are in
    "deeco/sumo-p/kernel": lambda: _deeco_p_table("sumo-p", TABLE_5_P, "kernel", ages=True),
    "deeco/sumo-p/wifi": lambda: _deeco_p_table("sumo-p", TABLE_5_P, "wifi", ages=True),
    "deeco/sumo-p/verdicts": verdicts_of("deeco", "sumo-p"),
    "deeco/sumo-p/flood": deeco_flood,
    "deeco/sumo-p/coverage": deeco_sumo_p_coverage,
    "deeco/sumo-age": lambda: deeco_sumo_age("ages"),
    "deeco/sumo-age/messages": lambda: deeco_sumo_age("messages"),
    "deeco/sumo-age/ways": deeco_sumo_age_ways,
    "deeco/sumo-age/verdicts": verdicts_of("deeco", "sumo-age"),
    "deeco/ip-groupers": deeco_ip,
    "deeco/ip-groupers/verdicts": verdicts_of("deeco", "ip-groupers"),
}
