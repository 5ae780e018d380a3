"""The DEECo analysis (spark_analysis/protocols/deeco.py): its measures on hand-made frames, and the
analysis job on a run directory of hand-written DEECo logs, in both engines (the sent counts with
relays and IP recipient lists, and the deeco section)."""

from __future__ import annotations

import json
from typing import Dict, List

import pandas as pd
import pytest

T0 = 1_800_000_000_000_000_000
S = 1_000_000_000
K, H, P, G = "GOSSIP_KNOWLEDGE", "GOSSIP_HEADERS", "GOSSIP_PULL", "GOSSIP_GROUPS"


def at(seconds: float) -> int:
    return T0 + int(round(seconds * S))


def _manifest() -> dict:
    """a, b, d: deeco-node with R_K 5 s (the default); c: R_K 2 s; g a grouper; x not DEECo."""
    nodes = {"a": {"role": "deeco-node", "params": {"via": "radio"}},
             "b": {"role": "deeco-node", "params": {"via": "ip", "fanout": 3, "knowledge_period_ms": 5000}},
             "c": {"role": "deeco-node", "params": {"knowledge_period_ms": 2000, "group": 1}},
             "d": {"role": "deeco-node", "params": {}},
             "g": {"role": "deeco-grouper", "params": {}},
             "x": {"role": "idle", "params": {}}}
    return {"t0_ns": T0, "started_ns": T0 - 3 * S, "scenario": {"duration_s": 20.0},
            "topology": {"nodes": nodes}, "node_ids": {n: i + 1 for i, n in enumerate(nodes)}}


#: (node, origin, delivered s, produced s or None): ages 200, 500, 1000, 2000, 100, 400, 300 and,
#: after the end of the workload (20 s), 500 ms; one delivery without a creation time
DELIVERIES = [("b", "a", 1.2, 1.0), ("c", "a", 1.5, 1.0), ("a", "b", 3.0, 2.0), ("c", "b", 4.0, 2.0),
              ("b", "a", 6.1, 6.0), ("c", "a", 7.0, None), ("a", "c", 12.4, 12.0), ("b", "a", 16.3, 16.0),
              ("a", "d", 21.0, 20.5)]
#: (origin, published s, eligible): the knowledge publications (d's after the end)
PUBLICATIONS = [("a", 1.0, ["b", "c", "d"]), ("a", 6.0, ["b", "c", "d"]), ("a", 11.0, ["b", "c", "d"]),
                ("a", 16.0, ["b", "c", "d"]), ("b", 2.0, ["a", "c", "d"]), ("b", 7.0, ["a", "c", "d"]),
                ("b", 12.0, ["a", "c", "d"]), ("c", 12.0, ["a"]), ("d", 20.5, ["a", "b", "c"])]


def _frames():
    deliveries = pd.DataFrame({
        "node": [d[0] for d in DELIVERIES], "origin": [d[1] for d in DELIVERIES],
        "seq": pd.array([1] * len(DELIVERIES), "Int64"), "type": [K] * len(DELIVERIES),
        "t": [at(d[2]) for d in DELIVERIES],
        "produced_ns": pd.array([None if d[3] is None else at(d[3]) for d in DELIVERIES], "Int64"),
        "hops": pd.array([0] * len(DELIVERIES), "Int64"), "accepted": [None] * len(DELIVERIES)})
    sends = pd.DataFrame({"origin": [p[0] for p in PUBLICATIONS], "seq": range(1, len(PUBLICATIONS) + 1),
                          "type": [K] * len(PUBLICATIONS), "t": [at(p[1]) for p in PUBLICATIONS],
                          "intended": [p[2] for p in PUBLICATIONS]})
    rows = [("a", K, False, 4, 4, 8, 6000), ("b", K, False, 3, 9, 9, 2700), ("b", K, True, 2, 6, 6, 1800),
            ("c", K, True, 1, 1, 1, 300), ("a", H, False, 3, 3, 3, 120), ("c", P, False, 2, 2, 2, 60),
            ("g", G, False, 1, 2, 2, 100), ("a", "PROBE", False, 5, 5, 5, 50)]
    sent = pd.DataFrame(rows, columns=["node", "type", "relayed", "messages", "transmissions", "datagrams", "bytes"])
    states = pd.DataFrame({"run": ["r", "r", "r"], "node": ["c", "d", "c"], "t": [at(15), at(18), at(19)],
                           "state": ["deeco stopped pulling", "deeco stopped pulling", "coloured"],
                           "component": ["b", "a", None]})
    return sends, deliveries, _manifest(), states, sent


