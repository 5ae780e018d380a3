"""A `Topology` realised on Mininet: nodes, switches, links, addresses, routes and shaping.

`Lab.check()` finds every reason the lab cannot run here before anything is created; `start()`
builds it; `stop()` removes all of it, whatever state a failed start left. Names of everything
created on the machine derive from the lab name (see `runtimes.base.LabNames`), so that
`testbed clean` finds what a killed run left behind and nothing else.
"""

from __future__ import annotations

import hashlib
import ipaddress
import itertools
import os
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from mininet.link import Link as MininetLink

from . import ENV_LAB, cleanup
from .agent_config import LOG_NAME, has_agent, node_ids, write_configs
from .capabilities import Capabilities, detect
from .errors import CapabilityError, TestbedError
from .model import LinkProps, Node, Topology
from .runtimes import runtime_class
from .runtimes.base import LabNames, Runtime, Started
from .shaping import Direction, Port, Shaper, check_topology, choose, emulated_part

Progress = Callable[[str], None]


class _PrebuiltLink(MininetLink):
    """A Mininet link whose veth pair the lab has already created, with all the others."""

    @classmethod
    def makeIntfPair(cls, *args, **kwargs) -> None:  # noqa: N802 (Mininet's name)
        return None


def lab_names(lab: str) -> LabNames:
    digest = hashlib.sha1(lab.encode()).digest()
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    value = int.from_bytes(digest[:8], "big")
    lab_id = ""
    for _ in range(4):
        value, rem = divmod(value, 36)
        lab_id += alphabet[rem]
    return LabNames(lab=lab, lab_id=lab_id)


