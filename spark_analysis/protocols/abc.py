"""The AbC analysis (a protocol analysis, spark_analysis.protocols): the AbC paper's measures of a
run whose components send ABC_DATA messages (agents/abc/), and its report section.

From the logs (what the components handled in id order, not first copies on the wire):

- `delivery_time_to_all`: per message delivered to every component it was meant for (its send
  event's `eligible`), the last component's delivery minus the data send; the paper's average
  delivery time is its mean (section 4: "the time needed for a message to reach all components").
- `message_time_gap`: at each component the mean interval between two consecutive deliveries,
  then the mean over components (the paper's average message time gap, a measure of throughput).
- `id_wait`: from the moment the workload wanted to send (`wanted_ns`) to the data send: the
  request and reply round trip plus the wait for every smaller id (rule Snd).
- `ids`: the ids the infrastructure gave (`order` of the data sends): unique and contiguous from
  0 when the sequencer is right; the checks judge the order of deliveries.
- `accepted` / `discarded`: deliveries whose component satisfied the sender's predicate, and
  those it discarded; `receivers_disagree` counts messages whose accepting components differ from
  the `receivers` the sender computed from the topology's attributes.

Times are in ms and, when the components declare `time_unit_ms`, in the paper's time units too.

`colouring` (the paper's graph-colouring example, agents/abc/colouring.py): the graph from the
manifest (the `neighbours` of the `abc-vertex` nodes) and each vertex's `coloured` state event;
verdict valid when every vertex is coloured and no edge joins two vertices of one colour,
invalid otherwise (the conflicting edges and the uncoloured vertices are named), unknown with no
vertex; the colours used and the rounds (the last round in which a vertex took its colour).
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from agents.wire import MessageType

from ..html import escape, fmt, table
from ..metrics import stats_ms

NAME = "abc"
ROLES = ("abc-component", "abc-vertex", "abc-cluster-server", "abc-ring-server", "abc-tree-server")
TYPES = (int(MessageType.ABC_DATA),)
STATES = ("coloured",)
COMPARED = [
    ("AbC delivery time to all, mean (ms)", ("abc", "delivery_time_to_all", "mean_ms")),
    ("AbC message time gap, mean (ms)", ("abc", "message_time_gap", "mean_ms")),
]
DATA = "ABC_DATA"


def measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict, states: pd.DataFrame) -> Dict[str, object]:
    """The section of results.json (see abc_measures); {} for a run without AbC data."""
    return abc_measures(sends, deliveries, manifest, states[states["state"] == "coloured"])


def _names(value) -> tuple:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return (value,)
    return tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else (value,)


def time_unit_ms(manifest: dict) -> Optional[float]:
    """The components' `time_unit_ms` when they all declare the same one (default 1000)."""
    nodes = ((manifest.get("topology") or {}).get("nodes") or {}).values()
    units = {float((n.get("params") or {}).get("time_unit_ms", 1000)) for n in nodes if n.get("role") == "abc-component"}
    return units.pop() if len(units) == 1 else None


def _in_units(stats: Dict[str, object], unit: Optional[float]) -> Dict[str, object]:
    if unit and stats.get("mean_ms") is not None:
        stats = dict(stats, mean_time_units=float(stats["mean_ms"]) / unit)
    return stats


def colouring(manifest: dict, coloured: Optional[pd.DataFrame]) -> Optional[Dict[str, object]]:
    """The graph-colouring check; None when the run has no abc-vertex node."""
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    graph = {n: list((info.get("params") or {}).get("neighbours") or []) for n, info in nodes.items()
             if info.get("role") == "abc-vertex"}
    if not graph:
        return None
    colour: Dict[str, int] = {}
    rounds: Dict[str, int] = {}
    if coloured is not None and len(coloured):
        for node, c, r in zip(coloured["node"], coloured["colour"], coloured["round"]):
            if node in graph and node not in colour and c == c:  # first coloured event; NaN != NaN
                colour[node] = int(c)
                rounds[node] = int(r)
    conflicts = sorted({tuple(sorted((u, v))) for u in graph for v in graph[u]
                        if u in colour and v in colour and colour[u] == colour[v]})
    uncoloured = sorted(set(graph) - set(colour))
    return {
        "verdict": "invalid" if conflicts or uncoloured else "valid",
        "vertices": len(graph), "edges": sum(len(v) for v in graph.values()) // 2,
        "coloured": len(colour), "uncoloured": uncoloured,
        "colours": len(set(colour.values())), "rounds": max(rounds.values()) if rounds else None,
        "conflicts": len(conflicts),
        "counterexamples": [{"edge": list(e), "colour": colour[e[0]]} for e in conflicts[:5]],
        "colouring": dict(sorted(colour.items())),
    }


