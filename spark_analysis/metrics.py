"""Delivery metrics: message-level from the pcaps, application-level from the logs.

Spark does the heavy part: each capture is decoded and reduced in the task that reads it
(spark_analysis.reduce: first copies per message at the node, its own sends, packet counts per
second), then Spark joins the receptions with the intended receivers of every send across nodes. What reaches the driver is one row per (message, intended
receiver) plus small aggregates, from which the statistics below are computed exactly with numpy.

Definitions (written down in docs/ANALYSIS.md):
- A message is identified by (run, origin, sequence, type). Its application send is the origin's
  "send" event (hops 0); its intended receivers come from the event: `eligible` when the role
  names them (a predicate's or group's members), else the `to` list, else, for a broadcast, the
  nodes sharing an L2 segment with the sender (from the manifest's addresses).
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
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from agents.wire import MessageType

from .pcapreader import DIR_FORWARDED, DIR_IN, DIR_OUT
from .reduce import DATA_TYPES, L2_L3_L4_HEADERS  # noqa: F401 (the header size: documented here, counted there)

TYPE_CLASS = {
    MessageType.ACK: "control", MessageType.ABC_REQUEST: "control", MessageType.ABC_REPLY: "control",
    MessageType.ABC_TAKE: "control",
    MessageType.MEMBERSHIP: "control", MessageType.GOSSIP_HEADERS: "headers", MessageType.GOSSIP_PULL: "pulls",
    MessageType.CAUSAL_RECOVERY: "pulls",
}
for _t in DATA_TYPES:
    TYPE_CLASS[_t] = "data"


def type_name(code) -> str:
    try:
        return MessageType(int(code)).name
    except (ValueError, TypeError):
        return f"TYPE_{code}"


def _type_map():
    from pyspark.sql import functions as F
    items = []
    for t in MessageType:
        items += [F.lit(t.name), F.lit(int(t))]
    return F.create_map(*items)


def intended_receivers(sends, peers):
    """Add `intended` (array of node names) to the send events: eligible, else to, else the segment."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = T.ArrayType(T.StringType())
    listed = F.when(F.col("to").startswith("["), F.from_json(F.col("to"), names))
    single = F.when((F.col("to") != "broadcast") & ~F.col("to").startswith("["), F.array(F.col("to")))
    joined = sends.join(F.broadcast(peers), on=["run", "node"], how="left")
    intended = F.coalesce(F.from_json(F.col("eligible"), names), listed, single,
                          F.when(F.col("to") == "broadcast", F.col("peers")), F.array().cast(names))
    return joined.withColumn("intended", intended).drop("peers")


