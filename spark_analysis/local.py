"""The local engine: each input file decoded, reduced and written by the Spark task that reads it.

When the master is local and every run directory is on this machine's file system (the usual
case), the analysis is one Spark job over the runs' files, pcaps and logs together, the biggest
first, dealt out over the cores. Each task:
- for a pcap: decodes it (spark_analysis.pcapreader), writes its rows of packets.parquet itself
  (pyarrow) and reduces it (spark_analysis.reduce) to its receptions, wire sends and packet counts;
- for a log: reads it (spark_analysis.logreader), writes its rows of events.parquet and keeps its
  application sends (with their intended receivers), deliveries, its sent counts (every send,
  relays included, per node, type and relayed: spark_analysis.sent.sent_counts) and the few
  events the results need in full (the roles' errors, the state events protocol analyses read).

A run whose process was killed and that `testbed clean` has not finished yet is read as it was
left (testbed/rundir.py): a node's per-interface captures (<node>.<interface>.pcap) are decoded
together as the node's one capture, and a node's log is read from nodes/<node>/events.jsonl when
logs/ does not have it.
The reduced rows are handed over as Arrow IPC files in a scratch directory; only a summary per file
(records, other traffic, damage, unreadable lines) goes back through Spark. The driver
memory-maps the hand-over files and gets the very tables the general path's Spark actions return
(RunMetrics.collect), with the same columns, without moving millions of rows through the JVM or
parsing and decoding anything twice.

Any other master, or a run directory on another file system (hdfs:, s3a:, ...), takes the general
path, where Spark reads the files and writes the tables (spark_analysis.job).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional

from .inputs import RunInfo, virtual_packets, local_path, virtual_ns
from .logreader import NOTABLE_KINDS
from .pcapreader import COLUMNS, node_of, read_file
from .radio import Schedule, interval_of, receivers

SEND_COLUMNS = ["run", "origin", "seq", "type", "t", "intended", "message_id", "order", "sequencer", "priority",
                "vc", "deps", "receivers", "wanted_ns"]
DELIVERY_COLUMNS = ["run", "node", "origin", "seq", "type", "t", "produced_ns", "hops", "accepted"]
ENCODED = ("node", "origin", "type")  # names the driver codes (a dictionary per file)
COUNT_COLUMNS = ["packets", "bytes", "header_bytes", "retransmissions", "relayed"]


def applies(master: str, uris: List[str]) -> bool:
    """True when the local engine can analyse the runs: a local master and local run directories."""
    return master.startswith("local") and all(local_path(u) is not None for u in uris)


@dataclass
class Inputs:
    """What the tasks handed over, for every run together (a `run` column tells them apart)."""

    files: List[dict]           # per pcap: run, node, file, file_records, file_other, file_damage
    unreadable: Dict[str, int]  # run id -> log lines that could not be read
    sends: object               # pyarrow tables with the columns of RunMetrics.collect
    deliveries: object
    receptions: object
    wire: object
    packets: object             # pandas: packet counts per (run, node, type, direction, second)
    notable: object             # pandas: the errors and the protocol analyses' state events, every column
    undeclared: Dict[str, List[str]]  # run id -> log fields no declaration names
    sent: object                # pandas: send events counted per (run, node, type, relayed) (sent.SENT_COLUMNS)


def read_inputs(spark, runs: List[RunInfo], partial: Dict[str, str]) -> Inputs:
    """Run the job: every pcap and log of the runs; packets.parquet and events.parquet are written
    into each run's partial report directory (partial: run id -> its URI, local here)."""
    scratch = tempfile.mkdtemp(prefix="testbed-analyze-")
    try:
        plan, items = {}, []
        for i, r in enumerate(runs):
            root = local_path(r.uri)
            out = local_path(partial[r.run_id])
            hand = os.path.join(scratch, f"run{i}")
            for d in (os.path.join(out, "packets.parquet"), os.path.join(out, "events.parquet"), hand):
                os.makedirs(d, exist_ok=True)
            plan[r.uri] = {**r.capture_info(), "out": out, "hand": hand, "receivers": receivers(r)}
            items += run_files(r.uri, root)
        summaries = _run_tasks(spark, plan, items)
        return _gather(runs, plan, summaries)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_files(uri: str, root: str) -> List[tuple]:
    """(run, kind, paths, bytes) of every capture and log of a run directory: one item per node's
    capture (all its files: one, or one per interface while unmerged) and one per log."""
    items = []
    pcap_dir = os.path.join(root, "pcap")
    by_node: Dict[str, List[str]] = {}
    for name in sorted(os.listdir(pcap_dir)) if os.path.isdir(pcap_dir) else []:
        if name.endswith(".pcap"):
            by_node.setdefault(node_of(name), []).append(os.path.join(pcap_dir, name))
    items += [(uri, "pcap", tuple(paths), sum(os.path.getsize(p) for p in paths)) for paths in by_node.values()]
    logs = {}
    logs_dir = os.path.join(root, "logs")
    for name in sorted(os.listdir(logs_dir)) if os.path.isdir(logs_dir) else []:
        if name.endswith(".jsonl"):
            logs[name[:-len(".jsonl")]] = os.path.join(logs_dir, name)
    nodes_dir = os.path.join(root, "nodes")
    for node in sorted(os.listdir(nodes_dir)) if os.path.isdir(nodes_dir) else []:
        left = os.path.join(nodes_dir, node, "events.jsonl")  # a killed run's, not moved to logs/
        if node not in logs and os.path.isfile(left):
            logs[node] = left
    items += [(uri, "log", (path,), os.path.getsize(path)) for path in logs.values()]
    return items