def test_knowledge_age_is_delivery_minus_creation_with_its_quartiles_and_median_over_time():
    from spark_analysis.protocols.deeco import measures

    age = measures(*_frames())["knowledge_age"]
    # 100 200 300 400 500 500 1000 2000 (numpy's linear quantiles); the delivery without produced_ns left out
    assert age["n"] == 8 and age["mean_ms"] == pytest.approx(625) and age["median_ms"] == pytest.approx(450)
    assert age["q1_ms"] == pytest.approx(275) and age["q3_ms"] == pytest.approx(625)
    assert age["p95_ms"] == pytest.approx(1650) and age["max_ms"] == pytest.approx(2000)
    # up to the last delivery at 21 s: bins of 0.5 s, each point at its bin's end, empty bins left out
    assert age["over_time_step_s"] == 0.5
    assert age["over_time"] == [[1.5, pytest.approx(350)], [3.0, pytest.approx(1000)], [4.0, pytest.approx(2000)],
                                [6.5, pytest.approx(100)], [12.5, pytest.approx(400)], [16.5, pytest.approx(300)],
                                [21.0, pytest.approx(500)]]


def test_messages_split_knowledge_into_publications_and_rebroadcasts_and_total_the_transmissions():
    from spark_analysis.protocols.deeco import measures

    m = measures(*_frames())["messages"]
    assert m["knowledge"] == {"messages": 7, "transmissions": 13}
    assert m["rebroadcasts"] == {"messages": 3, "transmissions": 7}
    assert m["headers"] == {"messages": 3, "transmissions": 3} and m["pulls"] == {"messages": 2, "transmissions": 2}
    assert m["groups"] == {"messages": 1, "transmissions": 2}
    assert m["total"] == 27 and m["datagrams"] == 31 and m["bytes"] == 11080, "PROBE is not DEECo's"


def test_coverage_counts_the_distinct_sources_each_deeco_node_accepted_knowledge_from():
    from spark_analysis.protocols.deeco import measures

    cov = measures(*_frames())["coverage"]
    # a: b, c, d; b: a; c: a, b; d and the grouper g: none; x is not a DEECo node
    assert cov["per_node"] == {"a": 3, "b": 1, "c": 2, "d": 0, "g": 0}
    assert (cov["nodes"], cov["min"], cov["median"], cov["max"]) == (5, 0, 1.0, 3)
    assert cov["mean"] == pytest.approx(1.2) and cov["sources"] == 2, "a and b published (the sent counts)"


def test_fresh_at_end_takes_the_newest_knowledge_held_and_each_sources_own_period():
    from spark_analysis.protocols.deeco import measures

    a = measures(*_frames())
    assert a["knowledge_period_ms"] is None and a["horizon_s"] == 20.0, "c's R_K differs"
    f = a["fresh_at_end"]
    # held at 20 s: (b,a) 4 s old, fresh; (c,a) 19; (a,b) 18; (c,b) 18; (a,c) 8 s, over c's 2 x 2 s;
    # (a,d) came after the end
    assert (f["pairs"], f["fresh"], f["median_age_ms"]) == (5, 1, pytest.approx(18000))
    assert f["fresh_share"] == pytest.approx(0.2)
    # expected: a's eligible b, c, d; b's a, c, d; c's a (d published after the end)
    assert (f["expected_pairs"], f["expected_held"]) == (7, 5)
    assert f["fresh_share_of_expected"] == pytest.approx(1 / 7)


