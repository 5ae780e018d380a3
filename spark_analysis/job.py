"""`testbed analyze`: run directories -> RUN_DIR/report/ (results.json, Parquet tables, plots, index.html).

Stages: start Spark, read the manifests, read the pcaps and logs, compute the metrics, run the
property checks, write the Parquet tables, then results.json, the plots and index.html. With a
local master and local run directories the local engine (spark_analysis.local) reads every file
in one Spark job whose tasks also write the packets and events tables; otherwise Spark decodes
the pcaps (the vectorised reader in mapInArrow, each capture reduced where it is read), parses the
logs and writes the tables. Either way the driver computes the metrics and the checks with numpy
on integer codes (spark_analysis.metrics), and for a run with a radio medium its section from the
packets table (spark_analysis.radio). The report is assembled in RUN_DIR/report.partial/ and
replaces RUN_DIR/report/ only when complete, so a failed or interrupted analysis leaves the run
directory as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional


from . import fidelity, radio, radio_report
from .heap import large_array_heap
from .inputs import (KIND_FILE, AnalysisError, RunInfo, local_path, normalise, read_events, read_manifest, read_packets,
                     read_reduced, read_text, virtual_ns)
from .logreader import NOTABLE_KINDS

RESULTS_VERSION = 1
STAGES = ["starting Spark", "reading manifests", "decoding pcaps", "reading logs", "metrics", "checks",
          "writing tables", "report"]
#: the stages of the local engine (spark_analysis.local), which reads pcaps and logs in one job
LOCAL_STAGES = ["starting Spark", "reading manifests", "reading pcaps and logs", "metrics", "checks",
                "writing tables", "report"]


class Progress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.start = time.monotonic()
        self.times: Dict[str, float] = {}
        self._stage: Optional[str] = None
        self._began = self.start
        self.stages = STAGES

    def stage(self, name: str) -> None:
        now = time.monotonic()
        if self._stage:
            self.times[self._stage] = round(now - self._began, 3)
        self._stage, self._began = name, now
        if self.enabled and name:
            i = self.stages.index(name) + 1 if name in self.stages else 0
            print(f"\ranalyze [{i}/{len(self.stages)}] {name:<22} {now - self.start:6.1f}s", end="", file=sys.stderr,
                  flush=True)

    def done(self) -> None:
        self.stage("")
        if self.enabled:
            print(f"\ranalyze done in {time.monotonic() - self.start:.1f}s{' ' * 30}", file=sys.stderr)


#: with causal="auto", causality is derived from sends and deliveries up to this many deliveries
CAUSAL_AUTO_LIMIT = 200_000


def analyze(run_dirs: List[str], master: Optional[str] = None, progress: bool = True,
            spark=None, causal: str = "auto", engine: str = "auto",
            radio_times: Optional[List[float]] = None) -> Dict[str, dict]:
    """Analyse the runs; returns {run_id: results} and writes each RUN_DIR/report/.

    causal: "derive" always checks causal order (from vector clocks and dependencies when the
    protocol logs them, else from sends and deliveries alone); "off" never; "auto" derives it
    when the protocol logs vc/deps or the history has at most CAUSAL_AUTO_LIMIT deliveries.
    engine: "auto" takes the local engine (spark_analysis.local) when the master is local and the
    run directories are local, else the general one; "spark" forces the general one (Spark reads
    the files and writes the tables), which the tests hold the local engine to.
    radio_times: for runs with a radio medium, the times (seconds since t0) of the map's range
    circles (spark_analysis.radio_report.MAP_TIMES when None: the first tick, the middle, the last)."""
    if engine not in ("auto", "spark"):
        raise ValueError(f"engine {engine!r}: auto or spark")
    from . import local
    uris = [normalise(u) for u in run_dirs]
    prog = Progress(progress)
    if engine == "auto" and local.applies(spark.sparkContext.master if spark else master or "local", uris):
        prog.stages = LOCAL_STAGES
    prog.stage("starting Spark")
    from .session import spark_session
    spark = spark or spark_session(master)
    use_local = engine == "auto" and local.applies(spark.sparkContext.master, uris)
    prog.stages = LOCAL_STAGES if use_local else STAGES
    prog.stage("reading manifests")
    runs = [read_manifest(spark, u) for u in uris]
    for r in runs:  # the radio medium's records, of runs that have one; the machine's samples
        r.radio = radio.read(spark, r)
        r.host = fidelity.read_host(lambda uri: read_text(spark, uri), r.uri,
                                    lambda t, r=r: virtual_ns(t, r.origin, r.dilation))
    seen: Dict[str, str] = {}
    for r in runs:
        if r.run_id in seen:
            raise AnalysisError(f"{r.uri}: run id {r.run_id!r} is also the id of {seen[r.run_id]}; "
                                f"analyse them separately")
        seen[r.run_id] = r.uri
    try:
        with large_array_heap():
            return _analyze(spark, runs, prog, causal, use_local, radio_times)
    except BaseException:
        for r in runs:  # a failed or interrupted analysis leaves no half-written report behind
            try:
                _remove(spark, _partial_uri(r))
            except Exception:
                pass
        raise


def _analyze(spark, runs: List[RunInfo], prog: Progress, causal: str, use_local: bool,
             radio_times: Optional[List[float]] = None) -> Dict[str, dict]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from . import local
    from .metrics import Collected, RunMetrics
    from .protocols import plugins

    partial = {r.run_id: _partial_uri(r) for r in runs}
    for r in runs:
        _remove(spark, partial[r.run_id])
    raw = None
    if use_local:  # the tasks decode, reduce and write the tables themselves and hand over Arrow files
        prog.stage("reading pcaps and logs")
        inputs = local.read_inputs(spark, runs, partial)
        files, corrupt, notable, undeclared = inputs.files, inputs.unreadable, inputs.notable, inputs.undeclared
        prog.stage("metrics")
        c = Collected(runs, inputs.sends, inputs.deliveries, inputs.receptions, inputs.wire, inputs.packets,
                      {r.run_id: r.t0 for r in runs}, inputs.sent)
    else:
        prog.stage("decoding pcaps")
        # each capture is decoded and reduced in the task that reads it; the per-packet table is
        # decoded again, lazily, only to be written
        raw = read_reduced(spark, runs).persist(StorageLevel.MEMORY_AND_DISK)
        files = [row.asDict() for row in raw.filter(F.col("kind") == KIND_FILE)
                 .select("run", "node", "file", "file_records", "file_other", "file_damage").collect()]

        prog.stage("reading logs")
        # the logs are parsed once, into the report's events table; everything else reads that
        # Parquet table (column-pruned), which is far cheaper than caching the parsed rows
        for r in runs:
            read_events(spark, r).write.mode("overwrite").parquet(f"{partial[r.run_id]}/events.parquet")
        events = None
        for r in runs:
            df = spark.read.parquet(f"{partial[r.run_id]}/events.parquet")
            events = df if events is None else events.unionByName(df)
        corrupt = {r["run"]: int(r["n"]) for r in events.filter(F.col("_corrupt_record").isNotNull())
                   .groupBy("run").agg(F.count(F.lit(1)).alias("n")).collect()}
        undeclared = {r.run_id: undeclared_fields(spark, r) for r in runs}

        prog.stage("metrics")
        c = RunMetrics(spark, raw, events, runs).collect()
        # errors and the state events the protocol analyses read (few rows)
        notable = events.filter(notable_events_filter(F)).drop("_corrupt_record").toPandas()

    files.sort(key=lambda f: (f["run"], f["file"]))  # the report lists them in one order, whatever the engine
    # scipy's modules are imported here, before the threads: the checks (total_order's cycles)
    # and the measures (abc's and fidelity's statistics) import them lazily, and two threads
    # importing scipy's Cython modules at once can fail with importlib's _DeadlockError (a suite
    # run's example analysis did)
    import scipy.sparse.csgraph  # noqa: F401
    import scipy.stats  # noqa: F401
    # the property checks run in a thread beside the receptions join, the measures and the plots,
    # and the receptions tables are written in another: numpy and Arrow let go of the GIL in their
    # loops, so the threads share the cores
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="analysis")
    drafts: Dict[str, str] = {}  # run id -> the local directory its report is assembled in
    shared_dir: Optional[str] = None  # the comparison plots, drawn once for all the runs
    try:
        drafts.update({r.run_id: tempfile.mkdtemp(prefix="testbed-report-") for r in runs})
        pending = {r.run_id: pool.submit(_check_run, c, r, causal) for r in runs}
        c.join_receptions()
        receptions = pool.submit(_write_receptions, spark, c, runs, partial)
        results = _measures(runs, c, files, corrupt, notable, undeclared)
        from .report import write_plots
        for rid, draft in drafts.items():  # the plots need the measures only: drawn while the checks finish
            write_plots(draft, results[rid], c.latency_samples(rid), c.heatmap(rid))
        prog.stage("checks")
        for rid, done in pending.items():
            results[rid]["checks"], results[rid]["gossip"] = done.result()
            for p in plugins():  # the checks a protocol analysis judges from its own inputs
                results[rid]["checks"] += getattr(p, "checks", lambda section: [])(results[rid].get(p.NAME))
        prog.stage("writing tables")
        receptions.result()
        comparison = None
        if len(runs) > 1:
            comparison = compare(results)
            for res in results.values():
                res["comparison"] = comparison

        if raw is not None:  # else the local tasks wrote it
            packets = read_packets(spark, runs)
            for r in runs:
                (packets.filter(F.col("run") == r.run_id).coalesce(max(1, spark.sparkContext.defaultParallelism))
                 .write.mode("overwrite").parquet(f"{partial[r.run_id]}/packets.parquet"))
        for r in runs:  # a radio medium's section reads the packets table either engine wrote
            if r.radio is not None:
                frames = radio.read_frames(spark, r, f"{partial[r.run_id]}/packets.parquet")
                results[r.run_id]["radio"] = radio.measures(r, frames)
                radio_report.write_plots(drafts[r.run_id], r, radio_times)

        prog.stage("report")
        from .report import plot_comparison, write_report
        shared = None
        if comparison is not None:  # the runs' comparison plots: drawn once, copied to every report
            shared_dir = tempfile.mkdtemp(prefix="testbed-compare-")
            shared = (shared_dir, plot_comparison(shared_dir, comparison))
        for r in runs:
            rid = r.run_id
            results[rid]["timings_s"] = dict(prog.times)
            write_report(drafts[rid], results[rid], shared)
            _upload(spark, drafts[rid], partial[rid])
            _replace(spark, partial[rid], _report_uri(r))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for draft in list(drafts.values()) + ([shared_dir] if shared_dir else []):
            shutil.rmtree(draft, ignore_errors=True)
    if raw is not None:
        raw.unpersist()
    prog.done()
    return results


def _write_receptions(spark, c, runs: List[RunInfo], partial: Dict[str, str]) -> None:
    """The receptions (message, intended receiver) and messages tables of every run."""
    from .tables import messages_table, receptions_table

    for r in runs:
        d = c.data[r.run_id]
        _write_table(spark, receptions_table(d), f"{partial[r.run_id]}/receptions.parquet",
                     ["run", "origin", "seq", "receiver", "send_t"])
        _write_table(spark, messages_table(d), f"{partial[r.run_id]}/messages.parquet",
                     ["run", "origin", "seq", "send_t"])


def notable_events_filter(F):
    """The events every run's results need in full, few as they are: the roles' errors, the
    agents' fidelity windows (one a second per agent), and the state events the protocol
    analyses read (spark_analysis.protocols)."""
    from .protocols import states

    return (F.col("event").isin(list(NOTABLE_KINDS))
            | ((F.col("event") == "state") & F.col("state").isin(list(states()))))


def undeclared_fields(spark, r: RunInfo) -> List[str]:
    """The fields of a run's logs that no event-log declaration names (agents/events.py): not read,
    and so reported. The general path's one pass over the logs as text (the local engine's tasks
    see them as they parse)."""
    import posixpath

    from pyspark.sql import functions as F

    from .inputs import may_exist
    from .logreader import DECLARED

    logs = posixpath.join(r.uri, "logs")
    if not may_exist(logs, ".jsonl"):
        return []
    keys = (spark.read.text(posixpath.join(logs, "*.jsonl"))
            .select(F.explode(F.json_object_keys("value")).alias("k")).distinct().collect())
    return sorted({row.k for row in keys if row.k is not None} - DECLARED)


def _check_run(c, r: RunInfo, causal: str):
    """(checks, gossip measures) of one run, from the checks' history of its codes."""
    from .checks import check_all
    from .history import gossip_measures, prepared_history

    prepared = prepared_history(c.data[r.run_id], r.manifest)  # the checks' and the gossip measures'
    declared = any(col in prepared.sends.columns for col in ("vc", "deps"))
    derive = causal == "derive" or (causal == "auto" and (declared or prepared.D <= CAUSAL_AUTO_LIMIT))
    return check_all(prepared, causal=derive), gossip_measures(prepared, r.manifest, c.gossip_wire(r.run_id))