def abc_measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict,
                 coloured: Optional[pd.DataFrame] = None) -> Dict[str, object]:
    """sends: the run's send events (origin, seq, type, t, intended, order, receivers, wanted_ns);
    deliveries: (node, origin, seq, type, t, accepted); coloured: the vertices' coloured state
    events (node, colour, round). Empty dict when the run has no AbC data."""
    s = sends[sends["type"] == DATA]
    if not len(s):
        return {}
    unit = time_unit_ms(manifest)
    d = deliveries[deliveries["type"] == DATA]
    first = d.sort_values("t", kind="stable").drop_duplicates(["origin", "seq", "node"])
    msgs = s[["origin", "seq", "t"]].rename(columns={"t": "send_t"}).reset_index(drop=True)
    msgs["eligible"] = [frozenset(_names(x)) for x in s["intended"]]
    at = {k: dict(zip(g["node"], g["t"].astype("int64"))) for k, g in first.groupby(["origin", "seq"])}
    times = []
    for origin, seq, send_t, eligible in zip(msgs["origin"], msgs["seq"], msgs["send_t"], msgs["eligible"]):
        when = at.get((origin, seq), {})
        if eligible and all(n in when for n in eligible):
            times.append(max(when[n] for n in eligible) - int(send_t))
    complete = len(times)
    gaps = []
    for _, g in first.groupby("node"):
        t = np.sort(g["t"].to_numpy(dtype=np.int64))
        if len(t) >= 2:
            gaps.append(float(np.diff(t).mean()))
    gap_ms = float(np.mean(gaps)) / 1e6 if gaps else None
    out: Dict[str, object] = {
        "messages": int(len(s)),
        "components": len(set().union(*msgs["eligible"]) | set(msgs["origin"])),
        "delivered_to_all": complete,
        "time_unit_ms": unit,
        "delivery_time_to_all": _in_units(stats_ms(np.asarray(times, dtype=np.int64)), unit),
        "message_time_gap": {"mean_ms": gap_ms, "components": len(gaps),
                             **({"mean_time_units": gap_ms / unit} if unit and gap_ms is not None else {})},
    }
    if "wanted_ns" in s and s["wanted_ns"].notna().any():
        wait = (s["t"] - s["wanted_ns"]).dropna().to_numpy(dtype=np.int64)
        out["id_wait"] = _in_units(stats_ms(wait), unit)
    if "order" in s and s["order"].notna().any():
        ids = s["order"].dropna().astype("int64").to_numpy()
        unique = np.unique(ids)
        out["ids"] = {"count": int(len(ids)), "reused": int(len(ids) - len(unique)),
                      "first": int(unique[0]), "last": int(unique[-1]),
                      "contiguous": bool(unique[0] == 0 and unique[-1] == len(unique) - 1)}
    if "accepted" in first and first["accepted"].notna().any():
        acc = first["accepted"].astype("boolean").fillna(False).astype(bool)
        out["accepted"] = int(acc.sum())
        out["discarded"] = int((~acc).sum())
        if "receivers" in s and s["receivers"].notna().any():
            accepted = {k: frozenset(g["node"]) for k, g in first[acc].groupby(["origin", "seq"])}
            disagree = 0
            for origin, seq, receivers, eligible in zip(s["origin"], s["seq"], s["receivers"], msgs["eligible"]):
                if receivers is None or (isinstance(receivers, float) and np.isnan(receivers)):
                    continue
                delivered = frozenset(at.get((origin, seq), {}))
                # judged on the components that delivered it at all: a loss is the checks' business
                if frozenset(_names(receivers)) & delivered != accepted.get((origin, seq), frozenset()):
                    disagree += 1
            out["receivers_disagree"] = disagree
    graph = colouring(manifest, coloured)
    if graph is not None:
        out["colouring"] = graph
    return out


def html(a: Dict[str, object]) -> str:
    """The report's AbC section."""
    dt, gap, wait = a.get("delivery_time_to_all", {}), a.get("message_time_gap", {}), a.get("id_wait", {})
    unit = a.get("time_unit_ms")
    parts: List[str] = ["<h2>AbC measures (event logs)</h2>"]
    parts.append(f"<p>{a.get('messages')} data messages among {a.get('components')} components; "
                 f"{a.get('delivered_to_all')} delivered to every component"
                 + (f"; one paper time unit = {fmt(unit)} ms" if unit else "") + ".</p>")
    parts.append(table(["measure", "mean (ms)", "mean (time units)", "median (ms)", "p95 (ms)", "max (ms)"], [
        ["average delivery time to all components", dt.get("mean_ms"), dt.get("mean_time_units"),
         dt.get("median_ms"), dt.get("p95_ms"), dt.get("max_ms")],
        ["average message time gap", gap.get("mean_ms"), gap.get("mean_time_units"), None, None, None],
        ["wait for an id (request to data send)", wait.get("mean_ms"), wait.get("mean_time_units"),
         wait.get("median_ms"), wait.get("p95_ms"), wait.get("max_ms")]]))
    ids = a.get("ids", {})
    parts.append(table(["ids given", "reused", "contiguous from 0", "accepted", "discarded", "receivers disagree"],
                       [[ids.get("count"), ids.get("reused"), ids.get("contiguous"), a.get("accepted"),
                         a.get("discarded"), a.get("receivers_disagree")]]))
    col = a.get("colouring")
    if col:
        parts.append(f"<h3>Graph colouring: <span class='{escape(col['verdict'])}'>{escape(col['verdict'])}</span></h3>")
        parts.append(table(["vertices", "edges", "coloured", "colours", "rounds", "conflicting edges", "uncoloured"],
                           [[col["vertices"], col["edges"], col["coloured"], col["colours"], col["rounds"],
                             col["conflicts"], ", ".join(col["uncoloured"])]]))
        parts.append(table(["vertex", "colour"], [[v, c] for v, c in col["colouring"].items()]))
    return "\n".join(parts)
