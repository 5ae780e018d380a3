"""An experiment's plots and index.html.

One plot per measure against the swept parameter: with a grid, the first grid parameter on the
x axis (numbers and quantities such as `50s` at their value, names as categories) and one series
per scenario and value of the other parameters; without a grid, one bar per scenario. Error bars
are the 95% confidence interval over seeds, drawn only where there is one (a point of one seed
has none); reference values are drawn as red crosses (a range as a red bar) at their point. A
measure with `over_time` gets a second plot: each point's mean curve over seeds, as the papers'
figures plot cumulative means over simulated time, with each point's reference as a dotted level
(a range as a band) in its curve's colour. The verdicts' table shows each verdict with
the intervals it rests on.
"""

from __future__ import annotations

import html
import os
from typing import Any, Dict, List

from spark_analysis.html import fmt, table

from .shapes.common import fmt_interval, group_verdict, shown
from .spec import Experiment


def _errors(rows) -> List[List[float]]:
    """The error bars' lengths below and above each mean; NaN (no bar) where there is no interval."""
    nan = float("nan")
    return [[(r["mean"] - r["ci95_low"]) if r["ci95_low"] is not None and r["mean"] is not None else nan
             for r in rows],
            [(r["ci95_high"] - r["mean"]) if r["ci95_high"] is not None and r["mean"] is not None else nan
             for r in rows]]


