"""The interface every medium implements, and what media share while a lab is built."""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from mininet.link import Link as MininetLink

from ..model import Topology
from ..names import LabNames

#: (node, interface) → the bridge port that transmits to that interface
ReceiverPorts = Dict[Tuple[str, str], str]


class PrebuiltLink(MininetLink):
    """A Mininet link whose veth pair the lab has already created, with all the others."""

    @classmethod
    def makeIntfPair(cls, *args, **kwargs) -> None:  # noqa: N802 (Mininet's name)
        return None


class End:
    """One end of a veth pair: its device name, the namespace it goes into (None: the machine's),
    and the Mininet node it is recorded on."""

    def __init__(self, device: str, netns_pid: Optional[int], owner: object) -> None:
        self.device, self.netns_pid, self.owner = device, netns_pid, owner

    @property
    def on_bridge(self) -> bool:
        return self.netns_pid is None


class Build:
    """What the media share while the lab is built: the Mininet network and hosts, the lab's
    names, the veth pairs to create in one `ip -batch`, the bridges made so far."""

    def __init__(self, net, hosts: Dict[str, object], names: LabNames) -> None:
        self.net = net
        self.hosts = hosts
        self.names = names
        self.batch: List[str] = []
        self.bridges: Dict[str, str] = {}  # topology switch name → its bridge device
        self._ports: Dict[str, int] = {}

    def add_bridge(self, device: str, stp: bool = False, ovs: bool = False):
        """A bridge in the machine's namespace (a Mininet switch object)."""
        from mininet.node import OVSSwitch
        from mininet.nodelib import LinuxBridge

        if ovs:
            return self.net.addSwitch(device, cls=OVSSwitch, failMode="standalone", stp=stp)
        return self.net.addSwitch(device, cls=LinuxBridge, stp=stp)

    def new_port(self, bridge: str) -> End:
        """The next port of one of the lab's bridges."""
        self._ports[bridge] = self._ports.get(bridge, 0) + 1
        return End(self.names.port(bridge, self._ports[bridge]), None, self.net.get(bridge))

    def node_end(self, node: str, interface: str) -> End:
        return End(interface, self.hosts[node].pid, self.hosts[node])

    def veth(self, one: End, two: End) -> None:
        """A veth pair, each end created directly in its namespace, and recorded on Mininet's
        nodes (Mininet then creates nothing itself: see network._PrebuiltLink)."""
        specs = [f"name {e.device}" + (f" netns {e.netns_pid}" if e.netns_pid else "") for e in (one, two)]
        self.batch.append(f"link add {specs[0]} type veth peer {specs[1]}")
        self.batch.extend(f"link set dev {e.device} up" for e in (one, two) if e.on_bridge)
        self.net.addLink(one.owner, two.owner, cls=PrebuiltLink, intfName1=one.device, intfName2=two.device,
                         params1={"up": None}, params2={"up": None})


class Medium:
    """One kind of layer-2 medium of a lab: switches, cables, a radio segment, ...

    The lab calls, in order: `check` before anything is created, `add` while the network is
    described (bridges and veth pairs), `start` once the nodes have their addresses, `begin` when
    the experiment's clock starts (a run's time zero), `finish` before the nodes go, and
    `teardown` when the lab goes; between `start` and `teardown`, `receiver_ports` says where
    frames towards each node interface leave a bridge (partitions drop there; a medium without
    bridges drops them itself in `partition`), and `manifest` what the medium emulates, for the
    run manifest."""

    name = "base"

    def __init__(self, topo: Topology, names: LabNames, shaper, capabilities, workdir: Optional[str] = None,
                 node_dirs: Optional[Dict[str, str]] = None, seed: int = 0, time_dilation: float = 1.0) -> None:
        self.topo = topo
        #: the emulated world runs this many times slower than the wall clock: a medium emulates
        #: its rates, delays and clock (ticks, mobility) in that virtual time
        self.time_dilation = time_dilation
        self.names = names
        self.shaper = shaper
        self.capabilities = capabilities
        self.workdir = workdir      # the run directory (or the lab's working directory)
        self.node_dirs = node_dirs  # each node's directory, as the lab made them
        self.seed = seed

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        """Raise if this machine cannot realise the medium; return the properties it will run
        without (accepted as not emulated). Creates nothing."""
        return frozenset()

    def add(self, build: Build) -> None:
        """Describe the medium's bridges and veth pairs to the lab's network."""

    def start(self) -> None:
        """The network is up and the nodes have their addresses: apply the initial settings."""

    def begin(self, t0_ns: Optional[int] = None) -> None:
        """The experiment's clock starts (time-driven media start moving)."""

    def receiver_ports(self) -> ReceiverPorts:
        return {}

    def manifest(self) -> Dict[str, object]:
        """What the run manifest records of this medium under its name ({}: nothing)."""
        return {}

    def partition(self, groups: List[List[str]], addresses: Dict[str, List[str]]) -> None:
        """Nothing crosses between the groups until `heal`, where the lab's bridge table cannot
        drop it (`receiver_ports` says where it can); `addresses` are each node's IPv4 addresses."""

    def heal(self) -> None:
        """The partition is over."""

    def finish(self) -> None:
        """The lab is about to stop its nodes: stop changing, read counters, close records."""

    def warnings(self) -> List[str]:
        """What `check` found worth saying without refusing (said before anything is created)."""
        return []

    def problems(self) -> List[str]:
        """What went wrong while the lab ran and the run went on (a run's manifest lists them)."""
        return []

    @property
    def unemulated(self) -> FrozenSet[str]:
        """What this medium runs without so far (accepted as not emulated)."""
        return frozenset()

    def teardown(self) -> None:
        """Remove what the medium made that does not go with the lab's named objects (the lab
        deletes every bridge, port and table it named anyway, see cleanup.remove_lab_objects)."""
