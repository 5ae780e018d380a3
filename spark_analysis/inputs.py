"""Reading a run directory in Spark: the manifest, the pcaps (through the vectorised reader) and the
agents' event logs. Paths may be any URI Spark reads (a local directory, file:, hdfs:, s3a:, ...).
"""

from __future__ import annotations

import ipaddress
import json
import os
import posixpath
from dataclasses import dataclass
from typing import Dict, List, Optional

from testbed.errors import UsageError

from .pcapreader import COLUMNS, local_addresses, node_of, read_bytes


class AnalysisError(UsageError):
    """A run directory that cannot be analysed (named, with what is wrong): exit code 2."""


@dataclass
class RunInfo:
    run_id: str
    uri: str                   # the run directory as given, without a trailing slash
    manifest: dict

    @property
    def node_ids(self) -> Dict[str, int]:
        return self.manifest.get("node_ids", {})

    def segment_peers(self) -> Dict[str, List[str]]:
        """For each node, the other nodes on any L2 segment it has an address on: its broadcasts' receivers."""
        nets: Dict[str, List[str]] = {}
        for node, intfs in self.manifest.get("addresses", {}).items():
            for cidr in intfs.values():
                net = str(ipaddress.ip_interface(cidr).network)
                nets.setdefault(net, []).append(node)
        peers: Dict[str, set] = {n: set() for n in self.node_ids}
        for members in nets.values():
            for n in members:
                peers.setdefault(n, set()).update(m for m in members if m != n)
        return {n: sorted(p) for n, p in peers.items()}


def normalise(uri: str) -> str:
    uri = uri.rstrip("/")
    if "://" not in uri and not uri.startswith("file:"):
        uri = os.path.abspath(uri)
    return uri


