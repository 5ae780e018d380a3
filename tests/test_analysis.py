"""The analysis: the vectorised pcap reader against scapy and tshark, the Spark job against the
ground truth of synthetic runs and against the logs and captures of real runs, the report, and
bad input."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest
from scapy.utils import RawPcapReader

from agents import wire
from spark_analysis.pcapreader import DIR_FORWARDED, DIR_IN, DIR_OUT, local_addresses, read_bytes, read_file
from .synthetic import make_run

from .conftest import ROOT


def scapy_decode(path, node_id=0):
    """(ts_ns, origin, seq, sender, type, frag_index, outbound) of every testbed packet, by scapy."""
    out = []
    for data, meta in RawPcapReader(path):
        frame = bytes(data)
        if len(frame) < 14 + 20 + 8 + 32 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
            continue
        ihl = (frame[14] & 0x0F) * 4
        if struct.unpack("!H", frame[20:22])[0] & 0x1FFF:
            continue
        try:
            header = wire.decode(frame[14 + ihl + 8:])[0]
        except wire.WireError:
            continue
        ts = meta.sec * 1_000_000_000 + meta.usec * 1000
        out.append((ts, header.origin, header.sequence, header.sender, header.type, header.frag_index,
                    header.sender == node_id))
    return out


def ours(data):
    c = data.columns
    return list(zip(c["ts_ns"].tolist(), c["origin"].tolist(), c["seq"].tolist(), c["sender"].tolist(),
                    c["type"].tolist(), c["frag_index"].tolist(), (c["direction"] == DIR_OUT).tolist()))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    base = tmp_path_factory.mktemp("synthetic")
    clean = str(base / "clean")
    truth = make_run(clean, packets=40_000, seed=3, loss=0.1, duplicate=0.02)
    damaged = str(base / "damaged")
    damaged_truth = make_run(damaged, packets=40_000, seed=3, loss=0.1, duplicate=0.02,
                             corrupt={"truncate": ["c1"], "garbage": ["c7"]})
    return {"clean": clean, "truth": truth, "damaged": damaged, "damaged_truth": damaged_truth}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Two LANs (srv1, srv2, c1..c10) at 8,000 packets, clean and damaged as `synthetic`: for the
    tests that hold two readers or two engines to each other row by row, where the size only
    costs time (the big run keeps the reader tests' 186 files)."""
    base = tmp_path_factory.mktemp("small")
    clean, damaged = str(base / "clean"), str(base / "damaged")
    make_run(clean, packets=8_000, nodes=2, seed=3, loss=0.1, duplicate=0.02)
    make_run(damaged, packets=8_000, nodes=2, seed=3, loss=0.1, duplicate=0.02,
             corrupt={"truncate": ["c1"], "garbage": ["c7"]})
    return {"clean": clean, "damaged": damaged}


def node_ids(run_dir):
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        return json.load(fh)["node_ids"]


# -- the reader --------------------------------------------------------------------------------

def test_reader_agrees_with_scapy_packet_by_packet(synthetic):
    run = synthetic["clean"]
    ids = node_ids(run)
    total = 0
    for node in ("srv1", "c1", "c77", "c155"):
        path = os.path.join(run, "pcap", f"{node}.pcap")
        data = read_file(path, ids[node])
        assert ours(data) == scapy_decode(path, ids[node])
        assert data.damage == []
        assert data.records == sum(1 for _ in RawPcapReader(path))
        total += data.packets
    assert total > 0
    every = sum(read_file(os.path.join(run, "pcap", f), ids[f[:-5]]).packets
                for f in os.listdir(os.path.join(run, "pcap")))
    assert every == synthetic["truth"]["testbed_packets"]


