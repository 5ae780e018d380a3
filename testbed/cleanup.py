"""Removing what labs leave on the machine, and only that.

Everything a lab creates is found by the names and labels of `testbed.names`: containers
labelled `org.testbed.lab`, processes with TESTBED_LAB in their environment, bridges and ports
`tb<lab id>...`, nftables tables `testbed_<lab id>` and one iptables rule with the comment
`testbed`. Node namespaces vanish with the containers and processes that hold them, and their
veths and tc state with them. Mininet's own `mn -c` is not used: it removes every Mininet object
on the machine, including other users'.

A run whose process was killed also leaves its run directory unfinished (captures per interface,
logs under nodes/, status "running"); `clean_all` finishes those directories too
(testbed.rundir.finish_killed_runs), after their processes are gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import dockerd
from .names import (ENV_LAB, IPTABLES_RULE, LABEL_LAB, STATE_DIR, container_filter, lab_id_of, link_lab_id, state_path,
                    table_of, workdir)


def _run(args: List[str], stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, "", "not found")


def allow_bridged_forwarding() -> None:
    """Docker sets the FORWARD policy to DROP and br_netfilter sends bridged frames through it:
    accept what crosses the testbed's own bridges (and nothing else)."""
    try:
        with open("/proc/sys/net/bridge/bridge-nf-call-iptables") as handle:
            if handle.read().strip() != "1":
                return
    except FileNotFoundError:
        return
    if _run(["iptables", "-C"] + IPTABLES_RULE).returncode != 0:
        _run(["iptables", "-I", IPTABLES_RULE[0], "1"] + IPTABLES_RULE[1:])


def _remove_iptables_rule() -> bool:
    removed = False
    while _run(["iptables", "-C"] + IPTABLES_RULE).returncode == 0:
        if _run(["iptables", "-D"] + IPTABLES_RULE).returncode != 0:
            break
        removed = True
    return removed


def testbed_links(lab_id: Optional[str] = None) -> List[str]:
    out = _run(["ip", "-o", "link", "show"]).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) < 2:
            continue
        name = parts[1].strip().split("@", 1)[0]
        owner = link_lab_id(name)
        if owner is not None and (lab_id is None or owner == lab_id):
            names.append(name)
    return names


def testbed_tables(lab_id: Optional[str] = None) -> List[str]:
    tables = []
    for line in _run(["nft", "list", "tables"]).stdout.splitlines():
        found = table_of(line)
        if found and (lab_id is None or found[1] == lab_id):
            tables.append(found[0])
    return tables


def _ancestors() -> set:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def testbed_processes(lab: Optional[str] = None) -> Dict[int, str]:
    """pid → lab of every process started for a lab (TESTBED_LAB in its environment)."""
    found: Dict[int, str] = {}
    skip = _ancestors()
    key = (ENV_LAB + "=").encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                env = handle.read()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(key):
                owner = item[len(key):].decode(errors="replace")
                if lab is None or owner == lab:
                    found[int(entry)] = owner
                break
    return found


def _gone(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _kill(pids: List[int], grace_s: float = 0.0) -> None:
    """End processes: SIGTERM and up to `grace_s` to exit (a capture then flushes its file and
    statistics), then SIGKILL; waits until they are gone (at most 5 s)."""
    if grace_s > 0:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and not all(_gone(pid) for pid in pids):
            time.sleep(0.02)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 5
    for pid in pids:
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.01)


def _delete_links(names: List[str]) -> None:
    if not names:
        return
    # Bridges first; their ports (veths whose other end is in a node) go with the nodes or here.
    batch = "".join(f"link delete {name}\n" for name in sorted(names, key=lambda n: "p" in n[6:]))
    _run(["ip", "-force", "-batch", "-"], stdin=batch)


def _ovs_bridges(lab_id: Optional[str]) -> List[str]:
    out = _run(["ovs-vsctl", "list-br"])
    if out.returncode != 0:
        return []
    return [b for b in out.stdout.split() if link_lab_id(b) is not None and (lab_id is None or link_lab_id(b) == lab_id)]


def _remove_network(lab_id: Optional[str], removed: Dict[str, int]) -> None:
    """Bridges, ports and nftables tables of one lab (or of every lab), then the iptables rule
    when no lab is left."""
    for bridge in _ovs_bridges(lab_id):
        _run(["ovs-vsctl", "--if-exists", "del-br", bridge])
    links = testbed_links(lab_id)
    _delete_links(links)
    removed["links"] = len(links)
    tables = testbed_tables(lab_id)
    for table in tables:
        _run(["nft", "delete", "table"] + table.split())
    removed["nftables tables"] = len(tables)
    if not testbed_links():
        removed["iptables rules"] = int(_remove_iptables_rule())


def remove_lab_objects(names) -> Dict[str, int]:
    """Remove one lab's processes, bridges, ports and root-namespace nftables tables."""
    removed: Dict[str, int] = {}
    procs = testbed_processes(names.lab)
    _kill(list(procs))
    removed["processes"] = len(procs)
    _remove_network(names.lab_id, removed)
    removed.pop("iptables rules", None)
    from .runtimes.cgroups import Cgroups

    removed["control groups"] = Cgroups().remove(names.lab)
    return removed


# -- lab state files -------------------------------------------------------------------------------

