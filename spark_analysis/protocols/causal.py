"""The causal cluster-consistency analysis (a protocol analysis, spark_analysis.protocols): the
measures of Gidenstam et al.'s section 6 for a run of the `causal-member` role (agents/causal/),
its ticket-uniqueness check, and its report section.

- `events`: `created` (CAUSAL_EVENT sends), `expected` (the (event, member) pairs its sends named
  eligible, for the members that take part from the event's creation to the end of the run: not
  one killed, stopped or not yet started meanwhile), `delivered` (first deliveries of expected
  pairs), `lost` = expected −
  delivered and `lost_share` (Figure 5(b): "lost if it was not received or could not be delivered
  without violating optimistic causal order"); `forced` and `obsolete` (the causality layer's
  counters: deliveries after time_to_recover, and events skipped as obsolete); `lost_by_most`,
  `lost_by_several` and `lost_by_several_if_independent` (whether the lost pairs cluster on
  events: `lost_per_event`).
- `gossip_only` (Figure 5's "gossip" curve, from the PrCast receive order of the same run, each
  member logging at its stop what that order delivers in optimistic causal order): `delivered`,
  `out_of_order`, `lost` = expected − delivered and `lost_share`. Its `delivered` is each
  member's count of everything it received, expected or not: with members down or joining
  mid-run it can exceed the expected pairs' share (the two-layer figure counts expected pairs
  only), so compare the two on runs without churn, as Figure 5 does.
- `latency` (Figures 4, 5(a)): delivery time − the event's creation time over every delivery, in
  ms (metrics.stats_ms) and `median_rounds`, the median in gossip rounds (`gossip_round_ms`).
- `throughput` (Figure 4): delivered events per member per second of the workload.
- `gossip_only.latency` (Figure 5(a), gossip alone): the latency of the events the PrCast receive
  order delivers, from creation to first receipt, merged from the members' whole-ms histograms
  (to the millisecond), with `median_rounds`.
- `message_bytes` (Figure 4's message size): the mean body bytes of a CAUSAL_DATA transmission;
  `record_bytes`: those bytes per event record carried (the members count the records they send).
- `latency.median_hops`, `mean_hops`: hops of the copy each delivery came by (a gossip copy's
  age, 1 for a recovered one).
- `recovery` (Figure 5(c)): `requests` (events asked for), `messages` (CAUSAL_RECOVER
  transmissions), `recovered` (requested events that arrived), `success_rate` = recovered /
  requests; `replies` (CAUSAL_RECOVERY transmissions).
- `membership`: MEMBERSHIP transmissions, `exclusions`, `joins` and `leaves` (Algorithm 1's,
  acknowledged) logged, `disconnections` (ticket changes to disconnected, for whatever reason),
  `alive_per_round_max` (the most ALIVEs a process sent between two of its rounds: at most
  2k+1), and per exclusion (`exclusion_list`) the fault it answered, the rounds since, E_pq and
  the distance, a cut-off member's own disconnection against Corollary 4.1's bound (`disconnect_within_bound` over all)
  and against the bound of the algorithm's own timing (`disconnect_within_reading_bound`)
  and the rounds until an excluded ticket was held again (`exclusion_after_fault_rounds_max`).
- `ticket_uniqueness`: the check of spark_analysis/checks/tickets.py (Theorem 4.2) over the logged
  ticket changes and the run's down intervals; it is added to the run's checks (`checks` below).
- `event_identity`: the check of spark_analysis/checks/creators.py over the events' creations: no
  event name given twice ((origin, seq) or (ticket, count)), no two origins creating under one
  ticket at once; added to the run's checks as well.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

from agents.causal.member import COUNTERS_STATE, DEFAULTS, ROLE_NAME, TICKET_STATE
from agents.wire import MessageType

from ..checks.creators import check_event_identity
from ..checks.tickets import check_ticket_uniqueness
from ..history import down_intervals
from ..html import fmt, table
from ..metrics import stats_ms
from ..sent import SENT_COLUMNS

NAME = "causal"
ROLES = (ROLE_NAME,)
EVENT = "CAUSAL_EVENT"
TYPES = (int(MessageType.CAUSAL_EVENT),)
STATES = (TICKET_STATE, COUNTERS_STATE)
#: the timeline actions after which a coordinator may be excluded: it went down or was cut off
FAULTS = ("kill", "stop", "pause", "link_down", "partition")
COMPARED = [
    ("causal events lost, share", ("causal", "events", "lost_share")),
    ("causal gossip-only lost, share", ("causal", "gossip_only", "lost_share")),
    ("causal latency median (ms)", ("causal", "latency", "median_ms")),
    ("causal latency median (rounds)", ("causal", "latency", "median_rounds")),
    ("causal gossip-only latency median (ms)", ("causal", "gossip_only", "latency", "median_ms")),
    ("causal throughput (events per member per s)", ("causal", "throughput")),
    ("causal message size (bytes)", ("causal", "message_bytes")),
    ("causal recovery success rate", ("causal", "recovery", "success_rate")),
]


def members(manifest: dict) -> List[str]:
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    return sorted(n for n, info in nodes.items() if (info or {}).get("role") == ROLE_NAME)


def _param(manifest: dict, key: str) -> Optional[float]:
    nodes = (manifest.get("topology") or {}).get("nodes") or {}
    values = {((nodes[n] or {}).get("params") or {}).get(key, DEFAULTS.get(key)) for n in members(manifest)}
    return float(values.pop()) if len(values) == 1 and None not in values else None


def _sum(states: pd.DataFrame, column: str) -> Optional[int]:
    if column not in states.columns or not len(states):
        return None
    return int(pd.to_numeric(states[column], errors="coerce").fillna(0).sum())


def _disconnections(tickets: pd.DataFrame) -> int:
    """Ticket changes to `disconnected` before the run's end: a coordinator that lost its tickets
    (excluded elsewhere, too few ALIVEs, an exclusion not acknowledged, a failed leave)."""
    if not len(tickets) or "membership" not in tickets.columns:
        return 0
    return int((tickets["membership"].astype(str) == "disconnected").sum())


def _record_bytes(sent: pd.DataFrame, counters: pd.DataFrame) -> Optional[float]:
    """Gossip body bytes per event record, over the members that counted the records they sent
    (a killed one logs no counters: its bytes are left out with its records)."""
    if "gossip_records" not in counters.columns or not len(counters):
        return None
    records = pd.to_numeric(counters["gossip_records"], errors="coerce")
    counted = set(counters.loc[records.notna(), "node"])
    data = sent[(sent["type"] == MessageType.CAUSAL_DATA.name) & sent["node"].isin(counted)]
    total = int(records.fillna(0).sum())
    return float(data["bytes"].sum()) / total if total else None


def _histogram_stats(states: pd.DataFrame, column: str) -> Optional[Dict[str, object]]:
    """stats_ms of the members' whole-millisecond histograms ({ms: events}, a dict or its JSON)
    merged, each value taken at the middle of its millisecond; None when no member logged one."""
    if column not in states.columns or not len(states):
        return None
    merged: Dict[int, int] = {}
    seen = False
    for value in states[column]:
        if isinstance(value, str):
            value = json.loads(value)
        if not isinstance(value, dict):
            continue
        seen = True
        for ms, n in value.items():
            merged[int(ms)] = merged.get(int(ms), 0) + int(n)
    if not seen:
        return None
    ms = sorted(merged)
    return stats_ms(np.repeat((np.array(ms, dtype=np.float64) + 0.5) * 1e6, [merged[m] for m in ms]))


def _rounds(stats: Optional[Dict[str, object]], round_ms: Optional[float]) -> Optional[Dict[str, object]]:
    if stats is None:
        return None
    median = stats.get("median_ms")
    return {**stats, "median_rounds": median / round_ms if median is not None and round_ms else None}


def _max(states: pd.DataFrame, column: str) -> Optional[int]:
    if column not in states.columns or not len(states):
        return None
    values = pd.to_numeric(states[column], errors="coerce").dropna()
    return int(values.max()) if len(values) else None


def _end_ns(manifest: dict) -> Optional[int]:
    duration = (manifest.get("scenario") or {}).get("duration_s")
    if duration is None:
        return None
    return int(manifest.get("t0_ns") or 0) + int(round(
        (float(duration) + float((manifest.get("scenario") or {}).get("quiet_s") or 0)) * 1e9))


def _up_throughout(node: str, start: int, end: Optional[int], down: Dict[str, list]) -> bool:
    """Whether the node takes part from `start` to the run's end (no down interval meets it)."""
    for d0, d1 in down.get(node, ()):
        if (d1 is None or d1 > start) and (end is None or d0 < end):
            return False
    return True


