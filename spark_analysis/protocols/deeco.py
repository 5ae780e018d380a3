"""The DEECo analysis (a protocol analysis, spark_analysis.protocols): the measures Kováč's thesis
reports on DEECo gossip (/work/shared/papers/deeco-gossip-manet.txt, chapter 7) for a run of the
`deeco-node` and `deeco-grouper` roles (agents/deeco/), and its report section.

- `messages` (Tables 5, Figures 28, 31, 35: "the total number of sent messages"), from the run's
  sent counts (every send event, relays included: spark_analysis.sent.sent_counts): the
  knowledge publications (GOSSIP_KNOWLEDGE, hop 0), the `rebroadcasts` (GOSSIP_KNOWLEDGE relayed:
  Rule 12's and the pulled ones of Rule 24, and a grouper's forwards round its ring), `headers`
  (GOSSIP_HEADERS), `pulls` (GOSSIP_PULL) and `groups` (GOSSIP_GROUPS, the groupers' member
  tables), each as `messages` (send events) and `transmissions`. `total` is the transmissions of
  all of them: on a radio a broadcast is one message whoever hears it, on IP each recipient of
  the C drawn is one, as the thesis counts its (re)broadcasts and its IP sends. `datagrams` and
  `bytes` count each transmission's fragments and body bytes (a knowledge body larger than a
  datagram takes several; the thesis counts messages, fragments apart).
- `knowledge_age` (Figures 29, 32, 33, 34): over the deliveries of GOSSIP_KNOWLEDGE (a node
  accepting knowledge newer than what it held), age = delivery time − the knowledge's creation
  time (`produced_ns`), in ms: n, mean, min, q1, median, q3, p95, p99, max (metrics.stats_ms);
  `over_time`: [t, median age in ms] of the deliveries in each bin (t − step, t], t in seconds
  since the run's t0 at a step of 1, 2 or 5 × 10^k (at most 100 bins up to the later of the last
  delivery and the end of the workload; empty bins left out; `over_time_step_s` is the step).
- `coverage` (Figure 30: "how many knowledge valuations of distinct components has been
  delivered to individual nodes"): per DEECo node the distinct knowledge sources (origin nodes)
  it accepted knowledge from, and over those nodes min, median, mean, max; `sources`: the nodes
  that published knowledge.
- `fresh_at_end`: at the end of the workload (t0 + the scenario's duration_s), for each (node,
  source) pair the node had accepted knowledge of by then, the age of the newest it held (the
  end − its creation time): `median_age_ms`, and `fresh`, the pairs younger than two of the
  source's knowledge periods (R_K, its `knowledge_period_ms`, 5000 by default); `fresh_share`
  of the pairs held, and `fresh_share_of_expected` of `expected_pairs`, the (node, source) pairs
  whose node a publication by then named eligible (the nodes interested in the source's
  knowledge). None when the scenario has no duration.
- `stopped_pulling` (Table 9's "stops pulling"): the `deeco stopped pulling` state events: their
  `count`, the `nodes` that logged them and the `components` named.

A source is a node: a node hosting several components counts once in `coverage`, and its newest
knowledge in `fresh_at_end` is that of whichever of its components is newest.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from agents.deeco.node import DEFAULTS, STOPPED_PULLING
from agents.deeco.node import ROLES as DEECO_ROLES
from agents.wire import MessageType

from ..html import escape, fmt, table
from ..metrics import nice_step, stats_ms
from ..sent import SENT_COLUMNS

NAME = "deeco"
ROLES = DEECO_ROLES
KNOWLEDGE, HEADERS, PULLS, GROUPS = "GOSSIP_KNOWLEDGE", "GOSSIP_HEADERS", "GOSSIP_PULL", "GOSSIP_GROUPS"
TYPE_NAMES = (KNOWLEDGE, HEADERS, PULLS, GROUPS)
TYPES = tuple(int(MessageType[name]) for name in TYPE_NAMES)
STATES = (STOPPED_PULLING,)
COMPARED = [
    ("DEECo knowledge age median (ms)", ("deeco", "knowledge_age", "median_ms")),
    ("DEECo knowledge age q3 (ms)", ("deeco", "knowledge_age", "q3_ms")),
    ("DEECo messages sent, total", ("deeco", "messages", "total")),
    ("DEECo rebroadcasts", ("deeco", "messages", "rebroadcasts", "transmissions")),
    ("DEECo sources per node, median", ("deeco", "coverage", "median")),
    ("DEECo pairs fresh at the end, share of expected", ("deeco", "fresh_at_end", "fresh_share_of_expected")),
    ("DEECo stopped pulling", ("deeco", "stopped_pulling", "count")),
]
#: at most this many bins in knowledge_age's over_time
POINTS = 100
#: a (node, source) pair is fresh at the end when its knowledge is younger than this many periods
FRESH_PERIODS = 2


def measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict, states: pd.DataFrame,
             sent: Optional[pd.DataFrame] = None) -> Dict[str, object]:
    """The section of results.json; {} for a run without DEECo traffic.

    sends: the application sends of TYPES (origin, type, t, intended, ...); deliveries: node,
    origin, type, t, produced_ns; states: the `deeco stopped pulling` events (node, component);
    sent: the run's sent counts (node, type, relayed, messages, transmissions, datagrams, bytes)."""
    if sent is None:
        sent = pd.DataFrame({c: [] for c in SENT_COLUMNS[1:]})
    mine = sent[sent["type"].isin(TYPE_NAMES)]
    d = deliveries[deliveries["type"] == KNOWLEDGE]
    s = sends[sends["type"] == KNOWLEDGE]
    stopped = states[states["state"] == STOPPED_PULLING] if len(states) else states
    if not (len(mine) or len(d) or len(s) or len(stopped)):
        return {}
    clock = _Clock(manifest)
    t, produced, has = _ints(d["t"]), *_nullable_ints(d["produced_ns"])
    age = t[has] - produced[has]
    knowledge_age: Dict[str, object] = dict(stats_ms(age))
    knowledge_age.update(_over_time(clock, t[has], age))
    periods = knowledge_periods(manifest)
    shared = set(periods.values())
    return {
        "knowledge_period_ms": shared.pop() if len(shared) == 1 else None,
        "horizon_s": clock.horizon_s,
        "messages": messages(mine),
        "knowledge_age": knowledge_age,
        "coverage": coverage(d, mine, manifest),
        "fresh_at_end": fresh_at_end(d, s, clock, periods),
        "stopped_pulling": stopped_pulling(stopped),
    }