class RunMetrics:
    """The Spark side: tables built once per analysis, reduced and collected in a few actions."""

    def __init__(self, spark, reduced, events, runs) -> None:
        """reduced: the captures reduced where they were decoded (inputs.read_reduced)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        self.runs = runs
        node_rows, peer_rows, t0_rows = [], [], []
        for r in runs:
            peers = r.segment_peers()
            for node, nid in r.node_ids.items():
                node_rows.append((r.run_id, node, int(nid)))
                peer_rows.append((r.run_id, node, peers.get(node, [])))
            t0_rows.append((r.run_id, int(r.manifest.get("t0_ns") or r.manifest.get("started_ns") or 0)))
        self.nodes = spark.createDataFrame(node_rows, "run string, node string, node_id int")
        peers_df = spark.createDataFrame(peer_rows, T.StructType([
            T.StructField("run", T.StringType()), T.StructField("node", T.StringType()),
            T.StructField("peers", T.ArrayType(T.StringType()))]))
        type_map = _type_map()

        # application sends (the origin's own, not relays) with their intended receivers
        sends = (events.filter((F.col("event") == "send") & (F.col("origin") == F.col("node"))
                               & (F.coalesce(F.col("hops"), F.lit(0)) == 0))
                 .withColumn("type_id", type_map[F.col("type")]))
        sends = intended_receivers(sends, peers_df)
        ids = self.nodes.select("run", F.col("node").alias("origin"), F.col("node_id").alias("origin_id"))
        self.sends = sends.join(F.broadcast(ids), on=["run", "origin"], how="left")
        self.deliveries = events.filter(F.col("event") == "deliver")

        from .inputs import KIND_COUNTS, KIND_RECEPTION, KIND_SEND
        kind = F.col("kind")
        sent = reduced.filter(kind == KIND_SEND)
        wire_send = (sent.filter(F.col("t").isNotNull()).groupBy("run", "origin", "seq", "type")
                     .agg(F.min("t").alias("wire_t"))
                     .withColumnRenamed("origin", "origin_id").withColumnRenamed("type", "type_id"))
        self.receptions = (reduced.filter(kind == KIND_RECEPTION)
                           .select("run", F.col("node").alias("receiver"), F.col("origin").alias("origin_id"), "seq",
                                   F.col("type").alias("type_id"), F.col("t").alias("recv_t"), "frags", "copies",
                                   "frag_count"))
        msgs = (self.sends.select("run", "origin", "origin_id", "seq", "type_id", "t", "intended")
                .join(wire_send, on=["run", "origin_id", "seq", "type_id"], how="left")
                .withColumn("send_t", F.coalesce("wire_t", "t")))
        self.pairs = (msgs.select("run", "origin", "origin_id", "seq", "type_id", "send_t",
                                  F.explode("intended").alias("receiver"))
                      .join(self.receptions, on=["run", "receiver", "origin_id", "seq", "type_id"], how="left")
                      .withColumn("recv_t", F.when(F.col("frags") >= F.col("frag_count"), F.col("recv_t"))))
        self.packet_counts = (reduced.filter(kind == KIND_COUNTS)
                              .groupBy("run", "node", "type", "direction", "second")
                              .agg(*[F.sum(c).alias(c) for c in ("packets", "bytes", "header_bytes",
                                                                  "retransmissions", "relayed")]))
        self.duplicates = (self.receptions.groupBy("run", "type_id")
                           .agg(F.count(F.lit(1)).alias("receptions"),
                                F.sum(F.col("copies") - F.col("frags")).alias("duplicates")))
        self.transmissions = (sent.filter(F.col("tx") > 0).groupBy("run", "origin", "seq", "type")
                              .agg(F.sum("tx").alias("tx")))
        self.t0 = {r.run_id: t for r, (_, t) in zip(runs, t0_rows)}

    def collect(self) -> "Collected":
        """Run the Spark actions; every later measure works on what they return."""
        return Collected(
            pairs=self.pairs.select("run", "type_id", "origin", "seq", "receiver", "send_t", "recv_t").toPandas(),
            packets=self.packet_counts.toPandas(),
            duplicates=self.duplicates.toPandas(),
            sends=self.sends.select("run", "origin", "seq", "type", "type_id", "t", "intended", "message_id", "order",
                                    "sequencer", "priority", "vc", "deps", "receivers", "wanted_ns").toPandas(),
            deliveries=self.deliveries.select("run", "node", "origin", "seq", "type", "t", "produced_ns",
                                              "hops", "accepted").toPandas(),
            transmissions=self.transmissions.toPandas(),
            nodes={r.run_id: r.node_ids for r in self.runs},
            t0=self.t0)


class Collected:
    """What the Spark actions returned (pandas frames), and the measures computed from it."""

    def __init__(self, pairs, packets, duplicates, sends, deliveries, transmissions, nodes, t0) -> None:
        self.pairs = pairs
        self.packets = packets
        self.duplicates = duplicates
        self.sends = sends
        self.deliveries = deliveries
        self.transmissions = transmissions
        self.nodes = nodes
        self.t0 = t0
        self.pairs["reached"] = self.pairs["recv_t"].notna()
        self.pairs["latency"] = self.pairs["recv_t"] - self.pairs["send_t"]

    def run(self, frame, run_id):
        if len(self.nodes) == 1 and run_id in self.nodes:  # one run: no copy of millions of rows
            return frame
        return frame[frame["run"] == run_id]

    # -- message level (pcaps) -----------------------------------------------------------------

    def message_level(self, run_id: str) -> Dict[str, dict]:
        pairs = self.run(self.pairs, run_id)
        sends = self.run(self.sends, run_id)
        out: Dict[str, dict] = {}
        groups = [("all", pairs, sends)] + [
            (type_name(t), pairs[pairs["type_id"] == t], sends[sends["type_id"] == t])
            for t in sorted(set(sends["type_id"].dropna().astype(int)))]
        for name, pr, sd in groups:
            per_msg = pr.groupby(["origin", "seq", "type_id"], sort=False).agg(
                intended=("reached", "size"), reached=("reached", "sum"), worst=("latency", "max"))
            complete = per_msg[per_msg["reached"] == per_msg["intended"]]
            intended, reached = int(len(pr)), int(pr["reached"].sum())
            out[name] = {
                "sent": int(len(sd)),
                "intended_receivers": intended,
                "received": reached,
                "delivery_ratio": reached / intended if intended else None,
                "complete_messages": int(len(complete)),
                "messages_without_receivers": int(len(sd) - len(per_msg)),
                "first_copy_latency": stats_ms(pr["latency"].dropna().to_numpy()),
                "delivery_time_to_all": stats_ms(complete["worst"].dropna().to_numpy()),
            }
        for r in self.run(self.duplicates, run_id).itertuples():
            entry = out.setdefault(type_name(r.type_id), {})
            entry["receptions"] = int(r.receptions)
            entry["duplicates_received"] = int(r.duplicates or 0)
            allrow = out.setdefault("all", {})
            allrow["receptions"] = allrow.get("receptions", 0) + int(r.receptions)
            allrow["duplicates_received"] = allrow.get("duplicates_received", 0) + int(r.duplicates or 0)
        out.setdefault("all", {})["message_time_gap"] = self.time_gap(pairs)
        return out

    @staticmethod
    def time_gap(pairs) -> dict:
        """The AbC paper's message time gap: between consecutive data messages reaching a receiver,
        averaged per receiver, then over receivers."""
        data = pairs[pairs["reached"] & pairs["type_id"].isin([int(t) for t in DATA_TYPES])]
        if not len(data):
            return {"mean_ms": None, "std_ms": None, "receivers": 0}
        d = data[["receiver", "recv_t"]].sort_values(["receiver", "recv_t"])
        gap = d["recv_t"].diff()
        gap[d["receiver"].ne(d["receiver"].shift())] = np.nan
        per = gap.groupby(d["receiver"]).mean().dropna() / 1e6
        return {"mean_ms": float(per.mean()) if len(per) else None,
                "std_ms": float(per.std()) if len(per) > 1 else None,
                "min_receiver_ms": float(per.min()) if len(per) else None,
                "max_receiver_ms": float(per.max()) if len(per) else None,
                "receivers": int(len(per))}

    def overhead(self, run_id: str) -> dict:
        pk = self.run(self.packets, run_id)
        sent = pk[pk["direction"] == DIR_OUT]
        pairs = self.run(self.pairs, run_id)
        delivered = int((pairs["reached"] & pairs["type_id"].isin([int(t) for t in DATA_TYPES])).sum())
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
        s = self.run(self.sends, run_id)[["origin", "seq", "type", "t"]].rename(columns={"t": "send_t"})
        d = self.run(self.deliveries, run_id).merge(s, on=["origin", "seq", "type"], how="left")
        d["latency"] = d["t"] - d["send_t"]
        produced = d["produced_ns"].where(d["produced_ns"].notna(), d["send_t"])
        d["age"] = d["t"] - produced
        out: Dict[str, dict] = {}
        sends = self.run(self.sends, run_id)
        groups = [("all", d, sends)] + [(t, d[d["type"] == t], sends[sends["type"] == t])
                                        for t in sorted(set(sends["type"]) | set(d["type"].dropna()))]
        for name, dd, sd in groups:
            last_hops = dd["hops"].dropna()
            out[name] = {
                "sent": int(len(sd)),
                "delivered": int(len(dd)),
                "distinct_deliveries": int(len(dd.drop_duplicates(["node", "origin", "seq", "type"]))),
                "deliveries_without_send": int(dd["send_t"].isna().sum()),
                "delivery_latency": stats_ms(dd["latency"].dropna().to_numpy()),
                "knowledge_age": stats_ms(dd["age"].dropna().to_numpy()),
                "hops": ({"mean": float(last_hops.mean()), "max": int(last_hops.max())} if len(last_hops) else None),
            }
        self._app = d
        return out

    # -- series and per node --------------------------------------------------------------------

    def series(self, run_id: str) -> List[dict]:
        t0 = self.t0[run_id]
        pairs = self.run(self.pairs, run_id)
        sec = ((pairs["send_t"] - t0) // 1_000_000_000).astype("int64")
        by = pairs.groupby(sec).agg(intended=("reached", "size"), reached=("reached", "sum"),
                                    latency_mean=("latency", "mean"),
                                    latency_p95=("latency", lambda x: x.quantile(0.95)))
        sends = self.run(self.sends, run_id)
        sent = sends.groupby((sends["t"] - t0) // 1_000_000_000).size()
        dl = self.run(self.deliveries, run_id)
        delivered = dl.groupby((dl["t"] - t0) // 1_000_000_000).size()
        pk = self.run(self.packets, run_id)
        pk_out = pk[pk["direction"] == DIR_OUT].groupby("second")["packets"].sum()
        pk_in = pk[pk["direction"] == DIR_IN].groupby("second")["packets"].sum()
        seconds = sorted(set(by.index) | set(sent.index) | set(delivered.index) | set(pk_out.index))
        rows = []
        for s in seconds:
            b = by.loc[s] if s in by.index else None
            intended = int(b["intended"]) if b is not None else 0
            reached = int(b["reached"]) if b is not None else 0
            rows.append({
                "second": int(s), "sent": int(sent.get(s, 0)), "intended": intended, "reached": reached,
                "delivery_ratio": reached / intended if intended else None,
                "latency_mean_ms": _ms(b["latency_mean"]) if b is not None else None,
                "latency_p95_ms": _ms(b["latency_p95"]) if b is not None else None,
                "delivered": int(delivered.get(s, 0)), "packets_sent": int(pk_out.get(s, 0)),
                "packets_received": int(pk_in.get(s, 0))})
        return rows

    def per_node(self, run_id: str) -> Dict[str, dict]:
        out: Dict[str, dict] = {n: {} for n in self.nodes.get(run_id, {})}
        pk = self.run(self.packets, run_id)
        for (node, direction), n in pk.groupby(["node", "direction"])["packets"].sum().items():
            key = {DIR_OUT: "packets_sent", DIR_IN: "packets_received", DIR_FORWARDED: "packets_forwarded"}[direction]
            out.setdefault(node, {})[key] = int(n)
        pairs = self.run(self.pairs, run_id)
        for node, g in pairs.groupby("receiver"):
            e = out.setdefault(node, {})
            e["intended"], e["reached"] = int(len(g)), int(g["reached"].sum())
            e["delivery_ratio"] = e["reached"] / e["intended"] if e["intended"] else None
            e["latency_mean_ms"] = _ms(g["latency"].mean())
        for node, n in self.run(self.sends, run_id).groupby("origin").size().items():
            out.setdefault(node, {})["sent"] = int(n)
        for node, n in self.run(self.deliveries, run_id).groupby("node").size().items():
            out.setdefault(node, {})["delivered"] = int(n)
        return out

    def heatmap(self, run_id: str) -> List[dict]:
        pairs = self.run(self.pairs, run_id)
        sec = ((pairs["send_t"] - self.t0[run_id]) // 1_000_000_000).astype("int64")
        g = pairs.groupby([pairs["receiver"], sec]).agg(intended=("reached", "size"), reached=("reached", "sum"))
        return [{"node": n, "second": int(s), "intended": int(r.intended), "reached": int(r.reached)}
                for (n, s), r in g.iterrows()]

    def latency_samples(self, run_id: str, limit: int = 200_000) -> List[float]:
        lat = self.run(self.pairs, run_id)["latency"].dropna()
        if len(lat) > limit:
            lat = lat.sample(limit, random_state=1)
        return (lat / 1e6).tolist()

    def gossip_wire(self, run_id: str) -> dict:
        """RMR (payload transmissions / (receivers - 1) - 1, the origin counted among the
        receivers) and control overhead (control / payload packets sent)."""
        tx = self.run(self.transmissions, run_id)
        ids = {v: k for k, v in self.nodes.get(run_id, {}).items()}
        tx = tx.assign(origin=tx["origin"].map(ids), type=tx["type"].map(type_name))
        dl = self.run(self.deliveries, run_id)
        receivers = dl.drop_duplicates(["node", "origin", "seq", "type"]).groupby(["origin", "seq", "type"]).size()
        merged = tx.merge(receivers.rename("receivers").reset_index(), on=["origin", "seq", "type"])
        merged = merged[merged["receivers"] > 0]
        rmr = merged["tx"] / merged["receivers"] - 1
        pk = self.run(self.packets, run_id)
        sent = pk[pk["direction"] == DIR_OUT]
        payload_mask = sent["type"].isin([int(t) for t in DATA_TYPES])
        payload, control = int(sent.loc[payload_mask, "packets"].sum()), int(sent.loc[~payload_mask, "packets"].sum())
        return {"rmr": float(rmr.mean()) if len(rmr) else None, "rmr_messages": int(len(rmr)),
                "payload_packets": payload, "control_packets": control,
                "control_overhead": control / payload if payload else None}


def _ms(ns) -> Optional[float]:
    return None if ns is None or ns != ns else float(ns) / 1e6


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