def local_path(uri: str) -> Optional[str]:
    """The local file system path of a URI, or None when it names another file system."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return "/" + uri[len("file:"):].lstrip("/")
    return uri if "://" not in uri else None


def read_manifest(spark, uri: str) -> RunInfo:
    path = posixpath.join(uri, "manifest.json")
    local = local_path(uri)
    if local is not None:
        try:
            with open(os.path.join(local, "manifest.json")) as fh:
                text = fh.read()
        except OSError as exc:
            raise AnalysisError(f"{uri}: not a run directory (manifest.json: {exc.strerror})") from None
        return _manifest(path, text, uri)
    try:
        rows = spark.read.text(path, wholetext=True).collect()
    except Exception as exc:  # Spark raises AnalysisException for a missing path
        raise AnalysisError(f"{uri}: not a run directory (no manifest.json: {str(exc).splitlines()[0]})") from None
    if not rows:
        raise AnalysisError(f"{path}: empty")
    return _manifest(path, rows[0][0], uri)


def _manifest(path: str, text: str, uri: str) -> RunInfo:
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: not JSON ({exc})") from None
    for key in ("run_id", "node_ids"):
        if key not in manifest:
            raise AnalysisError(f"{path}: field {key!r} is missing (a run manifest has run_id and node_ids)")
    return RunInfo(manifest["run_id"], uri, manifest)


def packet_schema():
    from pyspark.sql import types as T

    spark_types = {"int64": T.LongType(), "int32": T.IntegerType(), "int16": T.ShortType(), "int8": T.ByteType(),
                   "bool": T.BooleanType()}
    fields = [T.StructField("run", T.StringType()), T.StructField("node", T.StringType())]
    import numpy as np
    fields += [T.StructField(name, spark_types[np.dtype(dtype).name]) for name, dtype in COLUMNS]
    # one summary row per file (kind 1) travels with the packets (kind 0)
    fields += [T.StructField("kind", T.ByteType()), T.StructField("file", T.StringType()),
               T.StructField("file_records", T.LongType()), T.StructField("file_other", T.LongType()),
               T.StructField("file_damage", T.StringType())]
    return T.StructType(fields)


def _parse_batches(runs: Dict[str, Dict[str, object]]):
    """The mapInArrow function: binaryFile rows (path, content) -> packet rows and a summary per file."""

    def parse(batches):
        import numpy as np
        import pyarrow as pa

        for batch in batches:
            paths = batch.column("path").to_pylist()
            content = batch.column("content")
            offsets = np.frombuffer(content.buffers()[1], dtype=np.int32 if content.type == pa.binary() else np.int64)
            offsets = offsets[content.offset:content.offset + len(content) + 1]
            data = np.frombuffer(content.buffers()[2], dtype=np.uint8) if content.buffers()[2] is not None \
                else np.zeros(0, np.uint8)
            for i, path in enumerate(paths):
                run_uri = path.rsplit("/pcap/", 1)[0]
                info = runs.get(run_uri) or runs.get(run_uri.replace("file:///", "file:/")) or runs.get(
                    run_uri.replace("file:", "", 1))
                node = node_of(path)
                run_id = info["run_id"] if info else run_uri
                node_id = info["node_ids"].get(node, 0) if info else 0
                local = info["local"].get(node) if info else None
                parsed = read_bytes(data[offsets[i]:offsets[i + 1]], node_id, local)
                n = parsed.packets
                arrays = [pa.repeat(pa.scalar(run_id), n), pa.repeat(pa.scalar(node), n)]
                arrays += [pa.array(parsed.columns[name]) for name, _ in COLUMNS]
                arrays += [pa.array(np.zeros(n, np.int8)), pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()),
                           pa.nulls(n, pa.int64()), pa.nulls(n, pa.string())]
                names = ["run", "node"] + [c for c, _ in COLUMNS] + ["kind", "file", "file_records", "file_other",
                                                                      "file_damage"]
                if n:
                    yield pa.RecordBatch.from_arrays(arrays, names=names)
                summary = [pa.array([run_id]), pa.array([node])]
                summary += [pa.nulls(1, arrays[2 + k].type) for k in range(len(COLUMNS))]
                summary += [pa.array([1], pa.int8()), pa.array([path]), pa.array([parsed.records], pa.int64()),
                            pa.array([parsed.other], pa.int64()), pa.array([json.dumps(parsed.damage)])]
                yield pa.RecordBatch.from_arrays(summary, names=names)

    return parse


def read_packets(spark, runs: List[RunInfo]):
    """A DataFrame with one row per testbed packet of every pcap of the runs (kind 0), and one
    summary row per file (kind 1: records, other traffic, damage as JSON)."""
    paths = [posixpath.join(r.uri, "pcap") for r in runs if _may_exist(posixpath.join(r.uri, "pcap"), ".pcap")]
    if not paths:  # runs without captures: no packets
        return spark.createDataFrame([], packet_schema())
    files = (spark.read.format("binaryFile").option("pathGlobFilter", "*.pcap")
             .option("recursiveFileLookup", "false").load(paths).select("path", "content"))
    lookup = {}
    for r in runs:
        info = {"run_id": r.run_id, "node_ids": r.node_ids,
                "local": {n: local_addresses(intfs.values()) for n, intfs in r.manifest.get("addresses", {}).items()}}
        lookup[r.uri] = info
        if r.uri.startswith("/"):
            lookup["file:" + r.uri] = info
    return files.mapInArrow(_parse_batches(lookup), packet_schema())


def event_schema():
    from pyspark.sql import types as T

    long_fields = ["t", "seq", "message_id", "hops", "order", "priority", "produced_ns", "bytes", "frags",
                   "attempt", "frag", "node_id", "tries"]
    string_fields = ["node", "event", "type", "origin", "to", "sender", "eligible", "sequencer", "vc", "deps",
                     "state", "reason", "role", "msg"]
    fields = [T.StructField(f, T.LongType()) for f in long_fields]
    fields += [T.StructField(f, T.StringType()) for f in string_fields]
    fields += [T.StructField("reliable", T.BooleanType()), T.StructField("retransmission", T.BooleanType()),
               T.StructField("_corrupt_record", T.StringType())]
    return T.StructType(fields)


def read_events(spark, runs: List[RunInfo]):
    """The agents' JSON-lines events of every run, with a `run` column. Fields that an event does
    not have are null; `to`, `eligible`, `vc` and `deps` keep their JSON text (a name or a list).
    Unreadable lines land in _corrupt_record (counted in the report), they do not fail the job."""
    from pyspark.sql import functions as F

    frames = None
    for r in runs:
        if not _may_exist(posixpath.join(r.uri, "logs"), ".jsonl"):
            df = spark.createDataFrame([], event_schema()).withColumn("run", F.lit(r.run_id))
            frames = df if frames is None else frames.unionByName(df)
            continue
        df = (spark.read.schema(event_schema()).option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", "_corrupt_record")
              .json(posixpath.join(r.uri, "logs", "*.jsonl"))
              .withColumn("run", F.lit(r.run_id)))
        frames = df if frames is None else frames.unionByName(df)
    return frames


def _may_exist(uri: str, suffix: str) -> bool:
    """False when a local directory is missing or holds no file with the suffix (Spark would fail
    on the path); True for other file systems, where Spark itself says."""
    local = local_path(uri)
    if local is None:
        return True
    return os.path.isdir(local) and any(name.endswith(suffix) for name in os.listdir(local))