def _run_tasks(spark, plan, items) -> List[dict]:
    if not items:
        return []
    slots = spark.sparkContext.defaultParallelism
    slices = max(1, min(len(items), 2 * slots))
    items.sort(key=lambda item: -item[3])
    # the biggest first, dealt round-robin: Spark cuts the list into contiguous slices. An RDD job,
    # not a DataFrame one: its first run costs about 2 s instead of 6 (no SQL planning, no Arrow
    # serialiser), and only a summary per file comes back
    dealt = [items[i][:3] for s in range(slices) for i in range(s, len(items), slices)]
    return spark.sparkContext.parallelize(dealt, slices).mapPartitions(_tasks(plan)).collect()


def _tasks(plan):
    """The task function: (run, kind, paths) items -> one summary dict per capture or log."""

    def run(items):
        for uri, kind, paths in items:
            info = plan[uri]
            summary = pcap_task(info, list(paths)) if kind == "pcap" else log_task(info, paths[0])
            summary.update(run=info["run_id"], kind=kind, file=", ".join(paths))
            yield summary

    return run


def _stem(path: str) -> str:
    return os.path.basename(path).rsplit(".", 1)[0]


def write_parquet(table, path: str, statistics: List[str]) -> None:
    """A table's part file: dictionaries for its names (not for times and numbers, which are mostly
    distinct), min/max statistics for the columns a reader filters on; 40% less time than the defaults."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f.name for f in table.schema if pa.types.is_string(f.type)]
    pq.write_table(table, path, use_dictionary=names, write_statistics=statistics)


def _write_ipc(table, path: str) -> None:
    import pyarrow as pa

    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def pcap_task(info: dict, paths: List[str]) -> dict:
    """Decode one node's capture (its file, or its per-interface files together); write its
    packets and hand over its reduced rows."""
    import numpy as np
    import pyarrow as pa

    from . import reduce as rd

    node = stem = node_of(paths[0])
    parsed = virtual_packets(read_captures(paths, info["node_ids"].get(node, 0), info["local"].get(node)), info)
    c, n = parsed.columns, parsed.packets

    def named(cols: Dict[str, object], rows: int, with_node: bool = True, encoded: bool = False):
        head = {"run": pa.repeat(pa.scalar(info["run_id"]), rows)}
        if with_node:
            head["node"] = (pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), pa.array([node]))
                            if encoded else pa.repeat(pa.scalar(node), rows))
        return pa.table({**head, **cols})

    if n:
        write_parquet(named({name: c[name] for name, _ in COLUMNS}, n),
                      os.path.join(info["out"], "packets.parquet", f"part-{stem}.parquet"),
                      ["run", "node", "ts_ns", "direction", "type", "origin", "seq"])
        r = rd.receptions(c)
        if len(r["t"]):
            _write_ipc(named(r, len(r["t"]), encoded=True), os.path.join(info["hand"], f"receptions-{stem}.arrow"))
        s = rd.sends(c)
        if len(s["t"]):
            t = pa.array(s["t"], pa.int64(), mask=~s["t_valid"])
            _write_ipc(named({"origin": s["origin"], "seq": s["seq"], "type": s["type"], "t": t, "tx": s["tx"]},
                             len(t), with_node=False), os.path.join(info["hand"], f"wire-{stem}.arrow"))
        k = rd.counts(c, info["t0"])
        if len(k["packets"]):
            _write_ipc(named(k, len(k["packets"])), os.path.join(info["hand"], f"counts-{stem}.arrow"))
    return {"node": node, "records": parsed.records, "other": parsed.other, "damage": json.dumps(parsed.damage),
            "unreadable": 0}


def read_captures(paths: List[str], node_id: int, local):
    """One node's capture from its files, as one PcapData in time order (a node with several
    interfaces whose files were not merged: a killed run)."""
    import numpy as np

    from .pcapreader import PcapData

    if len(paths) == 1:
        return read_file(paths[0], node_id, local)
    parts = [read_file(path, node_id, local) for path in paths]
    for path, part in zip(paths, parts):
        for damage in part.damage:
            damage["file"] = path
    order = np.argsort(np.concatenate([p.columns["ts_ns"] for p in parts]), kind="stable")
    columns = {name: np.concatenate([p.columns[name] for p in parts])[order] for name in parts[0].columns}
    return PcapData(columns, sum(p.records for p in parts), sum(p.other for p in parts), parts[0].link_type,
                    [d for p in parts for d in p.damage], sum(p.bytes_read for p in parts))


def log_task(info: dict, path: str) -> dict:
    """Read one log; write its events and hand over its sends, deliveries, sent counts and notable events."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .logreader import read_log
    from .protocols import states

    # logs/<node>.jsonl, or nodes/<node>/events.jsonl as a killed run left it
    stem = _stem(path) if os.path.basename(os.path.dirname(path)) == "logs" else \
        os.path.basename(os.path.dirname(path))
    with open(path, "rb") as fh:
        table, unreadable, undeclared = read_log(fh.read())
    n = table.num_rows
    if not n:
        return {"node": stem, "records": 0, "other": 0, "damage": "[]", "unreadable": unreadable,
                "undeclared": undeclared}
    if info.get("dilation", 1.0) != 1.0:  # the events' stamps in virtual time, as the general path's
        t = table.column("t").to_numpy(zero_copy_only=False)
        valid = ~pc.is_null(table.column("t")).to_numpy(zero_copy_only=False)
        converted = np.zeros(n, np.int64)
        converted[valid] = virtual_ns(t[valid].astype(np.int64), info["origin"], info["dilation"])
        table = table.set_column(table.schema.get_field_index("t"), "t", pa.array(converted, pa.int64(),
                                                                                 mask=~valid))
    table = table.append_column("run", pa.repeat(pa.scalar(info["run_id"]), n))
    write_parquet(table, os.path.join(info["out"], "events.parquet", f"part-{stem}.parquet"),
                  ["run", "node", "event", "t", "type", "origin", "seq"])

    event = table.column("event")
    own = pc.equal(table.column("origin"), table.column("node"))
    first_hop = pc.equal(pc.fill_null(table.column("hops"), 0), 0)
    sends = table.filter(pc.and_(pc.and_(pc.equal(event, "send"), own), first_hop))
    if sends.num_rows:
        sends = sends.append_column("intended", intended_receivers(sends, info["receivers"]))
        _write_ipc(_names_encoded(sends.select(SEND_COLUMNS)), os.path.join(info["hand"], f"sends-{stem}.arrow"))
    sent = sent_counts(table)
    if sent.num_rows:
        _write_ipc(sent, os.path.join(info["hand"], f"sent-{stem}.arrow"))
    deliveries = table.filter(pc.equal(event, "deliver"))
    if deliveries.num_rows:
        _write_ipc(_names_encoded(deliveries.select(DELIVERY_COLUMNS)),
                   os.path.join(info["hand"], f"deliveries-{stem}.arrow"))
    notable = table.filter(pc.or_(pc.is_in(event, value_set=pa.array(list(NOTABLE_KINDS), pa.string())), pc.and_(
        pc.equal(event, "state"), pc.is_in(table.column("state"), value_set=pa.array(list(states()), pa.string())))))
    if notable.num_rows:
        _write_ipc(notable.drop_columns(["_corrupt_record"]), os.path.join(info["hand"], f"notable-{stem}.arrow"))
    return {"node": stem, "records": n, "other": 0, "damage": "[]", "unreadable": unreadable,
            "undeclared": undeclared}


