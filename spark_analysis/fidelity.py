"""Did the machine keep up? A run's `fidelity` section: each indicator with its thresholds and a
verdict, and the run's verdict, **faithful**, **degraded** or **unfaithful**, with the reasons in
words (docs/ANALYSIS.md, "Fidelity").

A container-based emulator is faithful only while the machine keeps up with what it emulates
(Handigol et al., CoNEXT 2012, whose Mininet-HiFi monitors timing invariants). The inputs:

- the agents' `fidelity` events (docs/EVENTS.md): how late their timers woke against the time
  they were meant for, and against their period; ticks their periodic tasks skipped; the event
  loop's lag; their CPU;
- the run's `host.jsonl` (docs/RUNDIR.md, testbed/monitor.py): CPU, run queue, pressure stalls,
  memory, each container's CPU throttling, every second;
- the manifest: the captures' kernel drops, the radio ticker's lateness and skipped ticks, the
  shaped links' queue counters.

Only what happened from the workload's start (t0) to a second after the quiet period counts: the
warm-up starts containers and the end stops them, both busy by design. An indicator with no data (an image that writes no `fidelity` events, a run
from before the monitor) is "not measured" and does not judge; a run with no indicator measured
is "unknown".

The indicators that show the emulation itself falling behind (timers late by a tenth of their
period, ticks skipped, the loop's lag, throttling, memory stalls, the radio ticker) can make a
run unfaithful; CPU saturation only degrades it (a machine at 100% may still keep up: lateness
tells), and capture drops degrade it from the first dropped packet (the analysis misses what the
capture lost) and make it unfaithful beyond 1%.

The shaped links' queue drops (the manifest's `cables.queues`) are reported beside the verdict
(`shaping`), not judged: a full queue at an emulated bottleneck is the link doing what it emulates.

The indicators and their default thresholds are testbed/monitor.py's THRESHOLDS; a scenario's
`fidelity:` mapping sets its own (same keys, each [degraded above, unfaithful above], null for
no such level).
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from agents.clock import bucket_upper_us, quantile
from testbed.monitor import AFTER_DOWN_NS, MEANING, SATURATED
from testbed.monitor import THRESHOLDS as DEFAULTS

VERDICTS = ("faithful", "degraded", "unfaithful")
#: the agents' state events the section reads (start)
STATES = ("workload started",)


def thresholds(manifest: dict) -> Dict[str, Tuple[Optional[float], Optional[float]]]:
    """The defaults, with the scenario's own `fidelity:` thresholds over them."""
    out = dict(DEFAULTS)
    own = ((manifest.get("scenario") or {}).get("fidelity") or {})
    for key, pair in own.items():
        if key in out and isinstance(pair, (list, tuple)) and len(pair) == 2:
            out[key] = (pair[0], pair[1])
    return out


def read_host(read_text, uri: str, virtual=lambda t: t) -> Optional[List[dict]]:
    """The lines of RUN_DIR/host.jsonl (None when the run has none); `read_text(uri)` returns a
    file's text or None; `virtual(t)` turns a line's wall-clock stamp into the run's virtual time
    (spark_analysis.inputs.virtual_ns). A line that is not JSON (a run killed mid-write) is skipped."""
    text = read_text(uri.rstrip("/") + "/host.jsonl")
    if text is None:
        return None
    lines = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("t"), int):
            value["t"] = virtual(value["t"])
            lines.append(value)
    return lines


def start(manifest: dict, states) -> Optional[Dict[str, Any]]:
    """How the agents that began with the workload began it, from their first `workload started`
    events (a pandas frame of `state` events, possibly empty; nodes the timeline held at the
    start are left out): how many, the spread from the first to the last in virtual ms, and
    Kendall's tau of their order against the topology's node order (1.0: one by one in node
    order). Told, not judged: a start that follows the topology can carry its order through a
    run (docs/REPRODUCTION.md, AbC, "The start order"). None when no agent logged one."""
    if states is None or len(states) == 0 or "state" not in states:
        return None
    rows = states[states["state"] == "workload started"]
    held = {node for node, spans in held_intervals(manifest).items()
            if any(begin <= int(manifest.get("t0_ns") or 0) for begin, _ in spans)}
    first: Dict[str, int] = {}
    for node, t in zip(rows["node"], rows["t"]):
        if node not in held and (node not in first or int(t) < first[node]):
            first[node] = int(t)
    if not first:
        return None
    place = {n: i for i, n in enumerate((manifest.get("topology") or {}).get("nodes") or {})}
    ordered = sorted((t, place[n]) for n, t in first.items() if n in place)
    tau = None
    if len(ordered) >= 2:
        from scipy.stats import kendalltau

        value = kendalltau(range(len(ordered)), [i for _, i in ordered]).statistic
        tau = None if math.isnan(value) else round(float(value), 4)
    return {"agents": len(first), "spread_ms": round((max(first.values()) - min(first.values())) / 1e6, 3),
            "order_vs_nodes": tau}


