"""Reading a run directory in Spark: the manifest, the pcaps (through the vectorised reader) and the
agents' event logs. Paths may be any URI Spark reads (a local directory, file:, hdfs:, s3a:, ...).
"""

from __future__ import annotations

import ipaddress
import math
import json
import os
import posixpath
from dataclasses import dataclass
from typing import Collection, Dict, List, Optional, Tuple

from testbed.errors import UsageError
from testbed.rundir import MANIFEST_VERSION

from .pcapreader import COLUMNS, local_addresses, node_of, read_bytes, read_file


class AnalysisError(UsageError):
    """A run directory that cannot be analysed (named, with what is wrong): exit code 2."""


@dataclass
class RunInfo:
    run_id: str
    uri: str                   # the run directory as given, without a trailing slash
    manifest: dict
    radio: Optional[object] = None  # its radio medium's records (spark_analysis.radio.read), if it has one
    host: Optional[list] = None  # its host.jsonl samples (spark_analysis.fidelity.read_host), if it has them

    @property
    def t0(self) -> int:
        """The run's time zero (ns): the timeline's t0, else its start."""
        return int(self.manifest.get("t0_ns") or self.manifest.get("started_ns") or 0)

    @property
    def dilation(self) -> float:
        """k: the run's world ran k times slower than the wall clock (1: not dilated)."""
        return float(self.manifest.get("time_dilation") or 1.0)

    @property
    def origin(self) -> int:
        """The wall-clock instant from which the run's virtual clock counts."""
        return int(self.manifest.get("clock_origin_ns") or 0)

    def capture_info(self) -> Dict[str, object]:
        """What a task decoding this run's captures needs: its id, node ids, time zero (virtual),
        each node's local addresses (pcapreader.local_addresses) and the run's clock (origin and
        dilation: the packets' wall-clock stamps become virtual, `virtual_ns`)."""
        addresses = self.manifest.get("addresses", {})
        return {"run_id": self.run_id, "node_ids": self.node_ids, "t0": self.t0, "origin": self.origin,
                "dilation": self.dilation, "local": {n: local_addresses(intfs.values()) for n, intfs in addresses.items()}}

    @property
    def node_ids(self) -> Dict[str, int]:
        return self.manifest.get("node_ids", {})

    def segment_peers(self, skip: Collection[Tuple[str, str]] = ()) -> Dict[str, List[str]]:
        """For each node, the other nodes on any L2 segment it has an address on: its broadcasts'
        receivers. skip: (node, interface) pairs left out (radio interfaces, whose receivers
        spark_analysis.radio.receivers finds)."""
        nets: Dict[str, List[str]] = {}
        for node, intfs in self.manifest.get("addresses", {}).items():
            for intf, cidr in intfs.items():
                if (node, intf) in skip:
                    continue
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


#: the manifest's wall-clock stamps that the analysis turns into virtual time as it reads them
MANIFEST_STAMPS = ("started_ns", "t0_ns", "workload_end_ns")
TIMELINE_STAMPS = ("t_ns", "done_ns")


def virtual_ns(t, origin: int, dilation: float):
    """Wall-clock CLOCK_REALTIME ns as the run's virtual time: origin + (t - origin) / k, truncated,
    the agents' own formula (agents/clock.py Clock.now_ns), for an int or a numpy array; k = 1
    leaves t as it is. Every time the analysis reads goes through this (or `virtual_column`) once:
    packets, events, the manifest's stamps, the radio records, the host samples."""
    if dilation == 1.0:
        return t
    import numpy as np

    if isinstance(t, np.ndarray):
        return origin + np.trunc((t - origin).astype(np.float64) / dilation).astype(np.int64)
    return origin + int((int(t) - origin) / dilation)


def virtual_column(F, column, origin: int, dilation: float):
    """virtual_ns as a Spark column expression (the same double division and truncation)."""
    if dilation == 1.0:
        return column
    return (F.lit(origin) + ((column - F.lit(origin)) / F.lit(float(dilation))).cast("long")).cast("long")


