"""The analysis of runs with a radio medium (spark_analysis/radio.py) against the exact ground truth
of a synthetic radio run (tests/synthetic_radio.py): intended receivers that follow the neighbour
graph in both engines, the per-pair delivery against the loss model, receptions out of range,
the report's Radio section; and runs without the medium's records."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from spark_analysis import radio, radio_report
from spark_analysis.inputs import normalise, read_manifest
from spark_analysis.pcapreader import local_addresses, read_file

from .synthetic_radio import MEMBERS, make_radio_run


@pytest.fixture(scope="module")
def radio_run(tmp_path_factory):
    run = str(tmp_path_factory.mktemp("radio") / "run")
    return run, make_radio_run(run, seed=1)


def _run(run_dir: str):
    """The run's manifest and radio records, as the analysis reads them (job.analyze)."""
    run = read_manifest(None, normalise(run_dir))
    run.radio = radio.read(None, run)
    return run


def _copy(src: str, dst) -> str:
    dst = str(dst)
    shutil.copytree(src, dst)
    return dst


def _frames(run) -> pa.Table:
    """The members' captured packets as the packets table holds them (FRAME_COLUMNS), decoded here."""
    tables = []
    for name in sorted(os.listdir(os.path.join(run.uri, "pcap"))):
        node = name[:-len(".pcap")]
        data = read_file(os.path.join(run.uri, "pcap", name), run.node_ids[node],
                         local_addresses(run.manifest["addresses"][node].values()))
        tables.append(pa.table({"node": pa.array([node] * data.packets, pa.string()),
                                **{c: data.columns[c] for c in radio.FRAME_COLUMNS if c != "node"}}))
    return pa.concat_tables(tables)


def _sends(run_dir: str) -> pa.Table:
    from spark_analysis.logreader import read_log

    tables = []
    for name in sorted(os.listdir(os.path.join(run_dir, "logs"))):
        with open(os.path.join(run_dir, "logs", name), "rb") as fh:
            table = read_log(fh.read())[0]
        tables.append(table.filter(pc.equal(table.column("event"), "send")))
    return pa.concat_tables(tables)


def _check_pairs(section: dict, truth: dict) -> None:
    pairs = {f"{r['src']}>{r['dst']}": r for r in section["pairs"]}
    expected = {k: v for k, v in truth["pairs"].items() if v["sent_in_range"] or v["received_out_of_range"]}
    assert set(pairs) == set(expected)
    for key, t in expected.items():
        r = pairs[key]
        assert (r["sent_in_range"], r["received"], r["received_out_of_range"], r["sent_out_of_range"]) == (
            t["sent_in_range"], t["received"], t["received_out_of_range"], t["sent_out_of_range"]), key
        assert r["ratio"] == t["received"] / t["sent_in_range"]
        assert r["expected"] == pytest.approx(t["expected"], rel=1e-12)
        lo, hi = r["interval"]
        assert lo <= r["expected"] <= hi and not r["outside"], key


def test_intended_receivers_follow_the_neighbour_graph(radio_run):
    """The rule (radio.receivers) and the local engine's use of it: a broadcast is meant for the
    sender's wired peers and the members in its range at the tick in force (the first tick before
    any); a send naming its receivers keeps them."""
    from spark_analysis.local import intended_receivers

    import jsonschema

    from testbed.schema import SCHEMAS

    run_dir, truth = radio_run
    for kind, documents in (("manifest", [json.load(open(os.path.join(run_dir, "manifest.json")))]),
                            ("events", [json.loads(line) for name in os.listdir(os.path.join(run_dir, "logs"))
                                        for line in open(os.path.join(run_dir, "logs", name))])):
        check = jsonschema.Draft202012Validator(SCHEMAS[kind]())
        for document in documents:  # the synthetic run keeps the written contracts
            assert list(check.iter_errors(document)) == [], kind
    run = _run(run_dir)
    assert run.radio is not None and run.radio.missing == []
    schedule = radio.receivers(run)
    t0 = truth["t0_ns"]
    out = t0 + 5_250_000_000  # the first tick without c and d in range
    assert schedule["a"] == [(None, None, ["b", "w"])]  # the gateway: radio and wired peers
    assert schedule["b"] == [(None, None, ["a", "c"])]
    assert schedule["c"] == [(None, out, ["b", "d"]), (out, None, ["b"])]
    assert schedule["d"] == [(None, out, ["c"]), (out, None, [])]
    assert schedule["w"] == [(None, None, ["a"])]
    sends = _sends(run_dir)
    intended = intended_receivers(sends, schedule).to_pylist()
    got = {(o, s): sorted(i) for o, s, i in zip(sends.column("origin").to_pylist(), sends.column("seq").to_pylist(),
                                                 intended)}
    assert got == {(s["origin"], s["seq"]): s["intended"] for s in truth["sends"]}
    assert got[("b", 101)] == ["d"]          # named, out of range: kept
    assert got[("d", 1)] == ["c"]            # sent before the first tick: the first tick's graph