def _measures(runs: List[RunInfo], c, files: List[dict], corrupt: Dict[str, int], notable,
              undeclared: Dict[str, List[str]]) -> Dict[str, dict]:
    """results.json of every run but its checks and gossip measures."""
    from .errors import error_summary
    from .protocols import plugins

    results: Dict[str, dict] = {}
    for r in runs:
        rid = r.run_id
        mine = [f for f in files if f["run"] == rid]
        damage = []
        for f in mine:
            for d in json.loads(f["file_damage"] or "[]"):
                damage.append({"file": f["file"], **d})
        results[rid] = {
            "results_version": RESULTS_VERSION,
            "run": _run_summary(r),
            "input": {
                "pcaps": {f["node"]: {"file": f["file"], "records": int(f["file_records"] or 0),
                                      "other_traffic": int(f["file_other"] or 0)} for f in mine},
                "testbed_packets": sum(int(f["file_records"] or 0) - int(f["file_other"] or 0) for f in mine),
                "other_packets": sum(int(f["file_other"] or 0) for f in mine),
                "damage": damage,
                "unreadable_log_lines": corrupt.get(rid, 0),
                "undeclared_log_fields": undeclared.get(rid, []),
            },
            "messages": c.message_level(rid),
            "overhead": c.overhead(rid),
            "application": c.application_level(rid),
            "sent": c.sent(rid),
            "gossip": None,  # filled in by the checks' thread
            **{p.NAME: p.measures(*c.data[rid].frames(set(p.TYPES)), r.manifest, mine[mine["state"].isin(p.STATES)],
                                  c.data[rid].sent)
               for p in plugins() for mine in [notable[(notable["run"] == rid) & (notable["event"] == "state")]]},
            "errors": error_summary(notable[(notable["run"] == rid) & (notable["event"] == "error")], r.t0),
            "checks": None,
            "per_node": c.per_node(rid),
            "series": c.series(rid),
        }
        results[rid]["fidelity"] = fidelity.measures(
            r.manifest, r.t0, notable[(notable["run"] == rid) & (notable["event"] == "fidelity")], r.host,
            [p.shortfall(results[rid].get(p.NAME)) for p in plugins() if hasattr(p, "shortfall")],
            notable[(notable["run"] == rid) & (notable["event"] == "state")])
    return results