def read_states() -> Dict[str, dict]:
    states = {}
    if not os.path.isdir(STATE_DIR):
        return states
    for entry in sorted(os.listdir(STATE_DIR)):
        if entry.endswith(".json"):
            try:
                with open(os.path.join(STATE_DIR, entry)) as handle:
                    state = json.load(handle)
                states[state["lab"]] = state
            except (OSError, ValueError, KeyError):
                continue
    return states


def write_state(state: dict) -> None:
    os.makedirs(STATE_DIR, exist_ok=True)
    path = state_path(state["lab"])
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle, indent=2)
    os.replace(tmp, path)


def remove_state(lab: str) -> None:
    """The lab's state file and its default working directory (agent configs and logs)."""
    for path in (state_path(lab), state_path(lab) + ".tmp"):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    shutil.rmtree(workdir(lab), ignore_errors=True)


def alive(pid: Optional[int]) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- clean everything ------------------------------------------------------------------------------

@dataclass
class Cleaned:
    """What `clean_all` removed, what it finished, and what it could not look at."""

    removed: Dict[str, int] = field(default_factory=dict)
    finished_runs: List[str] = field(default_factory=list)  # run directories of killed runs, finished
    problems: List[str] = field(default_factory=list)        # e.g. the Docker engine did not answer


def clean_all(lab: Optional[str] = None) -> Cleaned:
    """Remove everything any testbed run left (or one lab's), also after the runner was SIGKILLed,
    and finish the run directories of killed runs."""
    from .rundir import finish_killed_runs, killed_runs

    result = Cleaned()
    removed = result.removed
    states = read_states()
    keepers = [s.get("keeper_pid") for name, s in states.items() if lab is None or name == lab]
    _kill([pid for pid in keepers if alive(pid)])
    runs = killed_runs(lab)

    try:
        client = dockerd.client(timeout=30)
    except dockerd.EngineUnavailable as exc:
        client = None
        if _docker_installed():
            result.problems.append(f"could not look for containers: {exc}")
    if client is not None:
        ids = dockerd.lab_containers(client, lab)
        dockerd.remove_containers(client, ids)
        removed["containers"] = len(ids)

    procs = testbed_processes(lab)
    # a grace period lets a killed run's captures flush their files and write their statistics
    _kill(list(procs), grace_s=2.0 if runs else 0.0)
    removed["processes"] = len(procs)

    _remove_network(lab_id_of(lab) if lab else None, removed)
    from .runtimes.cgroups import Cgroups

    groups = Cgroups()
    found = len(groups.leftovers(lab))
    if found:
        removed["control groups"] = groups.remove(lab)
    for name in states:
        if lab is None or name == lab:
            remove_state(name)
    if os.path.isdir(STATE_DIR):  # working directories of labs whose process died before its state
        for entry in os.listdir(STATE_DIR):
            path = os.path.join(STATE_DIR, entry)
            if os.path.isdir(path) and (lab is None or entry == lab):
                shutil.rmtree(path, ignore_errors=True)
    finished, problems = finish_killed_runs(runs)
    result.finished_runs.extend(finished)
    result.problems.extend(problems)
    return result


def _docker_installed() -> bool:
    """Whether this machine has a Docker engine at all (so that containers could exist)."""
    return shutil.which("dockerd") is not None or os.path.exists("/var/run/docker.sock") or \
        bool(os.environ.get("DOCKER_HOST"))


def live_owners() -> List[str]:
    """What still runs on this machine and may own testbed objects: live `testbed run`s, live
    `testbed up` keepers, processes started for a lab, and running lab containers. Objects found
    while this is empty were left by runs that were killed (or by a restart of the machine), and
    `clean_all` can take them without stopping anyone's run."""
    from .rundir import live_runs

    owners = [f"testbed run pid {p['pid']} (lab {p.get('lab')}, {p.get('run_dir')})" for p in live_runs()]
    owners += [f"testbed up keeper pid {s['keeper_pid']} (lab {name})"
               for name, s in read_states().items() if alive(s.get("keeper_pid"))]
    owners += [f"process {pid} of lab {lab}" for pid, lab in testbed_processes().items()]
    try:
        client = dockerd.client(timeout=30)
        owners += [f"running container {c.name} (lab {c.labels.get(LABEL_LAB)})"
                   for c in client.containers.list(filters={"label": container_filter()}, ignore_removed=True)]
    except dockerd.EngineUnavailable:
        pass
    return owners


def _cgroup_leftovers() -> List[str]:
    from .runtimes.cgroups import Cgroups

    return Cgroups().leftovers()


def leftovers() -> Dict[str, List[str]]:
    """What testbed objects exist now (for tests and `testbed clean --check`)."""
    found: Dict[str, List[str]] = {
        "links": testbed_links(),
        "nftables tables": testbed_tables(),
        "processes": [f"{pid} ({lab})" for pid, lab in testbed_processes().items()],
        "iptables rules": ["FORWARD -i tb+ (testbed)"] if _run(["iptables", "-C"] + IPTABLES_RULE).returncode == 0 else [],
        "control groups": _cgroup_leftovers(),
    }
    try:
        found["containers"] = dockerd.lab_containers(dockerd.client(timeout=30))
    except dockerd.EngineUnavailable:
        found["containers"] = []
    return {k: v for k, v in found.items() if v}
