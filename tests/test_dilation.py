"""Time dilation: a scenario's `time_dilation: k` makes the emulated world run k times slower
than the wall clock. Its value refused when it is not a number from 1 to 100; the links' rates
and delays in virtual time; then real runs at k = 1 and k = 4 on Mininet, whose virtual-time
measures agree, and whose durations, timeline and agents' clocks run k times slower."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.errors import ValidationError
from testbed.model import LinkProps
from testbed.scenario import MAX_DILATION, parse_scenario_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE3 = os.path.join(ROOT, "topologies", "line3.yaml")


@pytest.mark.parametrize("value", ["0", "-1", ".nan", ".inf", "1e9", "0.5", "'fast'", "true", "[2]", "null",
                                   str(MAX_DILATION + 1)])
def test_a_dilation_that_is_not_a_number_from_1_to_100_is_refused_at_load_with_the_line(value):
    text = f"topology: {LINE3}\nduration: 5s\ntime_dilation: {value}\n"
    with pytest.raises(ValidationError) as caught:
        parse_scenario_text(text, "s.yaml")
    shown = str(caught.value)
    assert "s.yaml:3" in shown and "time_dilation" in shown and "a number from 1 to 100" in shown, shown


@pytest.mark.parametrize("value, k", [("1", 1.0), ("4", 4.0), ("2.5", 2.5), (str(MAX_DILATION), float(MAX_DILATION))])
def test_a_good_dilation_reaches_the_scenario_and_its_description(value, k):
    scenario = parse_scenario_text(f"topology: {LINE3}\nduration: 5s\ntime_dilation: {value}\n", "s.yaml")
    assert scenario.time_dilation == k and scenario.to_dict()["time_dilation"] == k
    assert parse_scenario_text(f"topology: {LINE3}\n", "s.yaml").time_dilation == 1.0


def test_a_set_override_and_the_schema_know_the_field():
    from testbed.scenario import load_scenario
    from testbed.schema import scenario_schema

    path = os.path.join(ROOT, "scenarios", "quickstart.yaml")
    assert load_scenario(path, overrides=("time_dilation=3",)).time_dilation == 3.0
    with pytest.raises(ValidationError, match="time_dilation"):
        load_scenario(path, overrides=("time_dilation=0",))
    schema = scenario_schema()["properties"]["time_dilation"]
    assert schema["minimum"] == 1 and schema["maximum"] == MAX_DILATION


def test_a_link_in_a_slower_world_has_its_rate_divided_and_its_delays_multiplied():
    props = LinkProps(delay_ms=10, jitter_ms=2, loss=0.1, bandwidth_mbit=8, duplication=0.01)
    slow = props.dilated(4)
    assert (slow.delay_ms, slow.jitter_ms, slow.bandwidth_mbit) == (40, 8, 2)
    assert (slow.loss, slow.duplication) == (0.1, 0.01), "probabilities per packet need no scaling"
    assert props.dilated(1) is props and LinkProps().dilated(3).bandwidth_mbit is None


# -- the analysis in virtual time: a synthetic run stretched k times ------------------------------

def _stretch(src: str, dst: str, k: int) -> int:
    """A copy of run `src` as if it had run k times slower: every wall-clock stamp (the captures'
    records, the events' `t`, the manifest's stamps) moved to origin + (t - origin) * k, the
    stamps the agents make in virtual time (produced_ns) kept; returns the origin."""
    import json
    import shutil
    import struct

    shutil.copytree(src, dst)
    with open(os.path.join(src, "manifest.json")) as fh:
        manifest = json.load(fh)
    origin = manifest["started_ns"] - manifest["started_ns"] % 1_000_000_000

    def wall(t: int) -> int:
        return origin + (t - origin) * k

    for key in ("started_ns", "t0_ns", "workload_end_ns"):
        if isinstance(manifest.get(key), int):
            manifest[key] = wall(manifest[key])
    for action in manifest.get("timeline", []):
        for key in ("t_ns", "done_ns"):
            if isinstance(action.get(key), int):
                action[key] = wall(action[key])
    manifest.update(time_dilation=k, clock_origin_ns=origin)
    with open(os.path.join(dst, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    for name in os.listdir(os.path.join(src, "logs")):
        lines = []
        with open(os.path.join(src, "logs", name)) as fh:
            for line in fh:
                event = json.loads(line)
                event["t"] = wall(event["t"])
                lines.append(json.dumps(event))
        with open(os.path.join(dst, "logs", name), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    for name in os.listdir(os.path.join(src, "pcap")):
        if not name.endswith(".pcap"):
            continue
        data = bytearray(open(os.path.join(src, "pcap", name), "rb").read())
        assert struct.unpack_from("<I", data, 0)[0] == 0xA1B2C3D4, "microsecond classic pcap"
        at = 24
        while at + 16 <= len(data):
            sec, usec, incl, _ = struct.unpack_from("<IIII", data, at)
            t = wall((sec * 1_000_000 + usec) * 1000) // 1000
            struct.pack_into("<II", data, at, t // 1_000_000, t % 1_000_000)
            at += 16 + incl
        with open(os.path.join(dst, "pcap", name), "wb") as fh:
            fh.write(data)
    return origin


# a stamp and the origin it counts from: anything from 1970 to 2106, up to 100 days either side
STAMPS = st.tuples(st.integers(0, 2 ** 62), st.integers(-(10 ** 16), 10 ** 16))
DILATIONS = st.one_of(st.integers(1, MAX_DILATION), st.floats(1, MAX_DILATION, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(STAMPS, DILATIONS)
def test_the_agents_clock_and_the_analysis_tell_one_virtual_time(stamp, k):
    """Clock.now_ns (what an agent logs) and virtual_ns (what the analysis converts a wall-clock
    stamp to: an int, a numpy array) agree to the nanosecond, for any origin, offset and k."""
    import numpy as np

    from agents.clock import Clock
    from spark_analysis.inputs import virtual_ns

    origin, offset = stamp
    wall = origin + offset
    told = Clock(dilation=k, origin_ns=origin, realtime_ns=lambda: wall).now_ns()
    assert virtual_ns(wall, origin, float(k)) == told
    assert int(virtual_ns(np.array([wall, wall], dtype=np.int64), origin, float(k))[0]) == told
    if k == 1:
        assert told == wall
    else:  # 1/k of the offset, truncated towards the origin
        assert abs(told - origin) <= abs(offset) and abs((told - origin) - offset / k) < 1 + abs(offset) * 1e-15


@pytest.mark.spark
@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 62), DILATIONS), min_size=1, max_size=12),
       st.lists(st.integers(-(10 ** 16), 10 ** 16), min_size=1, max_size=40))
def test_the_spark_column_tells_the_same_virtual_time(spark, clocks, offsets):
    """virtual_column, the Spark engine's conversion, gives what virtual_ns gives, row by row:
    each drawn (origin, k) a column of one Spark job over the drawn offsets from it."""
    from pyspark.sql import functions as F

    from spark_analysis.inputs import virtual_column, virtual_ns

    rows = [tuple(origin + offset for origin, _ in clocks) for offset in offsets]
    frame = spark.createDataFrame(rows, ", ".join(f"t{i} long" for i in range(len(clocks))))
    columns = [virtual_column(F, F.col(f"t{i}"), origin, float(k)) for i, (origin, k) in enumerate(clocks)]
    got = [tuple(row) for row in frame.select(*columns).collect()]
    assert got == [tuple(virtual_ns(w, origin, float(k)) for w, (origin, k) in zip(row, clocks)) for row in rows]


@pytest.mark.spark
def test_a_dilated_run_is_analysed_in_virtual_time_alike_by_both_engines(spark, tmp_path):
    """A synthetic run, and the same run stretched 4 times on the wall clock (its time_dilation 4):
    both engines give the stretched one exactly the undilated results (latencies, series per
    second, the checks' counterexample times), because every stamp becomes virtual as it is read."""
    import json

    from spark_analysis.job import analyze

    from .synthetic import make_run

    make_run(str(tmp_path / "plain"), packets=3000, seed=5, loss=0.1, duplicate=0.02, duration_s=10)
    _stretch(str(tmp_path / "plain"), str(tmp_path / "slow"), 4)
    import shutil

    shutil.copytree(tmp_path / "slow", tmp_path / "slow-spark")
    got = {}
    for name, engine in (("plain", "auto"), ("slow", "auto"), ("slow-spark", "spark")):
        (r,) = analyze([str(tmp_path / name)], spark=spark, progress=False, engine=engine).values()
        r.pop("timings_s")
        assert r["run"].pop("time_dilation") == (1.0 if name == "plain" else 4.0)
        got[name] = json.loads(json.dumps(r).replace(str(tmp_path / name), "RUN"))
    lat = got["plain"]["messages"]["all"]["first_copy_latency"]
    assert lat["median_ms"] > 0 and got["plain"]["series"], "the run has latencies and a series to compare"
    assert got["slow"] == got["plain"]
    assert got["slow-spark"] == got["plain"]


# -- real runs at k = 1 and k = 4 ---------------------------------------------------------------

LINK = os.path.join(ROOT, "scenarios", "dilation-link.yaml")
SHORT = ("seed=3", "warmup=500ms", "duration=3s", "quiet=1500ms",
         "timeline=[{at: 1s, action: set_link, link: [a, b], direction: a_to_b, loss: 0.2, for: 1s}]")


@pytest.mark.network
@pytest.mark.spark
def test_the_same_scenario_at_k_1_and_k_4_gives_the_same_virtual_time_measures(no_leftovers, images, spark,
                                                                                tmp_path):
    """scenarios/dilation-link.yaml for 3 s: 1000-byte probes at 400 a second (3.4 Mbit/s on the
    wire) into a 2 Mbit/s link whose queue holds 100 ms, a fifth lost from 1 s to 2 s. At k = 4 the agent sends 100 a second of wall
    clock into 0.5 Mbit/s with a 400 ms queue, the run takes 4 times longer, and in virtual time
    the sends, the share the link carries and the queueing delay are those of k = 1."""
    import json

    import jsonschema

    from spark_analysis.job import analyze
    from testbed.run import Run
    from testbed.rundir import manifest_schema
    from testbed.scenario import load_scenario

    dirs, wall, judged = {}, {}, {}
    for k in (1, 4):
        # the run's own fidelity monitor says whether the machine kept up: a run it calls unfaithful
        # is made again, up to three times, and the measures below compare runs the testbed itself
        # trusts (CI once saw 6.94% of the wake-ups late by a tenth of their period while the full
        # suite ran: unfaithful). Degraded is allowed: a few wake-ups late (1.42% seen) while the
        # measures hold.
        for attempt in range(3):
            out = str(tmp_path / f"k{k}-{attempt}")
            scenario = load_scenario(LINK, overrides=SHORT + (f"time_dilation={k}",))
            manifest = Run(scenario, out_dir=out, progress=False).execute()
            assert manifest["status"] == "completed", manifest.get("error")
            assert manifest["time_dilation"] == k and isinstance(manifest["clock_origin_ns"], int)
            (r,) = analyze([out], spark=spark, progress=False).values()
            if r["fidelity"]["verdict"] != "unfaithful":
                break
        assert r["fidelity"]["verdict"] in ("faithful", "degraded"), r["fidelity"]["reasons"]
        wall[k], dirs[k], judged[k] = manifest, out, r
    for k, manifest in wall.items():
        # the scenario's seconds are virtual: the workload took 3 s × k of wall clock, the loss began
        # 1 s × k after t0, and the timeline records it at virtual 1 s
        assert (manifest["workload_end_ns"] - manifest["t0_ns"]) / 1e9 == pytest.approx(3 * k, rel=0.05)
        loss = next(a for a in manifest["timeline"] if a["action"] == "set_link" and " for " not in a["from"])
        assert (loss["t_ns"] - manifest["t0_ns"]) / 1e9 == pytest.approx(1 * k, abs=0.1 * k)
        assert loss["t_s"] == pytest.approx(1.0, abs=0.1)
        with open(os.path.join(dirs[k], "nodes", "a", "config.json")) as fh:
            assert json.load(fh)["time_dilation"] == k
    one, four = judged[1], judged[4]
    assert (one["run"]["time_dilation"], four["run"]["time_dilation"]) == (1.0, 4.0)
    for k, r in ((1, one), (4, four)):
        # 400 a second of virtual time while the agent sent: from its "workload started" to its
        # "quiesced", which is 3 virtual seconds give or take the time its start and stop signals
        # take to arrive on a busy machine (seen: 45 ms late at k = 1, 1212 sent)
        with open(os.path.join(dirs[k], "logs", "a.jsonl")) as fh:
            states = {e["state"]: e["t"] for e in map(json.loads, fh) if e["event"] == "state"}
        window = (states["quiesced"] - states["workload started"]) / 1e9 / k
        assert window == pytest.approx(3, abs=0.15), window
        assert r["messages"]["PROBE"]["sent"] == pytest.approx(400 * window, abs=4), "400 a second of virtual time"
    ratio = [r["messages"]["PROBE"]["delivery_ratio"] for r in (one, four)]
    assert 0.4 < ratio[0] < 0.7 and ratio[1] == pytest.approx(ratio[0], abs=0.05), ratio
    delay = [r["application"]["PROBE"]["delivery_latency"]["median_ms"] for r in (one, four)]
    # a full queue: its 100 ms and the bucket's 15,140 bytes at 2 Mbit/s (61 ms) ahead of each probe
    assert 130 < delay[0] < 190 and delay[1] == pytest.approx(delay[0], rel=0.1), delay
    # the bottleneck's own drops, read from its queue at the end, told beside the verdict: the
    # a → b queue dropped what the link could not carry, no more than a's probes that b missed
    for k, r in ((1, one), (4, four)):
        (queue,) = [q for q in wall[k]["cables"]["queues"] if (q["from"], q["to"]) == ("a", "b")]
        assert list(jsonschema.Draft202012Validator(manifest_schema()).iter_errors(wall[k])) == []
        missed = r["messages"]["PROBE"]["sent"] - r["messages"]["PROBE"]["received"]
        assert 0 < queue["dropped"] <= missed and queue["frames"] >= r["messages"]["PROBE"]["received"], (queue, missed)
        assert r["fidelity"]["shaping"]["dropped"] >= queue["dropped"]
