"""Delivery semantics, all six checks from one count of deliveries per (message, node) pair:

- "at-most-once" (duplicate: a (msg, node) pair delivered more than once, phantoms included),
  "at-least-once" (lost: a node of E(m) never delivered m), "exactly-once" (both),
  "best-effort" (phantom and misrouted; stats["violated"] names which), "no-phantom",
  "no-misrouted" (delivery to a node outside eligible(m), other than m's sender). Counts are of
  (msg, node) pairs; stats["delivery_counts"] is the distribution of deliveries per (sent msg,
  node) pair over the pairs expected or delivered.
"""

from __future__ import annotations

from typing import Any, Dict, List, Union

import numpy as np

from .arrays import member
from .history import History, Prepared, prepare
from .verdict import MAX_COUNTEREXAMPLES, NO_DELIVERY, NO_EXPECTED, NO_SEND, first_rows, result

__all__ = ["check_delivery"]


def check_delivery(history: Union[History, Prepared]) -> List[Dict[str, Any]]:
    """at-most-once, at-least-once, exactly-once, best-effort, no-phantom, no-misrouted."""
    p = prepare(history)
    M, NN = p.M, p.NN
    keys, counts = p.pair_counts
    kmsg, knode = keys // NN if NN else keys, keys % NN if NN else keys
    known = kmsg < M
    lost_m, lost_n = p.lost

    dup = counts > 1
    phantom = ~known
    mis = np.zeros(len(keys), bool)
    if known.any():
        kk = keys[known]
        in_elig = member(kk, p.elig_key)
        own = p.origin[kmsg[known]] == knode[known]
        mis[np.flatnonzero(known)[~in_elig & ~own]] = True

    def times(k: int) -> List[int]:
        return [int(x) for x in p.d_t[p.d_key == k][:10]]

    cex_dup = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "count": int(counts[i]), "times": times(keys[i])}
               for i in first_rows(dup)]
    cex_lost = [{"msg": p.mid(m), "node": p.nname(n), "sent_at": int(p.t[m])}
                for m, n in zip(lost_m[:MAX_COUNTEREXAMPLES], lost_n[:MAX_COUNTEREXAMPLES])]
    cex_ph = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "times": times(keys[i])} for i in first_rows(phantom)]
    cex_mis = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "times": times(keys[i]),
                "eligible": [str(x) for x in p.eligible[kmsg[i]]]} for i in first_rows(mis)]

    dist_vals, dist_n = np.unique(counts[known], return_counts=True) if known.any() else ([], [])
    dist = {int(v): int(n) for v, n in zip(dist_vals, dist_n)}
    if len(lost_m):
        dist = {0: len(lost_m), **dist}
    base = {"sends": M, "deliveries": p.D, "expected_pairs": len(p.E_key), "delivery_counts": dist}
    n_dup, n_lost, n_ph, n_mis = int(dup.sum()), len(lost_m), int(phantom.sum()), int(mis.sum())
    n_del_known = int(known.sum())
    no_del = NO_SEND if not M else NO_DELIVERY
    no_exp = NO_SEND if not M else NO_EXPECTED
    out = [
        result("at-most-once", {"duplicate": n_dup}, {"duplicate": cex_dup},
               dict(base, extra_deliveries=int((counts[dup] - 1).sum())), n_del_known, no_del),
        result("at-least-once", {"lost": n_lost}, {"lost": cex_lost}, base, len(p.E_key), no_exp),
        result("exactly-once", {"duplicate": n_dup, "lost": n_lost}, {"duplicate": cex_dup, "lost": cex_lost},
               base, len(p.E_key), no_exp),
    ]
    violated = [name for name, n in (("phantom", n_ph), ("misrouted", n_mis)) if n]
    out.append(result("best-effort", {"phantom": n_ph, "misrouted": n_mis}, {"phantom": cex_ph, "misrouted": cex_mis},
                      dict(base, violated=violated), n_del_known, no_del))
    out.append(result("no-phantom", {"phantom": n_ph}, {"phantom": cex_ph}, base, n_del_known, no_del))
    out.append(result("no-misrouted", {"misrouted": n_mis}, {"misrouted": cex_mis}, base, n_del_known, no_del))
    return out
