"""Real Mininet networks with real Docker containers: reachability, interfaces inside the
containers, shaping measured on the wire, and nothing left behind (the `no_leftovers` fixture
checks every test)."""

from __future__ import annotations

import os
import subprocess

import pytest

from testbed.errors import CapabilityError
from testbed.network import Lab, ping_all
from testbed.topology import load_topology, parse_topology_text

from .conftest import topology_path
from .helpers import binomial_interval, finish, run_probe, start_probe, warm_arp

pytestmark = pytest.mark.network


def container_interfaces(lab, node):
    name = lab.started[node].container_name
    out = subprocess.run(["docker", "exec", name, "cat", "/proc/net/dev"], capture_output=True, text=True,
                         check=True).stdout
    return sorted(line.split(":")[0].strip() for line in out.splitlines()[2:])


@pytest.mark.parametrize("name", ["line3.yaml", "cluster-3-9.yaml", "ring-5-3.yaml", "tree-3-2-2.yaml"])
def test_every_node_reaches_every_other_and_sees_its_own_interfaces(lab_factory, name):
    topo = load_topology(topology_path(name))
    lab = lab_factory(topo)
    results = ping_all(lab)
    failed = [pair for pair, ok in results.items() if not ok]
    assert not failed, f"{len(failed)} of {len(results)} pairs unreachable, e.g. {failed[:5]}"
    assert len(results) == len(topo.nodes) * (len(topo.nodes) - 1)
    for node in topo.nodes:
        expected = sorted(["lo"] + [e.interface for e in topo.interfaces(node)])
        assert container_interfaces(lab, node) == expected


def test_containers_keep_no_network_in_the_engine_and_still_resolve_localhost(lab_factory):
    """Nodes start without networking (dockerd 20.10 can deadlock when containers leave its
    `none` network together): the engine holds no endpoint for them, each has its own
    namespace with `lo` up, and /etc/hosts has the localhost lines network `none` gives."""
    import docker

    lab = lab_factory(load_topology(topology_path("line3.yaml")))
    client = docker.from_env()
    attrs = {n: client.containers.get(s.container_id).attrs for n, s in lab.started.items()}
    assert all(a["Config"].get("NetworkDisabled") for a in attrs.values()), attrs
    assert all(not a["NetworkSettings"]["Networks"] for a in attrs.values()), attrs
    in_engine = set()
    for net in client.networks.list():
        net.reload()
        in_engine |= set(net.attrs.get("Containers") or {})
    assert not in_engine & {s.container_id for s in lab.started.values()}
    namespaces = {os.readlink(f"/proc/{s.netns_pid}/ns/net") for s in lab.started.values()}
    assert len(namespaces) == len(lab.started)
    for name, started in lab.started.items():
        hosts = subprocess.run(["docker", "exec", started.container_name, "getent", "hosts", "localhost"],
                               capture_output=True, text=True)
        assert hosts.returncode == 0 and hosts.stdout.split()[0] in ("127.0.0.1", "::1"), (name, hosts)
        lo = subprocess.run(["nsenter", f"--net=/proc/{started.netns_pid}/ns/net", "ip", "-br", "link", "show", "lo"],
                            capture_output=True, text=True, check=True).stdout
        assert ",UP" in lo, (name, lo)
    assert all(ping_all(lab).values())


