"""The 802.11 channel (`channel: wifi`): ns-3 in the loop, for real.

Pure tests first (declarations, the propagation's expected delivery); the network tests build
real labs whose members' frames cross ns-3's 802.11 devices on one shared channel, and set the
same layouts on the kernel medium beside them: hidden terminals collide on the channel and not
on the kernel medium, saturating broadcasters share the channel's capacity where the kernel
medium gives each its own, nothing arrives beyond the range, and the channel's statistics add up
with the captures."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from testbed.errors import ValidationError
from testbed.topology import parse_topology_text

from .helpers import ROOT, finish, run_probe, start_probe

A = "nodes: {a: {position: [0, 0]}, b: {position: [10, 0]}}\n"


def _segment(fields: str):
    return parse_topology_text(A + f"radio: {{air: {{members: [a, b], range: 100m, {fields}}}}}\n",
                               "wifi.yaml").radio["air"]


# -- declarations -----------------------------------------------------------------------------------

def test_a_wifi_segment_has_the_standards_rates_by_default_and_keeps_the_kernel_loss_model():
    plain = _segment("channel: wifi")
    assert (plain.channel, plain.wifi.standard, plain.wifi.data_rate_mbit, plain.wifi.basic_rate_mbit) == \
        ("wifi", "802.11b", 11.0, 1.0)
    assert plain.wifi.propagation.model == "range" and plain.wifi.mode(1.0) == "DsssRate1Mbps"
    a = _segment("channel: wifi, standard: 802.11a")
    assert (a.wifi.data_rate_mbit, a.wifi.basic_rate_mbit, a.wifi.mode(54.0)) == (54.0, 6.0, "OfdmRate54Mbps")
    lossy = _segment("channel: wifi, data_rate: 5.5Mbps, loss: {model: log-distance, exponent: 3, "
                     "reference_loss: 40, sigma: 4, tx_power: 21, sensitivity: -90}")
    p = lossy.wifi.propagation
    assert (p.model, p.exponent, p.sigma_db, p.tx_power_dbm, p.sensitivity_dbm) == ("log-distance", 3, 4, 21, -90)
    assert lossy.wifi.data_rate_mbit == 5.5
    # the same segment on the kernel medium expects the same delivery at every distance in range,
    # at the PHY's threshold: -90 dBm is 0.4 dB under 802.11b's noise floor plus preamble
    # detection's 4 dB (-174 + 10 log10(22 MHz) + 7 + 4 = -89.58 dBm), which is the threshold then
    assert lossy.wifi.threshold_dbm == pytest.approx(-89.576, abs=1e-3)
    assert _segment("channel: wifi, loss: {model: log-distance, sensitivity: -85}").wifi.threshold_dbm == -85
    kernel = _segment("loss: {model: log-distance, exponent: 3, reference_loss: 40, sigma: 4, tx_power: 21, "
                      f"sensitivity: {lossy.wifi.threshold_dbm}}}")
    d = np.linspace(1, 150, 300)
    assert np.allclose(lossy.delivery(d), kernel.delivery(d)) and kernel.channel == "kernel"
    # what a topology says comes back from its dictionary form
    again = parse_topology_text(A + "radio: {air: " + _flow(lossy.to_dict()) + "}\n", "again.yaml").radio["air"]
    assert again.wifi == lossy.wifi


def _flow(value) -> str:
    import json

    return json.dumps(value)


@pytest.mark.parametrize("fields, where, message", [
    ("channel: radio", "radio.air.channel", "unknown channel"),
    ("channel: wifi, standard: 802.11z", "radio.air.standard", "unknown standard"),
    ("channel: wifi, data_rate: 54Mbps", "radio.air.data_rate", "not a rate of 802.11b"),
    ("channel: wifi, basic_rate: 100kbit", "radio.air.basic_rate", "not a rate of 802.11b"),
    ("channel: wifi, data_rate: fast", "radio.air.data_rate", "not a rate"),
    ("channel: wifi, bitrate: 1mbit", "radio.air.bitrate", "kernel channel"),
    ("channel: wifi, delay: 5ms", "radio.air.delay", "kernel channel"),
    ("standard: 802.11b", "radio.air.standard", "channel: wifi"),
    ("propagation: friis", "radio.air.propagation", "channel: wifi"),
    ("channel: wifi, loss: {model: table, table: [[0, 1]]}", "radio.air.loss", "table"),
    ("channel: wifi, loss: {model: log-distance}, propagation: friis", "radio.air.propagation", "both"),
    ("channel: wifi, propagation: cost231", "radio.air.propagation", "unknown propagation model"),
    ("channel: wifi, propagation: {model: friis, tx_power: .nan}", "radio.air.propagation.tx_power",
     "out of range"),
    ("channel: wifi, propagation: {model: log-distance, exponent: -3}", "radio.air.propagation.exponent",
     "out of range"),
    ("channel: wifi, propagation: {model: friis, tx_power: 1.0e+30}", "radio.air.propagation.tx_power",
     "out of range"),
    ("channel: wifi, propagation: {model: friis, exponent: 2}", "radio.air.propagation.exponent",
     "unknown field"),
    ("channel: wifi, propagation: {model: two-ray, height: '1m'}", "radio.air.propagation.height",
     "expected a number"),
    ("channel: wifi, propagation: {model: friis, fading: {model: nakagami, m: 0}}",
     "radio.air.propagation.fading.m", "out of range"),
    ("channel: wifi, propagation: {model: friis, fading: rician}", "radio.air.propagation.fading",
     "unknown fading"),
])
def test_bad_wifi_settings_are_refused_with_line_and_field(fields, where, message):
    with pytest.raises(ValidationError) as err:
        _segment(fields)
    assert err.value.field == where, str(err.value)
    assert message in err.value.message, str(err.value)
    assert err.value.line is not None and err.value.allowed


def test_the_expected_delivery_follows_each_propagation_model():
    from testbed.radio.wifi import Propagation

    d = np.array([1.0, 10.0, 100.0, 1000.0])
    assert list(Propagation().probability(d, 2.412e9)) == [1, 1, 1, 1]  # range: everything in range
    friis = Propagation(model="friis", tx_power_dbm=16, sensitivity_dbm=-90)
    # Friis at 2.412 GHz: 40.1 dB at 1 m, +20 dB a decade; the margin 106 dB runs out near 2 km
    edge = 10 ** ((16 + 90 - 20 * math.log10(4 * math.pi * 2.412e9 / 299_792_458.0)) / 20)
    assert list(friis.probability(np.array([0.99 * edge, 1.01 * edge]), 2.412e9)) == [1.0, 0.0]
    two_ray = Propagation(model="two-ray", tx_power_dbm=16, sensitivity_dbm=-90, height_m=1.5)
    assert two_ray.mean_rx_dbm(np.array([1000.0]), 2.412e9)[0] < friis.mean_rx_dbm(np.array([1000.0]), 2.412e9)[0]
    # Nakagami-m fading spreads the step: with m = 1 (Rayleigh) the mean-power edge delivers e^-1
    rayleigh = Propagation(model="friis", tx_power_dbm=16, sensitivity_dbm=-90, fading="nakagami", nakagami_m=1)
    assert rayleigh.probability(np.array([edge]), 2.412e9)[0] == pytest.approx(math.exp(-1), abs=1e-6)
    steep = Propagation(model="friis", tx_power_dbm=16, sensitivity_dbm=-90, fading="nakagami", nakagami_m=20)
    near, far = steep.probability(np.array([0.7 * edge, 1.4 * edge]), 2.412e9)
    assert near > 0.99 and far < 0.01
    shadowed = Propagation(model="log-distance", sigma_db=4, fading="nakagami", nakagami_m=1)
    values = shadowed.probability(np.array([10.0, 30.0, 100.0, 300.0]), 2.412e9)
    assert all(0 <= v <= 1 for v in values) and list(values) == sorted(values, reverse=True)


def test_more_members_than_the_benchmark_found_faithful_are_warned_of_before_anything_is_made():
    from testbed.media.channels.wifi import capacity_warnings

    assert capacity_warnings(60, 1, 2) == [] and capacity_warnings(200, 2, 2) == []
    (warning,) = capacity_warnings(200, 1, 2)
    assert "stayed faithful up to 60 members at time_dilation 1" in warning and "time_dilation 2" in warning
    assert "measured up to 200" in capacity_warnings(300, 4, 2)[0]
    assert capacity_warnings(200, 1, 16) == []  # more cores than the benchmark's: its limits are lower bounds


# -- on real networks -------------------------------------------------------------------------------

def test_the_thesis_scale_lab_is_warned_of_by_its_check_which_makes_nothing(no_leftovers, monkeypatch):
    """The warning reaches a real lab's check (what `testbed run` and `up` print before they build):
    the sumo topologies' 200 members on the channel at time dilation 1, and none at 2."""
    from testbed.network import Lab
    from testbed.topology import load_topology

    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # the benchmark's machine, whatever this one is
    topo = load_topology(os.path.join(ROOT, "topologies", "deeco-sumo-200-wifi.yaml"))
    lab = Lab(topo)
    lab.check()
    (warning,) = [w for w in lab.warnings if "802.11 channel" in w]
    assert warning.startswith("200 members on the 802.11 channel at time_dilation 1"), warning
    slower = Lab(topo, time_dilation=2)
    slower.check()
    assert not [w for w in slower.warnings if "802.11 channel" in w], slower.warnings


