"""Delivery metrics: message-level from the pcaps, application-level from the logs.

Spark does the heavy part: each capture is decoded and reduced in the task that reads it
(spark_analysis.reduce: first copies per message at the node, its own sends, packet counts per
second) and the logs are parsed into the events table. What reaches the driver, as Arrow, is the
receptions, the wire sends, the application sends with their intended receivers and the
deliveries; there every node and message gets an integer code (spark_analysis.codes), and the
join of each send's intended receivers with the receptions, the statistics below and the
checks' history are computed with numpy on those codes (exact int64 nanoseconds, no Python
object per row).

Definitions (written down in docs/ANALYSIS.md):
- A message is identified by (run, origin, sequence, type). Its application send is the origin's
  "send" event (hops 0); its intended receivers come from the event: `eligible` when the role
  names them (a predicate's or group's members), else the `to` list, else, for a broadcast, the
  nodes sharing an L2 segment with the sender (from the manifest's addresses); on a radio segment
  those in the sender's range at the send (spark_analysis.radio.receivers).
- Its wire send time is the first copy the origin's capture shows leaving (not a retransmission,
  not relayed); the log's time stands in when the origin's capture missed it.
- A receiver is reached when its capture shows every fragment of the message arriving; first-copy
  latency = the arrival of the last fragment's first copy - the wire send time.
- Delivery time to all = the largest first-copy latency over the intended receivers of a message
  that reached all of them (the AbC paper's "average delivery time" averages it).
- Message time gap at a receiver = the time between consecutive first copies of data messages
  arriving there (the AbC paper's "average message time gap" averages it over receivers).
- Duplicates received = copies of a fragment a node captured beyond the first (network
  redundancy, normal for gossip); duplicate deliveries to the application are a checker's finding.
- Overhead per type: packets and bytes sent (each transmission counted once, at its sender),
  header bytes (Ethernet, IPv4, UDP and the testbed header), retransmissions (RETRANSMISSION flag),
  and per delivered data message (a reached receiver of a data message).
- Messages sent, from the logs (RunData.sent): every `send` event, relays included, counted per
  (node, type, relayed = hops > 0): messages (send events), transmissions (the recipients of
  each: spark_analysis.sent.transmissions), datagrams (frags x transmissions) and bytes (bytes x
  transmissions); a send that does not log frags or bytes adds none.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from agents.wire import MessageType

from .checks.arrays import lookup, order_by, unique
from .codes import FOREIGN_TYPE, RunData, group_stats, type_name
from .pcapreader import DIR_FORWARDED, DIR_IN, DIR_OUT
from .reduce import DATA_TYPES, L2_L3_L4_HEADERS  # noqa: F401 (the header size: documented here, counted there)
from .sent import SENT_COLUMNS, sent_counts

TYPE_CLASS = {
    MessageType.ACK: "control", MessageType.ABC_REQUEST: "control", MessageType.ABC_REPLY: "control",
    MessageType.ABC_TAKE: "control",
    MessageType.MEMBERSHIP: "control", MessageType.GOSSIP_HEADERS: "headers", MessageType.GOSSIP_PULL: "pulls",
    MessageType.GOSSIP_GROUPS: "control", MessageType.CAUSAL_RECOVERY: "pulls", MessageType.CAUSAL_RECOVER: "pulls",
}
for _t in DATA_TYPES:
    TYPE_CLASS[_t] = "data"


def intended_receivers(sends, schedule):
    """Add `intended` (array of node names) to the send events: eligible, else to, else the
    sender's receivers at the send's time (schedule: rows run, node, _from, _until, _peers of
    spark_analysis.radio.receivers; a null bound is unbounded), as local.intended_receivers."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = T.ArrayType(T.StringType())
    listed = F.when(F.col("to").startswith("["), F.from_json(F.col("to"), names))
    single = F.when((F.col("to") != "broadcast") & ~F.col("to").startswith("["), F.array(F.col("to")))
    s = schedule.withColumnRenamed("run", "_run").withColumnRenamed("node", "_node")
    t = F.col("t")
    during = ((F.col("_run") == F.col("run")) & (F.col("_node") == F.col("node"))
              & (F.col("_from").isNull() | (t >= F.col("_from"))) & (F.col("_until").isNull() | (t < F.col("_until"))))
    joined = sends.join(F.broadcast(s), on=during, how="left")
    intended = F.coalesce(F.from_json(F.col("eligible"), names), listed, single,
                          F.when(F.col("to") == "broadcast", F.col("_peers")), F.array().cast(names))
    return joined.withColumn("intended", intended).drop("_run", "_node", "_from", "_until", "_peers")