def _joined_at(first: pd.DataFrame, down: Dict[str, list]) -> Dict[str, int]:
    """For a member that came up mid-run (a joiner held for the timeline, a restart): its first
    delivery after it came up. Its clock starts from the first event it receives (reading I10),
    so what was created before that is not expected there."""
    out: Dict[str, int] = {}
    for node, spans in down.items():
        back = [d1 for _, d1 in spans if d1 is not None]
        if not back:
            continue
        times = first.loc[(first["node"] == node) & (first["t"] >= max(back)), "t"]
        out[node] = int(times.min()) if len(times) else max(back)
    return out


def expected_pairs(s: pd.DataFrame, down: Dict[str, list], end: Optional[int],
                   since: Optional[Dict[str, int]] = None) -> Optional[pd.DataFrame]:
    """(node, origin, seq) for every member an event's send named eligible that takes part from
    the event's creation to the end of the run: a member killed, stopped or not yet started
    (a joiner held for the timeline) is not expected to deliver what was created meanwhile, nor
    a member that came up mid-run what was created before its first delivery (`since`).
    None when the sends name no receivers."""
    if "intended" not in s:
        return None
    since = since or {}
    rows = [(r, origin, int(seq)) for origin, seq, t, receivers in zip(s["origin"], s["seq"], s["t"], s["intended"])
            if isinstance(receivers, (list, tuple)) for r in receivers
            if r != origin and _up_throughout(r, int(t), end, down) and int(t) >= since.get(r, 0)]
    return pd.DataFrame(rows, columns=["node", "origin", "seq"]).drop_duplicates()