def measures(manifest: dict, t0: int, events, host: Optional[List[dict]],
             shortfalls: Sequence[Optional[dict]] = (), states=None) -> Dict[str, Any]:
    """The `fidelity` section of a run's results from its agents' `fidelity` events (a pandas
    frame, possibly empty), its host samples (None: not sampled), its manifest, the rate
    shortfalls the protocol analyses found (each {"value", "where", "achieved", "asked", "unit"},
    spark_analysis/protocols: a module's optional `shortfall(section)`), and its agents' `state`
    events (the start, `start()`)."""
    limits = thresholds(manifest)
    values: Dict[str, Optional[float]] = {}
    details: Dict[str, Any] = {}
    end = end_of_run(manifest)
    windows = _windows(events, t0, held_intervals(manifest), float(manifest.get("time_dilation") or 1.0), end)
    over_time: Dict[str, list] = {}
    if windows:
        periodic = sum(w["periodic"] for w in windows)
        late = sum(w["late_periodic"] for w in windows)
        skipped = sum(w["skipped"] for w in windows)
        hist = _merged_histogram(windows)
        lags = sorted(w["loop_lag_us"] / 1000 for w in windows)
        values["late_share"] = late / periodic if periodic else None
        values["skipped_share"] = skipped / (periodic + skipped) if periodic + skipped else None
        values["loop_lag_ms"] = quantile(lags, 0.99)
        per_node = _per_node(windows)
        details["timers"] = {
            "agents": len(per_node), "wakeups": sum(w["wakeups"] for w in windows), "periodic": periodic,
            "late_periodic": late, "skipped": skipped,
            "late_ms": {"p50": _histquantile(hist, 0.5), "p99": _histquantile(hist, 0.99),
                        "max": round(max(w["late_max_us"] for w in windows) / 1000, 3)},
            "loop_lag_ms": {"p50": round(quantile(lags, 0.5), 3), "p99": round(quantile(lags, 0.99), 3),
                            "max": round(lags[-1], 3)},
            "cpu_per_agent": _cpu_per_agent(windows),
            "worst_nodes": sorted(per_node.values(), key=lambda n: (-n["late_share"], n["node"]))[:5],
        }
        over_time.update(_timer_series(windows, t0))
    host_lines = [h for h in (host or []) if t0 < h["t"] <= end]
    if host_lines:
        busy = [float(h.get("cpu_busy") or 0.0) for h in host_lines]
        seconds = sum(float(h.get("interval_s") or 0.0) for h in host_lines)
        saturated = sum(float(h.get("interval_s") or 0.0) for h, b in zip(host_lines, busy) if b >= SATURATED)
        values["cpu_saturated_share"] = saturated / seconds if seconds else None
        values["memory_full_share"] = _stall_share(host_lines, "memory_full")
        values["throttled_share"], throttled_node = _throttled(host_lines, seconds)
        details["host"] = {
            "seconds": round(seconds, 1), "cores": host_lines[-1].get("cores"),
            "cpu_busy_mean": round(sum(busy) / len(busy), 4), "cpu_saturated_s": round(saturated, 1),
            "run_queue_mean": _mean([h.get("procs_running") for h in host_lines]),
            "run_queue_max": max((h.get("procs_running") or 0) for h in host_lines),
            "cpu_some_share": _stall_share(host_lines, "cpu_some"),
            "memory_some_share": _stall_share(host_lines, "memory_some"),
            "mem_available_min_mib": min((h.get("mem_available_mib") or 0) for h in host_lines),
            "most_throttled_node": throttled_node,
        }
        over_time["host_t_s"] = [round((h["t"] - t0) / 1e9, 2) for h in host_lines]
        over_time["cpu_busy"] = busy
    elif host is not None:
        details["host"] = {"seconds": 0}
    capture = manifest.get("capture") or {}
    if capture:
        drops = sum(int(c.get("kernel_drops") or 0) for c in capture.values() if isinstance(c, dict))
        got = sum(int(c.get("captured") or 0) for c in capture.values() if isinstance(c, dict))
        values["capture_drop_share"] = drops / (drops + got) if drops + got else 0.0
        details["capture"] = {"kernel_drops": drops, "captured": got}
    radio = manifest.get("radio") or {}
    segments = [s for s in radio.values() if isinstance(s, dict) and s.get("ticks_scheduled")]
    if segments:
        seg = segments[0]  # one ticker drives every segment: the same figures in each
        tick_ms = 1000 * float(seg.get("tick_s") or 0) or None
        late = seg.get("tick_late_ms_p99")
        values["radio_tick_late_share"] = late / tick_ms if late is not None and tick_ms else None
        values["radio_skipped_share"] = seg.get("ticks_skipped", 0) / seg["ticks_scheduled"]
        details["radio"] = {k: seg.get(k) for k in ("ticks_scheduled", "ticks_skipped", "tick_late_ms_p99",
                                                     "tick_late_ms_max", "tick_s")}
    lags = {name: s["realtime_lag_ms"] for name, s in radio.items()
            if isinstance(s, dict) and isinstance(s.get("realtime_lag_ms"), dict) and s["realtime_lag_ms"].get("samples")}
    if lags:  # one ns-3 process carries every wifi segment: the same figures in each
        lag = next(iter(lags.values()))
        values["wifi_lag_ms"] = max(float(lag.get("p99") or 0.0), 0.0)
        details["wifi"] = {"segments": sorted(lags), **{k: lag.get(k) for k in ("samples", "p50", "p99", "max")}}
    queues = [q for q in ((manifest.get("cables") or {}).get("queues") or []) if isinstance(q, dict)]
    if queues:  # the emulated bottlenecks' own drops: told, not judged (docs/RUNDIR.md)
        frames = sum(int(q.get("frames") or 0) for q in queues)
        dropped = sum(int(q.get("dropped") or 0) for q in queues)
        worst = max(queues, key=lambda q: (int(q.get("dropped") or 0), q.get("link", "")))
        details["shaping"] = {
            "queues": len(queues), "frames": frames, "dropped": dropped,
            "drop_share": round(dropped / (frames + dropped), 6) if frames + dropped else 0.0,
            "most_dropped": ({k: worst.get(k) for k in ("link", "from", "to", "frames", "dropped")}
                             if worst.get("dropped") else None)}
    began = start(manifest, states)
    if began is not None:
        details["start"] = began
    found = [s for s in shortfalls if s]
    if found:
        worst = max(found, key=lambda s: s["value"])
        values["rate_shortfall"] = worst["value"]
        details["shortfall"] = worst
    indicators = {}
    for key, (degraded, unfaithful) in limits.items():
        value = values.get(key)
        indicators[key] = {"value": None if value is None else round(value, 6), "degraded_above": degraded,
                           "unfaithful_above": unfaithful, "meaning": MEANING[key],
                           "verdict": "not measured" if value is None else _level(value, degraded, unfaithful)}
    judged = [i for i in indicators.values() if i["verdict"] in VERDICTS]
    if not judged:
        verdict = "unknown"
    else:
        verdict = max((i["verdict"] for i in judged), key=VERDICTS.index)
    where = {"rate_shortfall": _shortfall_where(details["shortfall"])} if "shortfall" in details else {}
    reasons = [_reason(key, i, where.get(key)) for key, i in indicators.items()
               if i["verdict"] in ("degraded", "unfaithful")]
    if verdict in ("unknown", "faithful") and not windows and not host_lines:
        # the captures or the radio alone cannot tell that the emulation kept up
        verdict = "unknown"
        reasons = ["the agents' timers and the machine were not measured: the agents wrote no fidelity events "
                   "and the run has no host.jsonl (a run from before the fidelity monitor, or an image that "
                   "does not write them)"]
    return {"verdict": verdict, "reasons": reasons, "indicators": indicators,
            "not_measured": sorted(k for k, i in indicators.items() if i["verdict"] == "not measured"),
            **details, "over_time": over_time}