def _run_summary(r: RunInfo) -> dict:
    mf = r.manifest
    scen = mf.get("scenario") or {}
    return {"id": r.run_id, "directory": r.uri, "status": mf.get("status"), "scenario": scen.get("name"),
            "seed": mf.get("seed"), "duration_s": scen.get("duration_s"), "nodes": len(r.node_ids),
            "t0_ns": mf.get("t0_ns"), "started_at": mf.get("started_at"),
            # every time in these results is virtual: the run ran time_dilation times slower
            "time_dilation": r.dilation,
            "timeline": [{k: a.get(k) for k in ("action", "node", "link", "t_ns", "t_s", "ok", "from")
                          if a.get(k) is not None} for a in mf.get("timeline", [])],
            # nodes that met their resource limits (testbed.limit_events), down from then on
            **({"limits_hit": mf["limits_hit"]} if mf.get("limits_hit") else {})}


COMPARED = [
    ("delivery ratio", ("messages", "all", "delivery_ratio")),
    ("first-copy latency median (ms)", ("messages", "all", "first_copy_latency", "median_ms")),
    ("first-copy latency p95 (ms)", ("messages", "all", "first_copy_latency", "p95_ms")),
    ("delivery time to all, mean (ms)", ("messages", "all", "delivery_time_to_all", "mean_ms")),
    ("message time gap, mean (ms)", ("messages", "all", "message_time_gap", "mean_ms")),
    ("duplicates received", ("messages", "all", "duplicates_received")),
    ("packets per delivered message", ("overhead", "total", "packets_per_delivered")),
    ("retransmissions", ("overhead", "total", "retransmissions")),
    ("delivered (application)", ("application", "all", "delivered")),
    ("delivery latency median (ms)", ("application", "all", "delivery_latency", "median_ms")),
    ("reliability", ("gossip", "reliability_mean")),
    ("atomicity", ("gossip", "atomicity")),
    ("errors in roles", ("errors", "count")),
]