class _Clock:
    """The run's t0 (the manifest's t0_ns, else started_ns) and the end of its workload (t0 + the
    scenario's duration_s; None without one)."""

    def __init__(self, manifest: dict) -> None:
        self.t0 = int(manifest.get("t0_ns") or manifest.get("started_ns") or 0)
        duration = (manifest.get("scenario") or {}).get("duration_s")
        self.horizon = self.t0 + int(round(float(duration) * 1e9)) if duration is not None else None
        self.horizon_s = None if self.horizon is None else (self.horizon - self.t0) / 1e9


def _ints(column) -> np.ndarray:
    return pd.Series(column).to_numpy(dtype=np.int64, na_value=0) if len(column) else np.zeros(0, np.int64)


def _nullable_ints(column) -> Tuple[np.ndarray, np.ndarray]:
    """(values as int64, present) of an integer column with missing values, kept integer (a
    CLOCK_REALTIME nanosecond does not fit a float64 exactly)."""
    col = pd.Series(column)
    present = col.notna().to_numpy(dtype=bool)
    return (col.to_numpy(dtype=np.int64, na_value=0) if len(col) else np.zeros(0, np.int64)), present


def deeco_nodes(manifest: dict) -> List[str]:
    """The DEECo nodes of the run's topology, in node-id order."""
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    ids = manifest.get("node_ids") or {}
    return sorted((n for n, info in nodes.items() if (info or {}).get("role") in ROLES),
                  key=lambda n: (ids.get(n, len(ids) + 1), n))


def knowledge_periods(manifest: dict) -> Dict[str, float]:
    """Each DEECo node's R_K in ms (its `knowledge_period_ms`, the role's default else)."""
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    default = float(DEFAULTS["knowledge_period_ms"])
    return {n: float(((nodes[n] or {}).get("params") or {}).get("knowledge_period_ms", default))
            for n in deeco_nodes(manifest)}