def lost_per_event(pairs: Optional[pd.DataFrame], first: pd.DataFrame) -> Dict[str, Optional[float]]:
    """Whether losses cluster on events (Figure 5(c): R4 fails when the k members asked all lack
    the event, which the paper puts down to "a PrCast [that] may reach very few processes"): the
    most expected members one event was lost at, the events lost at two or more of theirs, and
    how many such events independent losses at the run's lost share q would give, summed over the
    events with their own numbers of expected members (1 − (1 − q)ⁿ − n·q·(1 − q)ⁿ⁻¹). `first`
    holds each (node, origin, seq) once, as in `measures`."""
    if pairs is None or not len(pairs):
        return {"lost_by_most": None, "lost_by_several": None, "lost_by_several_if_independent": None}
    joined = pairs.merge(first[["node", "origin", "seq"]].assign(_got=True), on=["node", "origin", "seq"], how="left")
    missed = joined["_got"].isna()
    lost = joined[missed].groupby(["origin", "seq"]).size()
    q = float(missed.mean())
    n = pairs.groupby(["origin", "seq"]).size().to_numpy(dtype=float)
    independent = float(np.sum(1 - (1 - q) ** n - n * q * (1 - q) ** (n - 1))) if q else 0.0
    return {"lost_by_most": int(lost.max()) if len(lost) else 0, "lost_by_several": int((lost >= 2).sum()),
            "lost_by_several_if_independent": independent}