class Lab:
    """One running network. Not thread-safe; one per process."""

    def __init__(self, topo: Topology, lab: Optional[str] = None, capabilities: Optional[Capabilities] = None,
                 accept_unemulated: Iterable[str] = (), progress: Optional[Progress] = None,
                 workdir: Optional[str] = None, seed: int = 0, hold_workload: bool = False) -> None:
        self.topo = topo
        self.names = lab_names(lab or topo.name)
        # Each node's directory: its agent's config and event log (the container's /testbed).
        self.workdir = os.path.abspath(workdir or os.path.join(cleanup.STATE_DIR, self.names.lab))
        self._own_workdir = workdir is None  # the default one is removed with the lab; a run's is kept
        self.node_dirs = {name: os.path.join(self.workdir, "nodes", name) for name in topo.nodes}
        self.seed = seed
        self.hold_workload = hold_workload  # agents wait for start_workload() (runs)
        self.workload_started = False
        self._all_agents_stopped = False  # set by stop_agents() for all nodes, until one starts again
        self.capabilities = capabilities or detect()
        self.shaper: Shaper = choose(self.capabilities)
        self.extra_accepted = frozenset(accept_unemulated)
        self.unemulated: FrozenSet[str] = frozenset()
        self.progress = progress or (lambda message: None)
        self.runtimes: Dict[str, Runtime] = {}
        self.started: Dict[str, Started] = {}
        self.net = None
        self.hosts: Dict[str, object] = {}
        self.bridges: Dict[str, str] = {}  # switch name → bridge device
        # (link index, 0 for a→b or 1 for b→a) → where that direction is shaped
        self.directions: Dict[Tuple[int, int], Direction] = {}
        # (node, interface) → the bridge port that transmits to that interface (partitions drop there)
        self.receiver_ports: Dict[Tuple[str, str], str] = {}
        self.link_props: Dict[Tuple[int, int], LinkProps] = {}
        self.timings: Dict[str, float] = {}

    @property
    def name(self) -> str:
        return self.names.lab

    # -- before anything is created -------------------------------------------------------------

    def check(self) -> None:
        """Raise if this lab cannot run on this machine. Creates nothing."""
        caps = self.capabilities
        if not caps.has("root"):
            raise CapabilityError("the testbed must run as root: it creates namespaces, bridges and containers")
        if not caps.has("mininet"):
            raise CapabilityError(f"Mininet is missing: {caps.checks['mininet'].detail}")
        if not caps.has("linux bridge"):
            raise CapabilityError(caps.checks["linux bridge"].detail)
        ovs = [name for name, sw in self.topo.switches.items() if sw.type == "ovs"]
        if ovs and not caps.has("openvswitch"):
            raise CapabilityError(f"{self.topo.source}: switch(es) {', '.join(ovs)} ask for Open vSwitch, which this "
                                  f"machine cannot run ({caps.checks['openvswitch'].detail}); use type: bridge")
        if len(self.topo.switches) > 999:
            raise CapabilityError(f"{self.topo.source}: {len(self.topo.switches)} switches; at most 999 per lab")
        self.unemulated = check_topology(self.topo, self.shaper, caps, self.extra_accepted)
        by_runtime: Dict[str, List[Node]] = {}
        for node in self.topo.nodes.values():
            by_runtime.setdefault(node.runtime, []).append(node)
        if "docker" in by_runtime and not caps.has("docker"):
            raise CapabilityError(f"{caps.checks['docker'].detail}")
        for runtime_name, nodes in by_runtime.items():
            runtime = runtime_class(runtime_name)(self.names)
            runtime.check(nodes)
            self.runtimes[runtime_name] = runtime

    # -- build ------------------------------------------------------------------------------------

    def start(self, before_launch: Optional[Callable[["Lab"], None]] = None) -> None:
        """Build the whole network; on any failure, remove what was built and re-raise.
        `before_launch` runs once the network is configured, before any agent starts."""
        if not self.runtimes:
            self.check()
        # Every shell Mininet starts inherits TESTBED_LAB, so that `testbed clean` finds it.
        previous = os.environ.get(ENV_LAB)
        os.environ[ENV_LAB] = self.name
        try:
            self._start(before_launch)
        except BaseException:
            self.stop()
            raise
        finally:
            if previous is None:
                os.environ.pop(ENV_LAB, None)
            else:
                os.environ[ENV_LAB] = previous

    def _timed(self, phase: str, started_at: float) -> float:
        now = time.monotonic()
        self.timings[phase] = round(now - started_at, 3)
        return now

    def _start(self, before_launch: Optional[Callable[["Lab"], None]]) -> None:
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.nodelib import LinuxBridge
        from mininet.node import OVSSwitch

        setLogLevel("error")
        t = time.monotonic()
        by_runtime: Dict[str, List[Node]] = {}
        for node in self.topo.nodes.values():
            by_runtime.setdefault(node.runtime, []).append(node)
        write_configs(self.topo, self.node_dirs, self.seed, wait_for_start=self.hold_workload)
        for runtime_name, nodes in by_runtime.items():
            self.progress(f"starting {len(nodes)} {runtime_name} node(s)")
            self.started.update(self.runtimes[runtime_name].create(nodes, self.node_dirs))
        t = self._timed("create_nodes", t)

        self.progress("building the network")
        cleanup.allow_bridged_forwarding()
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, waitConnected=False)
        self.net = net
        for name, node in self.topo.nodes.items():
            params = self.runtimes[node.runtime].host_params(node, self.started.get(name))
            cls = params.pop("cls")
            self.hosts[name] = net.addHost(name, cls=cls, ip=None, **params)
        for index, (name, switch) in enumerate(self.topo.switches.items(), start=1):
            device = self.names.bridge(index)
            self.bridges[name] = device
            if switch.type == "ovs":
                net.addSwitch(device, cls=OVSSwitch, failMode="standalone", stp=switch.stp)
            else:
                net.addSwitch(device, cls=LinuxBridge, stp=switch.stp)
        # Every cable passes through a bridge port in the machine's namespace, where loss and
        # partitions are applied (see shaping): a node-to-node cable gets an internal two-port
        # bridge. Every veth pair is created in one `ip -batch`, each end directly in its
        # namespace; Mininet then only records the interfaces (see _PrebuiltLink).
        port_count: Dict[str, int] = {}
        batch: List[str] = []

        def new_port(bridge: str) -> str:
            port_count[bridge] = port_count.get(bridge, 0) + 1
            return f"{bridge}p{port_count[bridge]}"

        def end_of(name: str, interface: Optional[str]) -> Tuple[str, Optional[int], object]:
            if name in self.bridges:
                return new_port(self.bridges[name]), None, net.get(self.bridges[name])
            return interface, self.hosts[name].pid, self.hosts[name]

        def veth(one: Tuple[str, Optional[int], object], two: Tuple[str, Optional[int], object]) -> None:
            specs = [f"name {dev}" + (f" netns {pid}" if pid else "") for dev, pid, _ in (one, two)]
            batch.append(f"link add {specs[0]} type veth peer {specs[1]}")
            batch.extend(f"link set dev {dev} up" for dev, pid, _ in (one, two) if pid is None)
            net.addLink(one[2], two[2], cls=_PrebuiltLink, intfName1=one[0], intfName2=two[0],
                        params1={"up": None}, params2={"up": None})

        for index, link in enumerate(self.topo.links):
            a = end_of(link.a.node, link.a.interface)
            b = end_of(link.b.node, link.b.interface)
            if a[1] is not None and b[1] is not None:  # node to node: through an internal bridge
                bridge = self.names.internal_bridge(index)
                switch = net.addSwitch(bridge, cls=LinuxBridge)
                a_port, b_port = (new_port(bridge), None, switch), (new_port(bridge), None, switch)
                veth(a, a_port)
                veth(b_port, b)
                a_recv, b_recv = a_port[0], b_port[0]  # the bridge ports that transmit to a and to b
            else:
                veth(a, b)
                a_recv = b[0] if b[1] is None else None
                b_recv = a[0] if a[1] is None else None
                a_port = b_port = None
            for end, receiver in ((link.a, a_recv), (link.b, b_recv)):
                if end.node in self.topo.nodes:
                    self.receiver_ports[(end.node, end.interface)] = receiver
            # a→b: frames are sent by a's end; they are matched where they enter a bridge port, or,
            # when b's end is the node, where they leave the bridge towards it.
            for side, (src, dst, src_bridge_port, dst_bridge_port) in enumerate(
                    ((a, b, a_port, b_port), (b, a, b_port, a_port))):
                if src_bridge_port is not None:
                    match = f'iifname "{src_bridge_port[0]}"'
                elif dst[1] is None:
                    match = f'iifname "{dst[0]}"'
                else:
                    match = f'oifname "{src[0]}"'
                self.directions[(index, side)] = Direction(
                    egress=Port(device=src[0], netns_pid=src[1], table="testbed" if src[1] else self.names.nft_table),
                    match=match, chain=f"d{index}_{side}")
        res = subprocess.run(["ip", "-batch", "-"], input="\n".join(batch) + "\n", capture_output=True, text=True)
        if res.returncode != 0:
            raise TestbedError(f"creating the links failed: {res.stderr.strip()}")
        self.shaper.setup(self.names.nft_table)
        net.build()
        t = self._timed("links", t)
        net.start()
        t = self._timed("switches", t)

        self.progress("configuring addresses, routes and shaping")
        self._configure_hosts()
        t = self._timed("configure", t)
        for index, link in enumerate(self.topo.links):
            self.set_link(index, link.forward, link.backward)
        t = self._timed("shaping", t)
        if before_launch is not None:
            before_launch(self)
        agents = sum(has_agent(self.topo, name) for name in self.topo.nodes)
        if agents:
            self.progress(f"starting {agents} agent(s)")
        for runtime_name, nodes in by_runtime.items():
            self.runtimes[runtime_name].launch(nodes, self.hosts, self.started, self.node_dirs)
        self._timed("launch", t)

    def _configure_hosts(self) -> None:
        """Addresses are set by Mininet; here: no IPv6 chatter, forwarding on routers, routes."""
        routers = {name for name in self.topo.nodes if len(self.topo.interfaces(name)) > 1}

        def configure(name: str) -> None:
            sysctls = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
            if name in routers:
                sysctls.append("net.ipv4.ip_forward=1")
            batch = "".join(f"link set dev {e.interface} up\naddr add {e.address} dev {e.interface}\n"
                            for e in self.topo.interfaces(name) if e.address is not None)
            batch += "".join(f"route replace {r.destination} via {r.via} dev {r.interface}\n"
                             for r in self.topo.routes.get(name, []))
            script = f"sysctl -qw {' '.join(sysctls)} && ip link set lo up"
            if batch:
                script += " && ip -batch -"
            res = subprocess.run(["nsenter", f"--net=/proc/{self.hosts[name].pid}/ns/net", "--", "sh", "-c", script],
                                 input=batch, capture_output=True, text=True)
            if res.returncode != 0:
                raise TestbedError(f"node {name}: configuring forwarding and routes failed: {res.stderr.strip()}")

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(configure, self.hosts))

    # -- while running ----------------------------------------------------------------------------

    def link_index(self, a: str, b: str) -> int:
        """The index of the first link between a and b (in either order)."""
        for index, link in enumerate(self.topo.links):
            if {link.a.node, link.b.node} == {a, b}:
                return index
        raise TestbedError(f"no link between {a!r} and {b!r}")

    def set_link(self, index: int, forward: LinkProps, backward: Optional[LinkProps] = None) -> None:
        """Replace the shaping of link `index` (a→b `forward`, b→a `backward`, default the same)."""
        backward = forward if backward is None else backward
        for side, props in ((0, forward), (1, backward)):
            missing = props.active() - self.shaper.emulates
            if missing - self.topo.accept_unemulated - self.extra_accepted:
                raise CapabilityError(f"cannot emulate {', '.join(sorted(missing))} on link "
                                      f"{self.topo.links[index].name}: needs "
                                      f"{self.capabilities.missing_feature(sorted(missing)[0])}")
            self.unemulated = self.unemulated | missing
            effective = emulated_part(props, self.shaper)
            # Nothing was ever applied to a fresh link: skip the no-op instead of spawning tools.
            if self.link_props.get((index, side), LinkProps()) != effective:
                self.shaper.apply(self.directions[(index, side)], effective)
            self.link_props[(index, side)] = effective

    def exec(self, node: str, command: str, timeout: Optional[float] = 600) -> str:
        """Run a shell command in the node's network namespace with the machine's tools; return
        its output (stdout and stderr). Not through Mininet's shell: that is a pty, which
        truncates lines over 4 KiB and serialises callers."""
        res = subprocess.run(["nsenter", f"--net=/proc/{self.hosts[node].pid}/ns/net", "--", "sh", "-c", command],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return res.stdout

    # -- agents -----------------------------------------------------------------------------------

    def agent_pid(self, node: str) -> Optional[int]:
        started = self.started.get(node)
        if started is None or not has_agent(self.topo, node):
            return None
        return self.runtimes[self.topo.nodes[node].runtime].agent_pid(started)

    def wait_agents_ready(self, timeout_s: float = 60.0) -> List[str]:
        """Wait until every agent has logged that it started; returns those that did not in time."""
        waiting = [n for n in self.topo.nodes if has_agent(self.topo, n)]
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            still = []
            for node in waiting:
                try:
                    with open(os.path.join(self.node_dirs[node], LOG_NAME)) as handle:
                        # a role may log its own state lines while it is set up, before this one
                        ready = any('"state":"started"' in line for line in itertools.islice(handle, 50))
                except FileNotFoundError:
                    ready = False
                if not ready:
                    still.append(node)
            waiting = still
            if waiting:
                time.sleep(0.05)
        return waiting

    def signal_agents(self, signum: int) -> List[str]:
        """Send a signal to every running agent; returns the nodes signalled."""
        signalled = []
        for node in self.topo.nodes:
            pid = self.agent_pid(node)
            if pid:
                try:
                    os.kill(pid, signum)
                    signalled.append(node)
                except ProcessLookupError:
                    pass
        return signalled

    def stop_agents(self, nodes: Optional[Iterable[str]] = None, timeout_s: float = 3.0) -> Dict[str, bool]:
        """SIGTERM the agents and wait for them to flush their logs and exit; True per node that
        exited in time (the others are killed)."""
        if nodes is None:
            self._all_agents_stopped = True
        pids = {}
        for node in nodes if nodes is not None else list(self.topo.nodes):
            pid = self.agent_pid(node)
            if pid:
                pids[node] = pid
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        exited = {}
        for node, pid in pids.items():
            while _running(pid) and time.monotonic() < deadline:
                self._reap(node)
                time.sleep(0.02)
            exited[node] = not _running(pid)
            if not exited[node]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self._reap(node)
        return exited

    def _reap(self, node: str) -> None:
        agent = getattr(self.started.get(node), "agent", None)
        if agent is not None:
            agent.poll()

    def start_workload(self) -> None:
        """Tell every agent held at start (hold_workload) to begin, all at once."""
        self.workload_started = True
        self.signal_agents(signal.SIGUSR2)

    def start_agent(self, node: str) -> None:
        """A fresh agent process for the node (its network and container stay as they are); its
        workload starts at once if the lab's workload has started."""
        self._all_agents_stopped = False
        runtime = self.runtimes[self.topo.nodes[node].runtime]
        runtime.start_agent(self.topo.nodes[node], self.started[node], self.node_dirs[node],
                            start_now=self.workload_started or not self.hold_workload)

    def address(self, node: str) -> Optional[ipaddress.IPv4Interface]:
        return self.topo.address_of(node)

    def state(self) -> Dict[str, object]:
        """What `testbed exec`, `down` and reports need about the running lab."""
        nodes = {}
        ids = node_ids(self.topo)
        for name, node in self.topo.nodes.items():
            started = self.started.get(name)
            nodes[name] = {
                "id": ids[name],
                "role": node.role,
                "dir": self.node_dirs[name],
                "runtime": node.runtime,
                "image": node.image if node.runtime == "docker" else None,
                "netns_pid": started.netns_pid if started else self.hosts[name].pid,
                "container_name": started.container_name if started else None,
                "process_pid": started.process_pid if started else None,
                "interfaces": {e.interface: str(e.address) for e in self.topo.interfaces(name)},
            }
        return {
            "lab": self.name,
            "lab_id": self.names.lab_id,
            "topology": self.topo.source,
            "nodes": nodes,
            "switches": dict(self.bridges),
            "shaping": self.shaper.name,
            "unemulated": sorted(self.unemulated),
            "timings": dict(self.timings),
        }

    # -- teardown ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Remove everything this lab created; safe to call on a half-built lab, and twice."""
        errors: List[str] = []
        t = time.monotonic()
        if self.started and not self._all_agents_stopped:
            try:
                self.stop_agents()  # let them flush their logs
            except Exception as exc:
                errors.append(f"stopping agents: {exc}")
        if self.net is not None:
            for host in self.net.hosts + self.net.switches:
                try:
                    if host.shell and host.shell.poll() is None:
                        os.killpg(host.shell.pid, signal.SIGKILL)
                        host.shell.wait()
                except (ProcessLookupError, PermissionError, OSError):
                    pass
        t_shells = time.monotonic()
        for runtime_name, runtime in self.runtimes.items():
            mine = {n: s for n, s in self.started.items() if self.topo.nodes[n].runtime == runtime_name}
            try:
                runtime.destroy(mine)
            except Exception as exc:  # keep going: the rest must still be removed
                errors.append(f"{runtime_name}: {exc}")
        self.started = {}
        self.net = None
        self.hosts = {}
        t_nodes = time.monotonic()
        try:
            cleanup.remove_lab_objects(self.names)
        except Exception as exc:
            errors.append(str(exc))
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        now = time.monotonic()
        self.timings.update(stop=round(now - t, 3), stop_agents_and_shells=round(t_shells - t, 3),
                            stop_nodes=round(t_nodes - t_shells, 3), stop_network=round(now - t_nodes, 3))
        if errors:
            raise TestbedError("teardown left errors (run 'testbed clean'):\n  " + "\n  ".join(errors))


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def ping_all(lab: Lab, nodes: Optional[List[str]] = None, timeout_s: float = 1.0) -> Dict[Tuple[str, str], bool]:
    """Ping every ordered pair once from inside the source node; True where a reply came back."""
    names = nodes or list(lab.topo.nodes)
    results: Dict[Tuple[str, str], bool] = {}
    for src in names:
        targets = [(dst, lab.address(dst)) for dst in names if dst != src and lab.address(dst)]
        if not targets:
            continue
        # one shell round trip per source: pings run in parallel inside the node
        script = " ".join(f"(ping -c1 -W{timeout_s:g} -q {addr.ip} >/dev/null 2>&1 && echo ok:{dst} || echo no:{dst}) &"
                          for dst, addr in targets) + " wait"
        out = lab.exec(src, script)
        for dst, _ in targets:
            results[(src, dst)] = f"ok:{dst}" in out
    return results