def test_reader_reports_truncation_and_garbage_and_keeps_the_readable_prefix(synthetic):
    run, truth = synthetic["damaged"], synthetic["damaged_truth"]["corruption"]
    ids = node_ids(run)
    cut = read_file(os.path.join(run, "pcap", "c1.pcap"), ids["c1"])
    assert cut.records == truth["truncate"]["c1"]["complete_records"]
    assert [d["offset"] for d in cut.damage] == [truth["truncate"]["c1"]["last_record_offset"]]
    assert "truncated" in cut.damage[0]["reason"]
    bad = read_file(os.path.join(run, "pcap", "c7.pcap"), ids["c7"])
    garbage = truth["garbage"]["c7"]
    offset = garbage["offset"] if isinstance(garbage, dict) else garbage
    assert len(bad.damage) == 1 and bad.damage[0]["offset"] == offset
    # the prefix is every record before the damaged header, identical to scapy's first records
    path = os.path.join(run, "pcap", "c7.pcap")
    expected = scapy_decode_prefix(path, ids["c7"], offset)
    assert ours(bad) == expected and len(expected) > 0


def scapy_decode_prefix(path, node_id, limit):
    with open(path, "rb") as fh:
        head = fh.read(limit)
    tmp = path + ".prefix"
    with open(tmp, "wb") as fh:
        fh.write(head)
    try:
        return scapy_decode(tmp, node_id)
    finally:
        os.unlink(tmp)


def _swap_to_big_endian_ns(data: bytes) -> bytes:
    """The same capture as a big-endian, nanosecond pcap (test-side conversion, record by record)."""
    out = bytearray()
    magic, vmaj, vmin, zone, sig, snap, link = struct.unpack("<IHHiIII", data[:24])
    out += struct.pack(">IHHiIII", 0xA1B23C4D, vmaj, vmin, zone, sig, snap, link)
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        out += struct.pack(">IIII", sec, usec * 1000, incl, orig) + data[off + 16:off + 16 + incl]
        off += 16 + incl
    return bytes(out)


def test_reader_reads_big_endian_nanosecond_files_and_rejects_what_is_not_pcap(synthetic):
    path = os.path.join(synthetic["clean"], "pcap", "c2.pcap")
    with open(path, "rb") as fh:
        data = fh.read()
    little = read_bytes(data, 2)
    big = read_bytes(_swap_to_big_endian_ns(data), 2)
    assert ours(big) == ours(little) and big.damage == []
    for blob, words in ((b"\x0a\x0d\x0d\x0a" + bytes(40), "pcapng"), (b"GIF89a" + bytes(40), "not a pcap"),
                        (data[:10], "shorter"), (data[:24 + 7], "truncated record header")):
        result = read_bytes(blob)
        assert result.packets == 0 and words in result.damage[0]["reason"]