def _level(value: float, degraded: Optional[float], unfaithful: Optional[float]) -> str:
    if unfaithful is not None and value > unfaithful:
        return "unfaithful"
    if degraded is not None and value > degraded:
        return "degraded"
    return "faithful"


def _shortfall_where(short: dict) -> str:
    """Where a rate shortfall was, the rate achieved against the rate asked and, when known, the
    share of the run the role spent transmitting (what turns the rate's share into time lost)."""
    busy = short.get("busy_share")
    return (f"{short['where']}, {short['achieved']:.4g} of {short['asked']:.4g} {short['unit']}"
            + (f", transmitting {busy:.0%} of the run" if busy is not None else ""))


def _reason(key: str, indicator: dict, where: Optional[str] = None) -> str:
    value = indicator["value"]
    shown = f"{value:.3g} ms" if key.endswith("_ms") else f"{100 * value:.3g}%"
    if where:
        shown += f" ({where})"
    limit = indicator["unfaithful_above"] if indicator["verdict"] == "unfaithful" else indicator["degraded_above"]
    limit_shown = f"{limit:g} ms" if key.endswith("_ms") else f"{100 * limit:g}%"
    return f"{MEANING[key]}: {shown} (above {limit_shown}: {indicator['verdict']})"


def held_intervals(manifest: dict) -> Dict[str, List[Tuple[int, Optional[int]]]]:
    """node → the intervals [start, end] (end None: to the run's end) in which the timeline held
    its timers (paused, killed, stopped, or not yet started), from the actions that succeeded."""
    from testbed.actions import timers

    from .history import down_intervals

    return down_intervals(manifest, lambda name: {"held": "down", "released": "up"}.get(timers(name)))


