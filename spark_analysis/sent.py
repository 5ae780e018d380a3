"""The sent counts: every send event in the logs, relays included, counted per (run, node, type,
relayed) as messages, transmissions, datagrams and bytes (docs/ANALYSIS.md). Spark groups them
here (`sent_counts`), the local engine in spark_analysis.local; `sent_frame` makes either one frame."""

from __future__ import annotations

import json
from typing import Optional


#: the sent counts' columns (RunData.sent has them but `run`), and the counts among them
SENT_COLUMNS = ["run", "node", "type", "relayed", "messages", "transmissions", "datagrams", "bytes"]
SENT_COUNTS = ["messages", "transmissions", "datagrams", "bytes"]


def transmissions(to: Optional[str]) -> int:
    """The transmissions one send event stands for, from its `to` as the events table holds it (a
    name, "broadcast", or a list's JSON text): a JSON list's length (each node named is sent its
    own copy: IP gossip to C peers is C transmissions), else 1: a broadcast is one transmission
    however many hear it, a single name one, and so is a send that names no `to` (or a text
    that only looks like a list). Spark's form is `transmissions_column`, Arrow's
    spark_analysis.local.transmissions_array; the three agree."""
    if to is None or not to.startswith("["):
        return 1
    try:
        value = json.loads(to)
    except ValueError:
        return 1
    return len(value) if isinstance(value, list) else 1


def transmissions_column(F, T):
    """`transmissions` of the events' `to` column, as a Spark column."""
    listed = F.when(F.col("to").startswith("["), F.from_json(F.col("to"), T.ArrayType(T.StringType())))
    return F.when(listed.isNotNull(), F.size(listed)).otherwise(F.lit(1)).cast("long")


def sent_counts(events):
    """Every send event (relays included) counted per (run, node, type, relayed): Spark's
    grouping, the general path's (spark_analysis.local.sent_counts is the local engine's)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    tx = transmissions_column(F, T)
    sends = events.filter(F.col("event") == "send").select(
        "run", "node", "type", (F.coalesce(F.col("hops"), F.lit(0)) > 0).alias("relayed"), tx.alias("_tx"),
        "frags", "bytes")
    return sends.groupBy("run", "node", "type", "relayed").agg(
        F.count(F.lit(1)).alias("messages"), F.sum("_tx").alias("transmissions"),
        F.coalesce(F.sum(F.col("frags") * F.col("_tx")), F.lit(0)).alias("datagrams"),
        F.coalesce(F.sum(F.col("bytes") * F.col("_tx")), F.lit(0)).alias("bytes"))


def sent_frame(frame=None):
    """The sent counts as one pandas frame of SENT_COLUMNS, whoever grouped them: summed again
    per (run, node, type, relayed) (a null node or type a group of its own), in that order,
    counts as int64."""
    import pandas as pd

    keys = SENT_COLUMNS[:4]
    if frame is None or not len(frame):
        out = pd.DataFrame({c: pd.Series([], dtype=object) for c in keys[:3]})
        out["relayed"] = pd.Series([], dtype=bool)
        for c in SENT_COUNTS:
            out[c] = pd.Series([], dtype="int64")
        return out
    frame = frame[SENT_COLUMNS].astype({c: object for c in keys[:3]})
    frame = frame.astype({"relayed": bool, **{c: "int64" for c in SENT_COUNTS}})
    out = frame.groupby(keys, dropna=False, as_index=False, sort=False)[SENT_COUNTS].sum()
    out = out.sort_values(keys, kind="stable", na_position="last").reset_index(drop=True)
    return out.astype({c: object for c in keys[:3]}).astype({c: "int64" for c in SENT_COUNTS})
