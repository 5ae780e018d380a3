"""Removing what labs leave on the machine, and only that.

Everything a lab creates is found by name or label: containers labelled `org.testbed.lab`,
processes with TESTBED_LAB in their environment, bridges and switch ports named
`tb<lab id>s<n>[p<m>]`, nftables tables `testbed_<lab id>[_dup]` and one iptables rule with the
comment `testbed`. Node namespaces vanish with the containers and processes that hold them, and
their veths and tc state with them. Mininet's own `mn -c` is not used: it removes every Mininet
object on the machine, including other users'.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from typing import Dict, List, Optional

from . import ENV_LAB, LABEL_LAB

STATE_DIR = os.environ.get("TESTBED_STATE_DIR", "/run/testbed/labs")
LINK_RE = re.compile(r"^tb([0-9a-z]{4})[sc]\d+(p\d+)?$")
TABLE_RE = re.compile(r"^table (\w+) (testbed_([0-9a-z]{4})(_dup)?)$")
IPTABLES_RULE = ["FORWARD", "-i", "tb+", "-m", "comment", "--comment", "testbed", "-j", "ACCEPT"]


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
        match = LINK_RE.match(name)
        if match and (lab_id is None or match.group(1) == lab_id):
            names.append(name)
    return names


def testbed_tables(lab_id: Optional[str] = None) -> List[str]:
    tables = []
    for line in _run(["nft", "list", "tables"]).stdout.splitlines():
        match = TABLE_RE.match(line.strip())
        if match and (lab_id is None or match.group(3) == lab_id):
            tables.append(f"{match.group(1)} {match.group(2)}")
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


def _kill(pids: List[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 5
    for pid in pids:
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                try:
                    with open(f"/proc/{pid}/stat") as handle:
                        if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                            break
                except OSError:
                    break
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
    return [b for b in out.stdout.split() if LINK_RE.match(b) and (lab_id is None or b[2:6] == lab_id)]


def remove_lab_objects(names) -> Dict[str, int]:
    """Remove one lab's processes, bridges, ports and root-namespace nftables tables."""
    removed: Dict[str, int] = {}
    procs = testbed_processes(names.lab)
    _kill(list(procs))
    removed["processes"] = len(procs)
    for bridge in _ovs_bridges(names.lab_id):
        _run(["ovs-vsctl", "--if-exists", "del-br", bridge])
    links = testbed_links(names.lab_id)
    _delete_links(links)
    removed["links"] = len(links)
    tables = testbed_tables(names.lab_id)
    for table in tables:
        _run(["nft", "delete", "table"] + table.split())
    removed["nftables tables"] = len(tables)
    if not testbed_links():
        _remove_iptables_rule()
    return removed


# -- lab state files -------------------------------------------------------------------------------

def state_path(lab: str) -> str:
    return os.path.join(STATE_DIR, f"{lab}.json")


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
    for suffix in (".json", ".json.tmp"):
        try:
            os.remove(os.path.join(STATE_DIR, lab + suffix))
        except FileNotFoundError:
            pass
    shutil.rmtree(os.path.join(STATE_DIR, lab), ignore_errors=True)


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

def clean_all(lab: Optional[str] = None) -> Dict[str, int]:
    """Remove everything any testbed run left (or one lab's), also after the runner was SIGKILLed."""
    from .network import lab_names

    removed: Dict[str, int] = {}
    states = read_states()
    keepers = [s.get("keeper_pid") for name, s in states.items() if lab is None or name == lab]
    _kill([pid for pid in keepers if alive(pid)])

    containers = _testbed_containers(lab)
    if containers:
        from .runtimes.docker import remove_containers
        client, ids = containers
        remove_containers(client, ids)
    removed["containers"] = len(containers[1]) if containers else 0

    procs = testbed_processes(lab)
    _kill(list(procs))
    removed["processes"] = len(procs)

    lab_id = lab_names(lab).lab_id if lab else None
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
    for name in states:
        if lab is None or name == lab:
            remove_state(name)
    if os.path.isdir(STATE_DIR):  # working directories of labs whose process died before its state
        for entry in os.listdir(STATE_DIR):
            path = os.path.join(STATE_DIR, entry)
            if os.path.isdir(path) and (lab is None or entry == lab):
                shutil.rmtree(path, ignore_errors=True)
    return removed


def _testbed_containers(lab: Optional[str]):
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:
        return None
    label = LABEL_LAB if lab is None else f"{LABEL_LAB}={lab}"
    return client, [c.id for c in client.containers.list(all=True, filters={"label": label})]


def leftovers() -> Dict[str, List[str]]:
    """What testbed objects exist now (for tests and `testbed clean --check`)."""
    found: Dict[str, List[str]] = {
        "links": testbed_links(),
        "nftables tables": testbed_tables(),
        "processes": [f"{pid} ({lab})" for pid, lab in testbed_processes().items()],
        "iptables rules": ["FORWARD -i tb+ (testbed)"] if _run(["iptables", "-C"] + IPTABLES_RULE).returncode == 0 else [],
    }
    containers = _testbed_containers(None)
    found["containers"] = containers[1] if containers else []
    return {k: v for k, v in found.items() if v}
