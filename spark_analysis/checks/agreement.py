"""Agreement: a message one correct node delivers, every correct node expected to deliver it does.

- "agreement": if a correct node delivers m, every correct node in E(m) delivers it (counted per
  (msg, node) pair; unknown when no correct node delivered anything).
"""

from __future__ import annotations

from typing import Any, Dict, Union

import numpy as np

from .history import History, Prepared, prepare
from .verdict import NO_SEND, first_rows, result, unknown

__all__ = ["check_agreement"]


def check_agreement(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"agreement": (msg, node) pairs of correct nodes missing a message another correct node delivered."""
    p = prepare(history)
    name, types = "agreement", ("disagreement",)
    if not p.M:
        return unknown(name, types, NO_SEND)
    by_correct = np.zeros(p.M, bool)
    ok = p.correct[p.f_node]
    by_correct[p.f_msg[ok]] = True
    lm, ln = p.lost
    bad = p.correct[ln] & by_correct[lm] if len(lm) else np.zeros(0, bool)
    cex = []
    for i in first_rows(bad):
        m = lm[i]
        who = np.unique(p.f_node[(p.f_msg == m) & ok])[:3]
        cex.append({"msg": p.mid(m), "node": p.nname(ln[i]), "sent_at": int(p.t[m]),
                    "delivered_by": [p.nname(x) for x in who]})
    stats = {"correct_nodes": [n for n, c in zip(p.node_names, p.correct) if c],
             "messages_delivered_by_a_correct_node": int(by_correct.sum())}
    return result(name, {"disagreement": int(bad.sum())}, {"disagreement": cex}, stats, int(by_correct.sum()),
                  "no correct node delivered a sent message")
