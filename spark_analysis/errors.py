"""The roles' errors: the `error` events agents log when a role raises (agents/runtime.py), summed
up for results.json and the report, so that a protocol that fails is seen, not guessed at."""

from __future__ import annotations

from typing import Dict, List

#: how many errors results.json lists in full (the count covers all)
LISTED = 20


def error_summary(errors, t0: int) -> Dict[str, object]:
    """errors: the run's error events (pandas: node, t, where, error, traceback, type, origin,
    seq); t0: the run's time zero (ns). {"count", "nodes": {node: count}, "where": {where: count},
    "first": the first LISTED errors in time order, each with its time in seconds since t0}."""
    if errors is None or not len(errors):
        return {"count": 0, "nodes": {}, "where": {}, "first": []}
    errors = errors.sort_values(["t", "node"], kind="stable")
    first: List[dict] = []
    for row in errors.head(LISTED).itertuples(index=False):
        entry = {"node": row.node, "t_s": (int(row.t) - t0) / 1e9 if t0 else None, "where": row.where,
                 "error": row.error, "traceback": row.traceback}
        for key in ("type", "origin", "seq"):
            value = getattr(row, key, None)
            if value is not None and value == value:  # NaN is not a value
                entry[key] = int(value) if key == "seq" else value
        first.append(entry)
    return {"count": int(len(errors)),
            "nodes": {str(k): int(v) for k, v in errors["node"].value_counts().sort_index().items()},
            "where": {str(k): int(v) for k, v in errors["where"].fillna("?").value_counts().sort_index().items()},
            "first": first}
