"""Shaping decisions that do not need a kernel: which backend emulates what, what is refused,
and the netem command line (measured for real in test_network.py where the kernel has netem)."""

from __future__ import annotations

import pytest

from testbed.capabilities import Capabilities, Check
from testbed.errors import CapabilityError
from testbed.model import LinkProps
from testbed.shaping import Direction, KernelShaper, NetemShaper, Port, check_topology, choose, emulated_part
from testbed.topology import parse_topology_text


class RecordingPort(Port):
    def run(self, args, stdin=None, check=True):
        self.calls.append(args)


def _port():
    port = RecordingPort(device="eth0", netns_pid=123, table="testbed")
    object.__setattr__(port, "calls", [])
    return port


def _caps(netem: bool) -> Capabilities:
    checks = {name: Check(name, ok) for name, ok in (("netem", netem), ("nftables", True), ("nftables dup", True),
                                                     ("tc tbf", True))}
    from testbed.capabilities import _backends

    return Capabilities(checks=checks, backends=_backends(checks))


def test_netem_gets_all_seven_impairments_in_one_replace():
    port = _port()
    NetemShaper().apply(Direction(port, 'iifname "x"', "d0_0"), LinkProps(delay_ms=20, jitter_ms=2, loss=0.1, bandwidth_mbit=10,
                                                 corruption=0.01, duplication=0.02, reordering=0.25))
    (args,) = port.calls
    assert args[:6] == ["tc", "qdisc", "replace", "dev", "eth0", "root"]
    text = " ".join(args)
    for part in ("netem", "delay 20ms 2ms", "loss 10%", "duplicate 2%", "corrupt 1%", "reorder 25%", "rate 10000kbit"):
        assert part in text


def test_netem_removes_its_qdisc_when_nothing_is_left():
    port = _port()
    NetemShaper().apply(Direction(port, 'iifname "x"', "d0_0"), LinkProps())
    assert port.calls == [["tc", "qdisc", "del", "dev", "eth0", "root"]]


def test_backend_choice_follows_the_kernel():
    assert isinstance(choose(_caps(True)), NetemShaper)
    kernel = choose(_caps(False))
    assert isinstance(kernel, KernelShaper)
    assert kernel.emulates == {"loss", "duplication", "bandwidth"}


def test_unemulated_impairments_are_refused_naming_the_kernel_feature_unless_accepted():
    topo = parse_topology_text("nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: 5ms\n"
                               "    loss: 0.1\n", "t.yaml")
    caps = _caps(False)
    with pytest.raises(CapabilityError) as refused:
        check_topology(topo, choose(caps), caps)
    assert "delay on a:eth0--b:eth0: needs the kernel's netem queueing discipline (sch_netem)" in str(refused.value)
    assert check_topology(topo, choose(caps), caps, ["delay"]) == {"delay"}
    assert check_topology(topo, choose(_caps(True)), _caps(True)) == frozenset()


def test_only_the_emulable_part_is_applied_once_accepted():
    props = LinkProps(delay_ms=5, loss=0.1, bandwidth_mbit=3)
    assert emulated_part(props, choose(_caps(False))) == LinkProps(loss=0.1, bandwidth_mbit=3)