def plots(exp: Experiment, summary: List[Dict[str, Any]], curves: Dict[str, Any], out_dir: str) -> Dict[str, List[str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    made: Dict[str, List[str]] = {}
    by = {(row["point"], row["measure"]): row for row in summary}
    for m in exp.measures:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        if exp.grid:
            x = exp.grid[0]
            quantity = x.quantity()
            xs = x.ordered()
            where = dict(zip(xs, x.positions(xs))) if quantity is not None else {v: i for i, v in enumerate(xs)}
            series: Dict[str, List] = {}
            for p in exp.points:
                key = p.scenario.label + "".join(f", {n}={v}" for n, v in p.values[1:])
                series.setdefault(key, []).append(p)
            for label, pts in series.items():
                pts = sorted(pts, key=lambda p: where[p.get(x.short)])
                rows = [by[(p.id, m.name)] for p in pts]
                pos = [where[p.get(x.short)] for p in pts]
                means = [r["mean"] if r["mean"] is not None else float("nan") for r in rows]
                ax.errorbar(pos, means, yerr=_errors(rows), marker="o", capsize=3, label=label)
                _references(ax, pos, rows)
            unit = f" ({quantity[1]})" if quantity is not None and quantity[1] and quantity[0] != "number" else ""
            ax.set_xlabel(x.name + unit)
            if quantity is None or quantity[0] != "number":
                ax.set_xticks([where[v] for v in xs], [str(v) for v in xs])
            ax.legend(fontsize=8)
        else:
            rows = [by[(p.id, m.name)] for p in exp.points]
            pos = list(range(len(rows)))
            means = [r["mean"] if r["mean"] is not None else 0 for r in rows]
            ax.bar(pos, means, yerr=_errors(rows), capsize=4, color="#7aa6d6", label="ours (mean, 95% CI)")
            _references(ax, pos, rows)
            ax.set_xticks(pos, [p.id for p in exp.points], rotation=20 if len(pos) > 4 else 0)
            ax.legend(fontsize=8)
        ax.set_ylabel(m.label)
        ax.set_title(f"{exp.name}: {m.label}", fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        name = f"{m.name}.png"
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        made[m.name] = [name]
        if curves.get(m.name):
            fig, ax = plt.subplots(figsize=(7, 4.2))
            referenced = False
            for pid, pts in curves[m.name].items():
                t = [p[0] for p in pts]
                v = [p[1] if p[1] is not None else float("nan") for p in pts]
                line, = ax.plot(t, v, label=pid)
                referenced |= _reference_level(ax, by.get((pid, m.name)), line.get_color())
            if referenced:
                ax.plot([], [], ":", color="grey", label="reference (in the curve's colour)")
            ax.set_xlabel("time since the run's t0")
            ax.set_ylabel(m.label + " (cumulative mean)")
            ax.set_title(f"{exp.name}: {m.label} over time (mean over seeds)", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            name = f"{m.name}-over-time.png"
            fig.savefig(os.path.join(out_dir, name), dpi=110)
            plt.close(fig)
            made[m.name].append(name)
    return made


def _references(ax, pos, rows) -> None:
    for x, r in zip(pos, rows):
        if r["reference_low"] is None:
            continue
        if r["reference_low"] == r["reference_high"]:
            ax.plot([x], [r["reference_low"]], "x", color="red", markersize=10, mew=2)
        else:
            ax.plot([x, x], [r["reference_low"], r["reference_high"]], color="red", linewidth=4, alpha=0.6)
    if any(r["reference_low"] is not None for r in rows) and "reference" not in ax.get_legend_handles_labels()[1]:
        ax.plot([], [], "x", color="red", mew=2, label="reference")


def _reference_level(ax, row, colour) -> bool:
    """An over-time plot's reference: a dotted level (a range as a faint band between two) in the
    curve's colour, since the papers read their values off such curves; False when the point has none."""
    if not row or row.get("reference_low") is None:
        return False
    low, high = row["reference_low"], row["reference_high"]
    ax.axhline(low, color=colour, linestyle=":", linewidth=1.2)
    if high != low:
        ax.axhline(high, color=colour, linestyle=":", linewidth=1.2)
        ax.axhspan(low, high, color=colour, alpha=0.08)
    return True


def write(exp: Experiment, runner, rows, summary, shapes, curves) -> str:
    made = plots(exp, summary, curves, os.path.join(runner.out, "plots"))
    params = [p.short for p in exp.grid]
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(exp.name)}</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:90%}.valid{color:#080}"
             ".invalid{color:#b00}.unknown{color:#888}.not-shown{color:#a60}img{max-width:100%}</style>",
             f"<h1>Experiment {html.escape(exp.name)}</h1>"]
    if exp.description:
        parts.append(f"<p>{html.escape(exp.description)}</p>")
    states: Dict[str, int] = {}
    for p in runner.planned:
        states[p.status] = states.get(p.status, 0) + 1
    parts.append(f"<p>{len(runner.points)} points × {len(exp.seeds)} seeds = {len(runner.planned)} runs; "
                 f"{len(rows)} analysed. Runs by status: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(states.items())) + ".</p>")
    if shapes:
        parts.append("<h2>Expected shapes</h2><p>Each verdict rests on 95% intervals over the seeds (the kind's "
                     "test: docs/EXPERIMENTS.md); <em>not shown</em> means the intervals cannot tell.</p>")
        srows = []
        for s in shapes:
            judged = []
            for g in s.get("groups", []):
                head = f"[{g['group']}] " if g.get("group") else ""
                tests = "; ".join(f"{t['what']} {fmt_interval(t['estimate'], t['low'], t['high'])} "
                                  f"(expected {t['expect']})" for t in g.get("tests") or [])
                why = f" – {group_verdict(g)}" + (f": {g['reason']}" if g.get("reason") else "")
                judged.append(head + (tests or g.get("detail", "")) + why)
            srows.append(f"<tr><td>{html.escape(s['name'])}</td><td class='{s['verdict'].replace(' ', '-')}'>"
                         f"{html.escape(shown(s))}</td><td>{'<br>'.join(html.escape(j) for j in judged)}</td>"
                         f"<td>{html.escape(s.get('note') or '')}</td></tr>")
        parts.append("<table><thead><tr><th>shape</th><th>verdict</th><th>intervals judged, per combination of "
                     "the free parameters</th><th>note</th></tr></thead><tbody>" + "".join(srows) +
                     "</tbody></table>")
    for m in exp.measures:
        parts.append(f"<h2>{html.escape(m.label)}</h2><p><code>{html.escape('.'.join(m.path))}</code></p>")
        for img in made.get(m.name, []):
            parts.append(f"<img src='plots/{html.escape(img)}' alt='{html.escape(img)}'>")
        mine = [r for r in summary if r["measure"] == m.name]
        parts.append(table(["point"] + params + ["n", "mean", "95% CI", "reference", "ours / reference", "source"],
                            [[r["point"]] + [r.get(p) for p in params] +
                             [r["n"], r["mean"],
                              f"{r['ci95_low']:.4g} – {r['ci95_high']:.4g}" if r["ci95_low"] is not None else None,
                              (f"{r['reference_low']:g}" if r["reference_low"] == r["reference_high"] else
                               f"{r['reference_low']:g} – {r['reference_high']:g}") if r["reference_low"] is not None
                              else None, r["ratio_to_reference"], r["reference_source"]] for r in mine]))
    parts.append("<h2>Runs</h2>")
    run_rows = []
    for r in rows:
        link = f"<a href='runs/{html.escape(r['run'])}/report/index.html'>{html.escape(r['run'])}</a>"
        cells = "".join(f"<td>{fmt(r.get(m.name))}</td>" for m in exp.measures)
        fid = r.get("fidelity") or "unknown"
        css = {"faithful": "valid", "degraded": "not-shown", "unfaithful": "invalid"}.get(fid, "unknown")
        run_rows.append(f"<tr><td>{link}</td><td>{fmt(r['seed'])}</td><td>{fmt(r['host'])}</td>"
                        f"<td>{fmt(r['wall_s'])}</td><td class='{css}'>{html.escape(fid)}</td>{cells}</tr>")
    for p in runner.planned:
        if p.status in ("failed", "interrupted", "pending"):
            run_rows.append(f"<tr><td>{html.escape(p.name)}</td><td>{p.seed}</td><td>{fmt(p.host)}</td><td>–</td>"
                            f"<td>–</td><td colspan='{len(exp.measures)}' class='invalid'>{html.escape(p.status)}"
                            f"{': ' + html.escape(p.error) if p.error else ''}</td></tr>")
    parts.append("<p>Fidelity: whether the machine kept up with what the run emulated (each run's report says "
                 "why); a shape resting on an unfaithful run is not shown unless the experiment accepts it.</p>")
    parts.append("<table><thead><tr><th>run</th><th>seed</th><th>host</th><th>wall s</th><th>fidelity</th>"
                 + "".join(f"<th>{html.escape(m.name)}</th>" for m in exp.measures)
                 + "</tr></thead><tbody>" + "".join(run_rows) + "</tbody></table>")
    benched = getattr(runner, "benched", {})
    if benched:
        parts.append("<p>Hosts that left the pool: " + "; ".join(
            f"{html.escape(h)} ({html.escape(why)})" for h, why in benched.items()) + ".</p>")
    parts.append("<p>Tables: runs.csv / runs.parquet (every run), summary.csv / summary.parquet (per point), "
                 "shapes.csv / shapes.parquet (every interval a verdict rests on), shapes.json, over_time.json; "
                 "the plan and the ledger of runs: experiment.json.</p>")
    path = os.path.join(runner.out, "index.html")
    with open(path, "w") as fh:
        fh.write("\n".join(parts))
    return path