def compared() -> list:
    """The measures compared across runs: the generic ones, then each protocol analysis's."""
    from .protocols import plugins

    return COMPARED[:-1] + [entry for p in plugins() for entry in p.COMPARED] + COMPARED[-1:]


def lookup(res: dict, path) -> object:
    value = res
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def compare(results: Dict[str, dict]) -> dict:
    """Several runs side by side: {"runs": [ids], "metrics": {label: [value per run]}}"""
    ids = list(results)
    return {"runs": ids, "seeds": [results[i]["run"].get("seed") for i in ids],
            "metrics": {label: [lookup(results[i], path) for i in ids] for label, path in compared()}}


# -- where the report goes (any file system Spark reaches) -----------------------------------------

def _report_uri(r: RunInfo) -> str:
    return f"{r.uri}/report"


def _partial_uri(r: RunInfo) -> str:
    return f"{r.uri}/report.partial"


def _fs(spark, uri: str):
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def _remove(spark, uri: str) -> None:
    local = local_path(uri)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        return
    fs, path = _fs(spark, uri)
    fs.delete(path, True)


def _write_table(spark, table, uri: str, statistics: List[str]) -> None:
    """An Arrow table computed in the driver as a Parquet table (a directory, as Spark writes);
    `statistics`: the columns a reader filters on."""
    local = local_path(uri)
    if local is not None:
        from .local import write_parquet
        shutil.rmtree(local, ignore_errors=True)
        os.makedirs(local)
        write_parquet(table, os.path.join(local, "part-00000.parquet"), statistics)
        return
    spark.createDataFrame(table.to_pandas()).write.mode("overwrite").parquet(uri)


def _upload(spark, local_dir: str, uri: str) -> None:
    local = local_path(uri)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        for name in os.listdir(local_dir):
            shutil.copy2(os.path.join(local_dir, name), os.path.join(local, name))
        return
    fs, path = _fs(spark, uri)
    jvm = spark._jvm
    for name in os.listdir(local_dir):
        fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path("file:" + os.path.join(local_dir, name)),
                             jvm.org.apache.hadoop.fs.Path(f"{uri}/{name}"))


def _replace(spark, partial: str, final: str) -> None:
    local_p, local_f = local_path(partial), local_path(final)
    if local_p is not None and local_f is not None:
        old = local_f + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(local_f):
            os.rename(local_f, old)
        os.rename(local_p, local_f)
        shutil.rmtree(old, ignore_errors=True)
        return
    fs, fpath = _fs(spark, final)
    _, ppath = _fs(spark, partial)
    fs.delete(fpath, True)
    fs.rename(ppath, fpath)
