"""The timeline's actions marked on a plot over time (the report's series, the fidelity section):
faults in red, recoveries in green, each at its time since t0."""

from __future__ import annotations

from typing import List, Optional

#: actions that take something away (red), and what the run observed doing so (a node at its
#: resource limits); the others, and the undoing of these, give it back (green)
FAULTS = {"kill", "stop", "pause", "link_down", "set_link", "partition", "oom", "pids_limit"}


def t_rel(action: dict, t0: Optional[int]) -> Optional[float]:
    """An executed action's time in seconds since t0."""
    if action.get("t_ns") is None or not t0:
        return action.get("t_s")
    return (action["t_ns"] - t0) / 1e9


def mark_faults(ax, timeline: List[dict], t0: Optional[int]) -> None:
    for a in timeline:
        t = t_rel(a, t0)
        if t is None:
            continue
        # an action undone by its "for" (resume, link restored) is a recovery, not a fault
        fault = a.get("action") in FAULTS and " for " not in (a.get("from") or "")
        ax.axvline(t, color="tab:red" if fault else "tab:green", linestyle="--", linewidth=0.8, alpha=0.8)
        label = a.get("action", "") + (f" {a['node']}" if a.get("node") else "")
        ax.annotate(label, (t, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize=6,
                    va="top", ha="right", color="tab:red" if fault else "tab:green")