def _virtual_manifest(path: str, manifest: dict) -> dict:
    """The manifest with its wall-clock stamps in virtual time (a copy: the file keeps them)."""
    k = manifest.get("time_dilation", 1.0)
    if k in (None, 1, 1.0):
        return manifest
    if not isinstance(k, (int, float)) or isinstance(k, bool) or not math.isfinite(k) or k < 1:
        raise AnalysisError(f"{path}: time_dilation {k!r} is not a dilation (a number, at least 1)")
    origin = manifest.get("clock_origin_ns")
    if not isinstance(origin, int) or isinstance(origin, bool):
        raise AnalysisError(f"{path}: time_dilation {k:g} without clock_origin_ns (the instant its virtual "
                            f"clock counts from): the run's times cannot be told in virtual time")
    out = dict(manifest)
    for key in MANIFEST_STAMPS:
        if isinstance(out.get(key), int):
            out[key] = virtual_ns(out[key], origin, float(k))
    out["timeline"] = [{**a, **{key: virtual_ns(a[key], origin, float(k)) for key in TIMELINE_STAMPS
                                if isinstance(a.get(key), int)}} if isinstance(a, dict) else a
                       for a in manifest.get("timeline") or []]
    return out


def read_text(spark, uri: str) -> Optional[str]:
    """A small file's whole text, from the local file system or any file system Spark reads;
    None when it does not exist."""
    local = local_path(uri)
    if local is not None:
        try:
            with open(local) as fh:
                return fh.read()
        except FileNotFoundError:
            return None
    try:
        rows = spark.read.text(uri, wholetext=True).collect()
    except Exception:  # Spark raises AnalysisException for a missing path
        return None
    return rows[0][0] if rows else ""


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
    if not isinstance(manifest, dict):
        raise AnalysisError(f"{path}: not a run manifest (a JSON object; see docs/RUNDIR.md)")
    version = manifest.get("manifest_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise AnalysisError(f"{path}: manifest_version {version!r} is not a format version (a whole number from 1)")
    if version > MANIFEST_VERSION:
        raise AnalysisError(f"{path}: manifest_version {version}: written by a newer testbed; this analysis reads "
                            f"formats up to {MANIFEST_VERSION} (docs/RUNDIR.md)")
    for key in ("run_id", "node_ids"):
        if key not in manifest:
            raise AnalysisError(f"{path}: field {key!r} is missing (a run manifest has run_id and node_ids)")
    return RunInfo(manifest["run_id"], uri, _virtual_manifest(path, manifest))


#: the reduced rows of a capture (spark_analysis.reduce): kind 1 a file summary, 2 a reception,
#: 3 a send (first own transmission and data transmissions), 4 packet counts per second
REDUCED_FIELDS = [("kind", "byte"), ("file", "string"), ("file_records", "long"), ("file_other", "long"),
                  ("file_damage", "string"), ("origin", "int"), ("seq", "long"), ("type", "short"),
                  ("t", "long"), ("frags", "long"), ("copies", "long"), ("frag_count", "long"), ("tx", "long"),
                  ("direction", "byte"), ("second", "long"), ("packets", "long"), ("bytes", "long"),
                  ("header_bytes", "long"), ("retransmissions", "long"), ("relayed", "long")]
KIND_FILE, KIND_RECEPTION, KIND_SEND, KIND_COUNTS = 1, 2, 3, 4


def reduced_schema():
    from pyspark.sql import types as T

    types = {"byte": T.ByteType(), "string": T.StringType(), "long": T.LongType(), "int": T.IntegerType(),
             "short": T.ShortType()}
    return T.StructType([T.StructField("run", T.StringType()), T.StructField("node", T.StringType())]
                        + [T.StructField(name, types[t]) for name, t in REDUCED_FIELDS])


def _captures(batches, runs: Dict[str, Dict[str, object]]):
    """(run info, node, path, PcapData) for each capture of the input batches: rows of
    (run, node, path) read here from the local file system, or binaryFile rows (path, content)."""
    import numpy as np
    import pyarrow as pa

    for batch in batches:
        paths = batch.column("path").to_pylist()
        if "content" not in batch.schema.names:
            for run_key, path in zip(batch.column("run").to_pylist(), paths):
                info = runs[run_key]
                node = node_of(path)
                yield info, node, path, virtual_packets(read_file(path, info["node_ids"].get(node, 0),
                                                                   info["local"].get(node)), info)
            continue
        content = batch.column("content")
        offsets = np.frombuffer(content.buffers()[1], dtype=np.int32 if content.type == pa.binary() else np.int64)
        offsets = offsets[content.offset:content.offset + len(content) + 1]
        data = np.frombuffer(content.buffers()[2], dtype=np.uint8) if content.buffers()[2] is not None \
            else np.zeros(0, np.uint8)
        for i, path in enumerate(paths):
            run_uri = path.rsplit("/pcap/", 1)[0]
            info = runs.get(run_uri) or runs.get(run_uri.replace("file:///", "file:/")) or runs.get(
                run_uri.replace("file:", "", 1)) or {"run_id": run_uri, "node_ids": {}, "local": {}, "t0": 0,
                                                     "origin": 0, "dilation": 1.0}
            node = node_of(path)
            yield info, node, path, virtual_packets(read_bytes(data[offsets[i]:offsets[i + 1]],
                                                                info["node_ids"].get(node, 0), info["local"].get(node)),
                                                     info)


def virtual_packets(parsed, info: Dict[str, object]):
    """A decoded capture with its packets' stamps in the run's virtual time (both engines)."""
    if info.get("dilation", 1.0) != 1.0 and parsed.packets:
        parsed.columns["ts_ns"] = virtual_ns(parsed.columns["ts_ns"], info["origin"], info["dilation"])
    return parsed


def _parse_batches(runs: Dict[str, Dict[str, object]]):
    """The mapInArrow function of the packets table: captures -> one row per testbed packet."""

    def parse(batches):
        import pyarrow as pa

        names = ["run", "node"] + [c for c, _ in COLUMNS]
        for info, node, _path, parsed in _captures(batches, runs):
            n = parsed.packets
            if n:
                arrays = [pa.repeat(pa.scalar(info["run_id"]), n), pa.repeat(pa.scalar(node), n)]
                arrays += [pa.array(parsed.columns[name]) for name, _ in COLUMNS]
                yield pa.RecordBatch.from_arrays(arrays, names=names)

    return parse


def _reduce_batches(runs: Dict[str, Dict[str, object]]):
    """The mapInArrow function of the metrics: captures -> their reduced rows (spark_analysis.reduce)."""

    def parse(batches):
        import pyarrow as pa

        from . import reduce as rd

        schema = pa.schema([("run", pa.string()), ("node", pa.string())] + [
            (name, {"byte": pa.int8(), "string": pa.string(), "long": pa.int64(), "int": pa.int32(),
                    "short": pa.int16()}[t]) for name, t in REDUCED_FIELDS])

        def batch(run_id, node, kind, n, cols):
            arrays = []
            for f in schema:
                if f.name == "run":
                    arrays.append(pa.repeat(pa.scalar(run_id), n))
                elif f.name == "node":
                    arrays.append(pa.repeat(pa.scalar(node), n))
                elif f.name == "kind":
                    arrays.append(pa.repeat(pa.scalar(kind, pa.int8()), n))
                elif f.name in cols:
                    value = cols[f.name]
                    arrays.append(value if isinstance(value, pa.Array) else pa.array(value, f.type))
                else:
                    arrays.append(pa.nulls(n, f.type))
            return pa.RecordBatch.from_arrays(arrays, schema=schema)

        for info, node, path, parsed in _captures(batches, runs):
            rid, c = info["run_id"], parsed.columns
            r = rd.receptions(c)
            if len(r["t"]):
                yield batch(rid, node, KIND_RECEPTION, len(r["t"]), r)
            s = rd.sends(c)
            if len(s["t"]):
                t = pa.array(s.pop("t"), pa.int64(), mask=~s.pop("t_valid"))
                yield batch(rid, node, KIND_SEND, len(t), {**s, "t": t})
            k = rd.counts(c, int(info.get("t0") or 0))
            if len(k["packets"]):
                yield batch(rid, node, KIND_COUNTS, len(k["packets"]), k)
            yield batch(rid, node, KIND_FILE, 1, {"file": [path], "file_records": [parsed.records],
                                                   "file_other": [parsed.other],
                                                   "file_damage": [json.dumps(parsed.damage)]})

    return parse


def _capture_source(spark, runs: List[RunInfo], source: str = "auto"):
    """(DataFrame of the captures to decode, run lookup), or (None, None) when there is none.

    Local run directories (the usual case, and any local[N] master): a DataFrame of (run, path)
    rows; each task reads its files itself, so a file's bytes never travel through the JVM. Other
    URIs (hdfs:, s3a:, ...) or another master: Spark's binaryFile source reads them.
    source: "auto" chooses so; "binaryFile" forces Spark's source (tests compare the two)."""
    lookup: Dict[str, Dict[str, object]] = {}
    for r in runs:
        info = r.capture_info()
        lookup[r.uri] = info
        if r.uri.startswith("/"):
            lookup["file:" + r.uri] = info
    master = spark.sparkContext.master
    if source == "auto" and master.startswith("local") and all(local_path(r.uri) is not None for r in runs):
        rows = []
        for r in runs:
            pcap = os.path.join(local_path(r.uri), "pcap")
            if os.path.isdir(pcap):
                files = [os.path.join(pcap, f) for f in os.listdir(pcap) if f.endswith(".pcap")]
                rows += [(r.uri, f, os.path.getsize(f)) for f in files]
        if not rows:
            return None, None
        rows.sort(key=lambda row: -row[2])  # the big files first, spread over the tasks
        slices = max(1, min(len(rows), 4 * spark.sparkContext.defaultParallelism))
        rdd = spark.sparkContext.parallelize([(u, f) for u, f, _ in rows], slices)
        return spark.createDataFrame(rdd, "run string, path string"), lookup
    paths = [posixpath.join(r.uri, "pcap") for r in runs if may_exist(posixpath.join(r.uri, "pcap"), ".pcap")]
    if not paths:  # runs without captures: no packets
        return None, None
    files = (spark.read.format("binaryFile").option("pathGlobFilter", "*.pcap")
             .option("recursiveFileLookup", "false").load(paths).select("path", "content"))
    return files, lookup


def packet_schema():
    from pyspark.sql import types as T

    spark_types = {"int64": T.LongType(), "int32": T.IntegerType(), "int16": T.ShortType(), "int8": T.ByteType(),
                   "bool": T.BooleanType()}
    import numpy as np
    return T.StructType([T.StructField("run", T.StringType()), T.StructField("node", T.StringType())]
                        + [T.StructField(name, spark_types[np.dtype(dtype).name]) for name, dtype in COLUMNS])


def packet_schema_arrow():
    """The packets table's Arrow schema (the local engine writes it with pyarrow)."""
    import pyarrow as pa

    return pa.schema([("run", pa.string()), ("node", pa.string())]
                     + [(name, pa.from_numpy_dtype(dtype)) for name, dtype in COLUMNS])


def read_packets(spark, runs: List[RunInfo], source: str = "auto"):
    """A DataFrame with one row per testbed packet of every pcap of the runs (the packets table)."""
    files, lookup = _capture_source(spark, runs, source)
    if files is None:
        return spark.createDataFrame([], packet_schema())
    return files.mapInArrow(_parse_batches(lookup), packet_schema())


def read_reduced(spark, runs: List[RunInfo], source: str = "auto"):
    """Every capture of the runs decoded and reduced where it is read: file summaries, receptions,
    sends and packet counts (see spark_analysis.reduce), told apart by `kind`."""
    files, lookup = _capture_source(spark, runs, source)
    if files is None:
        return spark.createDataFrame([], reduced_schema())
    return files.mapInArrow(_reduce_batches(lookup), reduced_schema())


def event_schema():
    """The events' Spark schema: the fields of spark_analysis.logreader, which reads them locally."""
    from pyspark.sql import types as T

    from .logreader import FIELDS

    types = {"long": T.LongType(), "string": T.StringType(), "bool": T.BooleanType()}
    return T.StructType([T.StructField(name, types[t]) for name, t in FIELDS])


def read_events(spark, run: RunInfo):
    """The agents' JSON-lines events of a run, with a `run` column. Fields that an event does
    not have are null; `to`, `eligible`, `receivers`, `vc` and `deps` keep their JSON text (a name or a list).
    Unreadable lines land in _corrupt_record (counted in the report), they do not fail the job."""
    from pyspark.sql import functions as F

    if not may_exist(posixpath.join(run.uri, "logs"), ".jsonl"):
        return spark.createDataFrame([], event_schema()).withColumn("run", F.lit(run.run_id))
    events = (spark.read.schema(event_schema()).option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", "_corrupt_record")
              .json(posixpath.join(run.uri, "logs", "*.jsonl"))
              .withColumn("run", F.lit(run.run_id)))
    if run.dilation != 1.0:  # the events' stamps in virtual time, as the local engine's
        events = events.withColumn("t", virtual_column(F, F.col("t"), run.origin, run.dilation))
    return events


def may_exist(uri: str, suffix: str) -> bool:
    """False when a local directory is missing or holds no file with the suffix (Spark would fail
    on the path); True for other file systems, where Spark itself says."""
    local = local_path(uri)
    if local is None:
        return True
    return os.path.isdir(local) and any(name.endswith(suffix) for name in os.listdir(local))

