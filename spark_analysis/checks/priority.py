"""Priority order: no message is delivered while a more urgent one, sent before, waits.

- "priority-order": a node delivers m2 while a message m1 of higher priority, sent before m2's
  delivery there, is delivered at that node later (counted per delivery of m2; not delivering m1
  at all is a loss, not an inversion). Messages without priority are left out. Cost: one
  vectorised pass per distinct priority level.
"""

from __future__ import annotations

from typing import Any, Dict, Union

import numpy as np
import pandas as pd

from .arrays import INT64_MAX, unique
from .history import History, Prepared, prepare
from .verdict import NO_SEND, first_rows, result, unknown

__all__ = ["check_priority_order"]


def check_priority_order(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"priority-order": deliveries that overtook a more urgent message already sent."""
    p = prepare(history)
    name, types = "priority-order", ("inversion",)
    if not p.M:
        return unknown(name, types, NO_SEND)
    pv, pm = p.priority
    if not pm.any():
        return unknown(name, types, "no priority column" if not p.present["priority"] else "no message has a priority")
    sel = pm[p.f_msg]
    fm, fn, ft = p.f_msg[sel], p.f_node[sel], p.f_t[sel]  # sorted by (node, delivery order)
    pr, ts = pv[fm], p.t[fm]
    n = len(fm)
    bad = np.zeros(n, bool)
    if n:
        rev = slice(None, None, -1)
        gid_rev = pd.Series(fn[rev])
        for level in unique(pr)[:-1]:
            val = np.where(pr > level, ts, INT64_MAX)
            # minimum send time of the strictly later deliveries of higher priority (self is INT64_MAX)
            later_min = pd.Series(val[rev]).groupby(gid_rev.to_numpy()).cummin().to_numpy()[rev]
            here = pr == level
            bad |= here & (later_min < ft)
    cex = []
    for i in first_rows(bad):
        node = fn[i]
        j = i + 1
        while not (fn[j] == node and pr[j] > pr[i] and ts[j] < ft[i]):
            j += 1
        cex.append({"node": p.nname(node), "msg": p.mid(fm[i]), "priority": int(pr[i]), "delivered_at": int(ft[i]),
                    "overtaken_msg": p.mid(fm[j]), "overtaken_priority": int(pr[j]),
                    "overtaken_sent_at": int(ts[j]), "overtaken_delivered_at": int(ft[j])})
    stats = {"levels": len(unique(pr)) if n else 0, "prioritised_messages": int(pm.sum())}
    return result(name, {"inversion": int(bad.sum())}, {"inversion": cex}, stats, n,
                  "no delivery of a message with a priority")
