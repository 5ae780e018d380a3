"""The report's Radio section (its measures: spark_analysis.radio): a map of the members'
trajectories with range circles at chosen times, the neighbours in range over time, and the
per-pair delivery table against the loss model."""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

import numpy as np

from .html import escape, fmt, table
from .radio import CONFIDENCE, Segment

#: the map's range circles, in seconds since t0, when the analysis is not told (None: the first
#: tick, the middle one and the last)
MAP_TIMES: Optional[Sequence[float]] = None
#: up to this many members the neighbour plot draws one line per node, else mean, min and max
NEIGHBOUR_LINES = 12
PLOTS = ("radio_map.png", "radio_neighbours.png")
#: the report's per-pair table shows at most this many pairs (results.json has them all)
HTML_PAIRS = 200


def _map_ticks(seg: Segment, t0: int, times: Optional[Sequence[float]]) -> List[int]:
    T = len(seg.ticks)
    if not T:
        return []
    if times is None:
        picked = [0, (T - 1) // 2, T - 1]
    else:
        picked = [int(k) for k in seg.tick_at(np.array([t0 + int(round(float(t) * 1e9)) for t in times], np.int64))]
    return list(dict.fromkeys(picked))


def write_plots(out_dir: str, run, times: Optional[Sequence[float]] = None) -> None:
    """radio_map.png (trajectories, range circles at `times` seconds since t0, MAP_TIMES when
    None) and radio_neighbours.png (neighbours in range over time) of the run's segments."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle
    from matplotlib.ticker import MaxNLocator

    segs = [s for s in run.radio.segments.values() if len(s.ticks)]
    if not segs:
        return
    t0 = run.t0
    times = MAP_TIMES if times is None else times
    colours = plt.get_cmap("tab10")
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1))]
    fig, axes = plt.subplots(1, len(segs), figsize=(6.5 * len(segs), 6), squeeze=False)
    for ax, seg in zip(axes[0], segs):
        for i, node in enumerate(seg.members):
            sel = seg.p_node == i
            if not sel.any():
                continue
            x, y = seg.xyz[sel, 0], seg.xyz[sel, 1]
            c = colours(i % 10)
            ax.plot(x, y, color=c, linewidth=1.2)
            ax.plot(x[:1], y[:1], marker="o", color=c, markersize=6)
            ax.plot(x[-1:], y[-1:], marker="s", color=c, markersize=6)
            ax.annotate(node, (x[-1], y[-1]), xytext=(4, 4), textcoords="offset points", fontsize=8, color=c)
        handles = [Line2D([], [], color="grey", marker="o", linestyle="", label="start"),
                   Line2D([], [], color="grey", marker="s", linestyle="", label="end")]
        r = float(seg.config.get("range_m") or 0)
        for j, k in enumerate(_map_ticks(seg, t0, times)):
            style = styles[j % len(styles)]
            at = seg.p_tick == k
            for i, (x, y) in zip(seg.p_node[at], seg.xyz[at, :2]):
                if r > 0:
                    ax.add_patch(Circle((x, y), r, fill=False, linestyle=style, linewidth=0.8,
                                        color=colours(int(i) % 10), alpha=0.6))
                ax.plot([x], [y], marker="x", color=colours(int(i) % 10), markersize=5)
            handles.append(Line2D([], [], color="black", linestyle=style,
                                  label=f"range at {round((int(seg.ticks[k]) - t0) / 1e9, 3):g} s"))
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.set_title(f"{seg.name}: trajectories, range {fmt(seg.config.get('range_m'))} m", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, PLOTS[0]), dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(segs), 1, figsize=(8, 3 * len(segs)), squeeze=False)
    for ax, seg in zip(axes[:, 0], segs):
        t = (seg.ticks - t0) / 1e9
        deg = seg.degree
        if seg.M <= NEIGHBOUR_LINES:
            for i, node in enumerate(seg.members):  # the first the widest: lines that coincide stay visible
                ax.step(t, deg[:, i], where="post", color=colours(i % 10), label=node,
                        linewidth=1 + 2.5 * (seg.M - 1 - i) / max(seg.M - 1, 1))
            ax.legend(fontsize=7, ncol=2)
        else:
            ax.fill_between(t, deg.min(axis=1), deg.max(axis=1), step="post", alpha=0.3, label="min to max")
            ax.step(t, deg.mean(axis=1), where="post", label="mean")
            ax.legend(fontsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("neighbours in range")
        ax.set_xlabel("seconds since t0")
        ax.set_title(f"{seg.name}: neighbours per node", fontsize=10)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, PLOTS[1]), dpi=110)
    plt.close(fig)


def html(section: dict, out_dir: str) -> str:
    """The report's Radio section."""
    parts = ["<h2 id='radio'>Radio</h2>",
             "<p>A broadcast's intended receivers on a radio segment are the nodes in its sender's range at the "
             "send (the recorded links at the tick in force); the measures above judge what the radio could "
             "deliver.</p>"]
    if section.get("missing"):
        parts.append("<p class='unknown'>Missing: " + escape(", ".join(section["missing"]))
                     + " (every member counted in range)</p>")
    rows = []
    for name, s in section.get("segments", {}).items():
        nb = s.get("neighbours") or {}
        rows.append([name, len(s.get("members") or []), s.get("range_m"), (s.get("loss") or {}).get("model"),
                     s.get("tick_s"), s.get("ticks"), s.get("frames_sent"), nb.get("mean"), nb.get("min"),
                     nb.get("max")])
    parts.append(table(["segment", "members", "range (m)", "loss model", "tick (s)", "ticks", "frames sent",
                        "neighbours mean", "min", "max"], rows))
    bad = section.get("receptions_out_of_range", 0)
    parts.append(f"<p class='{'invalid' if bad else 'valid'}'>Frames received from a node out of range: "
                 f"{fmt(bad)} (and {fmt(section.get('receptions_at_tick_change', 0))} sent while a tick's rules "
                 "were being applied, in range at the new tick)</p>")
    parts.append(f"<p>Pairs outside the {fmt(100 * section.get('confidence', CONFIDENCE))}% binomial interval of "
                 f"the loss model's expectation: {fmt(section.get('pairs_outside_interval'))}; receptions "
                 f"without their transmission in the sender's capture: {fmt(section.get('unmatched_receptions'))}"
                 f"</p>")
    for name, s in section.get("segments", {}).items():
        w = s.get("wifi")
        if not w:
            continue
        lag = w.get("realtime_lag_ms") or {}
        parts.append(f"<p>{name} is an 802.11 channel (ns-3): its expectation is the propagation's alone, so "
                     f"receptions below it are the channel's collisions and queues at work, not a fault. Frames "
                     f"from the members' kernels {fmt(w['frames_from_host'])}, handed to them {fmt(w['frames_to_host'])}; "
                     f"transmissions on the air {fmt(w['phy_tx'])}; receptions lost after their preamble "
                     f"{fmt(w['phy_rx_error'])}, not received {fmt(sum(w['phy_rx_drop'].values()))} "
                     f"({', '.join(f'{k} {fmt(v)}' for k, v in w['phy_rx_drop'].items()) or 'none'}); MAC drops "
                     f"{fmt(w['mac_tx_drop'] + sum(w['mac_drop'].values()))}, retries {fmt(w['mac_retries'])}; "
                     f"queueing delay p99 up to {fmt(w['queue_delay_ms_p99_max'])} ms; simulator lag p99 "
                     f"{fmt(lag.get('p99'))} ms</p>")
    rows = []
    pairs = sorted(section.get("pairs", []), key=lambda r: (not r["outside"] and not r["received_out_of_range"]))
    for r in pairs[:HTML_PAIRS]:
        interval = r.get("interval")
        rows.append([r["segment"], r["src"], r["dst"], r["sent_in_range"], r["received"], r["ratio"], r["expected"],
                     f"{fmt(interval[0])} – {fmt(interval[1])}" if interval else None, r["z"],
                     "outside" if r["outside"] else "", r["received_out_of_range"], r["sent_out_of_range"]])
    parts.append(table(["segment", "from", "to", "frames sent in range", "received", "ratio", "expected",
                        f"{fmt(100 * section.get('confidence', CONFIDENCE))}% interval", "z", "flag",
                        "received out of range", "sent out of range"], rows))
    if len(pairs) > HTML_PAIRS:
        parts.append(f"<p>The first {HTML_PAIRS} of {len(pairs)} pairs (flagged first); all in results.json.</p>")
    for name, alt in zip(PLOTS, ("trajectories and ranges", "neighbours over time")):
        if os.path.exists(os.path.join(out_dir, name)):
            parts.append(f"<p><img src='{name}' alt='{alt}'></p>")
    return "\n".join(parts)