class RunMetrics:
    """The Spark side: tables built once per analysis, reduced and collected in a few actions."""

    def __init__(self, spark, reduced, events, runs) -> None:
        """reduced: the captures reduced where they were decoded (inputs.read_reduced)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from .radio import receivers

        self.runs = runs
        rows = [(r.run_id, node, since, until, peers) for r in runs
                for node, intervals in receivers(r).items() for since, until, peers in intervals]
        schedule = spark.createDataFrame(rows, T.StructType([
            T.StructField("run", T.StringType()), T.StructField("node", T.StringType()),
            T.StructField("_from", T.LongType()), T.StructField("_until", T.LongType()),
            T.StructField("_peers", T.ArrayType(T.StringType()))]))
        # application sends (the origin's own, not relays) with their intended receivers
        sends = events.filter((F.col("event") == "send") & (F.col("origin") == F.col("node"))
                              & (F.coalesce(F.col("hops"), F.lit(0)) == 0))
        self.sends = intended_receivers(sends, schedule)
        self.deliveries = events.filter(F.col("event") == "deliver")
        # every send, relays included, counted per (run, node, type, relayed)
        self.sent = sent_counts(events)

        from .inputs import KIND_COUNTS, KIND_RECEPTION, KIND_SEND
        kind = F.col("kind")
        sent = reduced.filter(kind == KIND_SEND)
        self.wire = sent.select("run", "origin", "seq", "type", "t", "tx")
        self.receptions = (reduced.filter(kind == KIND_RECEPTION)
                           .select("run", "node", "origin", "seq", "type", "t", "frags", "copies", "frag_count"))
        self.packet_counts = (reduced.filter(kind == KIND_COUNTS)
                              .groupBy("run", "node", "type", "direction", "second")
                              .agg(*[F.sum(c).alias(c) for c in ("packets", "bytes", "header_bytes",
                                                                  "retransmissions", "relayed")]))
        self.t0 = {r.run_id: r.t0 for r in runs}

    def collect(self) -> "Collected":
        """Run the Spark actions (Arrow all the way: no Python object per row); every later
        measure works on what they return, in integer codes."""
        return Collected(
            runs=self.runs,
            sends=self.sends.select("run", "origin", "seq", "type", "t", "intended", "message_id", "order",
                                    "sequencer", "priority", "vc", "deps", "receivers", "wanted_ns").toArrow(),
            deliveries=self.deliveries.select("run", "node", "origin", "seq", "type", "t", "produced_ns",
                                              "hops", "accepted").toArrow(),
            receptions=self.receptions.toArrow(),
            wire=self.wire.toArrow(),
            packets=self.packet_counts.toPandas(),
            t0=self.t0,
            sent=self.sent.select(*SENT_COLUMNS).toPandas())


class Collected:
    """What the Spark actions returned, per run in integer codes, and the measures computed from it."""

    def __init__(self, runs, sends, deliveries, receptions, wire, packets, t0, sent=None) -> None:
        """sent: the sent counts of every run (pandas, SENT_COLUMNS), none when None."""
        import pyarrow.compute as pc

        self.nodes = {r.run_id: r.node_ids for r in runs}
        self.t0 = t0
        self.data: Dict[str, RunData] = {}

        def part(table, rid):
            if len(runs) == 1:
                return table
            return table.filter(pc.equal(table.column("run"), rid))

        self._receptions = {}
        for r in runs:
            pk = packets[packets["run"] == r.run_id] if len(runs) > 1 else packets
            mine = None if sent is None else sent[sent["run"] == r.run_id]
            self.data[r.run_id] = RunData(r, part(sends, r.run_id), part(deliveries, r.run_id), part(wire, r.run_id),
                                          pk, t0[r.run_id], mine)
            self._receptions[r.run_id] = part(receptions, r.run_id)

    def join_receptions(self) -> None:
        """The second step of every run's codes (RunData.join_receptions): the message-level
        measures need it, the property checks do not."""
        for rid, receptions in self._receptions.items():
            self.data[rid].join_receptions(receptions)
        self._receptions = {}

    # -- message level (pcaps) -----------------------------------------------------------------

    def message_level(self, run_id: str) -> Dict[str, dict]:
        d = self.data[run_id]
        out: Dict[str, dict] = {}
        types = sorted(set(int(t) for t in unique(d.s_type) if 0 <= t < FOREIGN_TYPE))
        groups = [("all", None)] + [(type_name(t), t) for t in types]
        lat = d.p_latency
        for name, t in groups:
            psel = np.ones(len(d.p_send), bool) if t is None else d.p_type == t
            ssel = np.ones(d.S, bool) if t is None else d.s_type == t
            # per message (known type only, as a null type never groups)
            msel = psel & (d.p_type >= 0) & (d.p_type < FOREIGN_TYPE)
            gid = d.p_msg[msel]
            U = len(d.m_key)
            cnt, _, nreached, worst = group_stats(gid, U, lat[msel], d.p_reached[msel])
            has = cnt > 0
            complete = has & (nreached == cnt)
            intended, reached = int(psel.sum()), int(d.p_reached[psel].sum())
            out[name] = {
                "sent": int(ssel.sum()),
                "intended_receivers": intended,
                "received": reached,
                "delivery_ratio": reached / intended if intended else None,
                "complete_messages": int(complete.sum()),
                "messages_without_receivers": int(ssel.sum() - has.sum()),
                "first_copy_latency": stats_ms(lat[psel & d.p_reached]),
                "delivery_time_to_all": stats_ms(worst[complete]),
            }
        r_type = d.r_type
        for t in unique(r_type):
            sel = r_type == t
            n, dups = int(sel.sum()), int(d.r_dups[sel].sum())
            entry = out.setdefault(type_name(int(t)), {})
            entry["receptions"] = n
            entry["duplicates_received"] = dups
            allrow = out.setdefault("all", {})
            allrow["receptions"] = allrow.get("receptions", 0) + n
            allrow["duplicates_received"] = allrow.get("duplicates_received", 0) + dups
        out.setdefault("all", {})["message_time_gap"] = self.time_gap(d)
        return out

    @staticmethod
    def time_gap(d: RunData) -> dict:
        """The AbC paper's message time gap: between consecutive data messages reaching a receiver,
        averaged per receiver, then over receivers."""
        sel = d.p_reached & np.isin(d.p_type, [int(t) for t in DATA_TYPES])
        if not sel.any():
            return {"mean_ms": None, "std_ms": None, "receivers": 0}
        node, t = d.p_node[sel], d.p_recv_t[sel]
        order = order_by(node, t)
        node, t = node[order], t[order]
        same = node[1:] == node[:-1]
        gaps = np.diff(t)[same].astype(np.float64)
        gnode = node[1:][same]
        uniq, inv = unique(gnode, return_inverse=True)
        per = np.bincount(inv, weights=gaps) / np.bincount(inv) / 1e6 if len(uniq) else np.zeros(0)
        return {"mean_ms": float(per.mean()) if len(per) else None,
                "std_ms": float(per.std(ddof=1)) if len(per) > 1 else None,
                "min_receiver_ms": float(per.min()) if len(per) else None,
                "max_receiver_ms": float(per.max()) if len(per) else None,
                "receivers": int(len(per))}

    def overhead(self, run_id: str) -> dict:
        d = self.data[run_id]
        pk = d.packets
        sent = pk[pk["direction"] == DIR_OUT]
        delivered = int((d.p_reached & np.isin(d.p_type, [int(t) for t in DATA_TYPES])).sum())
        fields = ["packets", "bytes", "header_bytes", "retransmissions", "relayed"]
        per_type = sent.groupby("type")[fields].sum()
        by_type = {type_name(t): {f: int(v) for f, v in row.items()} for t, row in per_type.iterrows()}
        by_class: Dict[str, dict] = {}
        for t, row in per_type.iterrows():
            entry = by_class.setdefault(TYPE_CLASS.get(int(t), "other"), {f: 0 for f in fields})
            for f in fields:
                entry[f] += int(row[f])
        total = {f: int(sent[f].sum()) for f in fields}
        for entry in list(by_type.values()) + list(by_class.values()) + [total]:
            entry["packets_per_delivered"] = entry["packets"] / delivered if delivered else None
            entry["bytes_per_delivered"] = entry["bytes"] / delivered if delivered else None
        fwd = pk[pk["direction"] == DIR_FORWARDED]
        return {"by_type": by_type, "by_class": by_class, "total": total, "delivered_data": delivered,
                "forwarded_packets": int(fwd["packets"].sum())}

    # -- application level (logs) ---------------------------------------------------------------

    def application_level(self, run_id: str) -> Dict[str, dict]:
        d = self.data[run_id]
        first_send = d.first_send  # the send of each delivered message
        sidx = np.where(d.d_msg >= 0, first_send[np.maximum(d.d_msg, 0)], -1) if len(d.d_msg) else np.zeros(0, int)
        has_send = sidx >= 0
        send_t = np.where(has_send, d.s_t[np.maximum(sidx, 0)], 0) if len(sidx) else np.zeros(0, np.int64)
        latency = d.d_t - send_t
        produced_ok = d.d_produced_valid | has_send
        produced = np.where(d.d_produced_valid, d.d_produced, send_t)
        age = d.d_t - produced
        distinct_key = np.where(d.d_key >= 0, d.d_any * np.int64(d.NN) + d.d_node, -1) if len(d.d_key) \
            else np.zeros(0, np.int64)
        out: Dict[str, dict] = {}
        names = sorted({d.type_label(t) for t in unique(d.s_type) if t >= 0}
                       | {d.type_label(t) for t in unique(d.d_type) if t >= 0})
        label_code = {d.type_label(t): int(t) for t in set(unique(d.s_type)) | set(unique(d.d_type)) if t >= 0}
        for name in ["all"] + names:
            if name == "all":
                dsel, ssel = np.ones(len(d.d_t), bool), np.ones(d.S, bool)
            else:
                code = label_code[name]
                dsel, ssel = d.d_type == code, d.s_type == code
            hops = d.d_hops[dsel & d.d_hops_valid]
            dk = distinct_key[dsel]
            # a delivery whose seq is null or too large for a key counts as distinct on its own
            out[name] = {
                "sent": int(ssel.sum()),
                "delivered": int(dsel.sum()),
                "distinct_deliveries": int(len(unique(dk[dk >= 0])) + (dk < 0).sum()),
                "deliveries_without_send": int((dsel & ~has_send).sum()),
                "delivery_latency": stats_ms(latency[dsel & has_send]),
                "knowledge_age": stats_ms(age[dsel & produced_ok]),
                "hops": ({"mean": float(hops.mean()), "max": int(hops.max())} if len(hops) else None),
            }
        return out

    def sent(self, run_id: str) -> Dict[str, dict]:
        """results.json's `sent`: per type name (as logged; "untyped" for a send without one) and
        in `total`, the send events (`messages`, relays among them `relayed_messages`), their
        transmissions (`transmissions`, `relayed_transmissions`), `datagrams` and `bytes`."""
        s = self.data[run_id].sent
        relayed = s["relayed"].to_numpy(bool)
        rows = s.assign(type=s["type"].where(s["type"].notna(), "untyped"),
                        relayed_messages=np.where(relayed, s["messages"], 0),
                        relayed_transmissions=np.where(relayed, s["transmissions"], 0))
        fields = ["messages", "relayed_messages", "transmissions", "relayed_transmissions", "datagrams", "bytes"]
        per = rows.groupby("type")[fields].sum()
        out = {str(t): {f: int(row[f]) for f in fields} for t, row in per.iterrows()}
        out["total"] = {f: int(rows[f].sum()) for f in fields}
        return out

    # -- series and per node --------------------------------------------------------------------

    def series(self, run_id: str) -> List[dict]:
        d = self.data[run_id]
        t0 = self.t0[run_id]
        sec = (d.send_t[d.p_send] - t0) // 1_000_000_000 if len(d.p_send) else np.zeros(0, np.int64)
        by: Dict[int, tuple] = {}
        if len(sec):
            order = order_by(sec)
            s_sorted = sec[order]
            reached_sorted = d.p_reached[order]
            lat_sorted = d.p_latency[order]
            bounds = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1], True])
            for a, b in zip(bounds[:-1], bounds[1:]):
                lat = lat_sorted[a:b][reached_sorted[a:b]]
                n_reached = len(lat)
                by[int(s_sorted[a])] = (b - a, n_reached, float(lat.mean(dtype=np.float64)) if n_reached else None,
                                        float(np.percentile(lat.astype(np.float64), 95)) if n_reached else None)

        def per_second(t: np.ndarray) -> Dict[int, int]:
            if not len(t):
                return {}
            u, n = unique((t - t0) // 1_000_000_000, return_counts=True)
            return dict(zip(u.tolist(), n.tolist()))

        sent = per_second(d.s_t)
        delivered = per_second(d.d_t)
        pk = d.packets
        pk_out = pk[pk["direction"] == DIR_OUT].groupby("second")["packets"].sum()
        pk_in = pk[pk["direction"] == DIR_IN].groupby("second")["packets"].sum()
        seconds = sorted(set(by) | set(sent) | set(delivered) | set(int(s) for s in pk_out.index))
        rows = []
        for s in seconds:
            b = by.get(s)
            intended = int(b[0]) if b is not None else 0
            reached = int(b[1]) if b is not None else 0
            rows.append({
                "second": int(s), "sent": int(sent.get(s, 0)), "intended": intended, "reached": reached,
                "delivery_ratio": reached / intended if intended else None,
                "latency_mean_ms": _ms(b[2]) if b is not None else None,
                "latency_p95_ms": _ms(b[3]) if b is not None else None,
                "delivered": int(delivered.get(s, 0)), "packets_sent": int(pk_out.get(s, 0)),
                "packets_received": int(pk_in.get(s, 0))})
        return rows

    def per_node(self, run_id: str) -> Dict[str, dict]:
        d = self.data[run_id]
        out: Dict[str, dict] = {n: {} for n in self.nodes.get(run_id, {})}
        pk = d.packets
        for (node, direction), n in pk.groupby(["node", "direction"])["packets"].sum().items():
            key = {DIR_OUT: "packets_sent", DIR_IN: "packets_received", DIR_FORWARDED: "packets_forwarded"}[direction]
            out.setdefault(node, {})[key] = int(n)
        NN = d.NN
        if len(d.p_node):
            cnt, total, nv, _ = group_stats(d.p_node, NN, d.p_latency, d.p_reached)
            for code in sorted(np.flatnonzero(cnt), key=lambda c: d.nodes.names[c]):
                e = out.setdefault(d.nodes.names[code], {})
                e["intended"], e["reached"] = int(cnt[code]), int(nv[code])
                e["delivery_ratio"] = e["reached"] / e["intended"] if e["intended"] else None
                e["latency_mean_ms"] = _ms(total[code] / nv[code]) if nv[code] else None
        for codes, key in ((d.s_origin, "sent"), (d.d_node, "delivered")):
            ok = codes >= 0
            counts = np.bincount(codes[ok], minlength=NN)
            for code in sorted(np.flatnonzero(counts), key=lambda c: d.nodes.names[c]):
                out.setdefault(d.nodes.names[code], {})[key] = int(counts[code])
        return out

    def heatmap(self, run_id: str) -> List[dict]:
        d = self.data[run_id]
        if not len(d.p_send):
            return []
        sec = (d.send_t[d.p_send] - self.t0[run_id]) // 1_000_000_000
        lo = int(sec.min())
        span = int(sec.max()) - lo + 1
        key = d.p_node.astype(np.int64) * span + (sec - lo)
        u, inv = unique(key, return_inverse=True)
        intended = np.bincount(inv)
        reached = np.bincount(inv, weights=d.p_reached)
        rows = [{"node": d.nodes.names[int(k // span)], "second": int(k % span + lo), "intended": int(i),
                 "reached": int(r)} for k, i, r in zip(u, intended, reached)]
        rows.sort(key=lambda r: (r["node"], r["second"]))
        return rows

    def latency_samples(self, run_id: str, limit: int = 200_000) -> List[float]:
        d = self.data[run_id]
        lat = d.p_latency[d.p_reached]
        if len(lat) > limit:
            lat = np.random.default_rng(1).choice(lat, limit, replace=False)
        return (lat / 1e6).tolist()

    def gossip_wire(self, run_id: str) -> dict:
        """RMR (payload transmissions / (receivers - 1) - 1, the origin counted among the
        receivers) and control overhead (control / payload packets sent)."""
        d = self.data[run_id]
        tx_sel = d.w_tx > 0
        tx_keys, tx_inv = unique(d.w_key[tx_sel], return_inverse=True)
        tx = np.bincount(tx_inv, weights=d.w_tx[tx_sel]) if len(tx_keys) else np.zeros(0)
        # distinct receivers per delivered message
        ok = d.d_key >= 0
        pair = unique(d.d_any[ok] * np.int64(d.NN) + d.d_node[ok])
        r_keys, r_n = unique(d.dm_key[pair // d.NN], return_counts=True)
        hit = lookup(r_keys, tx_keys)
        has = hit >= 0
        rmr = tx[has] / r_n[hit[has]] - 1
        pk = d.packets
        sent = pk[pk["direction"] == DIR_OUT]
        payload_mask = sent["type"].isin([int(t) for t in DATA_TYPES])
        payload, control = int(sent.loc[payload_mask, "packets"].sum()), int(sent.loc[~payload_mask, "packets"].sum())
        return {"rmr": float(rmr.mean()) if len(rmr) else None, "rmr_messages": int(len(rmr)),
                "payload_packets": payload, "control_packets": control,
                "control_overhead": control / payload if payload else None}


def _ms(ns) -> Optional[float]:
    return None if ns is None or ns != ns else float(ns) / 1e6


def nice_step(span: float, points: int = 100) -> float:
    """The least of 1, 2, 5 × 10^k that covers `span` in at most `points` steps (the time axis of
    the protocol analyses' over_time series)."""
    if span <= 0:
        return 1.0
    raw = span / points
    power = 10.0 ** np.floor(np.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw * (1 - 1e-12):
            return float(m * power)
    return float(10 * power)


def stats_ms(values_ns: np.ndarray) -> Dict[str, object]:
    """min, quartiles, p95, p99, max and mean of nanosecond values, in milliseconds (exact)."""
    v = np.asarray(values_ns, dtype=np.float64)
    if not len(v):
        return {"n": 0, "min_ms": None, "q1_ms": None, "median_ms": None, "q3_ms": None, "p95_ms": None,
                "p99_ms": None, "max_ms": None, "mean_ms": None}
    q = np.percentile(v, [0, 25, 50, 75, 95, 99, 100]) / 1e6
    return {"n": int(len(v)), "min_ms": float(q[0]), "q1_ms": float(q[1]), "median_ms": float(q[2]),
            "q3_ms": float(q[3]), "p95_ms": float(q[4]), "p99_ms": float(q[5]), "max_ms": float(q[6]),
            "mean_ms": float(v.mean() / 1e6)}
