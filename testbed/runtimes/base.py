"""The interface every node runtime implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..model import Node


@dataclass
class LabNames:
    """How one lab names what it creates on the machine, so that clean finds it and nothing else."""

    lab: str
    lab_id: str  # 4 characters, part of every interface and bridge name

    def container(self, node: str) -> str:
        return f"tb-{self.lab}-{node}"

    def bridge(self, index: int) -> str:
        return f"tb{self.lab_id}s{index}"

    def internal_bridge(self, link_index: int) -> str:
        """The bridge inside a node-to-node cable (see network.Lab)."""
        return f"tb{self.lab_id}c{link_index}"

    @property
    def nft_table(self) -> str:
        return f"testbed_{self.lab_id}"


@dataclass
class Started:
    """A node's software once started: the pid whose network namespace is the node's."""

    name: str
    netns_pid: int
    container_id: Optional[str] = None
    container_name: Optional[str] = None
    process_pid: Optional[int] = None  # the node's own command (process runtime)
    agent: Optional[object] = None  # the agent's process handle, where the runtime has one
    extra: Dict[str, str] = field(default_factory=dict)


class Runtime:
    """Starts and stops the software of the nodes that use it; gives Mininet a host class."""

    name = "base"

    def __init__(self, names: LabNames) -> None:
        self.names = names

    def check(self, nodes: List[Node]) -> None:
        """Raise a TestbedError if these nodes cannot start here. No side effects."""

    def create(self, nodes: List[Node], node_dirs: Dict[str, str]) -> Dict[str, Started]:
        """Before the network: create what holds each node's namespace (nothing if Mininet does).
        `node_dirs` holds each node's directory on the machine (its agent config and event log)."""
        return {}

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        """Keyword arguments for Mininet's addHost (including `cls`)."""
        raise NotImplementedError

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started],
               node_dirs: Dict[str, str]) -> None:
        """After the network is configured: start each node's software where it is not running
        yet, and the testbed agent of each node whose role has one."""

    def start_agent(self, node: Node, started: Started, node_dir: str, start_now: bool = False) -> None:
        """Start a fresh agent process for the node; `start_now`: its workload at once."""
        raise NotImplementedError

    def agent_pid(self, started: Started) -> Optional[int]:
        """The machine-side pid of the node's running agent, if any."""
        raise NotImplementedError

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        """The command line that runs `command` inside a node, from its recorded state."""
        raise NotImplementedError

    def destroy(self, started: Dict[str, Started]) -> None:
        """Stop every node's software and remove what `create` made."""
