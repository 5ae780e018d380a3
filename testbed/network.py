"""A `Topology` realised on Mininet: nodes (through their runtimes), media, addresses, routes.

`Lab.check()` finds every reason the lab cannot run here before anything is created; `start()`
builds it; `stop()` removes all of it, whatever state a failed start left. The lab orchestrates:
node runtimes (testbed.runtimes) start the nodes' software, media (testbed.media: switches,
cables) join them, and the lab knows the details of neither. Names of everything created on the
machine derive from the lab name (testbed.names), so that `testbed clean` finds what a killed
run left behind and nothing else.

While a lab runs, its methods are what the nemesis (testbed.faults), the Python API and the
command line act through: `exec` in a node, `set_link`, `kill_node`, `pause_node`,
`resume_node`, `stop_agents`, `start_agent`, `partition`, `heal`.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from . import cleanup
from .actions import action_class
from .agent_config import LOG_NAME, has_agent, node_env, node_ids, write_configs
from .capabilities import Capabilities, detect
from .errors import CapabilityError, TestbedError
from .media import medium_classes
from .media.base import Build, Medium
from .model import LinkProps, Node, Topology
from .names import ENV_LAB, lab_names, workdir as default_workdir
from .partition import heal_script, partition_script
from .runtimes import runtime_class
from .runtimes.base import Runtime, Started
from .shaping import Shaper, choose, nft_in_root

Progress = Callable[[str], None]


class Lab:
    """One running network. Not thread-safe; one per process."""

    def __init__(self, topo: Topology, lab: Optional[str] = None, capabilities: Optional[Capabilities] = None,
                 accept_unemulated: Iterable[str] = (), progress: Optional[Progress] = None,
                 workdir: Optional[str] = None, seed: int = 0, hold_workload: bool = False,
                 time_dilation: float = 1.0) -> None:
        self.topo = topo
        #: the emulated world runs this many times slower than the wall clock; every node's virtual
        #: clock counts from clock_origin_ns (agents/clock.py)
        self.time_dilation = float(time_dilation)
        self.clock_origin_ns = time.time_ns()
        self.names = lab_names(lab or topo.name)
        # Each node's directory: its agent's config and event log (the container's /testbed).
        self.workdir = os.path.abspath(workdir or default_workdir(self.names.lab))
        self._own_workdir = workdir is None  # the default one is removed with the lab; a run's is kept
        self.node_dirs = {name: os.path.join(self.workdir, "nodes", name) for name in topo.nodes}
        self.seed = seed
        self.hold_workload = hold_workload  # agents wait for start_workload() (runs)
        self.workload_started = False
        self._all_agents_stopped = False  # set by stop_agents() for all nodes, until one starts again
        self.capabilities = capabilities or detect()
        self.shaper: Shaper = choose(self.capabilities)
        self.extra_accepted = frozenset(accept_unemulated)
        self.progress = progress or (lambda message: None)
        #: what the media's checks warned of (said through `progress`, recorded by a run's manifest)
        self.warnings: List[str] = []
        self.runtimes: Dict[str, Runtime] = {}
        self.media: Dict[str, Medium] = {name: cls(topo, self.names, self.shaper, self.capabilities,
                                                   workdir=self.workdir, node_dirs=self.node_dirs, seed=seed,
                                                   time_dilation=self.time_dilation)
                                         for name, cls in medium_classes()}
        self.started: Dict[str, Started] = {}
        self.net = None
        self.hosts: Dict[str, object] = {}
        self.bridges: Dict[str, str] = {}  # switch name → bridge device
        self.timings: Dict[str, float] = {}

    @property
    def name(self) -> str:
        return self.names.lab

    @property
    def unemulated(self) -> FrozenSet[str]:
        """The properties the lab runs without (accepted as not emulated on this machine)."""
        return frozenset().union(*(m.unemulated for m in self.media.values()))

    def runtime_of(self, node: str) -> Runtime:
        return self.runtimes[self.topo.nodes[node].runtime]

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
        self.warnings = []
        for medium in self.media.values():
            medium.check(self.extra_accepted)
            self.warnings += medium.warnings()
        for runtime_name, nodes in self._by_runtime().items():
            runtime = runtime_class(runtime_name)(self.names)
            runtime.check(nodes, caps)
            self.warnings += runtime.warnings
            self.runtimes[runtime_name] = runtime
        for warning in self.warnings:
            self.progress(f"warning: {warning}")

    def _by_runtime(self) -> Dict[str, List[Node]]:
        by_runtime: Dict[str, List[Node]] = {}
        for node in self.topo.nodes.values():
            by_runtime.setdefault(node.runtime, []).append(node)
        return by_runtime

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
        except BaseException as exc:
            try:
                self.stop()
            except Exception as stop_error:  # the build's error comes first: it is the cause
                if isinstance(exc, Exception):
                    raise TestbedError(f"{exc}\n{stop_error}") from exc
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

        setLogLevel("error")
        t = time.monotonic()
        by_runtime = self._by_runtime()
        ids = node_ids(self.topo)
        inside = {name: self.runtime_of(name).node_dir_inside(self.node_dirs[name]) for name in self.topo.nodes}
        envs = {name: {**node_env(name, ids[name], inside[name], self.time_dilation, self.clock_origin_ns), **node.env}
                for name, node in self.topo.nodes.items()}
        write_configs(self.topo, self.node_dirs, self.seed, lambda node: inside[node.name],
                      wait_for_start=self.hold_workload, time_dilation=self.time_dilation,
                      clock_origin_ns=self.clock_origin_ns)
        for runtime_name, nodes in by_runtime.items():
            self.progress(f"starting {len(nodes)} {runtime_name} node(s)")
            self.started.update(self.runtimes[runtime_name].create(nodes, self.node_dirs, envs))
        t = self._timed("create_nodes", t)

        self.progress("building the network")
        cleanup.allow_bridged_forwarding()
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, waitConnected=False)
        self.net = net
        for name, node in self.topo.nodes.items():
            params = self.runtime_of(name).host_params(node, self.started.get(name))
            cls = params.pop("cls")
            self.hosts[name] = net.addHost(name, cls=cls, ip=None, **params)
        # The media describe their bridges and veth pairs; every veth pair is then created in
        # one `ip -batch`, each end directly in its namespace, and Mininet only records them.
        build = Build(net, self.hosts, self.names)
        for medium in self.media.values():
            medium.add(build)
        self.bridges = dict(build.bridges)
        res = subprocess.run(["ip", "-batch", "-"], input="\n".join(build.batch) + "\n", capture_output=True, text=True)
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
        for medium in self.media.values():
            medium.start()
        t = self._timed("shaping", t)
        if before_launch is not None:
            before_launch(self)
        # a node held back (workload `start: timeline`) gets its agent from the timeline's `start`
        with_agent = {name: has_agent(node) and not node.held for name, node in self.topo.nodes.items()}
        agents = sum(with_agent.values())
        if agents:
            self.progress(f"starting {agents} agent(s)")
        for runtime_name, nodes in by_runtime.items():
            self.runtimes[runtime_name].launch(nodes, self.hosts, self.started, self.node_dirs, with_agent, envs)
        if not self.hold_workload:  # no time zero to wait for: the experiment's clock starts now
            for medium in self.media.values():
                medium.begin(time.time_ns())
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

    # -- links ------------------------------------------------------------------------------------

    def link_index(self, a: str, b: str) -> int:
        """The index of the first link between a and b (in either order)."""
        return self.media["cables"].index(a, b)

    def set_link(self, index: int, forward: LinkProps, backward: Optional[LinkProps] = None) -> None:
        """Replace the shaping of link `index` (a→b `forward`, b→a `backward`, default the same)."""
        self.media["cables"].shape(index, forward, backward)

    def check_action(self, planned, where: str) -> None:
        """Raise CapabilityError when a timeline action asks for link properties this machine
        cannot emulate and nobody accepted (`where` names the action in the message)."""
        refused = self.media["cables"].missing_properties(action_class(planned.action)().requires(planned))
        if refused:
            names = sorted(refused)
            raise CapabilityError(f"{where} asks for {', '.join(names)}, which this machine cannot emulate: needs "
                                  f"{self.capabilities.missing_feature(names[0])}. Accept it as not emulated with "
                                  f"'accept_unemulated: [{', '.join(names)}]' in the topology or --accept-unemulated "
                                  f"{','.join(names)}.")

    def move(self, node: str, to: Tuple[float, float, float], speed: Optional[float] = None) -> None:
        """Move a node on its radio segment: to `to` at once, or at `speed` m/s from where it is."""
        self.media["radio"].move(node, to, speed)

    def position(self, node: str) -> Tuple[float, float, float]:
        """Where the radio medium places the node now (x, y, z metres)."""
        return self.media["radio"].position(node)

    def media_problems(self) -> List[str]:
        """What went wrong in the media while the lab ran (a channel's process that died, ...)."""
        return [p for medium in self.media.values() for p in medium.problems()]

    def media_manifest(self) -> Dict[str, object]:
        """What the media record for the run manifest, under their names (radio: positions,
        range, loss, airtime, mobility, ticks)."""
        return {name: entry for name, medium in self.media.items() if (entry := medium.manifest())}

    def partition(self, groups: List[List[str]]) -> None:
        """Nothing crosses between the groups (every node in one group) until `heal`."""
        addresses = {name: [str(e.address.ip) for e in self.topo.interfaces(name) if e.address]
                     for name in self.topo.nodes}
        interfaces = {name: [e.interface for e in self.topo.interfaces(name)] for name in self.topo.nodes}
        ports: Dict[Tuple[str, str], str] = {}
        for medium in self.media.values():
            ports.update(medium.receiver_ports())
        nft_in_root(partition_script(self.names.nft_table, groups, addresses, ports, interfaces))
        for medium in self.media.values():
            medium.partition(groups, addresses)

    def heal(self) -> None:
        nft_in_root(heal_script(self.names.nft_table))
        for medium in self.media.values():
            medium.heal()

    # -- nodes ------------------------------------------------------------------------------------

    def exec(self, node: str, command: str, timeout: Optional[float] = 600, check: bool = True) -> str:
        """Run a shell command in the node's network namespace with the machine's tools; return
        its output (stdout and stderr). With `check`, a command that fails raises TestbedError
        with its exit status and output. Not through Mininet's shell: that is a pty, which
        truncates lines over 4 KiB and serialises callers."""
        try:
            res = subprocess.run(["nsenter", f"--net=/proc/{self.hosts[node].pid}/ns/net", "--", "sh", "-c", command],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestbedError(f"node {node}: '{_short(command)}' did not finish within {timeout:g} s") from None
        if check and res.returncode != 0:
            raise TestbedError(f"node {node}: '{_short(command)}' failed (exit {res.returncode}): "
                               f"{res.stdout.strip()[-500:] or 'no output'}")
        return res.stdout

    def exec_in_node(self, node: str, command: str, timeout: float = 30) -> Tuple[Optional[int], str]:
        """Run a shell command inside the node with the node's own tools (in the container, for
        the docker runtime); (exit status, output), the status None when it timed out."""
        started = self.started[node]
        info = {**self.runtime_of(node).describe(self.topo.nodes[node], started), "netns_pid": started.netns_pid}
        argv = self.runtime_of(node).exec_args(info, ["sh", "-c", command], interactive=False)
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, ""
        return res.returncode, res.stdout + res.stderr

    def kill_node(self, node: str) -> None:
        """SIGKILL the node's software. Its namespace outlives it (the testbed's shell and capture
        are in it): its interfaces are taken down so that a dead node neither answers nor sends."""
        try:
            self.runtime_of(node).kill(self.started[node])
        except Exception as exc:
            raise TestbedError(f"kill {node}: {exc}") from None
        interfaces = [e.interface for e in self.topo.interfaces(node)]
        if interfaces:
            self.exec(node, " && ".join(f"ip link set dev {i} down" for i in interfaces))

    def pause_node(self, node: str) -> None:
        """Freeze everything the node runs (its network stays: frames to it queue and drop)."""
        self.runtime_of(node).pause(self.started[node])

    def resume_node(self, node: str) -> None:
        self.runtime_of(node).resume(self.started[node])

    # -- agents -----------------------------------------------------------------------------------

    def agent_pid(self, node: str) -> Optional[int]:
        started = self.started.get(node)
        if started is None or not has_agent(self.topo.nodes[node]):
            return None
        return self.runtime_of(node).agent_pid(started)

    def wait_agents_ready(self, timeout_s: float = 60.0) -> Dict[str, str]:
        """Wait until every agent has logged that it started; returns those that did not, each
        with why (an agent that failed to start is not waited for; one held back for the timeline
        is not started yet)."""
        waiting = [n for n, node in self.topo.nodes.items() if has_agent(node) and not node.held]
        failed: Dict[str, str] = {}
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            still = []
            for node in waiting:
                try:
                    with open(os.path.join(self.node_dirs[node], LOG_NAME)) as handle:
                        # a role may log its own state lines while it is set up, before this one
                        head = list(itertools.islice(handle, 50))
                except FileNotFoundError:
                    head = []
                if any('"state":"started"' in line for line in head):
                    continue
                failure = next((line for line in head if '"state":"failed"' in line), None)
                if failure is not None:
                    failed[node] = "failed: " + str(json.loads(failure).get("error"))
                else:
                    still.append(node)
            waiting = still
            if waiting:
                time.sleep(0.05)
        return {**failed, **{node: f"did not start within {timeout_s:g} s" for node in waiting}}

    def agent_pids(self, nodes: Optional[Iterable[str]] = None) -> Dict[str, int]:
        """The running agents' machine-side pids, by node. Finding a container's agent asks the
        Docker engine (tens of milliseconds each on a loaded machine), so whoever signals many
        agents "at once" looks them all up first, then signals them in one sweep: signalled
        while they are looked up, 165 agents started over 3.3 s in node order (a run's
        `workload started` events), and the first wave of a workload followed the topology."""
        pids = {}
        for node in nodes if nodes is not None else list(self.topo.nodes):
            pid = self.agent_pid(node)
            if pid:
                pids[node] = pid
        return pids

    def signal_agents(self, signum: int, shuffle: Optional[random.Random] = None) -> List[str]:
        """Send a signal to every running agent, all in one sweep (in an order drawn from `shuffle`
        when given); returns the nodes signalled."""
        signalled = []
        pids = list(self.agent_pids().items())
        if shuffle is not None:
            shuffle.shuffle(pids)
        for node, pid in pids:
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
        pids = self.agent_pids(nodes)
        for pid in pids.values():
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

    def start_workload(self, t0_ns: Optional[int] = None) -> None:
        """Tell every agent held at start (hold_workload) to begin, all at once; the media's
        clock (mobility) starts with them. On two cores 165 agents still wake over about 130 ms
        in the order they are signalled, so the order is drawn from the lab's seed: a first wave
        that followed the topology would carry its order through a whole run (an AbC cluster's
        ids, docs/REPRODUCTION.md, "The start order")."""
        self.workload_started = True
        for medium in self.media.values():
            medium.begin(t0_ns if t0_ns is not None else time.time_ns())
        self.signal_agents(signal.SIGUSR2, shuffle=random.Random(f"start order {self.seed}"))

    def start_agent(self, node: str) -> None:
        """A fresh agent process for the node (its network and container stay as they are); its
        workload starts at once if the lab's workload has started."""
        self._all_agents_stopped = False
        self.runtime_of(node).start_agent(self.topo.nodes[node], self.started[node], self.node_dirs[node],
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
                **self.runtime_of(name).describe(node, started),
                "netns_pid": started.netns_pid if started else self.hosts[name].pid,
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

    def versions(self) -> Dict[str, object]:
        """What each runtime in use records of its software, for the run manifest."""
        out: Dict[str, object] = {}
        for runtime_name, nodes in self._by_runtime().items():
            out.update(self.runtimes[runtime_name].versions(nodes))
        return out

    # -- teardown ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Remove everything this lab created; safe to call on a half-built lab, and twice."""
        errors: List[str] = []
        t = time.monotonic()
        for medium in self.media.values():
            try:
                medium.finish()
            except Exception as exc:
                errors.append(f"{medium.name}: {exc}")
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
                _release_shell(host)
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
        for medium in self.media.values():
            try:
                medium.teardown()
            except Exception as exc:
                errors.append(f"{medium.name}: {exc}")
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


def _release_shell(host) -> None:
    """Close a Mininet node's pseudo-terminal and forget the node in Mininet's class-wide maps of
    descriptors to nodes. Mininet does this in net.stop(), which the lab does not call (it tears
    down its own way); without it every lab leaves two descriptors a node open and its nodes
    alive, and a process that makes many labs (an experiment, the Python API, a benchmark) runs
    out of descriptors."""
    from mininet.node import Node as MininetNode

    stdin = getattr(host, "stdin", None)
    if stdin is not None and not stdin.closed:
        fd = stdin.fileno()
        for table in (MininetNode.inToNode, MininetNode.outToNode):
            if table.get(fd) is host:
                del table[fd]
        stdin.close()
    slave = getattr(host, "slave", None)
    if slave is not None:
        try:
            os.close(slave)
        except OSError:
            pass
        host.slave = None
    host.shell = None


def _short(command: str, limit: int = 120) -> str:
    return command if len(command) <= limit else command[:limit] + "..."


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