def test_with_one_period_for_all_a_pair_within_two_periods_is_fresh():
    from spark_analysis.protocols.deeco import measures

    sends, deliveries, manifest, states, sent = _frames()
    manifest["topology"]["nodes"]["c"]["params"]["knowledge_period_ms"] = 5000
    a = measures(sends, deliveries, manifest, states, sent)
    assert a["knowledge_period_ms"] == 5000 and a["fresh_at_end"]["fresh"] == 2, "(a,c) 8 s old < 10 s"


def test_stopped_pulling_names_the_nodes_and_components():
    from spark_analysis.protocols.deeco import html, measures

    a = measures(*_frames())
    assert a["stopped_pulling"] == {"count": 2, "nodes": ["c", "d"], "components": ["a", "b"]}
    page = html(a)
    assert "DEECo gossip" in page and "rebroadcasts" in page and "Stopped pulling 2 time(s)" in page


def test_a_run_without_deeco_traffic_has_an_empty_section():
    from spark_analysis.protocols.deeco import measures

    sends, deliveries, manifest, states, sent = _frames()
    none = (sends.iloc[:0], deliveries.iloc[:0], manifest, states.iloc[:0])
    assert measures(*none, sent.iloc[:0]) == {}
    assert measures(*none, sent[sent["type"] == "PROBE"]) == {}
    assert measures(*none) == {}
    probe = deliveries.assign(type="PROBE")
    assert measures(sends.iloc[:0], probe, manifest, states.iloc[:0], sent.iloc[:0]) == {}


def test_without_a_duration_there_is_no_end_to_be_fresh_at():
    from spark_analysis.protocols.deeco import measures

    sends, deliveries, manifest, states, sent = _frames()
    del manifest["scenario"]["duration_s"]
    a = measures(sends, deliveries, manifest, states, sent)
    assert a["fresh_at_end"] is None and a["horizon_s"] is None and a["knowledge_age"]["n"] == 8


# -- the job on hand-written logs ------------------------------------------------------------------

def _logs() -> Dict[str, List[dict]]:
    """The run as its nodes would log it: a broadcasts on the radio, b sends to lists of 3 peers
    and relays to 2, c relays by radio (a pulled copy), headers, a pull, a grouper's table."""
    logs: Dict[str, List[dict]] = {n: [] for n in _manifest()["topology"]["nodes"]}
    seq: Dict[str, int] = {}

    def send(node, t, typ, to, nbytes, frags, origin=None, hops=0, number=None, **fields):
        if origin is None:  # the node's own message: its next sequence number
            seq[node] = number = seq.get(node, 0) + 1
        logs[node].append({"t": at(t), "node": node, "event": "send", "type": typ, "origin": origin or node,
                           "seq": number, "to": to, "bytes": nbytes, "frags": frags, "reliable": False,
                           "message_id": 0, "hops": hops, **fields})

    for origin, t, eligible in PUBLICATIONS:
        if origin == "b":
            send("b", t, K, ["a", "c", "d"], 300, 1, eligible=eligible, component="b", version=1)
        else:
            send(origin, t, K, "broadcast", 1500 if origin == "a" else 300, 2 if origin == "a" else 1,
                 eligible=eligible, component=origin, version=1)
    send("b", 1.25, K, ["c", "d"], 1500, 2, origin="a", hops=1, number=1, pulled=False, component="a", version=1)
    send("c", 4.05, K, "broadcast", 300, 1, origin="b", hops=2, number=1, pulled=True, component="b", version=1)
    send("a", 5.0, H, "broadcast", 40, 1, components=["a", "b"])
    send("a", 10.0, H, "broadcast", 40, 1, components=["a", "b", "c"])
    send("c", 9.0, P, ["a"], 30, 1, components=["b"])
    send("g", 5.0, G, ["a", "b"], 50, 1)
    for node, origin, t, produced in DELIVERIES:
        if produced is None:
            continue
        logs[node].append({"t": at(t), "node": node, "event": "deliver", "type": K, "origin": origin, "seq": 1,
                           "message_id": 1, "sender": origin, "hops": 0, "produced_ns": at(produced),
                           "component": origin, "version": 1})
    for node, t, comp in (("c", 15.0, "b"), ("d", 18.0, "a")):
        logs[node].append({"t": at(t), "node": node, "event": "state", "state": "deeco stopped pulling",
                           "component": comp})
    return logs


