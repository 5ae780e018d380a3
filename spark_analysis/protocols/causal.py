"""The causal cluster-consistency analysis (a protocol analysis, spark_analysis.protocols): the
measures of Gidenstam et al.'s section 6 for a run of the `causal-member` role (agents/causal/),
its ticket-uniqueness check, and its report section.

- `events`: `created` (CAUSAL_EVENT sends), `expected` (the (event, member) pairs its sends named
  eligible), `delivered` (first deliveries of an event at a member), `lost` = expected −
  delivered and `lost_share` (Figure 5(b): "lost if it was not received or could not be delivered
  without violating optimistic causal order"); `forced` and `obsolete` (the causality layer's
  counters: deliveries after time_to_recover, and events skipped as obsolete).
- `gossip_only` (Figure 5's "gossip" curve, from the PrCast receive order of the same run, each
  member logging at its stop what that order delivers in optimistic causal order): `delivered`,
  `out_of_order`, `lost` = expected − delivered and `lost_share`.
- `latency` (Figures 4, 5(a)): delivery time − the event's creation time over every delivery, in
  ms (metrics.stats_ms) and `median_rounds`, the median in gossip rounds (`gossip_round_ms`).
- `throughput` (Figure 4): delivered events per member per second of the workload.
- `message_bytes` (Figure 4's message size): the mean body bytes of a CAUSAL_DATA transmission.
- `recovery` (Figure 5(c)): `requests` (events asked for), `messages` (CAUSAL_RECOVER
  transmissions), `recovered` (requested events that arrived), `success_rate` = recovered /
  requests; `replies` (CAUSAL_RECOVERY transmissions).
- `membership`: MEMBERSHIP transmissions, `exclusions` and `joins` logged.
- `ticket_uniqueness`: the check of spark_analysis/checks/tickets.py (Theorem 4.2) over the logged
  ticket changes and the run's down intervals; it is added to the run's checks (`checks` below).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd

from agents.causal.member import COUNTERS_STATE, DEFAULTS, ROLE_NAME, TICKET_STATE
from agents.wire import MessageType

from ..checks.tickets import check_ticket_uniqueness
from ..history import down_intervals
from ..html import fmt, table
from ..metrics import SENT_COLUMNS, stats_ms

NAME = "causal"
ROLES = (ROLE_NAME,)
EVENT = "CAUSAL_EVENT"
TYPES = (int(MessageType.CAUSAL_EVENT),)
STATES = (TICKET_STATE, COUNTERS_STATE)
COMPARED = [
    ("causal events lost, share", ("causal", "events", "lost_share")),
    ("causal gossip-only lost, share", ("causal", "gossip_only", "lost_share")),
    ("causal latency median (ms)", ("causal", "latency", "median_ms")),
    ("causal latency median (rounds)", ("causal", "latency", "median_rounds")),
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
    expected = int(s["intended"].map(lambda v: len(v) if isinstance(v, (list, tuple)) else 0).sum()) \
        if "intended" in s else None
    first = d.drop_duplicates(["node", "origin", "seq"])
    delivered = int(len(first))
    lost = None if expected is None else max(expected - delivered, 0)
    t = d["t"].to_numpy(dtype=np.int64, na_value=0)
    produced = pd.to_numeric(d["produced_ns"], errors="coerce")
    has = produced.notna().to_numpy()
    latency: Dict[str, object] = dict(stats_ms(t[has] - produced.to_numpy(dtype=np.int64, na_value=0)[has]))
    round_ms = _param(manifest, "gossip_round_ms")
    latency["median_rounds"] = (latency["median_ms"] / round_ms if latency.get("median_ms") is not None and round_ms
                                else None)
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
    end = None if duration is None else int(manifest.get("t0_ns") or 0) + int(round(
        (float(duration) + float((manifest.get("scenario") or {}).get("quiet_s") or 0)) * 1e9))
    return {
        "members": count,
        "gossip_round_ms": round_ms,
        "events": {"created": int(len(s)), "expected": expected, "delivered": delivered, "lost": lost,
                   "lost_share": _share(lost, expected), "forced": _sum(counters, "causal_forced"),
                   "obsolete": _sum(counters, "causal_obsolete")},
        "gossip_only": {"delivered": only, "out_of_order": _sum(counters, "gossip_only_out_of_order"),
                        "lost": None if only is None or expected is None else max(expected - only, 0),
                        "lost_share": None if only is None else _share(max(expected - only, 0), expected)},
        "latency": latency,
        "throughput": delivered / count / float(duration) if count and duration else None,
        "message_bytes": sent_of(MessageType.CAUSAL_DATA, "bytes") / data_tx if data_tx else None,
        "recovery": {"requests": requests, "messages": sent_of(MessageType.CAUSAL_RECOVER, "transmissions"),
                     "replies": sent_of(MessageType.CAUSAL_RECOVERY, "transmissions"), "recovered": recovered,
                     "success_rate": _share(recovered, requests)},
        "membership": {"messages": sent_of(MessageType.MEMBERSHIP, "transmissions"),
                       "exclusions": int((why == "excluded").sum()), "joins": int((why == "joined").sum())},
        "ticket_uniqueness": check_ticket_uniqueness(rows, down_intervals(manifest), end),
    }


def checks(section: Dict[str, object]) -> List[Dict[str, object]]:
    """The checks this analysis judges from its own inputs, added to the run's checks."""
    found = section.get("ticket_uniqueness") if section else None
    return [found] if found else []


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
                       [["delivery − creation", lat.get("n"), lat.get("median_ms"), lat.get("median_rounds"),
                         lat.get("q3_ms"), lat.get("p95_ms"), lat.get("max_ms")]]))
    parts.append(table(["throughput (events / member / s)", "message size (bytes)", "recovery requests",
                        "recovered", "success rate", "membership messages", "exclusions", "joins"],
                       [[a.get("throughput"), a.get("message_bytes"), r.get("requests"), r.get("recovered"),
                         r.get("success_rate"), m.get("messages"), m.get("exclusions"), m.get("joins")]]))
    return "\n".join(parts)
