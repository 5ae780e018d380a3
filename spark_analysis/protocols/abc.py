"""The AbC analysis (a protocol analysis, spark_analysis.protocols): the AbC paper's measures of a
run whose components send ABC_DATA messages (agents/abc/), and its report section.

From the logs (what the components handled in id order, not first copies on the wire):

- `delivery_time`: the paper's average delivery time (section 4, Figures 1, 3, 5, 6: "the time
  needed for a message to reach all components"), read as the authors' simulator reads it: per
  message handled by every component it was meant for (its send event's `eligible`), the last
  component's handling (its `deliver` event) minus the moment the sender decided to send
  (`wanted_ns` of the data send event, when it asks for an id). It includes the wait for an id.
- `dissemination_time`: the same last handling minus the data send itself: the infrastructure's
  part alone, without the wait for an id.
- `message_time_gap`: at each component the mean interval between two consecutive deliveries,
  then the mean over components (the paper's average message time gap, a measure of throughput).
- `over_time` (of each of the three): the paper's figures plot a cumulative mean against time, so
  each measure carries [t, cumulative mean] points, t since the run's t0 (the manifest's t0_ns,
  else started_ns) at a regular step of 1, 2 or 5 × 10^k (at most 100 points, up to the last
  delivery or the horizon, whichever is later; points before anything completed are left out).
  The cumulative mean at t is over the messages completed (last handling) by t; for the gap,
  over the intervals whose second delivery is by t, per component and then over components.
  Both t and the mean are in the paper's time units when the components declare one
  `time_unit_ms`, else in seconds: the section's `t_unit` ("time unit" or "s") says which.
- `at_horizon` (of each of the three): the cumulative mean at the horizon, the end of the
  workload (t0 + the scenario's duration_s), where the paper reads its values (t ≈ 2000): `n`
  and the mean in ms and time units. A message completed after the horizon (in the quiet
  period) counts in the overall stats, not here. The section has `horizon_s` and
  `horizon_time_units`.
- `id_wait`: from the moment the workload wanted to send (`wanted_ns`) to the data send: the
  request and reply round trip plus the wait for every smaller id (rule Snd).
- `ids`: the ids the infrastructure gave (`order` of the data sends): unique and contiguous from
  0 when the sequencer is right; the checks judge the order of deliveries.
- `id_chain`: how consecutive ids follow one another, the chain that bounds a sequencer's
  throughput (the owner of id i + 1 sends only once it has handled id i, rule Snd): `pairs` of
  consecutive ids both sent; `send_interval`, from the data send of id i to that of id i + 1;
  `reach_next_owner`, from the data send of id i to its handling by the owner of id i + 1 (pairs
  with two owners); `next_owner_rank`, the mean share of message i's handlers that handled it
  before the next owner did (0.5 when the next owner's place among them is uniform, less when the
  infrastructure reaches it early); `cycle_repeats`, with k distinct owners, the share of ids whose
  owner is the owner of the id k before (1 when the owners take turns in a fixed cycle); and
  `first_wave_vs_node_order`, Kendall's tau between the first k ids' owners and the order of the
  topology's nodes, the order the testbed signals them to start (1: the first wave follows it).
- `accepted` / `discarded`: deliveries whose component satisfied the sender's predicate, and
  those it discarded; `receivers_disagree` counts messages whose accepting components differ from
  the `receivers` the sender computed from the topology's attributes.
- `transmitters`: from the `abc transmitter` state events of paced nodes (agents/abc/common.py,
  Transmitter): per node its transmissions, busy time and achieved rate (transmissions per time
  unit of busy time, the node's own `time_unit_ms`), and per group (`servers`, `components`) the
  nodes that transmitted, their min / median / max achieved rate, the target λt
  (`transmission_rate`, when the group shares one), the pooled rate over all their busy time with
  the upper end of its one-sided 95% interval, and `run_time_units`, the workload's length in
  time units summed over the members that transmitted (what `shortfall` divides the time lost by).

Times are in ms and, when the components declare `time_unit_ms`, in the paper's time units too.

`colouring` (the paper's graph-colouring example, agents/abc/colouring.py): the graph from the
manifest (the `neighbours` of the `abc-vertex` nodes) and each vertex's `coloured` state event;
verdict valid when every vertex is coloured and no edge joins two vertices of one colour,
invalid otherwise (the conflicting edges and the uncoloured vertices are named), unknown with no
vertex; the colours used and the rounds (the last round in which a vertex took its colour).
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from agents.wire import MessageType

from ..html import escape, fmt, table
from ..metrics import nice_step, stats_ms

NAME = "abc"
ROLES = ("abc-component", "abc-vertex", "abc-cluster-server", "abc-ring-server", "abc-tree-server")
TYPES = (int(MessageType.ABC_DATA),)
TRANSMITTER = "abc transmitter"
STATES = ("coloured", TRANSMITTER)
COMPARED = [
    ("AbC delivery time, mean (ms)", ("abc", "delivery_time", "mean_ms")),
    ("AbC dissemination time, mean (ms)", ("abc", "dissemination_time", "mean_ms")),
    ("AbC message time gap, mean (ms)", ("abc", "message_time_gap", "mean_ms")),
]
DATA = "ABC_DATA"
SERVER_ROLES = ("abc-cluster-server", "abc-ring-server", "abc-tree-server")
COMPONENT_ROLES = ("abc-component", "abc-vertex")
#: at most this many points in a measure's over_time
POINTS = 100


def measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict, states: pd.DataFrame,
             sent: Optional[pd.DataFrame] = None) -> Dict[str, object]:
    """The section of results.json (see abc_measures); {} for a run without AbC data. `sent` (the
    run's sent counts) is not read: the AbC measures are the paper's times."""
    return abc_measures(sends, deliveries, manifest, states[states["state"] == "coloured"],
                        states[states["state"] == TRANSMITTER])


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


def _cumulative_mean(done_ns: np.ndarray, values_ns: np.ndarray, at_ns: np.ndarray) -> np.ndarray:
    """At each of at_ns, the mean (ns) of the values whose done time is at or before it; NaN where none."""
    order = np.argsort(done_ns, kind="stable")
    done, total = done_ns[order], np.cumsum(values_ns[order].astype(np.int64))
    k = np.searchsorted(done, at_ns, side="right")
    out = np.full(len(at_ns), np.nan)
    some = k > 0
    out[some] = total[k[some] - 1] / k[some]
    return out


def _cumulative_gap(per_node: List[np.ndarray], at_ns: np.ndarray) -> np.ndarray:
    """At each of at_ns, the message time gap over the intervals whose second delivery is by then:
    per component the mean interval, (last - first) / (deliveries - 1) of its deliveries so far,
    then the mean over the components with at least one interval; NaN where none has."""
    sums, counts = np.zeros(len(at_ns)), np.zeros(len(at_ns))
    for t in per_node:
        k = np.searchsorted(t, at_ns, side="right")
        two = k >= 2
        sums[two] += (t[k[two] - 1] - t[0]) / (k[two] - 1)
        counts[two] += 1
    out = np.full(len(at_ns), np.nan)
    out[counts > 0] = sums[counts > 0] / counts[counts > 0]
    return out


class _Clock:
    """The run's time axis: t0, the horizon (end of the workload) and the unit t is told in."""

    def __init__(self, manifest: dict, unit_ms: Optional[float]) -> None:
        self.t0 = int(manifest.get("t0_ns") or manifest.get("started_ns") or 0)
        duration = (manifest.get("scenario") or {}).get("duration_s")
        self.horizon = self.t0 + int(round(float(duration) * 1e9)) if duration is not None else None
        self.unit_ms = unit_ms
        self.unit_ns = unit_ms * 1e6 if unit_ms else 1e9
        self.t_unit = "time unit" if unit_ms else "s"

    def samples(self, last_ns: int) -> np.ndarray:
        """Sample times (ns) at a regular step from t0 to the later of last_ns and the horizon."""
        end = max(last_ns, self.horizon or last_ns) - self.t0
        step = nice_step(end / self.unit_ns, POINTS)
        n = max(1, int(np.ceil(end / self.unit_ns / step - 1e-9)))
        return self.t0 + np.round(np.arange(1, n + 1) * step * self.unit_ns).astype(np.int64)

    def over_time(self, at_ns: np.ndarray, means_ns: np.ndarray) -> List[List[float]]:
        ok = ~np.isnan(means_ns)
        return [[round(float((t - self.t0) / self.unit_ns), 9), float(m / self.unit_ns)]
                for t, m in zip(at_ns[ok], means_ns[ok])]

    def at_horizon(self, mean_ns: float, n: int) -> Dict[str, object]:
        mean_ms = None if np.isnan(mean_ns) else float(mean_ns) / 1e6
        out: Dict[str, object] = {"n": int(n), "mean_ms": mean_ms}
        if self.unit_ms:
            out["mean_time_units"] = None if mean_ms is None else mean_ms / self.unit_ms
        return out


def _over_time_of(clock: _Clock, done: np.ndarray, values: np.ndarray, last_ns: int) -> Dict[str, object]:
    """over_time and at_horizon of a per-message measure (values ns, done: when each message completed)."""
    at = clock.samples(last_ns)
    out: Dict[str, object] = {"over_time": clock.over_time(at, _cumulative_mean(done, values, at))}
    if clock.horizon is not None:
        h = np.array([clock.horizon], dtype=np.int64)
        out["at_horizon"] = clock.at_horizon(_cumulative_mean(done, values, h)[0], int((done <= clock.horizon).sum()))
    return out


def _ns(column) -> Tuple[np.ndarray, np.ndarray]:
    """(values as int64, present) of a nanosecond column with missing values: kept integer, as
    float64 cannot hold a CLOCK_REALTIME nanosecond exactly."""
    v = pd.Series(column)
    present = v.notna().to_numpy(dtype=bool)
    values = np.zeros(len(v), np.int64)
    if present.any():
        values[present] = np.array([int(x) for x in v[present]], dtype=np.int64)
    return values, present


def _numbers(column) -> np.ndarray:
    """A column as float64, missing values NaN (a log's integer column may come as Int64 with NA)."""
    return pd.to_numeric(pd.Series(column), errors="coerce").astype("float64").to_numpy()


def transmitters(manifest: dict, rows: Optional[pd.DataFrame]) -> Optional[Dict[str, object]]:
    """The paced nodes' `abc transmitter` state events: per node transmissions, busy_s and the
    achieved rate per time unit of busy time (its own time_unit_ms, default 1000); per group the
    min / median / max rate of the nodes that transmitted and the target λt. None without events."""
    if rows is None or not len(rows) or "transmissions" not in rows or "busy_ns" not in rows:
        return None
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    made: Dict[str, List[int]] = {}
    for node, n, busy in zip(rows["node"], _numbers(rows["transmissions"]), _numbers(rows["busy_ns"])):
        if np.isnan(n) or np.isnan(busy):
            continue
        total = made.setdefault(node, [0, 0])  # a node restarted mid-run logs at each stop: they add up
        total[0] += int(n)
        total[1] += int(busy)

    def params(node: str) -> dict:
        return (nodes.get(node) or {}).get("params") or {}

    def unit_s(node: str) -> float:
        return float(params(node).get("time_unit_ms", 1000)) / 1000

    duration = (manifest.get("scenario") or {}).get("duration_s")
    per: Dict[str, Dict[str, object]] = {}
    for node, (n, busy) in sorted(made.items()):
        per[node] = {"transmissions": n, "busy_s": busy / 1e9,
                     "rate": n / (busy / 1e9 / unit_s(node)) if busy > 0 else None}
    out: Dict[str, object] = {"nodes": per}
    for group, roles in (("servers", SERVER_ROLES), ("components", COMPONENT_ROLES)):
        members = [n for n in per if (nodes.get(n) or {}).get("role") in roles]
        if not members:
            continue
        rates = np.array([per[n]["rate"] for n in members if per[n]["rate"] is not None], dtype=float)
        targets = {float(params(n).get("transmission_rate") or 0) for n in members}
        total = int(sum(per[n]["transmissions"] for n in members))
        units = sum(per[n]["busy_s"] / unit_s(n) for n in members)
        # the workload's length in each transmitting member's time units, summed: the time the group ran
        run_units = (sum(float(duration) / unit_s(n) for n in members if per[n]["transmissions"] > 0)
                     if duration is not None else None)
        out[group] = {"nodes": len(members), "transmitting": int(len(rates)), "transmissions": total,
                      "min_rate": float(rates.min()) if len(rates) else None,
                      "median_rate": float(np.median(rates)) if len(rates) else None,
                      "max_rate": float(rates.max()) if len(rates) else None,
                      "target_rate": targets.pop() if len(targets) == 1 and 0 not in targets else None,
                      "run_time_units": run_units, **pooled_rate(total, units)}
    return out


def pooled_rate(transmissions: int, busy_units: float) -> Dict[str, Optional[float]]:
    """The group's rate over all its busy time, and the upper end of its one-sided 95% interval:
    a paced transmitter on schedule spends an exponential service time per transmission, so n of
    them take a Gamma(n) time, 2·λ·B ~ χ²(2n), and λ ≤ χ²₀.₉₅(2n) / 2B. A shortfall against λt
    counts for fidelity only beyond that bound (a few dozen transmissions vary by tens of percent)."""
    if transmissions <= 0 or busy_units <= 0:
        return {"pooled_rate": None, "pooled_rate_high95": None}
    from scipy.stats import chi2

    return {"pooled_rate": transmissions / busy_units,
            "pooled_rate_high95": float(chi2.ppf(0.95, 2 * transmissions)) / (2 * busy_units)}


def shortfall(section: Optional[dict]) -> Optional[Dict[str, object]]:
    """Fidelity's rate shortfall (spark_analysis/fidelity.py): the largest share of its run's time a
    group of paced transmitters lost by falling short of λt beyond chance. n transmissions at the
    upper 95% bound λ⁺ of the pooled rate take n/λ⁺ time units where λt asks n/λt; the difference,
    over the time the group ran (the workload's length summed over its transmitting members, or its
    busy time if longer), is the value: 0 within chance, and never more than the rate's own share
    short (1 − λ⁺/λt, `rate_short`, the value when the run has no duration). A group that transmits
    a tenth of the run and is 20% slow lost about 2% of it; a server busy all run, 20% of it. None
    when no group is paced."""
    worst = None
    for group, g in ((section or {}).get("transmitters") or {}).items():
        if group == "nodes" or not isinstance(g, dict) or not g.get("target_rate") or g.get("pooled_rate") is None:
            continue
        target, high, n = g["target_rate"], g["pooled_rate_high95"], g["transmissions"]
        rate_short = max(0.0, 1 - high / target)
        busy = n / g["pooled_rate"]
        run = g.get("run_time_units")
        if run:
            ran = max(run, busy)
            value, busy_share = max(0.0, n * (1 / high - 1 / target)) / ran, busy / ran
        else:
            value, busy_share = rate_short, None
        if worst is None or value > worst["value"]:
            worst = {"value": value, "where": f"AbC {group}", "achieved": g["pooled_rate"], "asked": target,
                     "unit": "transmissions per time unit", "rate_short": rate_short, "busy_share": busy_share}
    return worst


def abc_measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict,
                 coloured: Optional[pd.DataFrame] = None,
                 transmitter_states: Optional[pd.DataFrame] = None) -> Dict[str, object]:
    """sends: the run's send events (origin, seq, type, t, intended, order, receivers, wanted_ns);
    deliveries: (node, origin, seq, type, t, accepted); coloured: the vertices' coloured state
    events (node, colour, round); transmitter_states: the paced nodes' abc transmitter state
    events (node, transmissions, busy_ns). Empty dict when the run has no AbC data."""
    s = sends[sends["type"] == DATA]
    if not len(s):
        return {}
    unit = time_unit_ms(manifest)
    clock = _Clock(manifest, unit)
    d = deliveries[deliveries["type"] == DATA]
    first = d.sort_values("t", kind="stable").drop_duplicates(["origin", "seq", "node"])
    msgs = s[["origin", "seq", "t"]].rename(columns={"t": "send_t"}).reset_index(drop=True)
    msgs["eligible"] = [frozenset(_names(x)) for x in s["intended"]]
    wanted, has = _ns(s["wanted_ns"]) if "wanted_ns" in s else (np.zeros(len(s), np.int64), np.zeros(len(s), bool))
    at = {k: dict(zip(g["node"], g["t"].astype("int64"))) for k, g in first.groupby(["origin", "seq"])}
    done, complete = [], []  # per message handled by all: the last handling, and which message it is
    for i, (origin, seq, eligible) in enumerate(zip(msgs["origin"], msgs["seq"], msgs["eligible"])):
        when = at.get((origin, seq), {})
        if eligible and all(n in when for n in eligible):
            done.append(max(when[n] for n in eligible))
            complete.append(i)
    done_ns, complete = np.asarray(done, np.int64), np.asarray(complete, np.int64)
    sent_ns = msgs["send_t"].to_numpy(dtype=np.int64)[complete]
    has_wanted = has[complete]
    delivery_ns = done_ns[has_wanted] - wanted[complete][has_wanted]
    dissemination_ns = done_ns - sent_ns
    per_node = [np.sort(g["t"].to_numpy(dtype=np.int64)) for _, g in first.groupby("node")]
    gaps = [float(np.diff(t).mean()) for t in per_node if len(t) >= 2]
    gap_ms = float(np.mean(gaps)) / 1e6 if gaps else None
    last = int(max(done_ns.max() if len(done_ns) else clock.t0, first["t"].max() if len(first) else clock.t0))
    gap: Dict[str, object] = {"mean_ms": gap_ms, "components": len(gaps),
                              **({"mean_time_units": gap_ms / unit} if unit and gap_ms is not None else {})}
    samples = clock.samples(last)
    gap["over_time"] = clock.over_time(samples, _cumulative_gap(per_node, samples))
    if clock.horizon is not None:
        h = np.array([clock.horizon], dtype=np.int64)
        gap["at_horizon"] = clock.at_horizon(_cumulative_gap(per_node, h)[0],
                                             sum(max(0, int(np.searchsorted(t, clock.horizon, "right")) - 1)
                                                 for t in per_node))
    out: Dict[str, object] = {
        "messages": int(len(s)),
        "components": len(set().union(*msgs["eligible"]) | set(msgs["origin"])),
        "delivered_to_all": int(len(done_ns)),
        "time_unit_ms": unit,
        "t_unit": clock.t_unit,
        "horizon_s": (clock.horizon - clock.t0) / 1e9 if clock.horizon is not None else None,
        "horizon_time_units": (clock.horizon - clock.t0) / 1e6 / unit if clock.horizon is not None and unit else None,
        "delivery_time": {**_in_units(stats_ms(delivery_ns), unit),
                          **_over_time_of(clock, done_ns[has_wanted], delivery_ns, last)},
        "dissemination_time": {**_in_units(stats_ms(dissemination_ns), unit),
                               **_over_time_of(clock, done_ns, dissemination_ns, last)},
        "message_time_gap": gap,
    }
    if has.any():
        out["id_wait"] = _in_units(stats_ms(s["t"].to_numpy(dtype=np.int64)[has] - wanted[has]), unit)
    if "order" in s and s["order"].notna().any():
        ids = s["order"].dropna().astype("int64").to_numpy()
        unique = np.unique(ids)
        out["ids"] = {"count": int(len(ids)), "reused": int(len(ids) - len(unique)),
                      "first": int(unique[0]), "last": int(unique[-1]),
                      "contiguous": bool(unique[0] == 0 and unique[-1] == len(unique) - 1)}
        chain = id_chain(s, at, manifest, unit)
        if chain is not None:
            out["id_chain"] = chain
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
    tx = transmitters(manifest, transmitter_states)
    if tx is not None:
        out["transmitters"] = tx
    graph = colouring(manifest, coloured)
    if graph is not None:
        out["colouring"] = graph
    return out


