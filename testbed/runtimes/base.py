"""The interface every node runtime implements.

A runtime is everything that differs between ways of running a node's software: a container per
node (`docker`), a plain process in a Mininet host (`process`). The lab, the nemesis and the run
talk only to this interface, so a new runtime is one module registered in `runtimes/__init__.py`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..agent_config import CONFIG_NAME
from ..model import Node
from ..names import LabNames


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
    """Starts, signals and stops the software of the nodes that use it; gives Mininet a host class."""

    name = "base"

    def __init__(self, names: LabNames) -> None:
        self.names = names

    # -- before anything is created ---------------------------------------------------------------

    #: what `check` found worth a warning but not a refusal (the run's manifest `warnings`)
    warnings: List[str] = []

    def check(self, nodes: List[Node], capabilities) -> None:
        """Raise a TestbedError if these nodes cannot start here; set `warnings`. No side effects."""

    # -- build ------------------------------------------------------------------------------------

    def create(self, nodes: List[Node], node_dirs: Dict[str, str], envs: Dict[str, Dict[str, str]]
               ) -> Dict[str, Started]:
        """Before the network: create what holds each node's namespace (nothing if Mininet does).
        `node_dirs` holds each node's directory on the machine (its agent config and event log),
        `envs` the environment of each node's software (agent_config.node_env and the node's own)."""
        return {}

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        """Keyword arguments for Mininet's addHost (including `cls`)."""
        raise NotImplementedError

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started],
               node_dirs: Dict[str, str], with_agent: Dict[str, bool], envs: Dict[str, Dict[str, str]]) -> None:
        """After the network is configured: start each node's software where it is not running
        yet, and the testbed agent of each node that has one (`with_agent`)."""

    def node_dir_inside(self, node_dir: str) -> str:
        """Where the node's software sees its node directory."""
        return node_dir

    # -- the agent --------------------------------------------------------------------------------

    def agent_argv(self, node: Node, node_dir: str, start_now: bool = False) -> List[str]:
        """The command line of the node's testbed agent, as the node runs it."""
        python = self.agent_python()
        config = os.path.join(self.node_dir_inside(node_dir), CONFIG_NAME)
        return [python, "-m", "agents", "--config", config] + (["--start-now"] if start_now else [])

    def agent_python(self) -> str:
        return sys.executable

    def start_agent(self, node: Node, started: Started, node_dir: str, start_now: bool = False) -> None:
        """Start a fresh agent process for the node; `start_now`: its workload at once."""
        raise NotImplementedError

    def agent_pid(self, started: Started) -> Optional[int]:
        """The machine-side pid of the node's running agent, if any."""
        raise NotImplementedError

    # -- faults -----------------------------------------------------------------------------------

    def kill(self, started: Started) -> None:
        """SIGKILL everything the node runs; its namespace may outlive it (see Lab.kill_node)."""
        raise NotImplementedError

    def pause(self, started: Started) -> None:
        """Freeze everything the node runs."""
        raise NotImplementedError

    def resume(self, started: Started) -> None:
        """Thaw what pause froze."""
        raise NotImplementedError

    # -- introspection ----------------------------------------------------------------------------

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        """The command line that runs `command` inside a node, from its recorded state."""
        raise NotImplementedError

    def describe(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        """What the lab's state file records of the node beyond its name, role and addresses."""
        return {"image": None, "container_name": None,
                "process_pid": started.process_pid if started else None}

    def versions(self, nodes: List[Node]) -> Dict[str, object]:
        """What the run manifest records of this runtime's software (engine, images)."""
        return {}

    # -- teardown ---------------------------------------------------------------------------------

    def destroy(self, started: Dict[str, Started]) -> None:
        """Stop every node's software and remove what `create` made."""


def signal_pids(pids, signum: int) -> None:
    """Send a signal to each pid that still exists."""
    for pid in pids:
        if pid:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

