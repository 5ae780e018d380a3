"""Pair-wise FIFO order: each node delivers each origin's messages in sending order.

- "fifo": per (origin, receiver), in receiver order, seq must increase. inversion: a delivery
  that comes after one of a higher seq from the same origin; gap: a (message, node) pair of E
  never delivered while the node delivered a later message of the same origin (the skipped
  message is named). stats["origins_with_irregular_seq"] names origins whose seq is not 1, 2, ...
"""

from __future__ import annotations

from typing import Any, Dict, Union

import numpy as np

from .arrays import I64, group_cummax, order_by, shift, starts
from .history import History, Prepared, prepare
from .verdict import MAX_COUNTEREXAMPLES, NO_DELIVERY, NO_SEND, first_rows, result, unknown

__all__ = ["check_fifo"]


def check_fifo(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"fifo": inversions and gaps per (origin, receiver)."""
    p = prepare(history)
    name, types = "fifo", ("inversion", "gap")
    if not p.M:
        return unknown(name, types, NO_SEND)
    NN = p.NN
    fo = p.origin[p.f_msg]
    g = p.f_node * NN + fo
    srt = order_by(g)  # by (receiver, origin), then delivery order
    gs = g[srt]
    ps = p.pos[p.f_msg[srt]]
    st = starts(gs)
    cm = group_cummax(ps, st)
    prev = shift(cm, st, 0)
    inv = ps < prev
    cex_inv = []
    for i in first_rows(inv):
        m, n, o = int(p.f_msg[srt[i]]), int(p.f_node[srt[i]]), int(fo[srt[i]])
        before = p.msg_at(o, int(prev[i]))
        cex_inv.append({"origin": p.nname(o), "node": p.nname(n), "msg": p.mid(m), "seq": int(p.seq[m]),
                        "t": int(p.f_t[srt[i]]), "after_msg": p.mid(before), "after_seq": int(p.seq[before]),
                        "after_t": p.first_delivery(before, n)})
    # gaps: lost pairs below the highest position the receiver delivered from that origin
    maxpos = np.zeros(NN * NN, I64)
    if len(gs):
        ends = np.append(np.flatnonzero(st)[1:] - 1, len(gs) - 1)
        maxpos[gs[ends]] = cm[ends]
    lm, ln = p.lost
    gap = p.pos[lm] < maxpos[ln * NN + p.origin[lm]] if len(lm) else np.zeros(0, bool)
    cex_gap = []
    for i in first_rows(gap):
        m, n = int(lm[i]), int(ln[i])
        o = int(p.origin[m])
        a, b = p.f_start[n], p.f_start[n + 1]
        fm = p.f_msg[a:b]
        later = fm[(p.origin[fm] == o) & (p.pos[fm] > p.pos[m])]
        nxt = int(later[np.argmin(p.pos[later])])
        cex_gap.append({"origin": p.nname(o), "node": p.nname(n), "skipped_msg": p.mid(m), "skipped_seq": int(p.seq[m]),
                        "delivered_later_msg": p.mid(nxt), "delivered_later_seq": int(p.seq[nxt]),
                        "delivered_later_t": p.first_delivery(nxt, n)})
    # the paper's stamps start at 1 and go up by one per origin: not a delivery anomaly, but said
    irregular = np.flatnonzero(np.bincount(p.origin, weights=(p.seq != p.pos), minlength=NN) > 0)
    stats = {"pairs": int(st.sum()), "deliveries": len(gs),
             "origins_with_irregular_seq": [p.nname(o) for o in irregular[:MAX_COUNTEREXAMPLES]]}
    return result(name, {"inversion": int(inv.sum()), "gap": int(gap.sum())},
                   {"inversion": cex_inv, "gap": cex_gap}, stats, len(gs), NO_DELIVERY)