def messages(sent: pd.DataFrame) -> Dict[str, object]:
    """The sent counts of the four gossip types, knowledge split into publications and relays."""
    typ = sent["type"].to_numpy(object)
    relayed = sent["relayed"].to_numpy(bool)
    knowledge = typ == KNOWLEDGE

    def part(sel: np.ndarray) -> Dict[str, int]:
        return {"messages": int(sent["messages"].to_numpy()[sel].sum()),
                "transmissions": int(sent["transmissions"].to_numpy()[sel].sum())}

    return {"knowledge": part(knowledge & ~relayed), "rebroadcasts": part(knowledge & relayed),
            "headers": part(typ == HEADERS), "pulls": part(typ == PULLS), "groups": part(typ == GROUPS),
            "total": int(sent["transmissions"].sum()), "datagrams": int(sent["datagrams"].sum()),
            "bytes": int(sent["bytes"].sum())}


def _over_time(clock: _Clock, t: np.ndarray, age: np.ndarray) -> Dict[str, object]:
    """The median age of the deliveries in each bin (t − step, t] since t0 (a delivery at or
    before t0 in the first bin)."""
    if not len(t):
        return {"over_time": [], "over_time_step_s": None}
    end = max(int(t.max()), clock.horizon or int(t.max())) - clock.t0
    step_s = nice_step(end / 1e9, POINTS)
    k = np.maximum(1, np.ceil((t - clock.t0) / (step_s * 1e9))).astype(np.int64)
    median = pd.Series(age.astype(np.float64)).groupby(k).median()
    return {"over_time": [[round(float(b) * step_s, 9), float(m) / 1e6] for b, m in median.items()],
            "over_time_step_s": step_s}


def coverage(d: pd.DataFrame, sent: pd.DataFrame, manifest: dict) -> Dict[str, object]:
    """Per DEECo node (and any node that accepted knowledge) the distinct sources it accepted
    knowledge from; min, median, mean and max over them."""
    pairs = d.loc[d["origin"].notna(), ["node", "origin"]].drop_duplicates()
    per = pairs.groupby("node").size()
    nodes = deeco_nodes(manifest)
    nodes += sorted(set(per.index) - set(nodes))
    per_node = {n: int(per.get(n, 0)) for n in nodes}
    values = np.array(list(per_node.values()), dtype=np.int64)
    published = sent[(sent["type"] == KNOWLEDGE) & ~sent["relayed"].astype(bool)]
    return {"nodes": len(values), "sources": int(published["node"].nunique()),
            "min": int(values.min()) if len(values) else None,
            "median": float(np.median(values)) if len(values) else None,
            "mean": float(values.mean()) if len(values) else None,
            "max": int(values.max()) if len(values) else None,
            "per_node": per_node}


def fresh_at_end(d: pd.DataFrame, s: pd.DataFrame, clock: _Clock,
                 periods: Dict[str, float]) -> Optional[Dict[str, object]]:
    """The age of the newest knowledge each node held of each source at the end of the workload."""
    if clock.horizon is None:
        return None
    end = clock.horizon
    t, (produced, has) = _ints(d["t"]), _nullable_ints(d["produced_ns"])
    held = pd.DataFrame({"node": d["node"].to_numpy(object), "origin": d["origin"].to_numpy(object),
                         "produced": produced})[has & (t <= end) & d["origin"].notna().to_numpy(bool)]
    newest = held.groupby(["node", "origin"], sort=False, as_index=False)["produced"].max()
    age = end - newest["produced"].to_numpy(np.int64)
    default = float(DEFAULTS["knowledge_period_ms"])
    period_ms = newest["origin"].map(periods).astype(np.float64).fillna(default).to_numpy(np.float64)
    fresh = age < FRESH_PERIODS * period_ms * 1e6
    # the pairs some publication by the end named eligible: each distinct eligible list once
    pubs = s.loc[_ints(s["t"]) <= end, ["origin", "intended"]] if len(s) else pd.DataFrame(
        {"origin": [], "intended": []})
    pubs = pubs.assign(intended=pubs["intended"].map(_names))
    pubs = pubs.assign(key=pubs["intended"].map(tuple))
    named = pubs.drop_duplicates(["origin", "key"])[["origin", "intended"]].explode("intended")
    expected = named[named["intended"].notna() & (named["intended"] != named["origin"])].drop_duplicates()
    expected = expected.rename(columns={"intended": "node"})
    both = newest.assign(fresh=fresh).merge(expected, on=["node", "origin"], how="inner")
    n, n_expected = len(newest), len(expected)
    return {"at_s": clock.horizon_s, "pairs": n, "expected_pairs": n_expected,
            "expected_held": int(len(both)),
            "median_age_ms": float(np.median(age)) / 1e6 if n else None,
            "fresh": int(fresh.sum()), "fresh_share": float(fresh.mean()) if n else None,
            "fresh_share_of_expected": float(both["fresh"].sum()) / n_expected if n_expected else None}


