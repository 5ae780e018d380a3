"""The agent runtime in real networks: the probe role over unicast and broadcast, fragmentation,
the reliable channel over a lossy link, and stopping within two seconds with the log flushed."""

from __future__ import annotations

import json
import os
import time

import pytest

from testbed.topology import parse_topology_text

pytestmark = pytest.mark.network


def events(lab, node):
    path = os.path.join(lab.node_dirs[node], "events.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle]


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_probe_broadcast_reaches_every_listener_and_the_logs_agree(lab_factory, tmp_path):
    lab = lab_factory(parse_topology_text("""
nodes:
  h1: {role: probe, params: {rate: 50, count: 20, size: 100, start_delay: 1}}
  h2: {role: probe, params: {rate: 0}}
  h3: {role: probe, params: {rate: 0}, runtime: process}
switches: {s: {}}
links: [[h1, s], [h2, s], [h3, s]]
""", "probe.yaml"), workdir=str(tmp_path))
    assert wait_for(lambda: sum(e["event"] == "send" for e in events(lab, "h1")) == 20)
    time.sleep(0.5)
    assert all(lab.stop_agents().values()), "every agent exits within the timeout after SIGTERM"
    sent = [e for e in events(lab, "h1") if e["event"] == "send"]
    assert [e["seq"] for e in sent] == list(range(1, 21))
    assert all(e["to"] == "broadcast" and e["type"] == "PROBE" for e in sent)
    for node in ("h2", "h3"):
        log = events(lab, node)
        delivered = [e for e in log if e["event"] == "deliver"]
        assert [(e["origin"], e["seq"]) for e in delivered] == [("h1", s) for s in range(1, 21)]
        assert log[0]["event"] == "state" and log[0]["state"] == "started"
        assert log[-1]["event"] == "state" and log[-1]["state"] == "stopped"
        first_send = {e["seq"]: e["t"] for e in sent}
        latencies = [e["t"] - first_send[e["seq"]] for e in delivered]
        assert all(0 < ns < 1e9 for ns in latencies), "one clock for all nodes: receive follows send"


def test_large_messages_are_fragmented_and_reassembled(lab_factory, tmp_path):
    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 20, count: 5, size: 5000, to: [b], start_delay: 1}}
  b: {role: probe, params: {rate: 0}}
links: [[a, b]]
""", "frag.yaml"), workdir=str(tmp_path))
    assert wait_for(lambda: sum(e["event"] == "deliver" for e in events(lab, "b")) == 5)
    sent = [e for e in events(lab, "a") if e["event"] == "send"]
    assert all(e["frags"] == 4 and e["bytes"] == 5000 for e in sent)
    received = [e for e in events(lab, "b") if e["event"] == "receive"]
    assert [e["bytes"] for e in received] == [5000] * 5


def test_reliable_channel_delivers_everything_over_a_lossy_link(lab_factory, tmp_path):
    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 50, count: 100, to: [b], reliable: true, start_delay: 1}}
  b: {role: probe, params: {rate: 0}}
links:
  - endpoints: [a, b]
    loss: 0.3
""", "reliable.yaml"), workdir=str(tmp_path))
    assert wait_for(lambda: sum(e["event"] == "deliver" for e in events(lab, "b")) == 100, timeout=30)
    delivered = [e["seq"] for e in events(lab, "b") if e["event"] == "deliver"]
    assert sorted(delivered) == list(range(1, 101)), "each message delivered once"
    retransmits = [e for e in events(lab, "a") if e["event"] == "retransmit"]
    assert retransmits, "30% loss each way needs retransmissions"


def test_an_agent_can_be_stopped_and_started_afresh(lab_factory, tmp_path):
    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 0}}
  b: {role: probe, params: {rate: 0}, runtime: process}