def _counts(lab, senders, receiver, count, pps, base_port=7300, first=10):
    """Datagrams `receiver` got from each sender, all sending `count` broadcasts at once as
    Poisson streams (periodic senders would collide always or never, by their phase). A receiver
    gives up `first` seconds after it started if nothing came (where none is expected, a few
    seconds beyond the senders' end)."""
    import subprocess

    from .helpers import PROBE, PYTHON

    procs = {s: start_probe(lab, receiver, "udp-recv", base_port + i, 2, first) for i, s in enumerate(senders)}
    senders_running = [lab.hosts[s].popen([PYTHON, PROBE, "udp-send", str(lab.address(s).network.broadcast_address),
                                           str(base_port + i), str(count), str(pps), str(i + 1)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                       for i, s in enumerate(senders)]
    for proc in senders_running:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    return {s: finish(procs[s])["unique"] for s in senders}


def _line(channel: str, extra: str = "") -> str:
    return ("nodes: {a: {position: [0, 0]}, b: {position: [90, 0]}, c: {position: [180, 0]}}\n"
            f"radio: {{air: {{members: [a, b, c], range: 100m{channel}{extra}}}}}\n")


def test_hidden_terminals_collide_on_the_wifi_channel_and_not_on_the_kernel_medium(lab_factory):
    """a and c cannot hear each other and both reach b: on the 802.11 channel their broadcasts
    overlap at b and are lost there (b's PHY counts the failed receptions); on the kernel medium
    every one arrives. Beyond the range nothing arrives (until a `move` brings the node in), a
    unicast ping crosses with its ACKs, and a partition holds on the channel as on the kernel
    medium."""
    # each sender keeps the 1 Mbit/s basic rate busy about a third of the time (1.2 ms a frame):
    # a frame survives at b when the other sender starts none within 1.2 ms either side of it,
    # e^(-300 × 0.0024) ≈ 0.49 of the time
    count, pps = 600, 300
    kernel = lab_factory(parse_topology_text(_line(""), "hidden-kernel.yaml"))
    on_kernel = _counts(kernel, ["a", "c"], "b", count, pps)
    kernel.stop()
    assert on_kernel == {"a": count, "c": count}
    lab = lab_factory(parse_topology_text(_line(", channel: wifi"), "hidden-wifi.yaml"))
    assert "1 received" in lab.exec("a", f"ping -c1 -W2 {lab.address('b').ip}", check=False)
    on_wifi = _counts(lab, ["a", "c"], "b", count, pps)
    far = start_probe(lab, "c", "udp-recv", 7399, 1, 3)
    run_probe(lab, "a", "udp-send", str(lab.address("a").network.broadcast_address), 7399, 50, 100)
    assert finish(far)["unique"] == 0  # 180 m: beyond the range
    lab.move("c", (60.0, 0.0, 0.0))  # the medium's move reaches ns-3's node at once
    assert _counts(lab, ["a"], "c", 50, 100, base_port=7394) == {"a": 50}
    lab.move("c", (180.0, 0.0, 0.0))
    lab.partition([["a"], ["b", "c"]])  # the channel drops the other group's frames itself
    assert _counts(lab, ["a"], "b", 50, 100, base_port=7390, first=4) == {"a": 0}
    lab.heal()
    assert _counts(lab, ["a"], "b", 50, 100, base_port=7392) == {"a": 50}
    lab.media["radio"].finish()
    stats = lab.media_manifest()["radio"]["air"]["wifi_statistics"]
    lost = count * 2 - sum(on_wifi.values())
    assert lost > 0.1 * count * 2, (on_wifi, stats["b"])
    failed = stats["b"]["phy_rx_error"] + sum(stats["b"]["phy_rx_drop"].values())
    assert failed >= 0.5 * lost, (lost, stats["b"])
    assert stats["b"]["partition_dropped"] >= 50, stats["b"]


def test_the_sensitivity_is_the_channels_reception_threshold(lab_factory):
    """Without shadowing, b (70 m: -85.4 dBm) is above the PHY's threshold (-89.6 dBm, see above)
    and under ns-3's default preamble detection (-82 dBm), c (105 m: -90.6 dBm) below it: every
    broadcast reaches b and none c, as the segment's expected delivery says (ns-3's default
    threshold had lost every frame to b as a failed preamble detection)."""
    topology = parse_topology_text(
        "nodes: {a: {position: [0, 0]}, b: {position: [70, 0]}, c: {position: [105, 0]}}\n"
        "radio: {air: {members: [a, b, c], range: 150m, channel: wifi, loss: {model: log-distance, "
        "exponent: 3, reference_loss: 40, sigma: 0, tx_power: 10, sensitivity: -90}}}\n", "threshold.yaml")
    assert list(topology.radio["air"].delivery(np.array([70.0, 105.0]))) == [1.0, 0.0]
    lab = lab_factory(topology)
    near, far = (start_probe(lab, node, "udp-recv", 7388, 1, 4) for node in ("b", "c"))
    run_probe(lab, "a", "udp-send", str(lab.address("a").network.broadcast_address), 7388, 50, 100)
    assert (finish(near)["unique"], finish(far)["unique"]) == (50, 0)


def test_saturating_broadcasters_share_the_channels_capacity(lab_factory):
    """Four senders in one neighbourhood each offer 1 Mbit/s of 1400-byte broadcasts: on the
    802.11b channel (broadcasts at the 1 Mbit/s basic rate, one transmission at a time) a
    listener gets at most the channel's broadcast capacity, about 0.94 Mbit/s of frames; on the
    kernel medium at the same bitrate each sender has its own airtime and it gets about four."""
    nodes = "".join(f"  s{i}: {{position: [{5 * i}, 0]}}\n" for i in range(4))
    members = "[listener, s0, s1, s2, s3]"

    def rate(channel_fields):
        lab = lab_factory(parse_topology_text(f"nodes:\n  listener: {{position: [0, 10]}}\n{nodes}"
                                              f"radio: {{air: {{members: {members}, range: 100m, queue: 50, "
                                              f"{channel_fields}}}}}\n", "saturate.yaml"))
        receiver = start_probe(lab, "listener", "udp-rate", 7400, 1)
        senders = [lab.hosts[f"s{i}"].popen([
            "/usr/bin/python3", os.path.join(os.path.dirname(__file__), "netprobe.py"), "udp-blast",
            str(lab.address("s0").network.broadcast_address), "7400", "2", "1"]) for i in range(4)]
        for proc in senders:
            proc.wait(timeout=60)
        got = finish(receiver)["wire_mbit"]
        lab.media["radio"].finish()
        manifest = lab.media_manifest()["radio"]["air"]
        lab.stop()
        return got, manifest

    on_kernel, _ = rate("bitrate: 1mbit")
    on_wifi, manifest = rate("channel: wifi, basic_rate: 1Mbps")
    assert on_kernel > 3.0, on_kernel
    assert 0.5 < on_wifi <= 1.0, on_wifi
    stats = manifest["wifi_statistics"]
    dropped = sum(stats[f"s{i}"]["mac_tx_drop"] + sum(stats[f"s{i}"]["mac_drop"].values()) for i in range(4))
    assert dropped > 0, stats  # the offered load did not fit: the MAC queues overflowed


def test_the_channels_statistics_add_up_with_the_captures(no_leftovers, images, tmp_path):
    """A whole run with captures: what each member's capture saw leave its interface is what ns-3
    took from it, and what it saw arrive is what ns-3 handed to it."""
    from testbed.run import Run
    from testbed.scenario import parse_scenario_text

    from .pcaps import frames

    (tmp_path / "t.yaml").write_text(
        "nodes: {a: {position: [0, 0]}, b: {position: [40, 0]}, c: {position: [80, 0]}}\n"
        "radio: {air: {members: [a, b, c], range: 60m, channel: wifi}}\n")
    scenario = parse_scenario_text(f"""
topology: {tmp_path / 't.yaml'}
seed: 2
warmup: 1s
duration: 5s
quiet: 2s
workload:
  defaults: {{role: probe, params: {{rate: 30, size: 200, to: broadcast}}}}
""", str(tmp_path / "scenario.yaml"))
    run = Run(scenario, out_dir=str(tmp_path / "run"), progress=False)
    manifest = run.execute()
    assert manifest["status"] == "completed", manifest.get("error") or manifest.get("problems")
    radio = manifest["radio"]["air"]
    assert radio["channel"] == "wifi" and radio["realtime_lag_ms"]["samples"] > 100
    for node in ("a", "b", "c"):
        stats = radio["wifi_statistics"][node]
        mac = radio["macs"][node]
        sent, received = frames(os.path.join(run.dir, "pcap", f"{node}.pcap"), mac)
        assert stats["frames_from_host"] == sent, (node, stats, sent)
        assert stats["frames_to_host"] == received, (node, stats, received)
    assert radio["wifi_statistics"]["b"]["frames_to_host"] > 0
    assert radio["wifi_statistics"]["a"]["frames_to_host"] > 0


def test_a_dilated_channel_carries_its_virtual_rate_in_virtual_time(lab_factory):
    """Time dilation 2: ns-3's simulated time runs at half the wall clock, so a saturated 1 Mbit/s
    basic rate carries about 0.47 Mbit/s of frames a wall-clock second (0.94 a virtual one, what
    the undilated channel carries), and the simulator's lag is sampled in virtual time."""
    lab = lab_factory(parse_topology_text(
        "nodes: {s: {position: [0, 0]}, l: {position: [20, 0]}}\n"
        "radio: {air: {members: [s, l], range: 100m, channel: wifi}}\n", "dilated.yaml"), time_dilation=2)
    receiver = start_probe(lab, "l", "udp-rate", 7401, 1)
    run_probe(lab, "s", "udp-blast", str(lab.address("s").network.broadcast_address), 7401, 2, 2)
    wall = finish(receiver)["wire_mbit"]
    assert 0.38 < wall < 0.52, wall
    lab.media["radio"].finish()
    radio = lab.media_manifest()["radio"]["air"]
    assert radio["realtime_lag_ms"]["samples"] > 100 and radio["wifi"]["standard"] == "802.11b"


def test_a_channel_whose_ns3_process_dies_says_so_and_the_lab_still_stops(lab_factory):
    """The ns-3 process killed under a running lab: the next tick (here a move) stops on it with
    the reason, the run's problems name it, and the lab finishes and stops without waiting on it."""
    from testbed.errors import TestbedError

    lab = lab_factory(parse_topology_text(A + "radio: {air: {members: [a, b], range: 100m, channel: wifi}}\n",
                                          "dies.yaml"))
    process = lab.media["radio"].channel("wifi")._process
    process.kill()
    process.wait(timeout=10)
    with pytest.raises(TestbedError, match="ns-3 process exited with status -9"):
        lab.move("b", (20.0, 0.0, 0.0))
    lab.media["radio"].finish()
    assert any("ns-3 process exited" in problem for problem in lab.media_problems()), lab.media_problems()