def id_chain(s: pd.DataFrame, at: Dict[tuple, Dict[str, int]], manifest: dict,
             unit: Optional[float]) -> Optional[Dict[str, object]]:
    """How the sequencer's ids follow one another (see the module's `id_chain`); None with fewer
    than two consecutive ids. s: the data sends (origin, seq, t, order); at: per message
    (origin, seq) each component's first handling (ns)."""
    rows = s[s["order"].notna()]
    by_id: Dict[int, Tuple[str, object, int]] = {}
    for origin, seq, t, mid in zip(rows["origin"], rows["seq"], rows["t"].astype("int64"), rows["order"]):
        by_id.setdefault(int(mid), (origin, seq, int(t)))
    intervals, reach, ranks, same = [], [], [], 0
    for mid in sorted(by_id):
        if mid + 1 not in by_id:
            continue
        origin, seq, t = by_id[mid]
        nxt, _, t_next = by_id[mid + 1]
        intervals.append(t_next - t)
        if nxt == origin:
            same += 1
            continue
        handled = at.get((origin, seq), {})
        if nxt in handled:
            reach.append(handled[nxt] - t)
            if len(handled) >= 2:
                ranks.append(sum(1 for v in handled.values() if v < handled[nxt]) / (len(handled) - 1))
    if not intervals:
        return None
    owners = [by_id[m][0] for m in sorted(by_id)]
    k = len(set(owners))
    repeats = [owners[i] == owners[i - k] for i in range(k, len(owners))]
    order = list(((manifest.get("topology") or {}).get("nodes") or {}))
    place = {n: i for i, n in enumerate(order)}
    wave = [place[o] for o in owners[:k] if o in place]
    tau = None
    if len(wave) >= 2:
        from scipy.stats import kendalltau

        value = kendalltau(np.arange(len(wave)), np.asarray(wave)).statistic
        tau = None if np.isnan(value) else float(value)
    return {"pairs": len(intervals), "same_owner": same,
            "send_interval": _in_units(stats_ms(np.asarray(intervals, np.int64)), unit),
            "reach_next_owner": _in_units(stats_ms(np.asarray(reach, np.int64)), unit) if reach else None,
            "next_owner_rank": float(np.mean(ranks)) if ranks else None,
            "owners": k, "cycle_repeats": float(np.mean(repeats)) if repeats else None,
            "first_wave_vs_node_order": tau}


