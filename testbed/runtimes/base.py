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
    process_pid: Optional[int] = None
    extra: Dict[str, str] = field(default_factory=dict)


class Runtime:
    """Starts and stops the software of the nodes that use it; gives Mininet a host class."""

    name = "base"

    def __init__(self, names: LabNames) -> None:
        self.names = names

    def check(self, nodes: List[Node]) -> None:
        """Raise a TestbedError if these nodes cannot start here. No side effects."""

    def create(self, nodes: List[Node]) -> Dict[str, Started]:
        """Before the network: create what holds each node's namespace (None if Mininet does)."""
        return {}

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        """Keyword arguments for Mininet's addHost (including `cls`)."""
        raise NotImplementedError

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started]) -> None:
        """After the network is configured: start the nodes' software where it is not running yet."""

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        """The command line that runs `command` inside a node, from its recorded state."""
        raise NotImplementedError

    def destroy(self, started: Dict[str, Started]) -> None:
        """Stop every node's software and remove what `create` made."""