def end_of_run(manifest: dict) -> float:
    """The end of the quiet period (ns, the manifest's clock), a second after it: what comes later
    is the run stopping its agents and captures, busy by design; inf when the manifest cannot say."""
    end, quiet = manifest.get("workload_end_ns"), (manifest.get("scenario") or {}).get("quiet_s")
    if not isinstance(end, int) or not isinstance(quiet, (int, float)):
        return math.inf
    return end + quiet * 1e9 + 1e9


def _windows(events, t0: int, down: Dict[str, List[Tuple[int, Optional[int]]]], dilation: float = 1.0,
             end: float = math.inf) -> List[dict]:
    """The agents' fidelity windows that ended after t0, as dicts of integers; a window of a node
    the timeline had paused (or killed, or not yet started) is left out, and so is the window in
    which it came back: its timers are late by the pause, which is the scenario's doing."""
    if events is None or len(events) == 0:
        return []
    keys = ("wakeups", "late_max_us", "periodic", "late_periodic", "skipped", "loop_lag_us", "cpu_us", "window_us")
    out = []
    for row in events.to_dict("records"):
        t = int(row.get("t") or 0)
        if t <= t0 or t > end:
            continue
        start = t - int(row.get("window_us") or 0) * 1000 / dilation  # window_us is wall clock, t virtual
        after = AFTER_DOWN_NS / dilation  # a second of wall clock
        if any(t >= begin and (end is None or start <= end + after) for begin, end in down.get(row.get("node"), ())):
            continue
        w = {k: int(row.get(k) or 0) if not _missing(row.get(k)) else 0 for k in keys}
        w["t"], w["node"] = int(row["t"]), row.get("node")
        hist = row.get("late_hist")
        try:
            w["hist"] = {int(b): int(n) for b, n in (json.loads(hist) if isinstance(hist, str) else hist or {}).items()}
        except (ValueError, TypeError, AttributeError):
            w["hist"] = {}
        out.append(w)
    return out


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _merged_histogram(windows: List[dict]) -> Dict[int, int]:
    out: Dict[int, int] = {}
    for w in windows:
        for b, n in w["hist"].items():
            out[b] = out.get(b, 0) + n
    return out


def _histquantile(hist: Dict[int, int], q: float) -> Optional[float]:
    """The q-quantile of lateness in ms, as the upper edge of the bucket holding it (the
    histogram's resolution: a factor 2^(1/4))."""
    total = sum(hist.values())
    if not total:
        return None
    rank, seen = q * total, 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= rank:
            return round(bucket_upper_us(b) / 1000, 3)
    return None