def html(a: Dict[str, object]) -> str:
    """The report's AbC section."""
    dt, dis = a.get("delivery_time", {}), a.get("dissemination_time", {})
    gap, wait = a.get("message_time_gap", {}), a.get("id_wait", {})
    unit = a.get("time_unit_ms")
    parts: List[str] = ["<h2>AbC measures (event logs)</h2>"]
    parts.append(f"<p>{a.get('messages')} data messages among {a.get('components')} components; "
                 f"{a.get('delivered_to_all')} delivered to every component"
                 + (f"; one paper time unit = {fmt(unit)} ms" if unit else "")
                 + (f"; horizon (end of the workload) at {fmt(a.get('horizon_time_units') or a.get('horizon_s'))} "
                    f"{'time units' if a.get('horizon_time_units') else 's'}" if a.get("horizon_s") is not None else "")
                 + ".</p>")

    def horizon(m: dict, key: str):
        return (m.get("at_horizon") or {}).get(key)

    parts.append(table(["measure", "mean (ms)", "mean (time units)", "at the horizon (ms)",
                        "at the horizon (time units)", "median (ms)", "p95 (ms)", "max (ms)"], [
        ["delivery time: wanting to send to the last component's handling (the paper's)", dt.get("mean_ms"),
         dt.get("mean_time_units"), horizon(dt, "mean_ms"), horizon(dt, "mean_time_units"), dt.get("median_ms"),
         dt.get("p95_ms"), dt.get("max_ms")],
        ["dissemination time: data send to the last component's handling", dis.get("mean_ms"),
         dis.get("mean_time_units"), horizon(dis, "mean_ms"), horizon(dis, "mean_time_units"), dis.get("median_ms"),
         dis.get("p95_ms"), dis.get("max_ms")],
        ["average message time gap", gap.get("mean_ms"), gap.get("mean_time_units"), horizon(gap, "mean_ms"),
         horizon(gap, "mean_time_units"), None, None, None],
        ["wait for an id (wanting to send to data send)", wait.get("mean_ms"), wait.get("mean_time_units"), None,
         None, wait.get("median_ms"), wait.get("p95_ms"), wait.get("max_ms")]]))
    tx = a.get("transmitters") or {}
    groups = [(g, tx[g]) for g in ("servers", "components") if g in tx]
    if groups:
        parts.append(table(["transmitters", "nodes", "transmitting", "transmissions", "min rate", "median rate",
                            "max rate", "target rate (λt)"],
                           [[g, v["nodes"], v["transmitting"], v["transmissions"], v["min_rate"], v["median_rate"],
                             v["max_rate"], v["target_rate"]] for g, v in groups]))
        parts.append("<p>Rates are transmissions per time unit of busy time (the sum of a node's busy "
                     "periods).</p>")
    ids = a.get("ids", {})
    parts.append(table(["ids given", "reused", "contiguous from 0", "accepted", "discarded", "receivers disagree"],
                       [[ids.get("count"), ids.get("reused"), ids.get("contiguous"), a.get("accepted"),
                         a.get("discarded"), a.get("receivers_disagree")]]))
    chain = a.get("id_chain")
    if chain:
        interval, reach = chain.get("send_interval") or {}, chain.get("reach_next_owner") or {}
        parts.append(table(["id chain", "pairs", "send interval, mean (ms)", "(time units)",
                            "to the next owner's handling, mean (ms)", "(time units)", "next owner's rank",
                            "owners", "cycle repeats", "first wave vs node order (tau)"],
                           [["consecutive ids", chain["pairs"], interval.get("mean_ms"), interval.get("mean_time_units"),
                             reach.get("mean_ms"), reach.get("mean_time_units"), chain.get("next_owner_rank"),
                             chain.get("owners"), chain.get("cycle_repeats"), chain.get("first_wave_vs_node_order")]]))
        parts.append("<p>The owner of id i + 1 sends only once it has handled id i: its rank is the share of "
                     "id i's handlers that handled it first (0.5 when uniform); cycle repeats, the share of ids "
                     "whose owner is the owner of the id one round of owners before.</p>")
    col = a.get("colouring")
    if col:
        parts.append(f"<h3>Graph colouring: <span class='{escape(col['verdict'])}'>{escape(col['verdict'])}</span></h3>")
        parts.append(table(["vertices", "edges", "coloured", "colours", "rounds", "conflicting edges", "uncoloured"],
                           [[col["vertices"], col["edges"], col["coloured"], col["colours"], col["rounds"],
                             col["conflicts"], ", ".join(col["uncoloured"])]]))
        parts.append(table(["vertex", "colour"], [[v, c] for v, c in col["colouring"].items()]))
    return "\n".join(parts)