def _write_run(run) -> None:
    manifest = _manifest()
    names = list(manifest["topology"]["nodes"])
    manifest.update({"manifest_version": 1, "run_id": "run", "status": "completed",
                     "addresses": {n: {"eth0": f"10.0.0.{i + 1}/24"} for i, n in enumerate(names)}})
    manifest["scenario"]["name"] = "deeco-by-hand"
    (run / "logs").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(manifest))
    for n, events in _logs().items():
        if events:
            (run / "logs" / f"{n}.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for e in sorted(events, key=lambda e: e["t"])))


@pytest.mark.spark
def test_the_job_counts_relays_and_recipient_lists_and_reads_the_deeco_measures_in_both_engines(spark, tmp_path):
    from spark_analysis.job import analyze

    results = {}
    for engine in ("spark", "auto"):
        run = tmp_path / engine
        _write_run(run)
        (r,) = analyze([str(run)], spark=spark, progress=False, engine=engine).values()
        r.pop("timings_s")
        results[engine] = json.loads(json.dumps(r).replace(str(run), "RUN"))
        assert "Messages sent (event logs)" in (run / "report" / "index.html").read_text()
    r = results["auto"]
    assert r["input"]["undeclared_log_fields"] == [] and r["input"]["unreadable_log_lines"] == 0
    sent = r["sent"]
    # knowledge: a 4 broadcasts of 2 datagrams, 1500 bytes; b 3 sends to 3 peers; c and d one broadcast
    # each; relays: b's to 2 peers (2 datagrams, 1500 bytes), c's broadcast
    assert sent[K] == {"messages": 11, "relayed_messages": 2, "transmissions": 18, "relayed_transmissions": 3,
                       "datagrams": 24, "bytes": 12600}
    assert sent[H] == {"messages": 2, "relayed_messages": 0, "transmissions": 2, "relayed_transmissions": 0,
                       "datagrams": 2, "bytes": 80}
    assert sent[P]["transmissions"] == 1 and sent[G]["transmissions"] == 2 and sent[G]["bytes"] == 100
    assert sent["total"] == {"messages": 15, "relayed_messages": 2, "transmissions": 23, "relayed_transmissions": 3,
                             "datagrams": 29, "bytes": 12810}
    d = r["deeco"]
    assert d["messages"] == {"knowledge": {"messages": 9, "transmissions": 15},
                             "rebroadcasts": {"messages": 2, "transmissions": 3},
                             "headers": {"messages": 2, "transmissions": 2}, "pulls": {"messages": 1, "transmissions": 1},
                             "groups": {"messages": 1, "transmissions": 2}, "total": 23, "datagrams": 29, "bytes": 12810}
    age = d["knowledge_age"]
    assert age["n"] == 8 and age["median_ms"] == pytest.approx(450) and age["q3_ms"] == pytest.approx(625)
    assert d["coverage"]["per_node"] == {"a": 3, "b": 1, "c": 2, "d": 0, "g": 0} and d["coverage"]["sources"] == 4
    f = d["fresh_at_end"]
    assert (f["pairs"], f["fresh"], f["expected_pairs"], f["expected_held"]) == (5, 1, 7, 5)
    assert d["stopped_pulling"] == {"count": 2, "nodes": ["c", "d"], "components": ["a", "b"]}
    assert results["spark"] == results["auto"]