def _per_node(windows: List[dict]) -> Dict[str, dict]:
    nodes: Dict[str, dict] = {}
    for w in windows:
        n = nodes.setdefault(w["node"], {"node": w["node"], "periodic": 0, "late_periodic": 0, "skipped": 0,
                                         "late_max_ms": 0.0})
        n["periodic"] += w["periodic"]
        n["late_periodic"] += w["late_periodic"]
        n["skipped"] += w["skipped"]
        n["late_max_ms"] = max(n["late_max_ms"], w["late_max_us"] / 1000)
    for n in nodes.values():
        n["late_share"] = round(n["late_periodic"] / n["periodic"], 6) if n["periodic"] else 0.0
    return nodes


def _cpu_per_agent(windows: List[dict]) -> Dict[str, Optional[float]]:
    """The agents' CPU as a share of one core: the mean over agents, and the largest."""
    per: Dict[str, List[int]] = {}
    for w in windows:
        used = per.setdefault(w["node"], [0, 0])
        used[0] += w["cpu_us"]
        used[1] += w["window_us"]
    shares = [u / t for u, t in per.values() if t > 0]
    if not shares:
        return {"mean": None, "max": None}
    return {"mean": round(sum(shares) / len(shares), 4), "max": round(max(shares), 4)}


def _timer_series(windows: List[dict], t0: int) -> Dict[str, list]:
    """Per second since t0: the largest p99-lateness of any agent (ms) and the share of periodic
    wake-ups late by more than a tenth of their period, over all agents."""
    seconds: Dict[int, List[int]] = {}
    worst: Dict[int, float] = {}
    for w in windows:
        s = max(int((w["t"] - t0) // 1_000_000_000), 0)
        pair = seconds.setdefault(s, [0, 0])
        pair[0] += w["late_periodic"]
        pair[1] += w["periodic"]
        worst[s] = max(worst.get(s, 0.0), w["late_max_us"] / 1000)
    keys = sorted(seconds)
    return {"t_s": keys, "late_max_ms": [round(worst[s], 3) for s in keys],
            "late_share": [round(seconds[s][0] / seconds[s][1], 4) if seconds[s][1] else None for s in keys]}


def _stall_share(lines: List[dict], key: str) -> Optional[float]:
    pairs = [(float(h[key]), float(h.get("interval_s") or 0)) for h in lines if h.get(key) is not None]
    seconds = sum(s for _, s in pairs)
    return round(sum(v * s for v, s in pairs) / seconds, 6) if seconds else None


def _throttled(lines: List[dict], seconds: float) -> Tuple[Optional[float], Optional[str]]:
    per: Dict[str, int] = {}
    for h in lines:
        for node, n in (h.get("nodes") or {}).items():
            per[node] = per.get(node, 0) + int(n.get("throttled_us") or 0)
    if not per or not seconds:
        return None, None
    node = max(sorted(per), key=per.__getitem__)
    return per[node] / (seconds * 1e6), node if per[node] > 0 else None


def _mean(values) -> Optional[float]:
    got = [float(v) for v in values if v is not None]
    return round(sum(got) / len(got), 3) if got else None


# -- the report's section -----------------------------------------------------------------------

PLOT = "fidelity.png"
CLASSES = {"faithful": "valid", "degraded": "unknown", "unfaithful": "invalid", "unknown": "unknown"}


def write_plot(out_dir: str, section: Optional[dict], timeline: List[dict], t0: Optional[int]) -> None:
    """CPU and timer lateness over the run, with the timeline's actions marked (fidelity.png)."""
    over = (section or {}).get("over_time") or {}
    if not over.get("t_s") and not over.get("host_t_s"):
        return
    import os

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .timeline_marks import mark_faults

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    if over.get("host_t_s"):
        a1.plot(over["host_t_s"], [100 * b for b in over["cpu_busy"]], color="tab:blue", label="machine CPU busy")
        a1.axhline(100 * SATURATED, color="tab:red", linewidth=0.6, linestyle=":")
    a1.set_ylabel("CPU busy (%)")
    a1.set_ylim(-3, 103)
    if over.get("t_s"):
        a2.plot(over["t_s"], [np.nan if v is None else 100 * v for v in over["late_share"]], marker=".",
                color="tab:orange", label="periodic wake-ups late by > 1/10 period (%)")
        twin = a2.twinx()
        twin.plot(over["t_s"], over["late_max_ms"], color="tab:gray", alpha=0.7, label="latest wake-up (ms)")
        twin.set_ylabel("latest wake-up (ms, grey)")
        twin.set_yscale("symlog", linthresh=1)
        twin.set_ylim(bottom=0)
        a2.set_ylim(bottom=0)
    a2.set_ylabel("late wake-ups (%)")
    a2.set_xlabel("seconds since t0")
    for ax in (a1, a2):
        mark_faults(ax, timeline, t0)
        ax.grid(alpha=0.3)
    a1.set_title(f"Fidelity: {section['verdict']} (dashed: timeline actions)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, PLOT), dpi=110)
    plt.close(fig)


def html(section: Optional[dict], out_dir: str) -> str:
    """The report's fidelity section: the verdict, its reasons, every indicator and the plot."""
    import html as h
    import os

    from .html import table

    if not section:
        return "<h2>Fidelity</h2><p>Not analysed (results from before the fidelity monitor).</p>"
    verdict = section["verdict"]
    parts = [f"<h2>Fidelity</h2><p class='{CLASSES.get(verdict, 'unknown')}'>The machine "
             + {"faithful": "kept up with what it emulated: faithful.",
                "degraded": "fell behind at times: degraded.",
                "unfaithful": "did not keep up: unfaithful; read the results with care.",
                "unknown": "was not measured: unknown."}.get(verdict, h.escape(verdict)) + "</p>"]
    if section.get("reasons"):
        parts.append("<ul>" + "".join(f"<li>{h.escape(r)}</li>" for r in section["reasons"]) + "</ul>")
    rows = [[key, i["meaning"], i["value"], i["degraded_above"], i["unfaithful_above"], i["verdict"]]
            for key, i in section["indicators"].items()]
    parts.append(table(["indicator", "what it measures", "value", "degraded above", "unfaithful above", "verdict"],
                       rows))
    short = section.get("shortfall")
    if short:
        busy = short.get("busy_share")
        parts.append(f"<p>Rate asked and achieved: {h.escape(str(short['where']))} made {short['achieved']:.4g} "
                     f"{h.escape(str(short['unit']))} of the {short['asked']:.4g} asked"
                     + (f"; transmitting {busy:.1%} of the run, it lost {short['value']:.2%} of the run's time "
                        "beyond chance" if busy is not None else "") + ".</p>")
    shaping = section.get("shaping")
    if shaping:
        worst = shaping.get("most_dropped")
        parts.append(f"<p>Shaped links' queues ({shaping['queues']} directions): {shaping['frames']} frames passed, "
                     f"{shaping['dropped']} dropped because a queue was full"
                     + (f", most on {h.escape(str(worst['from']))} → {h.escape(str(worst['to']))} ({worst['dropped']})"
                        if worst else "")
                     + ". These are the emulated bottlenecks' own drops, not a failure to keep up.</p>")
    timers = section.get("timers")
    if timers:
        late, lag, cpu = timers["late_ms"], timers["loop_lag_ms"], timers["cpu_per_agent"]
        parts.append(table(["agents", "wake-ups", "periodic", "late by > 1/10 period", "skipped ticks",
                            "lateness p50 (ms)", "p99", "max", "loop lag p99 (ms)", "CPU per agent (mean, cores)",
                            "max"],
                           [[timers["agents"], timers["wakeups"], timers["periodic"], timers["late_periodic"],
                             timers["skipped"], late["p50"], late["p99"], late["max"], lag["p99"], cpu["mean"],
                             cpu["max"]]]))
    host = section.get("host")
    if host and host.get("seconds"):
        parts.append(table(["seconds sampled", "cores", "CPU busy (mean)", "seconds saturated", "run queue (mean)",
                            "max", "CPU stall share", "memory stall share", "least memory available (MiB)"],
                           [[host["seconds"], host["cores"], host["cpu_busy_mean"], host["cpu_saturated_s"],
                             host["run_queue_mean"], host["run_queue_max"], host["cpu_some_share"],
                             host["memory_some_share"], host["mem_available_min_mib"]]]))
    if os.path.exists(os.path.join(out_dir, PLOT)):
        parts.append(f"<img src='{PLOT}' alt='CPU and timer lateness over the run'>")
    return "".join(parts)
