"""Ticket uniqueness (Gidenstam et al., Theorem 4.2): "two processes never have common tickets;
they either own or coordinate".

Input: the ticket changes the cluster members logged (state `causal ticket`, agents/causal): per
row the node, the time, the ticket it owns (None for none) and the tickets it coordinates, its own
included. A row holds from its time until the node's next row, or until the node went down (the
run's down intervals: a killed or stopped process holds nothing), or the end of the run (after
it, every agent is being stopped, one by one under load: that is not judged). A node that comes
back up holds nothing until it logs again.

"ticket-uniqueness" counts each (ticket, pair of nodes) whose holding intervals overlap, once per
overlap; a counterexample names the ticket, the two nodes, the overlap and what each row said
(why, and whether the ticket was owned or coordinated). Unknown when nobody logged a ticket.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .verdict import MAX_COUNTEREXAMPLES, result, unknown

__all__ = ["NAME", "check_ticket_uniqueness", "holdings"]

NAME = "ticket-uniqueness"
NO_TICKETS = "no node logged a ticket change (state causal ticket)"

Row = Dict[str, Any]   # node, t, ticket, coordinates, why


def _cut(start: int, end: Optional[int], down: Sequence[Tuple[int, Optional[int]]]) -> Optional[int]:
    """The end of a holding that starts at `start`: the first down interval starting at or after
    it (or containing it) ends it."""
    stop = end
    for d0, d1 in down:
        if d1 is not None and d1 <= start:
            continue
        cut = max(d0, start)
        if stop is None or cut < stop:
            stop = cut
    return stop


def holdings(rows: Iterable[Row], down: Dict[str, List[Tuple[int, Optional[int]]]],
             end_ns: Optional[int]) -> List[Tuple[int, str, int, Optional[int], Row]]:
    """(ticket, node, start, end, row) for every ticket a row holds, end None = the run's end."""
    by_node: Dict[str, List[Row]] = {}
    for r in rows:
        by_node.setdefault(r["node"], []).append(r)
    out = []
    for node, rs in by_node.items():
        rs.sort(key=lambda r: r["t"])
        for i, r in enumerate(rs):
            nxt = rs[i + 1]["t"] if i + 1 < len(rs) else end_ns
            if end_ns is not None:   # the agents' stopping after the run is not judged
                nxt = end_ns if nxt is None else min(nxt, end_ns)
            stop = _cut(int(r["t"]), nxt, down.get(node, ()))
            if stop is not None and stop <= r["t"]:
                continue
            held = set(r.get("coordinates") or ())
            if r.get("ticket") is not None:
                held.add(int(r["ticket"]))
            for t in sorted(held):
                out.append((int(t), node, int(r["t"]), stop, r))
    return out


def check_ticket_uniqueness(rows: Iterable[Row], down: Optional[Dict[str, List[Tuple[int, Optional[int]]]]] = None,
                            end_ns: Optional[int] = None) -> Dict[str, Any]:
    rows = list(rows)
    kind = "shared-ticket"
    if not rows:
        return unknown(NAME, (kind,), NO_TICKETS)
    held = holdings(rows, down or {}, end_ns)
    by_ticket: Dict[int, List[Tuple[int, Optional[int], str, Row]]] = {}
    for ticket, node, start, stop, row in held:
        by_ticket.setdefault(ticket, []).append((start, stop, node, row))
    count = 0
    cex: List[Dict[str, Any]] = []
    inf = float("inf")
    for ticket, spans in sorted(by_ticket.items()):
        spans.sort(key=lambda s: s[0])
        for i, (_, e1, n1, r1) in enumerate(spans):
            for s2, e2, n2, r2 in spans[i + 1:]:
                if s2 >= (inf if e1 is None else e1):
                    break
                if n1 == n2:
                    continue
                count += 1
                if len(cex) < MAX_COUNTEREXAMPLES:
                    end = min(inf if e1 is None else e1, inf if e2 is None else e2)
                    cex.append({"ticket": ticket, "nodes": [n1, n2], "from": s2, "until": None if end == inf else end,
                                "held": [{"node": n, "since": int(r["t"]), "why": r.get("why"),
                                          "as": "owner" if r.get("ticket") == ticket else "coordinator"}
                                         for n, r in ((n1, r1), (n2, r2))]})
    stats = {"nodes": len({r["node"] for r in rows}), "changes": len(rows), "tickets": len(by_ticket)}
    return result(NAME, {kind: count}, {kind: cex}, stats, len(by_ticket), NO_TICKETS)