def exclusion_measures(rows: List[Dict[str, Any]], tickets: pd.DataFrame, down: Dict[str, list], manifest: dict,
                       round_ms: Optional[float]) -> Dict[str, object]:
    """Each exclusion against the fault that caused it (Algorithm 4, Corollary 4.1): who excluded
    whom, how many cluster rounds after the excluded process went down (killed or stopped) or was
    cut off (the latest timeline action naming it before the exclusion), the tickets E_pq and
    dist(p, q); for an excluded process still running, how many rounds after the exclusion it
    disconnected by itself against the Corollary's bound (the i-th successor of p in E_pq within
    i rounds, i its rank among the processes of E_pq from p) and against the bound the algorithm's
    own timing gives (i + 1 rounds and (2i - 1) message delays: ALIVEs sent before the
    acknowledgement still count once, docs/CAUSAL-READING.md section 7); and how many rounds later another process first held an excluded ticket (reuse,
    which the blocking delays by at least the distance)."""
    out: List[Dict[str, Any]] = []
    if not rows or not round_ms:
        return {"exclusion_list": out, "exclusion_after_fault_rounds_max": None, "disconnect_within_bound": None,
                "disconnect_within_reading_bound": None}
    delta_ms = _param(manifest, "delta_ms")
    delta_rounds = delta_ms / round_ms if delta_ms is not None else None
    t0 = int(manifest.get("t0_ns") or 0)
    rnd = round_ms * 1e6
    faults: Dict[str, List[int]] = {}
    for a in manifest.get("timeline") or []:
        if a.get("ok", True) and a.get("t_ns") is not None and a.get("action") in FAULTS:
            named = set(a.get("nodes") or ([a["node"]] if a.get("node") else [])) | set(a.get("link") or ())
            for g in a.get("groups") or ():
                named |= set(g)
            for n in named:
                faults.setdefault(n, []).append(int(a["t_ns"]))
    by_node: Dict[str, List[Dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        by_node.setdefault(r["node"], []).append(r)
    for _, r in (tickets.sort_values("t").iterrows() if len(tickets) else ()):
        if r.get("why") != "excluded":
            continue
        t = int(r["t"])
        excluded = _names(r.get("excluded"))
        e_tickets = _list(r.get("tickets"))
        known = [f for x in excluded for f in faults.get(x, ()) if f <= t]
        entry: Dict[str, Any] = {"excluder": r["node"], "excluded": excluded, "t_s": (t - t0) / 1e9,
                                 "tickets": e_tickets, "distance": len(e_tickets) + 1,
                                 "after_fault_rounds": (t - max(known)) / rnd if known else None,
                                 "disconnected": {}}
        # each excluded process's own ticket when it was cut off or went down, so its place among
        # the processes of E_pq: Corollary 4.1 bounds the i-th successor of p in E_pq by i rounds
        # (i counts processes, not tickets: the free tickets they coordinate are not successors)
        cut_at = {x: max((f for f in faults.get(x, ()) if f <= t), default=t) for x in excluded}
        owned: Dict[str, int] = {}
        for x in excluded:
            before = [q for q in by_node.get(x, ()) if q["t"] <= cut_at[x] and q.get("ticket") is not None]
            if before and before[-1]["ticket"] in e_tickets:
                owned[x] = before[-1]["ticket"]
        for x in excluded:
            if not _up_throughout(x, t, t + 1, down):
                continue   # down already: it holds nothing
            own = owned.get(x)
            rank = (1 + sum(e_tickets.index(o) < e_tickets.index(own) for y, o in owned.items() if y != x)
                    if own is not None else None)
            bound = rank
            # the bound under the algorithm's own timing (docs/CAUSAL-READING.md, section 7): the
            # closest lets go within 2T + δ of the acknowledgement, each next one T + 2δ later
            reading = (None if rank is None or delta_rounds is None
                       else round(rank + 1 + (2 * rank - 1) * delta_rounds, 6))
            # it may notice before its excluder does (a negative count: it let go first)
            gone = next((q for q in by_node.get(x, ()) if q["t"] >= cut_at[x] and q.get("ticket") is None), None)
            after = None if gone is None else (int(gone["t"]) - t) / rnd
            entry["disconnected"][x] = {"after_rounds": after, "bound_rounds": bound,
                                        "within": after is not None and bound is not None and after <= bound,
                                        "reading_bound_rounds": reading,
                                        "within_reading": after is not None and reading is not None and after <= reading}
        reuse = [int(q["t"]) for q in rows if q["t"] > t and q["node"] != r["node"] and q["node"] not in excluded
                 and (q.get("ticket") in e_tickets or set(q.get("coordinates") or ()) & set(e_tickets))]
        entry["reused_after_rounds"] = (min(reuse) - t) / rnd if reuse else None
        out.append(entry)
    cut = [d for e in out for d in e["disconnected"].values()]
    return {"exclusion_list": out,
            "exclusion_after_fault_rounds_max": max((e["after_fault_rounds"] for e in out
                                                      if e["after_fault_rounds"] is not None), default=None),
            "disconnect_within_bound": all(d["within"] for d in cut) if cut else None,
            "disconnect_within_reading_bound": all(d["within_reading"] for d in cut) if cut else None}


def _names(value: Any) -> List[str]:
    if isinstance(value, str):
        value = json.loads(value)
    return [str(v) for v in (value or [])]


def _share(part: Optional[int], whole: Optional[int]) -> Optional[float]:
    return None if part is None or not whole else part / whole


def _list(value: Any) -> List[int]:
    if isinstance(value, str):
        value = json.loads(value)
    return [int(v) for v in (value or [])]


def measures(sends: pd.DataFrame, deliveries: pd.DataFrame, manifest: dict, states: pd.DataFrame,
             sent: Optional[pd.DataFrame] = None) -> Dict[str, object]:
    """The section of results.json; {} for a run without causal traffic."""
    if sent is None:
        sent = pd.DataFrame({c: [] for c in SENT_COLUMNS[1:]})
    s = sends[sends["type"] == EVENT]
    d = deliveries[deliveries["type"] == EVENT]
    counters = states[states["state"] == COUNTERS_STATE] if len(states) else states
    tickets = states[states["state"] == TICKET_STATE] if len(states) else states
    if not (len(s) or len(d) or len(tickets)):
        return {}
    down = down_intervals(manifest)
    end = _end_ns(manifest)
    if end is not None and len(tickets):   # after the run's end the agents are being stopped
        tickets = tickets[pd.to_numeric(tickets["t"]) < end]
    first = d.drop_duplicates(["node", "origin", "seq"])
    pairs = expected_pairs(s, down, end, _joined_at(first, down))
    if pairs is None:
        expected, delivered = None, int(len(first))
    else:
        expected = len(pairs)
        delivered = int(len(first.merge(pairs, on=["node", "origin", "seq"]))) if len(pairs) else 0
    lost = None if expected is None else max(expected - delivered, 0)
    t = d["t"].to_numpy(dtype=np.int64, na_value=0)
    produced = pd.to_numeric(d["produced_ns"], errors="coerce")
    has = produced.notna().to_numpy()
    latency: Dict[str, object] = dict(stats_ms(t[has] - produced.to_numpy(dtype=np.int64, na_value=0)[has]))
    round_ms = _param(manifest, "gossip_round_ms")
    latency["median_rounds"] = (latency["median_ms"] / round_ms if latency.get("median_ms") is not None and round_ms
                                else None)
    hops = pd.to_numeric(d["hops"], errors="coerce").dropna() if "hops" in d.columns else pd.Series([], dtype=float)
    latency["median_hops"] = float(hops.median()) if len(hops) else None
    latency["mean_hops"] = float(hops.mean()) if len(hops) else None
    duration = (manifest.get("scenario") or {}).get("duration_s")
    count = len(members(manifest))
    only = _sum(counters, "gossip_only_delivered")

    def sent_of(kind: MessageType, column: str) -> int:
        rows = sent[sent["type"] == kind.name]
        return int(rows[column].sum()) if len(rows) else 0

    data_tx = sent_of(MessageType.CAUSAL_DATA, "transmissions")
    requests = _sum(counters, "causal_recover_requests")
    recovered = _sum(counters, "causal_recovered")
    why = tickets["why"].astype(str) if len(tickets) else pd.Series([], dtype=object)
    rows = [{"node": r["node"], "t": int(r["t"]),
             "ticket": None if pd.isna(r.get("ticket")) else int(r["ticket"]),
             "coordinates": _list(r.get("coordinates")), "why": r.get("why")}
            for _, r in tickets.iterrows()]
    return {
        "members": count,
        "gossip_round_ms": round_ms,
        "events": {"created": int(len(s)), "expected": expected, "delivered": delivered, "lost": lost,
                   "lost_share": _share(lost, expected), "forced": _sum(counters, "causal_forced"),
                   "obsolete": _sum(counters, "causal_obsolete"),
                   **lost_per_event(pairs, first)},
        "gossip_only": {"delivered": only, "out_of_order": _sum(counters, "gossip_only_out_of_order"),
                        "lost": None if only is None or expected is None else max(expected - only, 0),
                        "lost_share": None if only is None else _share(max(expected - only, 0), expected),
                        "latency": _rounds(_histogram_stats(counters, "gossip_only_latency_ms"), round_ms)},
        "latency": latency,
        "throughput": delivered / count / float(duration) if count and duration else None,
        "message_bytes": sent_of(MessageType.CAUSAL_DATA, "bytes") / data_tx if data_tx else None,
        "record_bytes": _record_bytes(sent, counters),
        "recovery": {"requests": requests, "messages": sent_of(MessageType.CAUSAL_RECOVER, "transmissions"),
                     "replies": sent_of(MessageType.CAUSAL_RECOVERY, "transmissions"), "recovered": recovered,
                     "success_rate": _share(recovered, requests)},
        "membership": {"messages": sent_of(MessageType.MEMBERSHIP, "transmissions"),
                       "exclusions": int((why == "excluded").sum()), "joins": int((why == "joined").sum()),
                       "leaves": int((why == "left").sum()), "disconnections": _disconnections(tickets),
                       "alive_per_round_max": _max(counters, "cluster_alive_max_round"),
                       "k": _param(manifest, "k"),
                       **exclusion_measures(rows, tickets, down, manifest, _param(manifest, "round_ms"))},
        "ticket_uniqueness": check_ticket_uniqueness(rows, down, end),
        "event_identity": check_event_identity(_creations(s), _breaks(rows, down)),
    }


def _creations(s: pd.DataFrame) -> List[Dict[str, Any]]:
    """The events' creations: origin, seq (the creator's own number), ticket, count (t_e[ticket])
    and time, from the send's message_id, (ticket + 1) × 2^32 + count (agents/causal/causality.py
    event_id); a log from before that (message_id the bare ticket) gives the ticket and no count."""
    if not len(s) or "message_id" not in s.columns:
        return []
    rows = s[["origin", "seq", "message_id", "t"]].dropna()
    out = []
    for o, q, m, t in rows.itertuples(index=False, name=None):
        m = int(m)
        ticket, count = ((m >> 32) - 1, m & 0xFFFF_FFFF) if m >= 1 << 32 else (m, None)
        out.append({"origin": o, "seq": int(q), "ticket": ticket, "count": count, "t": int(t)})
    return out


def _breaks(rows: List[Dict[str, Any]], down: Dict[str, list]) -> Dict[str, List[int]]:
    """Per node, when it let go of the ticket it owned: each logged change to another ticket or
    to none (not a served cjoin or a takeover, which keep it), and each time it went down."""
    out: Dict[str, List[int]] = {}
    last: Dict[str, Any] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        node = r["node"]
        if node in last and r["ticket"] != last[node]:
            out.setdefault(node, []).append(int(r["t"]))
        last[node] = r["ticket"]
    for node, spans in down.items():
        out.setdefault(node, []).extend(int(a) for a, _ in spans)
    return out


def checks(section: Dict[str, object]) -> List[Dict[str, object]]:
    """The checks this analysis judges from its own inputs, added to the run's checks."""
    return [found for key in ("ticket_uniqueness", "event_identity") if (found := (section or {}).get(key))]


def html(a: Dict[str, object]) -> str:
    """The report's causal section."""
    e, g, lat = a.get("events") or {}, a.get("gossip_only") or {}, a.get("latency") or {}
    r, m = a.get("recovery") or {}, a.get("membership") or {}
    parts = ["<h2>Causal cluster consistency (event logs)</h2>",
             f"<p>{fmt(a.get('members'))} members, gossip rounds of {fmt(a.get('gossip_round_ms'))} ms.</p>"]
    parts.append(table(["events", "created", "expected pairs", "delivered", "lost", "lost share", "forced", "obsolete"],
                       [["two-layer protocol", e.get("created"), e.get("expected"), e.get("delivered"), e.get("lost"),
                         e.get("lost_share"), e.get("forced"), e.get("obsolete")],
                        ["gossip only (PrCast receive order)", None, e.get("expected"), g.get("delivered"),
                         g.get("lost"), g.get("lost_share"), None, None]]))
    parts.append(table(["latency", "n", "median (ms)", "median (rounds)", "q3 (ms)", "p95 (ms)", "max (ms)"],
                       [[name, x.get("n"), x.get("median_ms"), x.get("median_rounds"), x.get("q3_ms"),
                         x.get("p95_ms"), x.get("max_ms")]
                        for name, x in (("two-layer: delivery − creation", lat),
                                        ("gossip only: first receipt − creation", g.get("latency") or {}))]))
    parts.append(table(["throughput (events / member / s)", "message size (bytes)", "recovery requests",
                        "recovered", "success rate", "membership messages", "exclusions", "joins"],
                       [[a.get("throughput"), a.get("message_bytes"), r.get("requests"), r.get("recovered"),
                         r.get("success_rate"), m.get("messages"), m.get("exclusions"), m.get("joins")]]))
    return "\n".join(parts)