def test_an_image_with_one_static_binary_runs_unmodified(lab_factory):
    topo = parse_topology_text("""
defaults: {image: testbed/static-probe:latest}
nodes: {a: {}, b: {}}
links:
  - endpoints: ['a:uplink', b]
""", "static.yaml")
    lab = lab_factory(topo)
    assert all(ping_all(lab).values())
    out = subprocess.run(["docker", "exec", lab.started["a"].container_name, "/ifprobe", "ifaces"],
                         capture_output=True, text=True, check=True).stdout
    assert f"uplink {topo.address_of('a').ip}" in out.splitlines()
    image = subprocess.run(["docker", "image", "inspect", "-f", "{{len .RootFS.Layers}}", "testbed/static-probe:latest"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert image == "1"


def test_process_runtime_and_docker_nodes_share_a_network(lab_factory):
    topo = parse_topology_text("""
nodes:
  p1: {runtime: process}
  p2: {runtime: process, command: sleep 3600}
  d1: {}
switches: {s: {}}
links: [[p1, s], [p2, s], [d1, s]]
""", "mixed.yaml")
    lab = lab_factory(topo)
    assert all(ping_all(lab).values())
    for node in ("p1", "p2"):
        pid = lab.started[node].process_pid
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            assert handle.read().split(b"\0")[0] == b"sleep"
        assert open(f"/proc/{pid}/ns/net", "rb") and \
            subprocess.run(["readlink", f"/proc/{pid}/ns/net"], capture_output=True, text=True).stdout == \
            subprocess.run(["readlink", f"/proc/{lab.hosts[node].pid}/ns/net"], capture_output=True, text=True).stdout


def _descriptors():
    """This process's open descriptors by kind: pseudo-terminals and sockets (pipes, which the
    garbage collector closes in its own time, left out)."""
    kinds = {"pty": 0, "socket": 0}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("/dev/pts/", "/dev/ptmx")):
            kinds["pty"] += 1
        elif target.startswith("socket:"):
            kinds["socket"] += 1
    return kinds


def test_a_stopped_lab_leaves_no_descriptor_open_in_the_process_that_made_it(no_leftovers, images):
    """A process making many labs (an experiment, the Python API, a benchmark of a hundred runs)
    must not keep each lab's node shells (Mininet's pseudo-terminals, two a node) or its
    connections to the Docker engine: one benchmark ran out of descriptors after ~80 runs."""
    topo = parse_topology_text("""
nodes:
  p1: {runtime: process}
  d1: {}
  d2: {}
switches: {s: {}}
links: [[p1, s], [d1, s], [d2, s]]
""", "fds.yaml")
    counts, labs = [], []
    for _ in range(2):
        lab = Lab(topo)
        labs.append(lab)  # held, as a run holds its lab after stopping it: a stopped lab holds nothing open
        try:
            lab.check()
            lab.start()
            assert all(ping_all(lab).values())
        finally:
            lab.stop()
        counts.append(_descriptors())
    assert counts[1] == counts[0], counts
    from mininet.node import Node

    assert not any(node.name in ("p1", "d1", "d2", "s") for node in list(Node.inToNode.values()) +
                   list(Node.outToNode.values()))


def _measure_loss(lab, src, dst, port, count=3000, pps=3000, warm=True):
    dst_ip = str(lab.address(dst).ip)
    if warm:
        warm_arp(lab, src, dst_ip)
    receiver = start_probe(lab, dst, "udp-recv", port, 2)
    run_probe(lab, src, "udp-send", dst_ip, port, count, pps)
    return finish(receiver)


@pytest.mark.parametrize("loss, where", [(0.10, "node"), (0.30, "switch")])
def test_configured_loss_is_measured_within_the_binomial_interval(lab_factory, loss, where):
    if where == "node":   # shaped on the sender's own interface, in its namespace
        text = f"nodes: {{a: {{}}, b: {{}}}}\nlinks:\n  - endpoints: [a, b]\n    a_to_b: {{loss: {loss}}}\n"
    else:                 # shaped on the switch port towards the receiver, in the bridge
        text = (f"nodes: {{a: {{}}, b: {{}}}}\nswitches: {{s: {{}}}}\nlinks:\n  - [a, s]\n"
                f"  - endpoints: [s, b]\n    a_to_b: {{loss: {loss}}}\n")
    lab = lab_factory(parse_topology_text(text, "loss.yaml"))
    result = _measure_loss(lab, "a", "b", 5001)
    lost = 3000 - result["unique"]
    lo, hi = binomial_interval(3000, loss)
    assert lo <= lost <= hi, f"lost {lost} of 3000 with loss {loss}: outside [{lo}, {hi}]"


def test_loss_changes_while_running_and_returns_to_zero(lab_factory):
    lab = lab_factory(parse_topology_text("nodes: {a: {}, b: {}}\nlinks: [[a, b]]\n", "change.yaml"))
    assert _measure_loss(lab, "a", "b", 5002, count=1000)["unique"] == 1000
    lossy = lab.topo.links[0].forward.merged(loss=0.5)
    lab.set_link(0, lossy)
    # The clean measurement just before resolved b's address. A ping through 50% loss each way gets
    # through one time in four, so 20 of them all failed in one CI run in a few hundred: no check here.
    lost = 2000 - _measure_loss(lab, "a", "b", 5003, count=2000, warm=False)["unique"]
    lo, hi = binomial_interval(2000, 0.5)
    assert lo <= lost <= hi
    lab.set_link(0, lossy.merged(loss=0.0))
    assert _measure_loss(lab, "a", "b", 5004, count=1000)["unique"] == 1000


def test_duplication_is_measured_within_the_binomial_interval(lab_factory, machine):
    if "duplication" not in lab_shaper_emulates(machine):
        pytest.skip("no duplication backend on this machine (needs netem or nftables dup)")
    lab = lab_factory(parse_topology_text(
        "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    a_to_b: {duplication: 0.2}\n", "dup.yaml"))
    result = _measure_loss(lab, "a", "b", 5005)
    assert result["unique"] == 3000
    lo, hi = binomial_interval(3000, 0.2)
    assert lo <= result["duplicates"] <= hi, result


def lab_shaper_emulates(machine):
    from testbed.shaping import choose

    return choose(machine).emulates


def test_bandwidth_limit_is_measured_within_ten_percent(lab_factory):
    """The limit is on frames on the wire: offer twice the rate over UDP and measure the frames
    the receiver gets per second, after a warm-up (TCP goodput would measure TCP as well)."""
    lab = lab_factory(parse_topology_text(
        "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    a_to_b: {bandwidth: 10mbit}\n", "bw.yaml"))
    warm_arp(lab, "a", str(lab.address("b").ip))
    receiver = start_probe(lab, "b", "udp-rate", 5006, 1)
    run_probe(lab, "a", "udp-blast", str(lab.address("b").ip), 5006, 4, 20)
    result = finish(receiver)
    assert 9.0 <= result["wire_mbit"] <= 11.0, result


DELAY_TOPOLOGY = "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    a_to_b: {delay: 20ms}\n"


def test_delay_is_measured_where_netem_exists(lab_factory, machine):
    if not machine.has("netem"):
        pytest.skip("this kernel has no sch_netem, so delay cannot be emulated; "
                    "test_delay_is_refused_without_netem checks the refusal instead")
    lab = lab_factory(parse_topology_text(DELAY_TOPOLOGY, "delay.yaml"))
    warm_arp(lab, "a", str(lab.address("b").ip))
    echo = start_probe(lab, "b", "udp-echo", 5007)
    result = __import__("json").loads(run_probe(lab, "a", "udp-rtt", str(lab.address("b").ip), 5007, 50))
    echo.kill()
    echo.wait()
    assert 20.0 <= result["median_ms"] <= 23.0, result


def test_delay_is_refused_without_netem_unless_accepted(lab_factory, machine):
    if machine.has("netem"):
        pytest.skip("this kernel has netem: delay is emulated, nothing to refuse")
    topo = parse_topology_text(DELAY_TOPOLOGY, "delay.yaml")
    with pytest.raises(CapabilityError) as refused:
        Lab(topo).check()
    assert "delay" in str(refused.value) and "sch_netem" in str(refused.value)
    assert "accept_unemulated" in str(refused.value)
    lab = lab_factory(topo, accept_unemulated=["delay"])
    assert lab.state()["unemulated"] == ["delay"]
    assert all(ping_all(lab).values())


def test_every_node_can_capture_its_own_traffic(lab_factory):
    lab = lab_factory(load_topology(topology_path("line3.yaml")))
    capture = lab.hosts["h3"].popen(["tcpdump", "-i", "eth0", "-c", "3", "-n", "icmp"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    import time

    time.sleep(1)
    lab.exec("h1", f"ping -c 5 -i 0.2 {lab.address('h3').ip}")
    out, err = capture.communicate(timeout=20)
    assert "3 packets captured" in err, err
    assert str(lab.address("h1").ip) in out
