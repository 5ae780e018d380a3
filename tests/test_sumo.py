"""Vehicles and walkers from SUMO (`testbed mobility sumo`): a real street grid, real routes and a
real SUMO simulation, exported as an ns-2 trace that moves a radio segment's members."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from testbed.radio.mobility import load_trace


def _make(tmp_path, name="t.ns2", *extra):
    out = tmp_path / name
    res = subprocess.run([sys.executable, "-m", "testbed", "mobility", "sumo", str(out), "--size", "600",
                          "--duration", "60", "--cars", "4", "--walkers", "3", *extra],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def test_a_sumo_trace_moves_cars_then_walkers_through_the_streets_and_one_seed_gives_one_trace(tmp_path):
    out = _make(tmp_path)
    made = json.loads((tmp_path / "t.ns2.json").read_text())
    assert made["nodes"] == ["car0", "car1", "car2", "car3", "walker0", "walker1", "walker2"]
    assert made["streets"]["seed"] == 1 and "SUMO" in made["sumo_version"]
    names = [f"c{i}" for i in range(4)] + [f"w{i}" for i in range(3)]
    tracks = load_trace(str(out), None, names, "trace")
    assert set(tracks) == set(names)

    def speed(node):  # metres a second over the last 40 s
        a, b = np.array(tracks[node].at(20)), np.array(tracks[node].at(60))
        return float(np.abs(a - b).sum()) / 40  # along streets: Manhattan distance

    cars, walkers = [speed(n) for n in names[:4]], [speed(n) for n in names[4:]]
    assert min(cars) > 2.5 and max(walkers) < 2.0, (cars, walkers)
    for node in names:  # everyone stays in the grid
        for t in (0, 30, 60):
            x, y, _ = tracks[node].at(t)
            assert -20 <= x <= 620 and -20 <= y <= 620, (node, t, x, y)
    again = _make(tmp_path, "again.ns2")
    assert again.read_text() == out.read_text()
    other = _make(tmp_path, "other.ns2", "--seed", "2")
    assert other.read_text() != out.read_text()


@pytest.mark.parametrize("args, message", [
    (["--size", "-5"], "--size -5 is out of range"),
    (["--block", "400", "--size", "600"], "fewer than 3 streets"),
    (["--cars", "0", "--walkers", "0"], "nothing would move"),
    (["--seed", "0"], "--seed 0 is out of range"),
    (["--duration", "nan"], "--duration nan is out of range"),
])
def test_bad_sumo_arguments_exit_2_with_what_is_allowed_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "bad.ns2"
    res = subprocess.run([sys.executable, "-m", "testbed", "mobility", "sumo", str(out), *args],
                         capture_output=True, text=True)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_segment_moved_by_sumo_gets_its_trace_from_the_runs_seed_made_once_and_cached(lab_factory, tmp_path,
                                                                                        monkeypatch):
    from testbed.radio.sumo import Streets, cached
    from testbed.topology import parse_topology_text

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    topo = parse_topology_text(
        "kinds: {car: {}, walker: {}}\n"
        "generate: {shape: nodes, groups: {c: {count: 2, kind: car}, w: {count: 2, kind: walker}}}\n"
        "radio:\n  air: {members: [car, walker], range: 250m,\n"
        "        trace: {sumo: {size: 500, cars: 2, walkers: 2, duration: 60}}}\n", "sumo.yaml")
    lab = lab_factory(topo, seed=7)
    made = lab.media_manifest()["radio"]["air"]["trace"]["made"]
    assert made["seed"] == 7 and made["path"].startswith(str(tmp_path / "cache"))
    expected = load_trace(made["path"], "ns2", ["c1", "c2", "w1", "w2"], "trace")
    assert lab.position("c2") == expected["c2"].at(0.0)
    assert cached(Streets(size_m=500, cars=2, walkers=2, duration_s=60, seed=7)) == made["path"]  # no second run
    assert len(list((tmp_path / "cache" / "testbed" / "sumo").glob("*.ns2"))) == 1


@pytest.mark.parametrize("trace, where, message", [
    ("{sumo: {cars: 2, walkers: 1}}", "radio.air.trace.sumo", "the segment has 4 members"),
    ("{sumo: {size: -1, cars: 2, walkers: 2}}", "radio.air.trace.sumo.size", "out of range"),
    ("{sumo: {cars: 2.5, walkers: 2}}", "radio.air.trace.sumo.cars", "whole number"),
    ("{sumo: {cars: 2, walkers: 2, speed: 3}}", "radio.air.trace.sumo.speed", "unknown field"),
    ("{sumo: {cars: 2, walkers: 2}, file: x.ns2}", "radio.air.trace.sumo", "not both"),
])
def test_bad_sumo_traces_in_a_topology_are_refused_with_line_and_field(trace, where, message):
    from testbed.errors import ValidationError
    from testbed.topology import parse_topology_text

    with pytest.raises(ValidationError) as err:
        parse_topology_text("kinds: {car: {}, walker: {}}\n"
                            "generate: {shape: nodes, groups: {c: {count: 2, kind: car}, w: {count: 2, kind: walker}}}\n"
                            f"radio:\n  air: {{members: [car, walker], range: 250m, trace: {trace}}}\n", "bad.yaml")
    assert err.value.field == where and message in err.value.message, str(err.value)
    assert err.value.line is not None and err.value.allowed


def test_a_sumo_trace_is_no_file_the_run_reads_or_uploads_its_settings_are_the_topologys(tmp_path):
    from testbed.remote.inputs import scenario_inputs
    from testbed.scenario import parse_scenario_text

    (tmp_path / "t.yaml").write_text(
        "kinds: {car: {}, walker: {}}\n"
        "generate: {shape: nodes, groups: {c: {count: 1, kind: car}, w: {count: 1, kind: walker}}}\n"
        "radio:\n  air: {members: [car, walker], range: 250m, trace: {sumo: {size: 500, cars: 1, walkers: 1}}}\n")
    (tmp_path / "s.yaml").write_text("topology: t.yaml\n")
    scenario = parse_scenario_text("topology: t.yaml\n", str(tmp_path / "s.yaml"))
    assert [what for what, _ in scenario.files()] == ["scenario", "topology"]  # the experiment's fingerprint
    # a remote run uploads the scenario and the topology, and makes the SUMO trace there
    assert sorted(rel for _, rel in scenario_inputs(str(tmp_path / "s.yaml"), scenario).files) == ["s.yaml", "t.yaml"]
