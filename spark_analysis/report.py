"""The report of an analysis: results.json, PNG plots and an index.html a person reads in a browser."""

from __future__ import annotations

import html
import json
import os
import shutil
from typing import Dict, List, Optional, Tuple

import matplotlib

from . import fidelity
from .html import fmt, table
from .timeline_marks import mark_faults
from .protocols import plugins

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: the Parquet tables every report holds beside results.json (spark_analysis.job writes them)
TABLES = ("packets.parquet", "events.parquet", "receptions.parquet", "messages.parquet")


def plot_latency_cdf(path: str, samples: List[float], others: Dict[str, List[float]] = None) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, data in [("this run", samples)] + list((others or {}).items()):
        if len(data):
            x = np.sort(np.asarray(data))
            ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("first-copy latency (ms)")
    ax.set_ylabel("share of receptions")
    ax.set_title("Latency CDF")
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_series(path: str, series: List[dict], timeline: List[dict], t0: Optional[int]) -> None:
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(8, 6.5), sharex=True)
    sec = [r["second"] for r in series]
    a1.plot(sec, [r["delivery_ratio"] if r["delivery_ratio"] is not None else np.nan for r in series],
            marker=".", color="tab:blue")
    a1.set_ylabel("delivery ratio")
    a1.set_ylim(-0.05, 1.05)
    a2.plot(sec, [r.get("latency_mean_ms") if r.get("latency_mean_ms") is not None else np.nan for r in series],
            marker=".", label="mean")
    a2.plot(sec, [r.get("latency_p95_ms") if r.get("latency_p95_ms") is not None else np.nan for r in series],
            marker=".", label="p95")
    a2.set_ylabel("latency (ms)")
    a2.legend(fontsize=7)
    a3.plot(sec, [r["sent"] for r in series], label="sent")
    a3.plot(sec, [r["delivered"] for r in series], label="delivered")
    a3.plot(sec, [r["packets_sent"] for r in series], label="packets sent", alpha=0.6)
    a3.set_ylabel("per second")
    a3.set_xlabel("seconds since t0 (by send time)")
    a3.legend(fontsize=7)
    for ax in (a1, a2, a3):
        mark_faults(ax, timeline, t0)
        ax.grid(alpha=0.3)
    a1.set_title("Over time (dashed: timeline actions; red faults, green recoveries)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_heatmap(path: str, cells: List[dict], node_order: List[str]) -> None:
    if not cells:
        return
    secs = sorted({c["second"] for c in cells})
    nodes = [n for n in node_order if any(c["node"] == n for c in cells)] or sorted({c["node"] for c in cells})
    grid = np.full((len(nodes), len(secs)), np.nan)
    ni = {n: i for i, n in enumerate(nodes)}
    si = {s: i for i, s in enumerate(secs)}
    for c in cells:
        if c["node"] in ni and c["intended"]:
            grid[ni[c["node"]], si[c["second"]]] = c["reached"] / c["intended"]
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.12 * len(nodes) + 1)))
    im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1,
                   extent=(secs[0] - 0.5, secs[-1] + 0.5, len(nodes) - 0.5, -0.5))
    if len(nodes) <= 60:
        ax.set_yticks(range(len(nodes)))
        ax.set_yticklabels(nodes, fontsize=5 if len(nodes) > 30 else 7)
    ax.set_xlabel("seconds since t0 (by send time)")
    ax.set_title("Delivery ratio per receiving node and second")
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_types(path: str, overhead: dict) -> None:
    by_type = overhead.get("by_type", {})
    if not by_type:
        return
    names = sorted(by_type, key=lambda t: -by_type[t]["packets"])
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(names, [by_type[n]["packets"] for n in names], color="tab:blue", label="packets")
    ax.bar(names, [by_type[n]["retransmissions"] for n in names], color="tab:orange", label="retransmissions")
    ax.set_ylabel("packets sent")
    ax.set_title("Messages by type")
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=20, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_comparison(out_dir: str, comparison: dict) -> List[str]:
    """One bar chart per measure across the runs analysed together (at most 16 inches wide: an
    experiment analyses a hundred runs at once). The job draws them once and every run's report
    gets a copy (write_report's `shared`)."""
    files = []
    runs = comparison["runs"]
    for i, (label, values) in enumerate(comparison["metrics"].items()):
        if all(v is None for v in values):
            continue
        fig, ax = plt.subplots(figsize=(min(16, max(4, 0.6 * len(runs) + 2)), 2.8))
        ax.bar(range(len(runs)), [v if v is not None else 0 for v in values], color="tab:purple")
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(runs, rotation=30, ha="right", fontsize=6)
        ax.set_title(label, fontsize=9)
        fig.tight_layout()
        name = f"compare_{i:02d}.png"
        fig.savefig(os.path.join(out_dir, name), dpi=100)
        plt.close(fig)
        files.append(name)
    return files


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left}
.valid{color:#080;font-weight:bold}.invalid{color:#b00;font-weight:bold}.unknown{color:#a60;font-weight:bold}
pre{background:#f7f7f7;padding:6px;font-size:12px;overflow-x:auto}img{max-width:100%}"""


def write_plots(out_dir: str, results: dict, latency_samples: List[float], heat: List[dict]) -> None:
    """One run's plots, from its measures alone (the analysis draws them while the checks finish)."""
    os.makedirs(out_dir, exist_ok=True)
    run = results["run"]
    t0 = run.get("t0_ns")
    plot_latency_cdf(os.path.join(out_dir, "latency_cdf.png"), latency_samples)
    plot_series(os.path.join(out_dir, "timeseries.png"), results.get("series", []), run.get("timeline", []), t0)
    node_order = list(results.get("per_node", {}))
    plot_heatmap(os.path.join(out_dir, "heatmap.png"), heat, sorted(node_order, key=_natural))
    plot_types(os.path.join(out_dir, "types.png"), results.get("overhead", {}))
    fidelity.write_plot(out_dir, results.get("fidelity"), run.get("timeline", []), t0)


def write_report(out_dir: str, results: dict, shared: Optional[Tuple[str, List[str]]] = None) -> None:
    """results.json, the comparison plots of several runs and index.html, beside write_plots' plots.
    `shared`: (a directory, its files) of comparison plots drawn once for all the runs of a job,
    copied here instead of drawn again."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=_json_default)
    if shared is not None:
        compare_files = list(shared[1])
        for name in compare_files:
            shutil.copyfile(os.path.join(shared[0], name), os.path.join(out_dir, name))
    else:
        compare_files = plot_comparison(out_dir, results["comparison"]) if results.get("comparison") else []
    with open(os.path.join(out_dir, "index.html"), "w") as fh:
        fh.write(render_html(results, out_dir, compare_files))


def _natural(name: str):
    import re
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.ndarray, tuple, set)):
        return list(o)
    return str(o)


def render_html(res: dict, out_dir: str, compare_files: List[str]) -> str:
    run = res["run"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Run {html.escape(run['id'])}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>Run {html.escape(run['id'])}</h1>",
             table(["scenario", "status", "seed", "duration (s)", "nodes", "started", "time dilation"],
                    [[run.get("scenario"), run.get("status"), run.get("seed"), run.get("duration_s"), run.get("nodes"),
                      run.get("started_at"), run.get("time_dilation", 1.0)]])]
    if run.get("time_dilation", 1.0) != 1.0:
        parts.append(f"<p>The run's world ran {run['time_dilation']:g} times slower than the wall clock: every time "
                     "in this report is virtual (docs/ANALYSIS.md).</p>")
    if run.get("limits_hit"):
        parts.append("<h2>Resource limits met</h2>")
        parts.append(table(["node", "processes ended by the OOM killer (memory limit)", "forks refused (pids limit)"],
                           [[node, hit.get("oom", 0), hit.get("pids_limit", 0)]
                            for node, hit in run["limits_hit"].items()]))
        parts.append("<p class='invalid'>These nodes count as down from the first such event on (the timeline's "
                     "<code>oom</code> and <code>pids_limit</code> entries), as after a kill.</p>")
    parts.append(fidelity.html(res.get("fidelity"), out_dir))
    inp = res.get("input", {})
    parts.append("<h2>Input</h2>")
    parts.append(table(["testbed packets", "other packets", "pcap files", "damaged files", "unreadable log lines"],
                        [[inp.get("testbed_packets"), inp.get("other_packets"), len(inp.get("pcaps", {})),
                          len({d["file"] for d in inp.get("damage", [])}), inp.get("unreadable_log_lines")]]))
    if inp.get("damage"):
        parts.append(table(["file", "offset", "damage"], [[d["file"], d["offset"], d["reason"]]
                                                          for d in inp["damage"]]))
    if inp.get("undeclared_log_fields"):
        parts.append("<p>Log fields no event-log declaration names (not read; see docs/EVENTS.md): "
                     + html.escape(", ".join(inp["undeclared_log_fields"])) + "</p>")
    parts.append("<h2>Messages on the wire</h2>")
    rows = []
    for t, m in sorted(res.get("messages", {}).items(), key=lambda kv: (kv[0] != "all", kv[0])):
        lat = m.get("first_copy_latency", {})
        dall = m.get("delivery_time_to_all", {})
        rows.append([t, m.get("sent"), m.get("intended_receivers"), m.get("received"), m.get("delivery_ratio"),
                     lat.get("min_ms"), lat.get("q1_ms"), lat.get("median_ms"), lat.get("q3_ms"), lat.get("p95_ms"),
                     lat.get("p99_ms"), lat.get("max_ms"), dall.get("mean_ms"), m.get("duplicates_received")])
    parts.append(table(["type", "sent", "intended receivers", "reached", "delivery ratio", "latency min (ms)",
                         "q1", "median", "q3", "p95", "p99", "max", "delivery time to all, mean (ms)",
                         "duplicates received"], rows))
    gap = res.get("messages", {}).get("all", {}).get("message_time_gap")
    if gap:
        parts.append(f"<p>Message time gap (mean over {gap['receivers']} receivers): "
                     f"{fmt(gap['mean_ms'])} ms (std {fmt(gap['std_ms'])} ms)</p>")
    ov = res.get("overhead", {})
    if ov:
        parts.append("<h2>Overhead</h2>")
        rows = [[t, e["packets"], e["bytes"], e["header_bytes"], e["retransmissions"], e.get("packets_per_delivered"),
                 e.get("bytes_per_delivered")] for t, e in sorted(ov.get("by_class", {}).items())]
        rows += [[f"type {t}", e["packets"], e["bytes"], e["header_bytes"], e["retransmissions"],
                  e.get("packets_per_delivered"), e.get("bytes_per_delivered")]
                 for t, e in sorted(ov.get("by_type", {}).items())]
        parts.append(table(["class / type", "packets", "bytes", "header bytes", "retransmissions",
                             "packets per delivered message", "bytes per delivered message"], rows))
    sent = res.get("sent", {})
    if sent:
        parts.append("<h2>Messages sent (event logs)</h2>")
        fields = ["messages", "relayed_messages", "transmissions", "relayed_transmissions", "datagrams", "bytes"]
        rows = [[t] + [e.get(f) for f in fields]
                for t, e in sorted(sent.items(), key=lambda kv: (kv[0] == "total", kv[0]))]
        parts.append(table(["type", "send events", "of them relays", "transmissions", "of them relays", "datagrams",
                            "bytes"], rows))
        parts.append("<p>Every send event, relays included. A send to a list of nodes is one transmission "
                     "per node named; a broadcast, or a send to one node, is one. Datagrams and bytes count "
                     "each transmission's.</p>")
    app = res.get("application", {})
    if app:
        parts.append("<h2>Application (event logs)</h2>")
        rows = []
        for t, a in sorted(app.items(), key=lambda kv: (kv[0] != "all", kv[0])):
            lat, age = a.get("delivery_latency", {}), a.get("knowledge_age", {})
            rows.append([t, a.get("sent"), a.get("delivered"), a.get("distinct_deliveries"), lat.get("median_ms"),
                         lat.get("p95_ms"), lat.get("max_ms"), age.get("median_ms"), age.get("p95_ms")])
        parts.append(table(["type", "sent", "delivered", "distinct (node, message)", "latency median (ms)", "p95",
                             "max", "knowledge age median (ms)", "p95"], rows))
    g = res.get("gossip", {})
    if g:
        parts.append("<h2>Dissemination measures</h2>")
        parts.append(table(["reliability", "atomicity", "bimodality", "RMR", "control overhead",
                             "convergence after last fault (s)"],
                            [[g.get("reliability_mean"), g.get("atomicity"), g.get("bimodality"), g.get("rmr"),
                              g.get("control_overhead"), g.get("convergence_s")]]))
    for plugin in plugins():
        if res.get(plugin.NAME):
            parts.append(plugin.html(res[plugin.NAME]))
    if res.get("radio"):
        from .radio_report import html as radio_html
        parts.append(radio_html(res["radio"], out_dir))
    parts.append(render_errors(res.get("errors") or {}))
    parts.append("<h2>Property checks</h2>")
    rows = []
    for c in res.get("checks", []):
        verdict = c.get("verdict")
        anomalies = ", ".join(f"{k}: {v}" for k, v in (c.get("anomalies") or {}).items() if v)
        rows.append((c.get("check"), verdict, anomalies))
    parts.append("<table><thead><tr><th>check</th><th>verdict</th><th>anomalies</th></tr></thead><tbody>"
                 + "".join(f"<tr><td>{html.escape(str(a))}</td><td class='{html.escape(str(b))}'>{html.escape(str(b))}"
                           f"</td><td>{html.escape(c)}</td></tr>" for a, b, c in rows) + "</tbody></table>")
    for c in res.get("checks", []):
        parts.append(render_counterexamples(c, run.get("t0_ns")))
    parts.append("<h2>Plots</h2>")
    for name, alt in (("timeseries.png", "over time"), ("latency_cdf.png", "latency CDF"),
                      ("heatmap.png", "per-node heat map"), ("types.png", "messages by type")):
        if os.path.exists(os.path.join(out_dir, name)):
            parts.append(f"<p><img src='{name}' alt='{alt}'></p>")
    per_node = res.get("per_node", {})
    if per_node:
        parts.append("<h2>Per node</h2>")
        rows = [[n, e.get("sent"), e.get("delivered"), e.get("intended"), e.get("reached"), e.get("delivery_ratio"),
                 e.get("latency_mean_ms"), e.get("packets_sent"), e.get("packets_received")]
                for n, e in sorted(per_node.items(), key=lambda kv: _natural(kv[0]))]
        parts.append(table(["node", "sent", "delivered", "intended receptions", "reached", "delivery ratio",
                             "latency mean (ms)", "packets sent", "packets received"], rows))
    comp = res.get("comparison")
    if comp:
        parts.append("<h2>Compared runs</h2>")
        rows = [[label] + values for label, values in comp["metrics"].items()]
        parts.append(table(["metric"] + comp["runs"], rows))
        parts += [f"<p><img src='{f}'></p>" for f in compare_files]
    parts.append("<p>Tables: " + ", ".join(f"<a href='{name}'>{name}</a>" for name in TABLES)
                 + "; all figures in <a href='results.json'>results.json</a>.</p></body></html>")
    return "\n".join(parts)


def _is_time(key: str, value) -> bool:
    """A counterexample field holding an absolute time in ns (sent_at, delivered_later_t, ...)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 10 ** 15 and \
        (key == "t" or key.endswith(("_at", "_t", "_ns")))


def _cell(key: str, value, t0: Optional[int]) -> str:
    if value is None:
        return "–"
    if _is_time(key, value):
        return f"{(value - t0) / 1e9:.6f}" if t0 else str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(json.dumps(v, default=_json_default) if isinstance(v, (dict, list)) else str(v)
                         for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=_json_default)
    return str(value)


def render_counterexamples(check: dict, t0: Optional[int]) -> str:
    """A check's counterexamples as one table per anomaly type, times in seconds since t0, with
    the raw JSON one click away."""
    found = {k: v for k, v in (check.get("counterexamples") or {}).items() if v}
    if not found:
        return ""
    name = html.escape(str(check.get("check")))
    parts = [f"<h3 id='cex-{name}'>{name}: counterexamples</h3>"]
    for kind, examples in found.items():
        keys: List[str] = []
        for example in examples:
            keys += [k for k in example if k not in keys]
        heads = [k.replace("_", " ") + (" (s since t0)" if t0 and any(_is_time(k, e.get(k)) for e in examples)
                                        else "") for k in keys]
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(k, e.get(k), t0))}</td>" for k in keys) + "</tr>"
                       for e in examples)
        count = (check.get("anomalies") or {}).get(kind)
        parts.append(f"<p>{html.escape(kind)}: {fmt(count)} in all; the first {len(examples)}:</p>"
                     "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                     + f"</tr></thead><tbody>{rows}</tbody></table>")
    raw = json.dumps(found, indent=1, default=_json_default)
    parts.append(f"<details><summary>raw JSON</summary><pre>{html.escape(raw)}</pre></details>")
    return "\n".join(parts)


def render_errors(errors: dict) -> str:
    """The roles' errors: how many, where, and the first ones with their tracebacks."""
    if not errors.get("count"):
        return "<h2>Errors in roles</h2><p>None: no role raised an exception.</p>"
    parts = [f"<h2>Errors in roles</h2><p class='invalid'>{errors['count']} error(s) raised by roles "
             f"(agents log each as an error event): "
             + html.escape(", ".join(f"{n} on {node}" for node, n in errors.get("nodes", {}).items())) + "</p>"]
    rows = "".join(
        f"<tr><td>{html.escape(str(e.get('node')))}</td><td>{fmt(e.get('t_s'))}</td>"
        f"<td>{html.escape(str(e.get('where')))}</td><td>{html.escape(str(e.get('error')))}"
        f"<details><summary>traceback</summary><pre>{html.escape(str(e.get('traceback') or ''))}</pre></details></td></tr>"
        for e in errors.get("first", []))
    parts.append("<table><thead><tr><th>node</th><th>t (s since t0)</th><th>where</th><th>error</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>")
    return "\n".join(parts)
