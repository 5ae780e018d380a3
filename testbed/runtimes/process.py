"""The `process` runtime: the node's software runs as a plain process in a Mininet host.

For machines without Docker, and for networks larger than containers allow. The host is
Mininet's own (a shell in a new network namespace); the node's command runs in that namespace
with the machine's file system. Every process carries TESTBED_LAB in its environment so that
`testbed clean` finds it after a crash. The node's resource limits are its control groups'
(testbed/runtimes/cgroups.py): the processes join them as they start.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from typing import Dict, List, Optional

from mininet.node import Host

from ..agent_config import PROJECT_ROOT
from ..errors import CapabilityError
from ..model import Node
from ..names import ENV_LAB
from .base import Runtime, Started, signal_pids
from .cgroups import Cgroups

#: what a node runs when it names no command and its role starts no agent
IDLE_COMMAND = ["sleep", "infinity"]


class ProcessRuntime(Runtime):
    name = "process"

    def __init__(self, names) -> None:
        super().__init__(names)
        self._procs: List[subprocess.Popen] = []
        self._hosts: Dict[str, object] = {}
        self._envs: Dict[str, Dict[str, str]] = {}
        self._cgroups = Cgroups()
        self._limited: Dict[str, bool] = {}
        self.warnings: List[str] = []

    def check(self, nodes: List[Node], capabilities) -> None:
        """A limit a file asked for must be applied: refused where no control group can (the
        defaults only warn, in `unapplied`)."""
        can = self._cgroups.available()
        unbounded: Dict[str, List[str]] = {}
        for node in nodes:
            asked = [limit for limit in node.resource_origin if getattr(node.resources, limit) is not None
                     and not can.get(limit, False)]
            if asked:
                raise CapabilityError(f"node {node.name} (runtime process): this machine has no writable control "
                                      f"group for its {', '.join(asked)} limit; run it as a docker node, or "
                                      f"set {', '.join(f'resources.{a}: null' for a in asked)} to run unbounded")
            for limit in ("memory", "pids", "cpus"):
                if getattr(node.resources, limit) is not None and not can.get(limit, False):
                    unbounded.setdefault(limit, []).append(node.name)
        self.warnings = [f"process nodes {', '.join(names)} run without the default {limit} limit: no writable "
                         f"control group for it here" for limit, names in unbounded.items()]

    def create(self, nodes: List[Node], node_dirs: Dict[str, str], envs: Dict[str, Dict[str, str]]
               ) -> Dict[str, Started]:
        for node in nodes:
            missing = self._cgroups.create(self.names.lab, node.name, node.resources)
            self._limited[node.name] = len(missing) < sum(
                1 for limit in ("memory", "pids", "cpus") if getattr(node.resources, limit) is not None)
        return {}

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        return {"cls": Host}

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started],
               node_dirs: Dict[str, str], with_agent: Dict[str, bool], envs: Dict[str, Dict[str, str]]) -> None:
        self._hosts = hosts
        self._envs = envs
        for node in nodes:
            started[node.name] = Started(node.name, netns_pid=hosts[node.name].pid)
            if with_agent[node.name]:
                self.start_agent(node, started[node.name], node_dirs[node.name])
            else:
                started[node.name].process_pid = self._popen(node, node.command or IDLE_COMMAND).pid

    def _popen(self, node: Node, argv: List[str]):
        env = dict(os.environ)
        env.update(self._envs.get(node.name, node.env))
        env[ENV_LAB] = self.names.lab
        env["PYTHONPATH"] = PROJECT_ROOT
        devnull = subprocess.DEVNULL
        proc = self._hosts[node.name].popen(argv, env=env, stdin=devnull, stdout=devnull, stderr=devnull)
        self._procs.append(proc)
        if self._limited.get(node.name):
            try:
                self._cgroups.add(self.names.lab, node.name, proc.pid)
            except OSError:
                pass  # it exited already
        return proc

    def start_agent(self, node: Node, started: Started, node_dir: str, start_now: bool = False) -> None:
        proc = self._popen(node, self.agent_argv(node, node_dir, start_now))
        started.process_pid = proc.pid
        started.agent = proc

    def agent_pid(self, started: Started) -> Optional[int]:
        proc = started.agent
        return proc.pid if proc is not None and proc.poll() is None else None

    def _pids(self, started: Started) -> List[int]:
        return sorted({self.agent_pid(started), started.process_pid} - {None})

    def kill(self, started: Started) -> None:
        signal_pids(self._pids(started), signal.SIGKILL)

    def pause(self, started: Started) -> None:
        signal_pids(self._pids(started), signal.SIGSTOP)

    def resume(self, started: Started) -> None:
        signal_pids(self._pids(started), signal.SIGCONT)

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        """In the node's network namespace and, where it has them, its control groups (the command
        is held to the node's limits, as `docker exec` is)."""
        argv = ["nsenter", f"--net=/proc/{state['netns_pid']}/ns/net", "--"]
        procs = state.get("cgroup_procs") or []
        if procs:
            join = "".join(f"echo $$ > {shlex.quote(str(p))}; " for p in procs)
            argv += ["sh", "-c", join + 'exec "$@"', "sh"]
        return argv + command

    def describe(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        out = super().describe(node, started)
        out["cgroup_procs"] = self._cgroups.procs_files(self.names.lab, node.name) if self._limited.get(node.name) else []
        return out

    def destroy(self, started: Dict[str, Started]) -> None:
        signal_pids([s.process_pid for s in started.values()], signal.SIGKILL)
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
            proc.wait()
        self._procs = []
        self._cgroups.remove(self.names.lab)