def test_direction_tells_sent_received_and_forwarded():
    """A router's capture holds packets it forwards: neither sent nor received by its agent."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    import tempfile

    def tb(sender, origin, seq):
        return wire.encode(wire.Header(type=wire.MessageType.PROBE, origin=origin, sequence=seq, sender=sender))

    frames = [Ether() / IP(src="10.0.0.1", dst="10.0.1.2") / UDP(sport=7777, dport=7777) / tb(1, 1, 1),
              Ether() / IP(src="10.0.1.2", dst="10.0.0.1") / UDP(sport=7777, dport=7777) / tb(5, 5, 1),
              Ether() / IP(src="10.0.1.2", dst="10.0.0.255") / UDP(sport=7777, dport=7777) / tb(5, 5, 2),
              Ether() / IP(src="10.0.2.7", dst="10.0.1.2") / UDP(sport=7777, dport=7777) / tb(7, 7, 1)]
    with tempfile.NamedTemporaryFile(suffix=".pcap") as fh:
        wrpcap(fh.name, frames)
        data = read_file(fh.name, 1, local_addresses(["10.0.0.1/24"]))
    assert data.columns["direction"].tolist() == [DIR_OUT, DIR_IN, DIR_IN, DIR_FORWARDED]


# -- the Spark job on synthetic runs ------------------------------------------------------------

def test_analysis_of_a_synthetic_run_matches_its_ground_truth(synthetic, spark, tmp_path):
    from spark_analysis.job import analyze

    run = str(tmp_path / "run")
    shutil.copytree(synthetic["clean"], run)
    truth = synthetic["truth"]
    res = analyze([run], spark=spark, progress=False)
    (r,) = res.values()
    probe = r["messages"]["PROBE"]
    assert probe["sent"] == truth["messages"]["PROBE"]
    assert probe["intended_receivers"] == truth["intended_receivers"]["total"]
    # redundant receptions: network duplicates and retransmitted copies of what had arrived, by scapy
    ids = node_ids(run)
    copies = {}
    for name in os.listdir(os.path.join(run, "pcap")):
        for p in scapy_decode(os.path.join(run, "pcap", name), ids[name[:-5]]):
            if not p[6] and p[4] == wire.MessageType.PROBE:
                key = (name, p[1], p[2], p[5])
                copies[key] = copies.get(key, 0) + 1
    assert probe["duplicates_received"] == sum(n - 1 for n in copies.values())
    assert probe["duplicates_received"] >= truth["duplicates_captured"]["PROBE"]
    assert r["overhead"]["total"]["retransmissions"] == truth["retransmissions"]
    assert r["input"]["testbed_packets"] == truth["testbed_packets"]
    assert r["input"]["other_packets"] == truth["non_testbed_frames"]
    assert r["application"]["all"]["delivered"] == truth["deliveries"]
    ratio = probe["delivery_ratio"]
    assert 0.8 < ratio < 0.99  # 10% of copies are lost; reliable messages are retransmitted
    lat = probe["first_copy_latency"]
    assert 0.098 <= lat["min_ms"] <= lat["median_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    checks = {c["check"]: c for c in r["checks"]}
    assert checks["at-most-once"]["verdict"] == "valid"
    assert checks["at-least-once"]["verdict"] == "invalid"
    assert checks["at-least-once"]["anomalies"]["lost"] == truth["undelivered"]
    assert checks["no-phantom"]["verdict"] == "valid"
    report = os.path.join(run, "report")
    for name in ("results.json", "index.html", "latency_cdf.png", "timeseries.png", "heatmap.png", "types.png"):
        assert os.path.getsize(os.path.join(report, name)) > 0, name
    for table in ("packets", "events", "receptions", "messages"):
        assert any(f.endswith(".parquet") for f in os.listdir(os.path.join(report, f"{table}.parquet")))
    assert spark.read.parquet(os.path.join(report, "packets.parquet")).count() == truth["testbed_packets"]
    messages = spark.read.parquet(os.path.join(report, "messages.parquet")).toPandas()
    assert len(messages) == truth["messages"]["PROBE"] == messages[["origin", "seq"]].drop_duplicates().shape[0]
    assert messages["intended"].sum() == probe["intended_receivers"] and messages["reached"].sum() == probe["received"]
    complete = (messages["reached"] == messages["intended"]) & (messages["intended"] > 0)
    assert (messages["delivery_time_to_all_ns"].notna() == complete).all()
    assert messages["delivered"].sum() == truth["deliveries"]
    with open(os.path.join(report, "results.json")) as fh:
        assert json.load(fh)["messages"]["PROBE"]["sent"] == truth["messages"]["PROBE"]
    html = open(os.path.join(report, "index.html")).read()
    assert "at-least-once" in html and "latency_cdf.png" in html
    assert not os.path.exists(os.path.join(run, "report.partial"))


def test_captures_reduced_where_read_equal_spark_grouping_every_packet(small, spark):
    """The reduction each task does on its captures (spark_analysis.reduce) against Spark's own
    grouping of the per-packet table; and local reading against Spark's binaryFile source."""
    from pyspark.sql import functions as F

    from spark_analysis.inputs import normalise, read_manifest, read_packets, read_reduced

    run = read_manifest(spark, normalise(small["clean"]))
    local = read_reduced(spark, [run]).filter("kind != 1").drop("file")
    via_spark = read_reduced(spark, [run], source="binaryFile").filter("kind != 1").drop("file")
    assert local.count() == via_spark.count() > 0 and local.exceptAll(via_spark).count() == 0
    p = read_packets(spark, [run], source="binaryFile")
    per_frag = (p.filter((F.col("direction") == 0) & (F.col("type") != int(wire.MessageType.ACK)))
                .groupBy("run", "node", "origin", "seq", "type", "frag_index")
                .agg(F.min("ts_ns").alias("first"), F.count(F.lit(1)).alias("copies"),
                     F.max("frag_count").alias("fc")))
    expected = (per_frag.groupBy("run", "node", "origin", "seq", "type")
                .agg(F.max("first").alias("t"), F.count(F.lit(1)).alias("frags"), F.sum("copies").alias("copies"),
                     F.max("fc").cast("long").alias("frag_count")))
    got = local.filter("kind = 2").select("run", "node", "origin", "seq", "type", "t", "frags", "copies",
                                          "frag_count")
    assert expected.count() == got.count() > 0 and expected.exceptAll(got).count() == 0
    first_out = (p.filter((F.col("direction") == 1) & (F.col("sender") == F.col("origin")) & (F.col("hops") == 0)
                          & (F.col("flags").bitwiseAND(int(wire.Flags.RETRANSMISSION)) == 0)
                          & (F.col("type") != int(wire.MessageType.ACK)))
                 .groupBy("run", "node", "origin", "seq", "type").agg(F.min("ts_ns").alias("t")))
    got = local.filter("kind = 3 and t is not null").select("run", "node", "origin", "seq", "type", "t")
    assert first_out.count() == got.count() > 0 and first_out.exceptAll(got).count() == 0
    totals = local.filter("kind = 4").agg(F.sum("packets"), F.sum("bytes")).first()
    assert (totals[0], totals[1]) == tuple(p.agg(F.count(F.lit(1)), F.sum("frame_len")).first())


