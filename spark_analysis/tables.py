"""The Parquet tables the analysis computes in the driver from a run's integer codes
(spark_analysis.codes.RunData), beside the packets and events tables the readers write:
receptions.parquet and messages.parquet (docs/ANALYSIS.md)."""

from __future__ import annotations

import numpy as np

from .checks.arrays import unique
from .codes import FOREIGN_TYPE, RunData, group_stats


def messages_table(d: RunData):
    """The messages table: one row per application message (origin, type, seq): its send
    times, its intended receivers, how many captures show it reaching them, the delivery
    time to all when it reached every one, and how many nodes delivered it."""
    import pyarrow as pa

    U = len(d.m_key)
    first = d.first_send
    cnt, _, nreached, worst = group_stats(d.p_msg, U, d.p_latency, d.p_reached)
    complete = (cnt > 0) & (nreached == cnt)
    ok = d.d_msg >= 0
    pairs = unique(d.d_msg[ok] * np.int64(d.NN) + d.d_node[ok])
    delivered = np.bincount(pairs // d.NN, minlength=U) if len(pairs) else np.zeros(U, np.int64)
    names = np.array(d.nodes.names, dtype=object)
    types = [d.type_label(t) for t in d.s_type[first]] if U else []
    return pa.table({
        "run": pa.repeat(pa.scalar(d.run_id, pa.string()), U),
        "origin": pa.array(names[d.s_origin[first]] if U else [], pa.string()),
        "seq": pa.array(d.s_seq[first], pa.int64()),
        "type": pa.array(types, pa.string()),
        "send_t": pa.array(d.send_t[first] if U else [], pa.int64()),
        "logged_t": pa.array(d.s_t[first], pa.int64()),
        "intended": pa.array(cnt, pa.int64()),
        "reached": pa.array(nreached, pa.int64()),
        "delivery_time_to_all_ns": pa.array(np.where(complete, worst, 0).astype(np.int64), pa.int64(),
                                            mask=~complete),
        "delivered": pa.array(delivered[:U], pa.int64()),
    })

def receptions_table(d: RunData):
    """The receptions table: one row per (message, intended receiver)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    names = pa.array(d.nodes.names, pa.string())

    def named(codes):  # node names of codes, null for -1
        return pc.take(names, pa.array(codes, pa.int64(), mask=codes < 0))

    recv = d.p_recv_t
    known = (d.p_type >= 0) & (d.p_type < FOREIGN_TYPE)  # a MessageType; else null
    return pa.table({
        "run": pa.repeat(pa.scalar(d.run_id, pa.string()), len(d.p_send)),
        "origin": named(d.s_origin[d.p_send]),
        "seq": pa.array(d.s_seq[d.p_send], pa.int64()),
        "type_id": pa.array(np.where(known, d.p_type, 0), pa.int16(), mask=~known),
        "receiver": named(d.p_node),
        "send_t": pa.array(d.send_t[d.p_send], pa.int64()),
        "recv_t": pa.array(recv, pa.int64(), mask=~d.p_reached),
    })
