"""The radio medium for real: range, loss at three distances, moves, random waypoint checked in the
captures against the recorded neighbour graph, airtime, and the bad declarations refused.

Pure tests first (declarations, schema, determinism); the network tests build real labs with
Docker nodes on a radio bridge and count what arrives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from testbed.errors import ValidationError
from testbed.topology import parse_topology_text

from .conftest import ROOT
from .helpers import binomial_interval, finish, run_probe, start_probe

LINE = """
nodes:
  n1: {position: [0, 0]}
  n2: {position: [80, 0]}
  n3: {position: [160, 0]}
  n4: {position: [240, 0]}
radio:
  air: {members: [n1, n2, n3, n4], range: 100m}
"""


# -- declarations -----------------------------------------------------------------------------------

def test_a_radio_segment_is_one_subnet_with_wlan_interfaces_and_round_trips():
    topo = parse_topology_text(LINE + "  mesh: {members: ['n1:radio1', n2], range: 1km}\n", "line.yaml")
    air = topo.radio["air"]
    assert air.range_m == 100 and air.members == {"n1": "wlan0", "n2": "wlan0", "n3": "wlan0", "n4": "wlan0"}
    assert topo.radio["mesh"].members == {"n1": "radio1", "n2": "wlan1"}
    subnets = {str(e.address.network) for n in ("n1", "n2", "n3", "n4") for e in topo.interfaces(n)
               if e.interface == "wlan0"}
    assert len(subnets) == 1
    assert topo.nodes["n2"].position == (80.0, 0.0, 0.0)
    assert topo.link_between("n1", "air") is None  # a membership is no cable: set_link cannot take it
    again = parse_topology_text(__import__("yaml").safe_dump(topo.to_dict()), "again.yaml")
    assert again.to_dict() == topo.to_dict()


def test_a_gateway_sits_on_the_radio_and_on_a_wired_link():
    topo = parse_topology_text(
        "nodes: {a: {position: [0, 0]}, gw: {position: [10, 0]}, srv: {}}\nlinks: [[gw, srv]]\n"
        "radio: {air: {members: [a, gw], range: 50}}\n", "gw.yaml")
    assert [e.interface for e in topo.interfaces("gw")] == ["eth0", "wlan0"]
    routes = {str(r.destination): r.via for r in topo.routes["srv"]}
    assert str(topo.radio["air"].members) and len(routes) == 1  # srv reaches the radio subnet via gw


@pytest.mark.parametrize("text, where, message", [
    ("nodes: {a: {}, b: {position: [1, 1]}}\nradio: {air: {members: [a, b], range: 10}}\n",
     "radio.air.members[0]", "without a position"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: -5}}\n", "radio.air.range", "negative"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a]}}\n", "radio.air.range", "needs a range"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a, zz], range: 5}}\n", "radio.air.members[1]",
     "unknown node or kind 'zz'"),
    ("nodes: {a: {position: [0, 'north']}}\nradio: {air: {members: [a], range: 5}}\n", "nodes.a.position[1]",
     "not a distance"),
    ("nodes: {a: {position: [0, 0]}, b: {position: [1, 1]}}\nradio: {air: {members: [a], range: 5}}\n",
     "nodes.b.position", "on no radio segment"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, loss: {model: friis}}}\n",
     "radio.air.loss.model", "unknown loss model"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, loss: {model: log-distance, "
     "sigma: -1}}}\n", "radio.air.loss.sigma", "out of range"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, loss: {model: table, "
     "table: [[10, 0.5], [5, 0.9]]}}}\n", "radio.air.loss.table[1][0]", "does not increase"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, bitrate: fast}}\n",
     "radio.air.bitrate", "not a rate"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, tick: 1ms}}\n", "radio.air.tick",
     "shorter than 10ms"),
    ("nodes: {a: {mobility: {model: random-waypoint, area: [[0, 0], [0, 10]], speed: 1}}}\n"
     "radio: {air: {members: [a], range: 5}}\n", "nodes.a.mobility.area", "x0 < x1"),
    ("nodes: {a: {mobility: {model: random-waypoint, area: [100, 100], speed: [5, 1]}}}\n"
     "radio: {air: {members: [a], range: 5}}\n", "nodes.a.mobility.speed", "above the maximum"),
    ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a, a], range: 5}}\n", "radio.air.members[1]",
     "already a member"),
    ("nodes: {a: {position: [0, 0]}}\nswitches: {air: {}}\nradio: {air: {members: [a], range: 5}}\n",
     "radio.air", "already the name of a switch"),
])
def test_bad_radio_declarations_are_refused_with_line_and_field(text, where, message):
    with pytest.raises(ValidationError) as err:
        parse_topology_text(text, "bad.yaml")
    assert err.value.field == where, str(err.value)
    assert message in err.value.message, str(err.value)
    assert err.value.line is not None and err.value.allowed


@pytest.mark.parametrize("trace, line, message", [
    ("$node_(0) set X_ 1.0\n$node_(0) set Y_ 2.0\n$node_(5) set X_ 3.0\n", 3, "index 5"),
    ("$node_(0) set X_ 1.0\n$node_(0) set Y_ 2.0\n$ns_ at 1.0 \"$node_(0) setdest 10 10\"\n", 3, ""),
    ("time,node,x,y\n0,a,0,0\n1,zz,5,5\n", 3, "zz"),
    ("time,node,x,y\n0,a,0,zero\n", 2, ""),
])
def test_bad_traces_are_refused_naming_the_trace_file_and_line(tmp_path, trace, line, message):
    path = tmp_path / "moves.trace"
    path.write_text(trace)
    topo_file = tmp_path / "t.yaml"
    topo_file.write_text("nodes: {a: {}, b: {}}\nradio: {air: {members: [a, b], range: 5, trace: moves.trace}}\n")
    from testbed.topology import load_topology

    with pytest.raises(ValidationError) as err:
        load_topology(str(topo_file))
    assert err.value.file.endswith("moves.trace") and err.value.line == line, str(err.value)
    assert message in str(err.value)


def test_a_trace_places_and_moves_its_nodes(tmp_path):
    (tmp_path / "moves.ns2").write_text('$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n$node_(1) set X_ 50.0\n'
                                        '$node_(1) set Y_ 0.0\n$ns_ at 2.0 "$node_(1) setdest 150.0 0.0 10.0"\n')
    (tmp_path / "t.yaml").write_text("nodes: {a: {}, b: {}}\nradio: {air: {members: [a, b], range: 5, "
                                     "trace: moves.ns2}}\n")
    from testbed.radio.mobility import load_trace
    from testbed.topology import load_topology

    topo = load_topology(str(tmp_path / "t.yaml"))
    tracks = load_trace(topo.radio["air"].trace.path, None, ["a", "b"], "trace")
    assert tracks["b"].at(0)[:2] == (50.0, 0.0) and tracks["b"].at(7)[:2] == (100.0, 0.0)
    assert tracks["b"].at(100)[:2] == (150.0, 0.0)


def test_the_schema_accepts_the_shipped_radio_topologies():
    import jsonschema
    import yaml

    from testbed.schema import topology_schema

    for name in ("radio-line.yaml", "manet-rwp.yaml"):
        with open(os.path.join(ROOT, "topologies", name)) as handle:
            jsonschema.validate(yaml.safe_load(handle), topology_schema())


def test_log_distance_probability_is_half_where_the_margin_is_zero():
    from testbed.radio.propagation import LossModel

    model = LossModel(model="log-distance", exponent=3, reference_loss_db=40, sigma_db=4, tx_power_dbm=14,
                      sensitivity_dbm=-90)
    d50 = 10 ** ((14 + 90 - 40) / 30)
    p = model.probability(np.array([1.0, d50, 1000.0]))
    assert p[0] > 0.999 and abs(p[1] - 0.5) < 1e-9 and p[2] < 0.001
    step = LossModel(model="log-distance", sigma_db=0).probability(np.array([10.0, 1000.0]))
    assert list(step) == [1.0, 0.0]


def test_same_seed_same_trajectories_in_another_process():
    """Random waypoint from the scenario's seed: two processes compute the same positions."""
    code = ("from testbed.radio.mobility import random_waypoint as r; "
            "t = r(7, 'm1', ((0, 0), (400, 400)), (1, 10), (0, 2)); "
            "print([tuple(round(c, 6) for c in t.at(s)) for s in range(0, 300, 7)])")
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and len(set(outs[0].split("), ("))) > 10
    other = subprocess.run([sys.executable, "-c", code.replace("r(7,", "r(8,")], capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout
    assert other != outs[0]


# -- on a real network -------------------------------------------------------------------------------

def _broadcast(lab, sender, receivers, port, count=200, pps=1000):
    """Datagrams each receiver got of `count` broadcasts from `sender` on its radio subnet."""
    address = lab.address(sender)
    procs = {r: start_probe(lab, r, "udp-recv", port, 1.5, 3) for r in receivers}
    run_probe(lab, sender, "udp-send", str(address.network.broadcast_address), port, count, pps)
    return {r: finish(p)["unique"] for r, p in procs.items()}


def test_a_line_hears_only_its_neighbours(lab_factory):
    lab = lab_factory(parse_topology_text(LINE, "line.yaml"))
    assert _broadcast(lab, "n1", ["n2", "n3", "n4"], 6001) == {"n2": 200, "n3": 0, "n4": 0}
    assert _broadcast(lab, "n4", ["n1", "n2", "n3"], 6002) == {"n1": 0, "n2": 0, "n3": 200}
    assert "1 received" in lab.exec("n2", f"ping -c1 -W1 {lab.address('n3').ip}", check=False)
    assert "0 received" in lab.exec("n1", f"ping -c1 -W1 {lab.address('n3').ip}", check=False)
    with open(os.path.join(lab.node_dirs["n3"], "position.json")) as handle:
        assert json.load(handle)["x"] == 160.0
    lab.partition([["n1"], ["n2", "n3", "n4"]])  # partitions drop at the radio ports too
    assert _broadcast(lab, "n1", ["n2"], 6008, count=50) == {"n2": 0}
    lab.heal()
    assert _broadcast(lab, "n1", ["n2"], 6009, count=50) == {"n2": 50}


def test_delivery_at_three_distances_is_inside_the_binomial_interval_of_the_model(lab_factory):
    """Log-distance path loss with shadowing: 2,000 broadcasts, three receivers at distances where
    the model gives about 0.85, 0.5 and 0.15; each count inside the 99.9% interval."""
    from testbed.radio.propagation import LossModel

    model = LossModel(model="log-distance", exponent=3, reference_loss_db=40, sigma_db=4, tx_power_dbm=14,
                      sensitivity_dbm=-90)
    d50 = 10 ** ((14 + 90 - 40) / 30)  # margin 0 dB: p = 0.5
    distances = {"near": d50 / 10 ** (4.15 / 30), "mid": d50, "far": d50 * 10 ** (4.15 / 30)}
    nodes = "".join(f"  {n}: {{position: [0, {d:.3f}]}}\n" for n, d in distances.items())
    lab = lab_factory(parse_topology_text(
        "nodes:\n  s: {position: [0, 0]}\n" + nodes +
        "radio:\n  air:\n    members: [s, near, mid, far]\n    range: 500m\n"
        "    loss: {model: log-distance, exponent: 3, reference_loss: 40, sigma: 4, tx_power: 14, "
        "sensitivity: -90}\n", "loss.yaml"))
    got = _broadcast(lab, "s", list(distances), 6003, count=2000, pps=2000)
    for node, distance in distances.items():
        p = float(model.probability(np.array([distance]))[0])
        lo, hi = binomial_interval(2000, p)
        assert lo <= got[node] <= hi, f"{node} at {distance:.1f} m: {got[node]} of 2000, model p={p:.3f} [{lo}, {hi}]"
    assert 0.8 < float(model.probability(np.array([distances["near"]]))[0]) < 0.9


def test_a_move_changes_reachability_within_one_tick(lab_factory):
    lab = lab_factory(parse_topology_text(
        "nodes: {a: {position: [0, 0]}, b: {position: [300, 0]}}\n"
        "radio: {air: {members: [a, b], range: 100, tick: 200ms}}\n", "move.yaml"))
    assert _broadcast(lab, "a", ["b"], 6004, count=50) == {"b": 0}
    lab.move("b", (50.0, 0.0, 0.0))  # at once
    assert _broadcast(lab, "a", ["b"], 6005, count=50) == {"b": 50}
    with open(os.path.join(lab.node_dirs["b"], "position.json")) as handle:
        assert json.load(handle)["x"] == 50.0
    lab.move("b", (300.0, 0.0, 0.0), speed=100.0)  # out of range after 0.5 s, applied by the next tick
    time.sleep(0.5 + 0.2 + 0.1)
    assert lab.position("b")[0] > 100
    assert _broadcast(lab, "a", ["b"], 6006, count=50) == {"b": 0}


def test_airtime_caps_a_sender_at_the_bitrate_and_counts_queue_drops(lab_factory):
    lab = lab_factory(parse_topology_text(
        "nodes: {a: {position: [0, 0]}, b: {position: [10, 0]}}\n"
        "radio: {air: {members: [a, b], range: 100, bitrate: 250kbit, queue: 20}}\n", "air.yaml"))
    bcast = str(lab.address("a").network.broadcast_address)
    receiver = start_probe(lab, "b", "udp-rate", 6007, 1)
    run_probe(lab, "a", "udp-blast", bcast, 6007, 4, 1)  # offer 1 Mbit/s of frames for 4 s
    result = finish(receiver)
    assert 0.225 <= result["wire_mbit"] <= 0.275, result
    lab.media["radio"].finish()
    airtime = lab.media_manifest()["radio"]["air"]["airtime"]["a"]
    assert airtime["dropped"] > 0.5 * airtime["frames"], airtime  # three quarters of what was offered


def test_random_waypoint_receptions_match_the_recorded_neighbour_graph(no_leftovers, images, tmp_path):
    """A whole run: probe broadcasts between random-waypoint nodes; every captured reception
    happened while the recorded neighbour graph had the pair in range."""
    import pandas as pd

    from testbed.run import Run
    from testbed.scenario import parse_scenario_text

    from .pcaps import messages

    topo = tmp_path / "rwp.yaml"
    topo.write_text("""
kinds:
  walker: {mobility: {model: random-waypoint, area: [[0, 0], [300, 300]], speed: [20, 40], pause: 0s}}
nodes: {w1: {kind: walker}, w2: {kind: walker}, w3: {kind: walker}, w4: {kind: walker}, w5: {kind: walker},
        w6: {kind: walker}}
radio:
  air: {members: [walker], range: 120m, tick: 250ms}
""")
    scenario = parse_scenario_text(f"""
topology: {topo}
seed: 3
warmup: 1s
duration: 8s
quiet: 2s
workload:
  defaults: {{role: probe, params: {{rate: 40, size: 32, to: broadcast}}}}
""", str(tmp_path / "scenario.yaml"))
    run = Run(scenario, out_dir=str(tmp_path / "run"), progress=False)
    manifest = run.execute()
    assert manifest["status"] == "completed", manifest.get("error") or manifest.get("problems")
    links = pd.read_parquet(os.path.join(run.dir, "radio", "links.parquet"))
    positions = pd.read_parquet(os.path.join(run.dir, "radio", "positions.parquet"))
    ticks = np.sort(positions["t_ns"].unique())
    assert len(ticks) >= 8 / 0.25 - 2 and set(positions["node"]) == {f"w{i}" for i in range(1, 7)}
    in_range = {t: set(zip(g["src"], g["dst"])) for t, g in links.groupby("t_ns")}
    names = {v: k for k, v in manifest["node_ids"].items()}
    checked, changes = 0, sum(in_range.get(a, set()) != in_range.get(b, set()) for a, b in zip(ticks, ticks[1:]))
    # A tick's rules change at one instant while its nftables transaction runs, between the
    # tick's from_ns and t_ns: a frame stamped in that window may have passed under either tick's
    # rules (and one stamped just after t_ns may have crossed the bridge just before it).
    starts = positions.groupby("t_ns")["from_ns"].min().reindex(ticks).to_numpy()
    for receiver in names.values():
        for packet in messages(os.path.join(run.dir, "pcap", f"{receiver}.pcap")):
            sender = names.get(packet.header.sender)
            if sender in (None, receiver):
                continue
            k = np.searchsorted(ticks, packet.t_ns, side="right") - 1
            candidates = {k}
            if k + 1 < len(ticks) and packet.t_ns >= starts[k + 1]:
                candidates.add(k + 1)
            if k >= 1 and packet.t_ns - ticks[k] < 2_000_000:
                candidates.add(k - 1)
            allowed = set().union(*(in_range.get(ticks[c], set()) for c in candidates if c >= 0))
            assert (sender, receiver) in allowed, f"{receiver} got a frame from {sender} out of range"
            checked += 1
    assert checked > 200 and changes >= 3, (checked, changes)
    assert manifest["radio"]["air"]["ticks"] >= len(ticks)
    import jsonschema

    from testbed.rundir import manifest_schema

    assert list(jsonschema.Draft202012Validator(manifest_schema()).iter_errors(manifest)) == []


def test_an_agent_reads_the_position_the_medium_writes_and_never_a_torn_one(tmp_path):
    from agents.runtime import read_position
    from testbed.media.radio import POSITION_RECORD

    assert read_position(str(tmp_path)) is None  # on no radio segment
    path = tmp_path / "position.json"
    path.write_bytes(b'{"seq": 3, "segment": "air", "x": 1.5, "y": -2.0, "z": 0.0, "t_s": 4.0, "end": 3}'
                     .ljust(POSITION_RECORD - 1) + b"\n")
    position = read_position(str(tmp_path))
    assert (position.x, position.y, position.segment, position.t_s) == (1.5, -2.0, "air", 4.0)
    path.write_bytes(b'{"seq": 4, "segment": "air", "x": 9.5, "y": -2.0, "z": 0.0, "t_s": 4.0, "end": 3}')
    with pytest.raises(OSError):
        read_position(str(tmp_path))


def test_a_killed_runs_radio_tables_become_parquet_without_the_torn_last_line(tmp_path):
    import pandas as pd

    from testbed.radio.record import Recorder, to_parquet

    recorder = Recorder(str(tmp_path))
    recorder.tick(10, 9, 0.0, "air", ["a", "b"], np.array([[0.0, 0, 0], [5.0, 0, 0]]), np.array(["a"], dtype=object),
                  np.array(["b"], dtype=object), np.array([5.0]), np.array([0.25]))
    for handle in recorder._files.values():
        handle.write("20,1.0,air,a,")  # the run was killed mid-line
        handle.close()
    assert to_parquet(str(tmp_path)) is None
    positions = pd.read_parquet(tmp_path / "radio" / "positions.parquet")
    links = pd.read_parquet(tmp_path / "radio" / "links.parquet")
    assert list(positions["node"]) == ["a", "b"] and positions["t_ns"].dtype == np.int64
    assert links.to_dict("records") == [{"t_ns": 10, "from_ns": 9, "t_s": 0.0, "segment": "air", "src": "a", "dst": "b",
                                         "distance_m": 5.0, "p": 0.25}]
    assert not os.path.exists(tmp_path / "radio" / "links.csv")


def test_radio_delay_needs_netem_and_is_refused_or_accepted_like_a_wired_one():
    from testbed.capabilities import Capabilities, Check, _backends
    from testbed.errors import CapabilityError
    from testbed.media.radio import Radio
    from testbed.names import lab_names
    from testbed.shaping import choose

    def caps(netem):
        checks = {name: Check(name, ok) for name, ok in (("netem", netem), ("nftables", True),
                                                         ("nftables dup", True), ("tc tbf", True))}
        return Capabilities(checks=checks, backends=_backends(checks))

    text = ("nodes: {a: {position: [0, 0]}}\nradio: {air: {members: [a], range: 5, bitrate: 250kbit, "
            "delay: 5ms, jitter: 1ms}}\n")
    topo = parse_topology_text(text, "delay.yaml")
    without = caps(False)
    with pytest.raises(CapabilityError) as err:
        Radio(topo, lab_names("x"), choose(without), without).check(())
    assert "delay, jitter" in str(err.value) and "sch_netem" in str(err.value)
    assert Radio(topo, lab_names("x"), choose(without), without).check(("delay", "jitter")) == {"delay", "jitter"}
    with_netem = caps(True)
    assert Radio(topo, lab_names("x"), choose(with_netem), with_netem).check(()) == frozenset()


@pytest.mark.network
def test_a_radio_lab_whose_containers_do_not_start_says_why_and_leaves_nothing(lab_factory, monkeypatch):
    """The engine failing to start the containers (it stalled once on a 60-node lab): the build's
    error reaches the caller, not a teardown error of the radio, whose ports were never made."""
    from testbed.errors import TestbedError
    from testbed.runtimes.docker import DockerRuntime

    def refuse(self, nodes, node_dirs, envs, *args, **kwargs):
        raise TestbedError("could not start containers:\n  a: the engine did not answer")

    monkeypatch.setattr(DockerRuntime, "create", refuse)
    topo = parse_topology_text("nodes: {a: {position: [0, 0]}, b: {position: [50, 0]}}\n"
                               "radio:\n  air: {members: [a, b], range: 100m, bitrate: 100kbit}\n", "half.yaml")
    with pytest.raises(TestbedError) as failed:
        lab_factory(topo)
    assert "the engine did not answer" in str(failed.value) and "teardown" not in str(failed.value), failed.value