links: [[a, b]]
""", "restart.yaml"), workdir=str(tmp_path))
    for node in ("a", "b"):
        assert wait_for(lambda: [e.get("state") for e in events(lab, node)] == ["started"])
        first = lab.agent_pid(node)
        assert lab.stop_agents([node]) == {node: True}
        assert lab.agent_pid(node) is None
        lab.start_agent(node)
        assert wait_for(lambda: lab.agent_pid(node) not in (None, first))
        assert wait_for(lambda: [e.get("state") for e in events(lab, node)].count("started") == 2), \
            (node, first, lab.agent_pid(node), events(lab, node))


def test_wireshark_dissector_decodes_a_real_capture(lab_factory, tmp_path):
    import subprocess

    from .conftest import ROOT

    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 20, count: 10, size: 2000, to: [b], start_delay: 1.5}}
  b: {role: probe, params: {rate: 0}}
links: [[a, b]]
""", "wireshark.yaml"), workdir=str(tmp_path))
    pcap = tmp_path / "b.pcap"
    capture = lab.hosts["b"].popen(["tcpdump", "-i", "eth0", "-w", str(pcap), "-U", "--immediate-mode", "udp port 7777"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: sum(e["event"] == "deliver" for e in events(lab, "b")) == 10)
    capture.terminate()
    capture.wait()
    lua = os.path.join(ROOT, "collect", "wireshark", "testbed.lua")
    res = subprocess.run(["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "fields", "-e", "testbed.type",
                          "-e", "testbed.origin", "-e", "testbed.sequence", "-e", "testbed.frag_index",
                          "-e", "testbed.frag_count"], capture_output=True, text=True, check=True)
    rows = [tuple(map(int, line.split("\t"))) for line in res.stdout.split("\n") if line.strip()]
    sent = [e["seq"] for e in events(lab, "a") if e["event"] == "send"]
    expected = [(2, 1, seq, frag, 2) for seq in sent for frag in range(2)]
    assert sorted(rows) == sorted(expected)


def test_the_workload_starts_in_one_sweep_after_every_agent_is_found(lab_factory, tmp_path, monkeypatch):
    """start_workload finds every agent (a Docker engine query per container, tens of ms each
    under load) before it signals any, and signals them in an order drawn from the lab's seed:
    signalled as they were found, 165 agents started over 3.3 s in node order, and an AbC first
    wave of id requests followed the topology."""
    import random
    import signal

    import testbed.network as network

    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 0}}
  b: {role: probe, params: {rate: 0}}
  c: {role: probe, params: {rate: 0}, runtime: process}
  d: {role: probe, params: {rate: 0}}
switches: {s: {}}
links: [[a, s], [b, s], [c, s], [d, s]]
""", "sweep.yaml"), workdir=str(tmp_path), hold_workload=True)
    assert not lab.wait_agents_ready()
    calls = []
    find, kill = lab.agent_pid, os.kill
    monkeypatch.setattr(lab, "agent_pid", lambda node: calls.append(("find", node)) or find(node))
    monkeypatch.setattr(network.os, "kill", lambda pid, signum: calls.append(("signal", (pid, signum)))
                        or kill(pid, signum))
    pids = lab.agent_pids()
    calls.clear()
    lab.start_workload()
    assert [kind for kind, _ in calls] == ["find"] * 4 + ["signal"] * 4
    assert {s for kind, (_, s) in [c for c in calls if c[0] == "signal"]} == {signal.SIGUSR2}
    # in an order drawn from the lab's seed, not the topology's
    order = list(pids.values())
    random.Random(f"start order {lab.seed}").shuffle(order)
    assert [pid for kind, (pid, _) in [c for c in calls if c[0] == "signal"]] == order
    for node in "abcd":
        assert wait_for(lambda: "workload started" in [e.get("state") for e in events(lab, node)]), node


def test_a_containers_agent_is_found_from_its_control_group_and_runs_with_its_speed_ups(lab_factory, tmp_path):
    """The pid the testbed signals is the one the engine's `top` reports, read from the
    container's control group instead; a group that does not name the container (its first pid
    taken by another process since) is not read as the container's. The agent in the image runs
    on uvloop and orjson (copied into it from the testbed's environment), and so does the process
    node's, from that environment."""
    import dataclasses

    from testbed import dockerd
    from testbed.runtimes.base import Started
    from testbed.runtimes.docker import container_processes

    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 0}}
  b: {role: probe, params: {rate: 0}, runtime: process}
links: [[a, b]]
""", "cgroup.yaml"), workdir=str(tmp_path))
    assert not lab.wait_agents_ready()
    started = lab.started["a"]
    engine = [pid for pid, args in dockerd.processes(lab.runtime_of("a").docker, started.container_id)
              if "-m agents" in args]
    assert engine and lab.agent_pid("a") == engine[0]
    assert engine[0] in container_processes(started)
    other: Started = dataclasses.replace(started, container_id="0" * 64)
    assert container_processes(other) is None, "a group that does not name the container is not its"
    for node in ("a", "b"):
        first = events(lab, node)[0]
        assert first["state"] == "started" and first["loop"].startswith("uvloop") and \
            first["json"].startswith("orjson"), first
