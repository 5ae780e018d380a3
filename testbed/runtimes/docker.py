"""The `docker` runtime: each node is a container whose network namespace is the Mininet host.

Containers start with networking disabled (each gets its own empty network namespace from
runc, with only `lo`, as network `none` gives, but without a libnetwork sandbox), no
capabilities beyond those a node asks for, and the node's resource limits (memory and swap,
pids, CPU quota: testbed/resources.py); the testbed then builds links into their namespaces
and configures addresses, routes and shaping from outside with the machine's own tools
(`nsenter` into the namespace), so an image needs no shell, `ip` or `tc`: any image runs
unmodified, even one that holds a single static binary.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from mininet.node import Host

from .. import dockerd
from ..agent_config import NODE_DIR_IN_CONTAINER, has_agent
from ..errors import CapabilityError, TestbedError, UsageError
from ..model import Node
from ..monitor import own_group_dirs
from ..names import LABEL_LAB, LABEL_NODE, LabNames
from .base import Runtime, Started


class DockerHost(Host):
    """A Mininet host whose shell runs in a container's network namespace (as Containernet does),
    but with the machine's own bash and tools rather than the image's."""

    def __init__(self, name: str, container_pid: int, **params) -> None:
        self.container_pid = container_pid
        self._starting_shell = False
        super().__init__(name, **params)

    def startShell(self, mnopts=None) -> None:  # noqa: N802 (Mininet's name)
        self._starting_shell = True
        try:
            super().startShell(mnopts)
        finally:
            self._starting_shell = False

    def _popen(self, cmd, **params):
        if self._starting_shell:
            # Mininet asks for `mnexec -cdn bash ...` (a new namespace); enter the container's instead.
            opts = cmd[1].replace("n", "")
            cmd = [cmd[0], opts, "nsenter", f"--net=/proc/{self.container_pid}/ns/net", "--"] + list(cmd[2:])
        return super()._popen(cmd, **params)


#: the /etc/hosts every container sees (read-only): the localhost lines Docker writes for
#: network `none`, which a container started without networking does not get from the engine
HOSTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hosts")


def limits(node: Node) -> Dict[str, int]:
    """The node's resources as the engine takes them (a host config's fields): memory with no swap
    beyond it, pids, and the CPU quota in billionths of a core."""
    res = node.resources
    out: Dict[str, int] = {}
    if res.memory is not None:
        out["mem_limit"] = res.memory
        out["memswap_limit"] = res.memory
    if res.pids is not None:
        out["pids_limit"] = res.pids
    if res.cpus is not None:
        out["nano_cpus"] = int(round(res.cpus * 1e9))
    return out


class DockerRuntime(Runtime):
    name = "docker"

    def __init__(self, names: LabNames) -> None:
        super().__init__(names)
        self._client = None

    @property
    def docker(self):
        if self._client is None:
            self._client = dockerd.client()
        return self._client

    def check(self, nodes: List[Node], capabilities) -> None:
        from ..images import AGENT_IMAGE, ensure_agent

        if not capabilities.has("docker"):
            raise CapabilityError(capabilities.checks["docker"].detail)
        if any(n.image == AGENT_IMAGE for n in nodes) and any(has_agent(n) for n in nodes):
            try:
                ensure_agent(self.docker, lambda message: None)  # rebuilt only if agents/ changed
            except dockerd.not_found_errors():
                pass  # no base image: reported below as a missing image
        missing = [image for image in sorted({node.image for node in nodes})
                   if dockerd.image_id(self.docker, image) is None]
        if missing:
            hint = "build it with 'testbed images build'" if AGENT_IMAGE in missing else \
                "build or load it first (docker build / docker load); no registry is reachable here"
            raise UsageError(f"image(s) not on this machine: {', '.join(missing)}: {hint}")
        taken = dockerd.lab_containers(self.docker, self.names.lab)
        if taken:
            raise UsageError(f"lab {self.names.lab!r} already has {len(taken)} container(s): "
                             f"'testbed down {self.names.lab}' or 'testbed clean' first")

    def create(self, nodes: List[Node], node_dirs: Dict[str, str], envs: Dict[str, Dict[str, str]]
               ) -> Dict[str, Started]:
        api = self.docker.api

        def start_one(node: Node) -> Started:
            # The engine's own calls, three a node (create, start, inspect for the pid): the SDK's
            # containers.run inspects after creating as well, and a reload is one more
            host_config = api.create_host_config(
                cap_drop=["ALL"], cap_add=node.capabilities or None,
                binds={node_dirs[node.name]: {"bind": NODE_DIR_IN_CONTAINER, "mode": "rw"},
                       HOSTS_FILE: {"bind": "/etc/hosts", "mode": "ro"}},
                **limits(node))
            # Not network `none`: every container on it has an endpoint on the engine's one
            # `none` network, and dockerd 20.10 (Debian bookworm's) can deadlock when two of
            # them leave it at once (libnetwork's watch loop holds the controller's lock and
            # waits for the network's, while a leaving sandbox holds the network's and waits
            # for the controller's); every later removal then waits forever. Seen in a
            # teardown of 200 containers (docs/EXPERIMENTS.md, "Runs that hang"). Without
            # networking the engine makes no sandbox and takes neither lock.
            created = api.create_container(
                node.image, command=node.command, name=self.names.container(node.name), hostname=node.name,
                detach=True, network_disabled=True, labels={LABEL_LAB: self.names.lab, LABEL_NODE: node.name},
                environment=envs[node.name], host_config=host_config)
            cid = created["Id"]
            api.start(cid)
            state = api.inspect_container(cid)["State"]
            pid = state.get("Pid")
            if not pid:
                logs = api.logs(cid, tail=5).decode(errors="replace").strip()
                raise TestbedError(f"node {node.name}: its container exited at once "
                                   f"(status {state.get('ExitCode')}): {logs or 'no output'}")
            return Started(node.name, netns_pid=pid, container_id=cid,
                           container_name=self.names.container(node.name))

        started: Dict[str, Started] = {}
        errors: List[str] = []
        pool = ThreadPoolExecutor(max_workers=dockerd.WORKERS)
        try:
            futures = {pool.submit(start_one, node): node for node in nodes}
            for future, node in futures.items():
                try:
                    started[node.name] = future.result()
                except Exception as exc:
                    errors.append(f"{node.name}: {exc}")
        except BaseException:
            # Ctrl-C (or SIGTERM) while the containers start: start no more, and remove every
            # container of the lab, those the workers were still starting included (the lab's
            # record of what started never sees them)
            pool.shutdown(wait=True, cancel_futures=True)
            self.destroy(started)
            raise
        finally:
            pool.shutdown(wait=True)
        if errors:
            self.destroy(started)
            raise TestbedError("could not start containers:\n  " + "\n  ".join(errors[:5]))
        return started

    def host_params(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        assert started is not None
        return {"cls": DockerHost, "container_pid": started.netns_pid}

    def node_dir_inside(self, node_dir: str) -> str:
        return NODE_DIR_IN_CONTAINER

    def launch(self, nodes: List[Node], hosts: Dict[str, object], started: Dict[str, Started],
               node_dirs: Dict[str, str], with_agent: Dict[str, bool], envs: Dict[str, Dict[str, str]]) -> None:
        # The container's own command (by default the image's idle `sleep`) holds the namespace;
        # the agent runs beside it, so that stopping and starting it keeps the node's network.
        agent_nodes = [n for n in nodes if with_agent[n.name]]
        with ThreadPoolExecutor(max_workers=dockerd.WORKERS) as pool:
            list(pool.map(lambda n: self.start_agent(n, started[n.name], node_dirs[n.name]), agent_nodes))

    def agent_python(self) -> str:
        return "python3"  # the image's

    def start_agent(self, node: Node, started: Started, node_dir: str, start_now: bool = False) -> None:
        self.docker.api.exec_start(
            self.docker.api.exec_create(started.container_id, self.agent_argv(node, node_dir, start_now),
                                        environment=node.env or None), detach=True)

    def agent_pid(self, started: Started) -> Optional[int]:
        """The agent among the container's processes, read from its control group (the engine's
        `top` takes tens of milliseconds a container on a loaded machine, and a run asks for every
        agent each time it signals them); from the engine where the group cannot be read."""
        pids = container_processes(started)
        if pids is None:
            return next((pid for pid, args in dockerd.processes(self.docker, started.container_id) or []
                         if "-m agents" in args), None)
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if AGENT_ARGV in handle.read():
                        return pid
            except OSError:  # gone meanwhile
                continue
        return None

    def kill(self, started: Started) -> None:
        self.docker.api.kill(started.container_id, signal="SIGKILL")

    def pause(self, started: Started) -> None:
        self.docker.api.pause(started.container_id)

    def resume(self, started: Started) -> None:
        self.docker.api.unpause(started.container_id)

    def exec_args(self, state: Dict[str, object], command: List[str], interactive: bool) -> List[str]:
        flags = ["-i", "-t"] if interactive else ["-i"]
        return ["docker", "exec"] + flags + [str(state["container_name"])] + command

    def describe(self, node: Node, started: Optional[Started]) -> Dict[str, object]:
        return {"image": node.image, "container_name": started.container_name if started else None,
                "process_pid": None}

    def versions(self, nodes: List[Node]) -> Dict[str, object]:
        return {"docker_engine": self.docker.version().get("Version"),
                "images": {image: dockerd.image_id(self.docker, image) for image in sorted({n.image for n in nodes})}}

    def destroy(self, started: Dict[str, Started]) -> None:
        """Remove the nodes' containers: those started, and any other container labelled with
        this lab (one a worker created while the start was being interrupted). Their first
        processes are killed first, all at once, and the removals wait until the engine has seen
        every container stop: it tears them down side by side meanwhile (a thousand containers
        went in 36 s instead of 52), and a removal never races an exit the engine is handling
        (dockerd 20.10 can then wait 10 s for an exit it missed, and keep the container)."""
        killed = False
        for s in started.values():
            if container_processes(s):  # still its container's: the pid was not taken by another
                try:
                    os.kill(s.netns_pid, signal.SIGKILL)
                    killed = True
                except ProcessLookupError:
                    pass
        if killed:
            deadline = time.monotonic() + STOP_WAIT_S
            try:
                while dockerd.lab_containers(self.docker, self.names.lab, running=True) and \
                        time.monotonic() < deadline:
                    time.sleep(0.05)
            except Exception:  # the engine not answering: the removals say so
                pass
        ids = [s.container_id for s in started.values() if s.container_id]
        try:
            ids += [cid for cid in dockerd.lab_containers(self.docker, self.names.lab) if cid not in ids]
        except Exception:  # the engine not answering: remove what is known
            pass
        if ids:
            dockerd.remove_containers(self.docker, ids)
        self.close()

    def close(self) -> None:
        """Close the engine client (its pooled connections); a later call opens another."""
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None


#: how long a teardown waits for the engine to see the killed containers stop before it asks for
#: their removal anyway (a thousand took 20 s on two cores)
STOP_WAIT_S = 60.0
#: what an agent's command line holds (python3 -m agents --config ...), as /proc/PID/cmdline has it
AGENT_ARGV = b"\0-m\0agents\0"


def container_processes(started: Started) -> Optional[List[int]]:
    """The processes of the node's container, from the control group of its first process, read
    in /sys/fs/cgroup (the group's path names the container, so a pid the kernel gave to another
    process since is not taken for it); None when that group cannot be read."""
    if not started.container_id or not started.netns_pid:
        return None
    found = own_group_dirs(started.netns_pid, ("pids",))
    if not found or not found[1]:
        return None
    for directory in found[1]["pids"]:
        if started.container_id not in directory:
            return None
        try:
            with open(os.path.join(directory, "cgroup.procs")) as handle:
                return [int(line) for line in handle if line.strip()]
        except OSError:
            continue
    return None