def _names(value) -> list:
    """An `intended` cell as a list of names (a list, a tuple or an array; nothing else names any)."""
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else []


def stopped_pulling(stopped: pd.DataFrame) -> Dict[str, object]:
    def names(column: str) -> List[str]:
        if column not in stopped or not len(stopped):
            return []
        return sorted({str(v) for v in stopped[column] if v is not None and v == v})

    return {"count": int(len(stopped)), "nodes": names("node"), "components": names("component")}


def html(a: Dict[str, object]) -> str:
    """The report's DEECo section."""
    m, age = a.get("messages") or {}, a.get("knowledge_age") or {}
    cov, fresh = a.get("coverage") or {}, a.get("fresh_at_end")
    stopped = a.get("stopped_pulling") or {}
    parts: List[str] = ["<h2>DEECo gossip (event logs)</h2>"]
    period = a.get("knowledge_period_ms")
    parts.append(f"<p>Knowledge period R<sub>K</sub>: {fmt(period) + ' ms' if period is not None else 'per node'}"
                 + (f"; end of the workload at {fmt(a.get('horizon_s'))} s" if a.get("horizon_s") is not None
                    else "") + ".</p>")
    kinds = [("knowledge publications", "knowledge"), ("rebroadcasts (relayed knowledge)", "rebroadcasts"),
             ("headers", "headers"), ("pull requests", "pulls"), ("grouper member tables", "groups")]
    parts.append(table(["sent", "send events", "transmissions"],
                       [[label, (m.get(k) or {}).get("messages"), (m.get(k) or {}).get("transmissions")]
                        for label, k in kinds] + [["total (the thesis's sent messages)", None, m.get("total")]]))
    parts.append(f"<p>A radio broadcast is one transmission, an IP send one per recipient; "
                 f"{fmt(m.get('datagrams'))} datagrams, {fmt(m.get('bytes'))} body bytes in all.</p>")
    parts.append(table(["knowledge age (ms)", "n", "mean", "q1", "median", "q3", "p95", "max"],
                       [["delivered knowledge: delivery − creation", age.get("n"), age.get("mean_ms"),
                         age.get("q1_ms"), age.get("median_ms"), age.get("q3_ms"), age.get("p95_ms"),
                         age.get("max_ms")]]))
    parts.append(table(["coverage", "nodes", "sources publishing", "min", "median", "mean", "max"],
                       [["distinct sources each node accepted knowledge from", cov.get("nodes"), cov.get("sources"),
                         cov.get("min"), cov.get("median"), cov.get("mean"), cov.get("max")]]))
    if fresh:
        parts.append(table(["at the end of the workload", "pairs held", "expected pairs", "median age (ms)",
                            f"fresh (< {FRESH_PERIODS} periods)", "share of held", "share of expected"],
                           [[f"{fmt(fresh.get('at_s'))} s", fresh.get("pairs"), fresh.get("expected_pairs"),
                             fresh.get("median_age_ms"), fresh.get("fresh"), fresh.get("fresh_share"),
                             fresh.get("fresh_share_of_expected")]]))
    if stopped.get("count"):
        parts.append(f"<p>Stopped pulling {stopped['count']} time(s), on "
                     f"{escape(', '.join(stopped.get('nodes') or []))}, for "
                     f"{escape(', '.join(stopped.get('components') or []))}.</p>")
    else:
        parts.append("<p>No node stopped pulling.</p>")
    return "\n".join(parts)
