"""The `process` runtime: the node's software runs as a plain process in a Mininet host.

For machines without Docker, and for networks larger than containers allow. The host is
Mininet's own (a shell in a new network namespace); the node's command runs in that namespace
with the machine's file system. Every process carries TESTBED_LAB in its environment so that
`testbed clean` finds it after a crash.
"""

from __future__ import annotations

import os
import signal
from typing import Dict, List, Optional

from mininet.node import Host

from .. import ENV_LAB
from ..model import Node
from .base import Runtime, Started

#: what a node runs when it names no command and its role starts no agent
IDLE_COMMAND = ["sleep", "infinity"]


class ProcessRuntime(Runtime):
    name = "process"

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        return {"cls": Host}

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started]) -> None:
        for node in nodes:
            host = hosts[node.name]
            env = dict(os.environ)
            env.update(node.env)
            env[ENV_LAB] = self.names.lab
            proc = host.popen(node.command or IDLE_COMMAND, env=env, stdin=open(os.devnull),
                              stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
            started[node.name] = Started(node.name, netns_pid=host.pid, process_pid=proc.pid)

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        return ["nsenter", f"--net=/proc/{state['netns_pid']}/ns/net", "--"] + command

    def destroy(self, started: Dict[str, Started]) -> None:
        for s in started.values():
            if s.process_pid:
                try:
                    os.kill(s.process_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
