"""What every property check returns, and the reasons it gives when it had nothing to judge.

Output
------
Every check returns `{"check": name, "verdict": "valid" | "invalid" | "unknown",
"anomalies": {type: count}, "counterexamples": {type: [at most 5 dicts]}, "stats": {...}}`.
A check is invalid as soon as it counts an anomaly; otherwise unknown when it had nothing to judge
(stats["reason"] says why: no send, no expected (message, node) pair, no delivery of a sent
message, or an optional column absent), and valid only then. Anomalies are all counted; the
counterexamples name message ids, nodes and times and are plain JSON-able values.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

import numpy as np

__all__ = ["MAX_COUNTEREXAMPLES", "NO_DELIVERY", "NO_EXPECTED", "NO_SEND", "first_rows", "result", "unknown"]

#: counterexamples kept per anomaly type (all anomalies are counted)
MAX_COUNTEREXAMPLES = 5
# the reasons of an "unknown" verdict the checks share
NO_SEND = "no send"
NO_EXPECTED = "no (message, node) pair is expected: every E(m) is empty"
NO_DELIVERY = "no delivery of a sent message"


def result(name: str, anomalies: Dict[str, int], cex: Dict[str, list], stats: Dict[str, Any],
           checked: int, reason: str) -> Dict[str, Any]:
    """The result of check `name`: invalid when it counted an anomaly, otherwise unknown (with
    `reason`) when it judged nothing (`checked` <= 0), valid only then; stats["checked"] = checked."""
    anomalies = {k: int(v) for k, v in anomalies.items()}
    if any(anomalies.values()):
        verdict = "invalid"
    elif checked <= 0:
        verdict = "unknown"
        stats = dict(stats, reason=reason)
    else:
        verdict = "valid"
    stats = dict(stats, checked=int(checked))
    return {"check": name, "verdict": verdict, "anomalies": anomalies,
            "counterexamples": {k: v[:MAX_COUNTEREXAMPLES] for k, v in cex.items()}, "stats": stats}


def unknown(name: str, anomaly_types: Sequence[str], reason: str, **stats) -> Dict[str, Any]:
    """The "unknown" result of a check that could not judge at all (no send, a column absent)."""
    return {"check": name, "verdict": "unknown", "anomalies": {a: 0 for a in anomaly_types},
            "counterexamples": {a: [] for a in anomaly_types}, "stats": dict(stats, reason=reason, checked=0)}


def first_rows(mask: np.ndarray) -> np.ndarray:
    """The rows of the first counterexamples: where `mask` is True, at most MAX_COUNTEREXAMPLES."""
    return np.flatnonzero(mask)[:MAX_COUNTEREXAMPLES]
