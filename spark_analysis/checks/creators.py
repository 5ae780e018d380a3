"""Event identity in causal cluster consistency (Gidenstam et al., section 5): an event is named by
its ticket and the ticket's count (t_e[index]), and the owner of a ticket is the one process that
creates events under it, so no two processes may create under one ticket at once, and no name
may be given twice.

Input: the events' creations the members logged (send of type CAUSAL_EVENT, agents/causal): per
row the origin (the creating node), `seq` (the creator's own number for the event), the ticket,
`count` (the ticket's count the event took, t_e[ticket]; None when the log does not say) and the
time.

- "repeated-id": an event name given to more than one creation, as the analysis names events,
  (origin, seq), or as the protocol does, (ticket, count). A creator that numbered again from
  where it had been (restarted, or on another ticket) would give the first twice, and the analysis
  would take two events for one; a new owner of a ticket that counts on from less than its last
  owner reached would give the second twice, and its receivers would drop its events as obsolete.
- "concurrent-creators": under one ticket, an origin's tenure is the span from one of its
  creations to its last before it let go (a ticket change it logged, or going down: `breaks`);
  two tenures of different origins under one ticket that overlap in time mean two processes
  created under it at once: the event-level face of a shared ticket (Theorem 4.2), where it harms
  (each counts on from what it saw, so events get one name or an order neither creator meant).
  Counted once per overlapping pair.

Unknown when nobody created an event.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .verdict import MAX_COUNTEREXAMPLES, result, unknown

__all__ = ["NAME", "check_event_identity"]

NAME = "event-identity"
KINDS = ("repeated-id", "concurrent-creators")
NO_EVENTS = "no member created an event (send of type CAUSAL_EVENT)"


def check_event_identity(creations: Iterable[Dict[str, Any]],
                         breaks: Optional[Dict[str, List[int]]] = None) -> Dict[str, Any]:
    """creations: dicts with origin, seq, ticket, count (optional) and t (ns); breaks: per
    origin, the times it let go of what it held (its logged ticket changes, the starts of its down
    intervals)."""
    rows = [{"origin": str(c["origin"]), "seq": int(c["seq"]), "ticket": int(c["ticket"]),
             "count": None if c.get("count") is None else int(c["count"]), "t": int(c["t"])} for c in creations]
    if not rows:
        return unknown(NAME, KINDS, NO_EVENTS)
    counts = {k: 0 for k in KINDS}
    cex: Dict[str, List[Dict[str, Any]]] = {k: [] for k in KINDS}
    for first_key, second_key in (("origin", "seq"), ("ticket", "count")):
        named: Dict[Tuple[Any, int], List[Dict[str, Any]]] = {}
        for r in rows:
            if r[second_key] is not None:
                named.setdefault((r[first_key], r[second_key]), []).append(r)
        for (first, second), given in sorted(named.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            if len(given) < 2:
                continue
            counts["repeated-id"] += len(given) - 1
            if len(cex["repeated-id"]) < MAX_COUNTEREXAMPLES:
                cex["repeated-id"].append({"name": f"({first_key}, {second_key})", first_key: first,
                                           second_key: second,
                                           "creations": [{k: r[k] for k in ("origin", "seq", "ticket", "count", "t")}
                                                         for r in sorted(given, key=lambda r: r["t"])]})
    tenures: Dict[int, List[Dict[str, Any]]] = {}
    by_origin_ticket: Dict[Tuple[str, int], List[Dict[str, Any]]] = {}
    for r in rows:
        by_origin_ticket.setdefault((r["origin"], r["ticket"]), []).append(r)
    for (origin, ticket), made in sorted(by_origin_ticket.items()):
        made.sort(key=lambda r: (r["t"], r["seq"]))
        cuts = sorted((breaks or {}).get(origin, ()))
        current: Optional[Dict[str, Any]] = None
        for r in made:
            if current is None or any(current["t"][1] < b <= r["t"] for b in cuts):
                current = {"origin": origin, "t": [r["t"], r["t"]], "seq": [r["seq"], r["seq"]], "events": 0}
                tenures.setdefault(ticket, []).append(current)
            current["t"][1], current["seq"][1] = r["t"], r["seq"]
            current["events"] += 1
    for ticket, spans in sorted(tenures.items()):
        spans.sort(key=lambda s: s["t"][0])
        for i, one in enumerate(spans):
            for two in spans[i + 1:]:
                if two["t"][0] > one["t"][1]:
                    break
                if two["origin"] == one["origin"]:
                    continue
                counts["concurrent-creators"] += 1
                if len(cex["concurrent-creators"]) < MAX_COUNTEREXAMPLES:
                    cex["concurrent-creators"].append({"ticket": ticket, "origins": [one["origin"], two["origin"]],
                                                       "from": two["t"][0], "until": min(one["t"][1], two["t"][1]),
                                                       "tenures": [one, two]})
    stats = {"events": len(rows), "origins": len({r["origin"] for r in rows}),
             "tickets": len({r["ticket"] for r in rows})}
    return result(NAME, counts, cex, stats, len(rows), NO_EVENTS)