def test_per_pair_delivery_against_the_loss_model(radio_run, tmp_path):
    run_dir, truth = radio_run
    run = _run(run_dir)
    section = radio.measures(run, _frames(run))
    _check_pairs(section, truth)
    assert section["receptions_out_of_range"] == truth["receptions_out_of_range"] == 1
    assert section["unmatched_receptions"] == 0 and section["pairs_outside_interval"] == 0
    seg = section["segments"]["air"]
    assert seg["frames_sent"] == 4 * 100 + 1   # a's copies on its wired LAN are not on the air
    assert seg["ticks"] == 20 and seg["first_tick_s"] == 0.25 and seg["last_tick_s"] == 9.75
    for node in MEMBERS:
        degrees = truth["neighbours"][node]
        assert seg["neighbours"]["per_node"][node] == {"mean": sum(degrees) / 20, "min": min(degrees),
                                                       "max": max(degrees)}
    assert [s["max"] for s in seg["neighbours"]["series"]] == [2] * 10
    # a loss model that promises less than the medium delivered: the pair is flagged
    tampered = _copy(run_dir, tmp_path / "tampered")
    links = pq.read_table(os.path.join(tampered, "radio", "links.parquet"))
    ab = pc.and_(pc.equal(links.column("src"), "a"), pc.equal(links.column("dst"), "b"))
    links = links.set_column(links.column_names.index("p"), "p", pc.if_else(ab, 0.5, links.column("p")))
    pq.write_table(links, os.path.join(tampered, "radio", "links.parquet"))
    run = _run(tampered)
    pairs = {(r["src"], r["dst"]): r for r in radio.measures(run, _frames(run))["pairs"]}
    assert pairs[("a", "b")]["outside"] and pairs[("a", "b")]["expected"] == 0.5 and pairs[("a", "b")]["z"] > 5
    assert not pairs[("b", "a")]["outside"]


def test_missing_radio_tables_count_the_whole_segment(radio_run, tmp_path):
    """Without the medium's tables a radio segment is judged as a wired one (every member a
    receiver); without the manifest's radio key the run has no radio records at all."""
    run_dir, _ = radio_run
    bare = _copy(run_dir, tmp_path / "bare")
    shutil.rmtree(os.path.join(bare, "radio"))
    run = _run(bare)
    assert run.radio.missing == ["radio/positions.parquet", "radio/links.parquet"]
    section = radio.measures(run, _frames(run))
    assert section["pairs"] == [] and section["missing"] == run.radio.missing
    whole = radio.receivers(run)
    assert whole["d"] == [(None, None, ["a", "b", "c"])] and whole["a"] == [(None, None, ["b", "c", "d", "w"])]
    manifest = json.load(open(os.path.join(bare, "manifest.json")))
    del manifest["radio"]
    with open(os.path.join(bare, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    run = _run(bare)
    assert run.radio is None
    assert radio.receivers(run) == whole
    assert radio.receivers(run) == {n: [(None, None, p)] for n, p in run.segment_peers().items()}


def test_radio_run_analysed_alike_by_both_engines(radio_run, spark, tmp_path):
    """Both engines: the same results.json; intended receivers, receptions and the per-pair table
    as the ground truth has them; the report's Radio section with its figures."""
    from spark_analysis.job import analyze

    run_dir, truth = radio_run
    results = {}
    for engine in ("spark", "auto"):
        run = _copy(run_dir, tmp_path / engine / "run")
        (r,) = analyze([run], spark=spark, progress=False, engine=engine, radio_times=[1.0, 6.0]).values()
        r.pop("timings_s")
        results[engine] = json.loads(json.dumps(r).replace(run, "RUN"))
        receptions = pq.read_table(os.path.join(run, "report", "receptions.parquet")).to_pylist()
        got = sorted((row["origin"], row["seq"], row["receiver"]) for row in receptions)
        assert got == sorted((s["origin"], s["seq"], i) for s in truth["sends"] for i in s["intended"]), engine
        report = os.path.join(run, "report")
        for name in radio_report.PLOTS:
            assert os.path.getsize(os.path.join(report, name)) > 0, name
        page = open(os.path.join(report, "index.html")).read()
        assert "<h2 id='radio'>Radio</h2>" in page and "radio_map.png" in page and "radio_neighbours.png" in page
        assert "Frames received from a node out of range: 1" in page
    assert results["auto"] == results["spark"]
    r = results["auto"]
    assert r["messages"]["PROBE"]["intended_receivers"] == truth["intended_receivers"]
    assert r["messages"]["PROBE"]["sent"] == len(truth["sends"])
    # d's broadcasts from the tick at 5.25 s on: nobody in range, nobody intended
    assert r["messages"]["PROBE"]["messages_without_receivers"] == sum(1 for s in truth["sends"] if not s["intended"])
    _check_pairs(r["radio"], truth)
    assert r["radio"]["receptions_out_of_range"] == 1


def test_a_run_without_radio_records_has_no_radio_section(radio_run, spark, tmp_path):
    """No manifest radio key: the segment's members are each other's receivers, as on a wired LAN,
    and results.json and the report have nothing of the radio."""
    from spark_analysis.job import analyze

    run = _copy(radio_run[0], tmp_path / "run")
    shutil.rmtree(os.path.join(run, "radio"))
    manifest = json.load(open(os.path.join(run, "manifest.json")))
    del manifest["radio"]
    with open(os.path.join(run, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    (r,) = analyze([run], spark=spark, progress=False).values()
    assert "radio" not in r
    # every member broadcasts to the three others, a to w as well, w to a; b names d once
    assert r["messages"]["PROBE"]["intended_receivers"] == 4 * 100 * 3 + 100 + 20 + 1
    report = os.path.join(run, "report")
    assert not any(os.path.exists(os.path.join(report, name)) for name in radio_report.PLOTS)
    assert "id='radio'" not in open(os.path.join(report, "index.html")).read()