def test_damaged_pcaps_are_reported_and_do_not_fail_the_job(synthetic, spark, tmp_path):
    from spark_analysis.job import analyze

    run = str(tmp_path / "run")
    shutil.copytree(synthetic["damaged"], run)
    (r,) = analyze([run], spark=spark, progress=False).values()
    damage = {os.path.basename(d["file"]): d for d in r["input"]["damage"]}
    corruption = synthetic["damaged_truth"]["corruption"]
    assert set(damage) == {"c1.pcap", "c7.pcap"}
    assert damage["c1.pcap"]["offset"] == corruption["truncate"]["c1"]["last_record_offset"]
    assert r["messages"]["PROBE"]["sent"] == synthetic["damaged_truth"]["messages"]["PROBE"]


def test_several_runs_are_compared_side_by_side(synthetic, spark, tmp_path):
    from spark_analysis.job import analyze

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(synthetic["clean"], a)
    make_run(b, packets=20_000, seed=4, loss=0.0, duplicate=0.0)
    with open(os.path.join(b, "manifest.json")) as fh:
        manifest = json.load(fh)
    manifest["run_id"] = "other-run"
    with open(os.path.join(b, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    res = analyze([a, b], spark=spark, progress=False)
    comp = res["other-run"]["comparison"]
    assert len(comp["runs"]) == 2
    ratios = comp["metrics"]["delivery ratio"]
    assert ratios[comp["runs"].index("other-run")] == 1.0 and ratios[0] < 1.0
    plots = sorted(f for f in os.listdir(os.path.join(b, "report")) if f.startswith("compare_"))
    assert plots and plots == sorted(f for f in os.listdir(os.path.join(a, "report")) if f.startswith("compare_"))
    with open(os.path.join(a, "report", plots[0]), "rb") as x, open(os.path.join(b, "report", plots[0]), "rb") as y:
        assert x.read() == y.read(), "drawn once for the job, the same in every run's report"


#: log lines Spark's JSON reader and ours must read alike: blank, nested values, a number where a
#: name belongs, a fraction where an integer belongs, a line that is not an object, a cut-off line
ODD_LOG_LINES = (b'\n{"t":1795401004101458519,"node":"c3","event":"state","state":"odd","to":["c1",{"x":[1,"]"]}],'
                 b'"vc":{"c1":[1,2]},"msg":"a \\":[quoted]"}\n'
                 b'   \n{"t":1795401004101458520,"node":"c3","event":"state","state":"odd","reason":5}\n'
                 b'{"t":1795401004101458521.5,"node":"c3","event":"state","state":"odd"}\n'
                 b'{"t":1795401004101458522,"node":"c3","event":"state","reliable":"yes"}\n'
                 b'[1,2,3]\n{"t":1795401004101458523,"node":"c3","eve')
ODD_UNREADABLE = 4


ODD_LOGS = [b'{"t":1,"node":"a","msg":"2024-01-01"}\n{"t":2,"node":"b","msg":"x"}\n',
            b'{"t":2.0,"node":"a"}\n', b'{"t":1e3}\n',
            b'{"t":1,"reason":true,"origin":5}\n{"t":2,"reason":false,"origin":6}\n',
            b'{"t":1,"pid":1}\n{"t":2,"pid":"x"}\n',
            b'{"t":1,"colour":null,"to":[]}\n{"t":2,"to":{}}\n', b'{"t":1,"to":[[[1]]]}\n',
            b'{"t":1,"reliable":true}\r\n{"t":2,"seq":-5,"hops":0}\r\n', b'{"t":1,"node":"\\u00e9\\n"}\n',
            b'{"t":1,"x":{"y":[1,{"z":2}]}}\n', b'{"t":99999999999999999999}\n{"t":1}', b'\n\n',
            ODD_LOG_LINES]


#: `to` as the events table holds it -> the transmissions the send stands for (sent.transmissions)
TO_TRANSMISSIONS = [(None, 1), ("broadcast", 1), ("c2", 1), ('["c2"]', 1), ('["c2","c3","c4"]', 3),
                    ('["c2", "c3"]', 2), ("[]", 0), ('["c1",{"x":[1,"]"]}]', 2), ("[5,6]", 2),
                    ("[not json", 1), ('{"a":1}', 1)]


def test_a_send_is_one_transmission_per_node_it_names_and_one_for_a_broadcast():
    import pyarrow as pa

    from spark_analysis.local import transmissions_array
    from spark_analysis.sent import transmissions

    for to, n in TO_TRANSMISSIONS:
        assert transmissions(to) == n, to
    column = pa.chunked_array([[to for to, _ in TO_TRANSMISSIONS[:5]], [to for to, _ in TO_TRANSMISSIONS[5:]]])
    assert transmissions_array(column).tolist() == [n for _, n in TO_TRANSMISSIONS]
    assert transmissions_array(pa.chunked_array([], pa.string())).tolist() == []


def test_the_local_engine_counts_every_send_per_node_type_and_relay():
    """A log's send events (relays included) per (node, type, relayed): transmissions by `to`,
    datagrams and bytes per transmission, a send without frags or bytes adding none."""
    import pyarrow as pa

    from spark_analysis.local import sent_counts
    from spark_analysis.logreader import read_log

    events = [
        {"type": "GOSSIP_KNOWLEDGE", "origin": "a", "to": "broadcast", "bytes": 100, "frags": 1, "hops": 0},
        {"type": "GOSSIP_KNOWLEDGE", "origin": "b", "to": ["b", "c", "d"], "bytes": 2000, "frags": 2, "hops": 1},
        {"type": "GOSSIP_KNOWLEDGE", "origin": "c", "to": ["b"], "bytes": 2000, "frags": 2, "hops": 2},
        {"type": "GOSSIP_HEADERS", "origin": "a", "to": [], "bytes": 10, "frags": 1, "hops": 0},
        {"type": "GOSSIP_HEADERS", "origin": "a", "to": "c"},
    ]
    lines = [{"t": i, "node": "a", "event": "send", "seq": i, **e} for i, e in enumerate(events)]
    lines.append({"t": 9, "node": "a", "event": "deliver", "type": "GOSSIP_KNOWLEDGE", "origin": "b", "seq": 1})
    table, _, _ = read_log("".join(json.dumps(line) + "\n" for line in lines).encode())
    table = table.append_column("run", pa.repeat(pa.scalar("r"), table.num_rows))
    got = {(r["type"], r["relayed"]): (r["messages"], r["transmissions"], r["datagrams"], r["bytes"])
           for r in sent_counts(table).to_pylist()}
    assert got == {("GOSSIP_KNOWLEDGE", False): (1, 1, 1, 100), ("GOSSIP_KNOWLEDGE", True): (2, 4, 8, 8000),
                   ("GOSSIP_HEADERS", False): (2, 1, 0, 0)}


def test_spark_counts_transmissions_by_the_same_rule(spark):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from spark_analysis.sent import transmissions_column

    df = spark.createDataFrame([(i, to) for i, (to, _) in enumerate(TO_TRANSMISSIONS)], "i long, to string")
    got = {r["i"]: r["n"] for r in df.select("i", transmissions_column(F, T).alias("n")).collect()}
    assert [got[i] for i in range(len(TO_TRANSMISSIONS))] == [n for _, n in TO_TRANSMISSIONS]


def test_log_reader_reads_every_line_as_sparks_json_reader_does(spark, tmp_path):
    """Arrow's reader with inferred types, the line-by-line path for files it refuses, and Spark's
    PERMISSIVE JSON reader: the same rows, the same text for unreadable lines."""
    from spark_analysis.inputs import event_schema
    from spark_analysis.logreader import CORRUPT, read_log

    for i, data in enumerate(ODD_LOGS):
        (tmp_path / str(i)).mkdir()
        (tmp_path / str(i) / "n.jsonl").write_bytes(data)
        theirs = [r.asDict() for r in spark.read.schema(event_schema()).option("mode", "PERMISSIVE")
                  .option("columnNameOfCorruptRecord", CORRUPT).json(str(tmp_path / str(i) / "*.jsonl")).collect()]
        table, unreadable, _ = read_log(data)
        assert table.to_pylist() == theirs, data
        assert unreadable == sum(r[CORRUPT] is not None for r in theirs), data


def test_local_engine_equals_spark_reading_and_writing_everything(small, spark, tmp_path):
    """The local engine (each task decodes, parses and writes its file's rows itself, the driver
    reads Arrow files) against the general path (Spark reads the pcaps and logs and writes the
    tables): the same results.json and the same rows in every table, on damaged pcaps and odd logs."""
    from spark_analysis.job import analyze

    results = {}
    for engine in ("spark", "auto"):
        run = tmp_path / engine
        shutil.copytree(small["damaged"], run)
        with open(run / "logs" / "c3.jsonl", "ab") as fh:
            fh.write(ODD_LOG_LINES)
        (r,) = analyze([str(run)], spark=spark, progress=False, engine=engine).values()
        assert ("reading pcaps and logs" in r.pop("timings_s")) == (engine == "auto")
        results[engine] = json.loads(json.dumps(r).replace(str(run), "RUN"))
    assert results["auto"]["input"]["unreadable_log_lines"] == ODD_UNREADABLE
    assert results["auto"]["input"]["damage"] and results["auto"]["checks"]
    assert results["auto"] == results["spark"]
    for table in ("packets", "events", "receptions"):
        a, b = (spark.read.parquet(str(tmp_path / e / "report" / f"{table}.parquet")) for e in ("spark", "auto"))
        assert a.schema == b.schema, table
        assert a.count() == b.count() > 0 and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0, table
    odd = spark.read.parquet(str(tmp_path / "auto" / "report" / "events.parquet")).filter("state = 'odd'")
    assert sorted(odd.select("to").toPandas()["to"].dropna()) == ['["c1",{"x":[1,"]"]}]']


# -- bad input ----------------------------------------------------------------------------------

def run_testbed(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "testbed", *args], capture_output=True, text=True, cwd=ROOT,
                          **kwargs)


def test_analyze_refuses_what_is_not_a_run_directory(tmp_path):
    res = run_testbed("analyze", str(tmp_path / "missing"))
    assert res.returncode == 2 and "no such run directory" in res.stderr
    (tmp_path / "empty").mkdir()
    res = run_testbed("analyze", str(tmp_path / "empty"))
    assert res.returncode == 2 and "no manifest.json" in res.stderr
    assert os.listdir(tmp_path / "empty") == []


@pytest.mark.spark
def test_a_broken_manifest_is_a_usage_error_and_an_old_report_survives(synthetic, spark, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(synthetic["clean"], run)
    (run / "report").mkdir()
    (run / "report" / "results.json").write_text("{}")
    (run / "manifest.json").write_text("{not json")
    from .helpers import cli_in_process

    code, _, stderr = cli_in_process("analyze", "--quiet", run)
    assert code == 2 and "manifest.json" in stderr and "not JSON" in stderr
    assert (run / "report" / "results.json").read_text() == "{}"
    assert not (run / "report.partial").exists()


# -- real runs: captures and logs of Mininet networks of containers -----------------------------

@pytest.mark.spark
@pytest.mark.network
def test_real_run_analysis_matches_logs_and_tshark(no_leftovers, images, spark, tmp_path):
    """`testbed run --analyze` on T[3,2,2] with a lossy link and a killed node: metrics equal the
    logs' counts, and every pcap decodes to what tshark reports for the same file."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"""
name: analysed
topology: {os.path.join(ROOT, 'topologies', 'tree-3-2-2.yaml')}
duration: 6s
warmup: 1s
quiet: 2s
workload:
  defaults: {{role: probe, params: {{rate: 20, size: 100, to: broadcast}}}}
  nodes:
    c1: {{params: {{rate: 20, to: [c14], reliable: true}}}}
timeline:
  - {{at: 1s, action: set_link, link: [srv1, srv3], loss: 0.3, for: 3s}}
  - {{at: 4s, action: kill, node: c9}}
""")
    out = tmp_path / "run"
    from .helpers import cli_in_process

    code, stdout, stderr = cli_in_process("run", scenario, "--out", out, "--analyze", "--quiet")
    assert code == 0, stderr
    assert "report:" in stdout and "delivery ratio" in stdout and "fidelity: " in stdout
    with open(out / "report" / "results.json") as fh:
        r = json.load(fh)
    events = {}
    for name in os.listdir(out / "logs"):
        for line in open(out / "logs" / name):
            e = json.loads(line)
            events.setdefault(e["event"], []).append(e)
    own_sends = [e for e in events["send"] if e["origin"] == e["node"]]
    assert r["messages"]["PROBE"]["sent"] == len(own_sends)
    assert r["application"]["all"]["delivered"] == len(events["deliver"])
    assert r["overhead"]["by_type"]["PROBE"]["retransmissions"] == len(events.get("retransmit", []))
    checks = {c["check"]: c["verdict"] for c in r["checks"]}
    assert checks["no-phantom"] == "valid" and checks["at-most-once"] == "valid"
    assert checks["no-misrouted"] == "valid"
    # a 30% lossy link for 3 s loses broadcasts between the LANs of srv1 and srv3... not broadcasts:
    # they stay in their LAN; the reliable unicast from c1 to c14 crosses it and is retransmitted
    assert r["overhead"]["total"]["retransmissions"] > 0
    # tshark, a decoder nobody here wrote: per file the same UDP packets with the same fields
    ids = json.load(open(out / "manifest.json"))["node_ids"]
    for name in sorted(os.listdir(out / "pcap")):
        if not name.endswith(".pcap"):
            continue
        path = str(out / "pcap" / name)
        ts = subprocess.run(["tshark", "-r", path, "-Y", "udp.port == 7777 && !icmp && data.data[0:2] == 54:42",
                             "-T", "fields", "-e", "ip.src", "-e", "ip.dst", "-e", "udp.srcport", "-e", "udp.dstport",
                             "-e", "data.data"], capture_output=True, text=True, check=True).stdout.split("\n")
        theirs = []
        for line in filter(None, ts):
            src, dst, sport, dport, payload = line.split("\t")
            raw = bytes.fromhex(payload.replace(":", ""))
            h = wire.decode(raw)[0]
            theirs.append((src, dst, int(sport), int(dport), h.type, h.origin, h.sequence, h.frag_index))
        data = read_file(path, ids[name[:-5]])
        c = data.columns
        import ipaddress
        mine = [(str(ipaddress.ip_address(int(s))), str(ipaddress.ip_address(int(d))), int(sp), int(dp), int(t),
                 int(o), int(q), int(f)) for s, d, sp, dp, t, o, q, f in
                zip(c["src_ip"], c["dst_ip"], c["sport"], c["dport"], c["type"], c["origin"], c["seq"],
                    c["frag_index"])]
        assert mine == theirs, name
        assert len(mine) > 0


def test_payload_bytes_that_look_like_record_headers_do_not_confuse_the_reader(tmp_path):
    """Candidates inside packets (a payload holding a plausible record header) are skipped."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    frames = []
    for seq in range(1, 200):
        ts = 1_795_225_590 + seq // 10
        fake = struct.pack("<IIII", ts, 5, 20, 20) * (seq % 4)
        body = wire.encode(wire.Header(type=wire.MessageType.PROBE, origin=3, sequence=seq, sender=3), fake)
        frame = Ether() / IP(src="10.0.0.3", dst="10.0.0.255") / UDP(sport=7777, dport=7777) / body
        frame.time = ts + seq * 1e-4
        frames.append(frame)
    path = str(tmp_path / "tricky.pcap")
    wrpcap(path, frames)
    data = read_file(path, 3)
    assert data.damage == [] and data.records == 199
    assert ours(data) == scapy_decode(path, 3)


def test_a_run_without_captures_or_logs_is_analysed_as_empty(synthetic, spark, tmp_path):
    """Capture can be disabled in a scenario; then there are no pcaps, and the checks are unknown."""
    from spark_analysis.job import analyze

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(os.path.join(synthetic["clean"], "manifest.json"), run / "manifest.json")
    (r,) = analyze([str(run)], spark=spark, progress=False).values()
    assert r["input"]["testbed_packets"] == 0
    assert {c["verdict"] for c in r["checks"]} == {"unknown"}
    assert os.path.exists(run / "report" / "index.html")


def test_errors_of_roles_are_counted_and_shown(synthetic, spark, tmp_path):
    """Error events a role's agent logged (agents/runtime.py) reach results.json and the report,
    with their tracebacks; a field nobody declared is named, not read."""
    from spark_analysis.job import analyze

    run = tmp_path / "run"
    shutil.copytree(synthetic["clean"], run)
    manifest = json.load(open(run / "manifest.json"))
    t0 = manifest["t0_ns"]
    with open(run / "logs" / "c3.jsonl", "a") as log:
        for i, where in enumerate(["on_message", "on_message", "run"]):
            log.write(json.dumps({"t": t0 + (i + 1) * 1_000_000_000, "node": "c3", "event": "error", "where": where,
                                  "error": f"ValueError: broken {i}", "traceback": f"Traceback ...\nline {i}",
                                  "type": "PROBE", "origin": "c1", "seq": 7, "mood": "grumpy"}) + "\n")
    (r,) = analyze([str(run)], spark=spark, progress=False).values()
    errors = r["errors"]
    assert errors["count"] == 3 and errors["nodes"] == {"c3": 3} and errors["where"] == {"on_message": 2, "run": 1}
    assert [e["t_s"] for e in errors["first"]] == [1.0, 2.0, 3.0]
    assert errors["first"][0]["error"] == "ValueError: broken 0" and errors["first"][0]["seq"] == 7
    assert r["input"]["undeclared_log_fields"] == ["mood"]
    page = open(run / "report" / "index.html").read()
    assert "3 error(s) raised by roles" in page and "ValueError: broken 2" in page and "line 1" in page
    for table in ("packets", "events", "receptions", "messages"):
        assert os.path.isdir(run / "report" / f"{table}.parquet"), f"the report lists {table}.parquet"