def transmissions_array(to):
    """sent.transmissions of each value of a `to` column (Arrow strings), as an int64 numpy
    array: worked out once per distinct value (a log holds few: "broadcast", names, the lists
    its IP gossip drew)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .sent import transmissions

    if not len(to):
        return np.zeros(0, np.int64)
    enc = pc.dictionary_encode(to)
    enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
    lut = np.array([transmissions(v) for v in enc.dictionary.to_pylist()] + [transmissions(None)], np.int64)
    return lut[np.asarray(pc.fill_null(enc.indices, len(lut) - 1).to_numpy(), np.int64)]


def sent_counts(table):
    """A log's send events, relays included, counted per (run, node, type, relayed = hops > 0):
    messages, transmissions, datagrams (frags x transmissions) and bytes (bytes x transmissions),
    the columns sent.SENT_COLUMNS names (Spark's grouping is sent.sent_counts)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .sent import SENT_COLUMNS, SENT_COUNTS

    sends = table.filter(pc.equal(table.column("event"), "send"))
    tx = pa.array(transmissions_array(sends.column("to")), pa.int64())
    rows = pa.table({
        "run": sends.column("run"), "node": sends.column("node"), "type": sends.column("type"),
        "relayed": pc.greater(pc.fill_null(sends.column("hops"), 0), 0),
        "messages": pa.array(np.ones(sends.num_rows, np.int64)),
        "transmissions": tx,
        "datagrams": pc.fill_null(pc.multiply(sends.column("frags"), tx), 0),
        "bytes": pc.fill_null(pc.multiply(sends.column("bytes"), tx), 0)})
    grouped = rows.group_by(SENT_COLUMNS[:4], use_threads=False).aggregate([(c, "sum") for c in SENT_COUNTS])
    return grouped.select(SENT_COLUMNS[:4] + [f"{c}_sum" for c in SENT_COUNTS]).rename_columns(SENT_COLUMNS)


def _names_encoded(table):
    """The node and type names as dictionary columns: the driver codes a file's few distinct
    names instead of hashing millions of strings (codes.Names.encode)."""
    import pyarrow.compute as pc

    for i, name in enumerate(table.column_names):
        if name in ENCODED:
            table = table.set_column(i, name, pc.dictionary_encode(table.column(i)))
    return table


def intended_receivers(sends, schedule: Schedule):
    """Each send's intended receivers (a list array), by the rule of metrics.intended_receivers:
    `eligible` when it is a JSON list, else the `to` list, else the one node `to` names, else,
    for a broadcast, the sender's receivers at the send's time `t` (spark_analysis.radio.receivers:
    its segment peers, on a radio segment those in range); worked out once per distinct (eligible,
    to, node, interval of the node's schedule)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    none = "\x00"
    node = pc.dictionary_encode(sends.column("node")).combine_chunks()
    codes = np.asarray(pc.fill_null(node.indices, -1).to_numpy(), np.int64)
    t = sends.column("t")
    t_valid = np.asarray(t.is_valid().to_numpy(zero_copy_only=False), bool) if len(t) else np.zeros(0, bool)
    t = np.asarray(pc.fill_null(t, 0).to_numpy(), np.int64) if len(t) else np.zeros(0, np.int64)
    interval = np.full(len(codes), -1, np.int64)
    for i, name in enumerate(node.dictionary.to_pylist()):
        if name in schedule:
            rows = codes == i
            interval[rows] = interval_of(schedule[name], t[rows], t_valid[rows])
    key = pc.binary_join_element_wise(*(pc.fill_null(sends.column(c), none) for c in ("eligible", "to", "node")),
                                      pa.array(interval.astype(str)), "\x1f")
    enc = pc.dictionary_encode(key).combine_chunks()
    lists = []
    for text in enc.dictionary.to_pylist():
        eligible, to, name, k = (None if part == none else part for part in text.split("\x1f"))
        lists.append(_intended(eligible, to, name, schedule, int(k)))
    return pc.take(pa.array(lists, pa.list_(pa.string())), enc.indices)


def _json_names(text: str) -> Optional[List[Optional[str]]]:
    """A JSON list of names as a list (elements that are not strings as their JSON text), else None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    return [v if isinstance(v, str) or v is None else json.dumps(v, separators=(",", ":")) for v in value]


def _intended(eligible: Optional[str], to: Optional[str], node: Optional[str], schedule: Schedule,
              interval: int) -> List[Optional[str]]:
    if eligible is not None:
        names = _json_names(eligible)
        if names is not None:
            return names
    if to is None:
        return []
    if to.startswith("["):
        return _json_names(to) or []
    if to != "broadcast":
        return [to]
    if node is None or node not in schedule or interval < 0:
        return []
    return list(schedule[node][interval][2])


def _gather(runs: List[RunInfo], plan, summaries: List[dict]) -> Inputs:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .inputs import packet_schema_arrow
    from .logreader import arrow_schema
    from .sent import SENT_COUNTS, sent_frame

    for r in runs:  # a run without rows still gets readable (empty) tables
        info = plan[r.uri]
        for table, schema in (("packets", packet_schema_arrow()),
                              ("events", arrow_schema().append(pa.field("run", pa.string())))):
            folder = os.path.join(info["out"], f"{table}.parquet")
            if not os.listdir(folder):
                pq.write_table(schema.empty_table(), os.path.join(folder, "part-empty.parquet"))

    def load(prefix: str, schema):
        tables = []
        for r in runs:
            hand = plan[r.uri]["hand"]
            for name in sorted(os.listdir(hand)):
                if name.startswith(prefix + "-"):
                    tables.append(pa.ipc.open_file(pa.memory_map(os.path.join(hand, name))).read_all())
        return pa.concat_tables(tables) if tables else schema.empty_table()

    sends = load("sends", _encoded(pa, _send_schema(pa)))
    deliveries = load("deliveries", _encoded(pa, _event_subschema(pa, DELIVERY_COLUMNS)))
    receptions = _reduced_schema(pa, ["run", "node", "origin", "seq", "type", "t", "frags", "copies", "frag_count"])
    receptions = load("receptions", receptions.set(1, pa.field("node", pa.dictionary(pa.int32(), pa.string()))))
    wire = load("wire", _reduced_schema(pa, ["run", "origin", "seq", "type", "t", "tx"]))
    counts = load("counts", _reduced_schema(pa, ["run", "node", "type", "direction", "second"] + COUNT_COLUMNS)
                  ).to_pandas()
    packets = counts.groupby(["run", "node", "type", "direction", "second"], as_index=False)[COUNT_COLUMNS].sum()
    notable = load("notable", arrow_schema().remove(arrow_schema().get_field_index("_corrupt_record"))
                   .append(pa.field("run", pa.string()))).to_pandas()
    sent = sent_frame(load("sent", pa.schema([("run", pa.string()), ("node", pa.string()), ("type", pa.string()),
                                               ("relayed", pa.bool_())]
                                              + [(c, pa.int64()) for c in SENT_COUNTS])).to_pandas())

    files, unreadable = [], {r.run_id: 0 for r in runs}
    undeclared: Dict[str, set] = {r.run_id: set() for r in runs}
    for s in summaries:
        if s["kind"] == "pcap":
            files.append({"run": s["run"], "node": s["node"], "file": s["file"], "file_records": s["records"],
                          "file_other": s["other"], "file_damage": s["damage"]})
        else:
            unreadable[s["run"]] += int(s["unreadable"] or 0)
            undeclared[s["run"]].update(s.get("undeclared") or [])
    return Inputs(files, unreadable, sends, deliveries, receptions, wire, pd.DataFrame(packets), notable,
                  {rid: sorted(fields) for rid, fields in undeclared.items()}, sent)


def _reduced_schema(pa, columns: List[str]):
    """The hand-over's columns of a reduced capture, typed as inputs.REDUCED_FIELDS types them."""
    from .inputs import REDUCED_FIELDS

    types = {"byte": pa.int8(), "string": pa.string(), "long": pa.int64(), "int": pa.int32(), "short": pa.int16()}
    fields = {"run": pa.string(), "node": pa.string(), **{name: types[t] for name, t in REDUCED_FIELDS}}
    return pa.schema([(c, fields[c]) for c in columns])


def _encoded(pa, schema):
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string())) if f.name in ENCODED else f
                      for f in schema])


def _event_subschema(pa, columns: List[str]):
    from .logreader import arrow_schema

    full = arrow_schema().append(pa.field("run", pa.string()))
    return pa.schema([full.field(c) for c in columns])


def _send_schema(pa):
    from .logreader import arrow_schema

    full = arrow_schema().append(pa.field("run", pa.string())).append(pa.field("intended", pa.list_(pa.string())))
    return pa.schema([full.field(c) for c in SEND_COLUMNS])
