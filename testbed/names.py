"""How the testbed names what it creates on the machine, and how it recognises those names.

Every object a lab creates carries its lab's name or id: containers `tb-<lab>-<node>` with the
Docker label `org.testbed.lab`, processes with TESTBED_LAB in their environment, bridges and
ports `tb<lab id>s<n>[p<m>]` (switches), `tb<lab id>c<n>[p<m>]` (the bridge inside a
node-to-node cable) and `tb<lab id>r<n>[p<m>]` (radio segments), the nftables table `testbed_<lab id>` in the machine's namespace, and one
iptables rule with the comment `testbed`. Names are built and matched here only, so that
`testbed clean` finds exactly what labs leave behind and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import List, Optional

#: the prefix of every interface and bridge name a lab creates
NAME_PREFIX = "tb"
#: Docker labels on every container: its lab, its node
LABEL_LAB = "org.testbed.lab"
LABEL_NODE = "org.testbed.node"
#: in the environment of every process a lab starts (the lab's name)
ENV_LAB = "TESTBED_LAB"
#: the nftables table each node's own namespace gets for shaping on its interfaces
NODE_TABLE = "testbed"
#: where lab state files (testbed up) and labs' default working directories live
STATE_DIR = os.environ.get("TESTBED_STATE_DIR", "/run/testbed/labs")
#: where each running `testbed run` records its run directory, so that `testbed clean` can
#: finish the directory of a run whose process was killed
RUNS_DIR = os.environ.get("TESTBED_RUNS_DIR", os.path.join(os.path.dirname(STATE_DIR), "runs"))
#: the iptables rule that lets bridged frames through Docker's FORWARD policy
IPTABLES_RULE = ["FORWARD", "-i", NAME_PREFIX + "+", "-m", "comment", "--comment", "testbed", "-j", "ACCEPT"]

#: what the testbed allows as a node, switch or segment name (it is part of container names), and
#: as an interface name (Linux allows 15 bytes)
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
NAME_ALLOWED = "a letter, then up to 31 letters, digits, '-' or '_'"
INTF_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")
INTF_ALLOWED = "an interface name of up to 15 characters, starting with a letter (not 'lo')"

_LINK_RE = re.compile(r"^tb([0-9a-z]{4})[scr]\d+(p\d+)?$")
_TABLE_RE = re.compile(r"^table (\w+) (testbed_([0-9a-z]{4})(_dup)?)$")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class LabNames:
    """The names one lab gives what it creates."""

    lab: str
    lab_id: str  # 4 characters, part of every interface and bridge name

    def container(self, node: str) -> str:
        return f"tb-{self.lab}-{node}"

    def bridge(self, index: int) -> str:
        """The Linux (or OVS) bridge of the lab's `index`-th switch, from 1."""
        return f"{NAME_PREFIX}{self.lab_id}s{index}"

    def internal_bridge(self, link_index: int) -> str:
        """The two-port bridge inside a node-to-node cable (see testbed.media.cable)."""
        return f"{NAME_PREFIX}{self.lab_id}c{link_index}"

    def radio_bridge(self, index: int) -> str:
        """The bridge of the lab's `index`-th radio segment, from 1 (see testbed.media.radio)."""
        return f"{NAME_PREFIX}{self.lab_id}r{index}"

    @staticmethod
    def radio_chain(index: int) -> str:
        """The bridge-table base chain that decides which copies of a radio segment's frames arrive."""
        return f"radio{index}"

    @staticmethod
    def port(bridge: str, number: int) -> str:
        """The `number`-th port (from 1) of one of the lab's bridges."""
        return f"{bridge}p{number}"

    @property
    def nft_table(self) -> str:
        """The lab's bridge-family table in the machine's namespace (loss and partitions)."""
        return f"testbed_{self.lab_id}"

    @staticmethod
    def direction_chain(link_index: int, side: int) -> str:
        """The chain of the lab's bridge table that holds one cable direction's loss rule."""
        return f"d{link_index}_{side}"

    def owns_link(self, name: str) -> bool:
        return link_lab_id(name) == self.lab_id


def netdev_chain(hook: str, device: str) -> str:
    """The chain of a node namespace's table (NODE_TABLE) for one interface's netdev hook."""
    return f"{hook[0]}_" + re.sub(r"[^A-Za-z0-9_]", "_", device)


def lab_id_of(lab: str) -> str:
    """A lab's 4-character id: part of a hash of its name (interface names are at most 15 bytes)."""
    value = int.from_bytes(hashlib.sha1(lab.encode()).digest()[:8], "big")
    lab_id = ""
    for _ in range(4):
        value, rem = divmod(value, 36)
        lab_id += _ALPHABET[rem]
    return lab_id


def lab_names(lab: str) -> LabNames:
    return LabNames(lab=lab, lab_id=lab_id_of(lab))


def run_lab_name(run_dir: str) -> str:
    """The lab name of the run whose directory is `run_dir` (an absolute path)."""
    return "run-" + hashlib.sha1(run_dir.encode()).hexdigest()[:8]


def link_lab_id(name: str) -> Optional[str]:
    """The lab id in an interface or bridge name a lab created, else None."""
    match = _LINK_RE.match(name)
    return match.group(1) if match else None


def table_of(line: str) -> Optional[tuple]:
    """(family and name, lab id) of a line of `nft list tables` that names a lab's table, else None."""
    match = _TABLE_RE.match(line.strip())
    if not match:
        return None
    return f"{match.group(1)} {match.group(2)}", match.group(3)


def state_path(lab: str) -> str:
    """The state file of a lab held by `testbed up`."""
    return os.path.join(STATE_DIR, f"{lab}.json")


def run_pointer(lab: str) -> str:
    """The file that records a running run's directory and process (see RUNS_DIR)."""
    return os.path.join(RUNS_DIR, f"{lab}.json")


def workdir(lab: str) -> str:
    """A lab's default working directory (agent configs and logs) when it is not a run."""
    return os.path.join(STATE_DIR, lab)


def container_filter(lab: Optional[str] = None) -> List[str]:
    """The Docker label filter of one lab's containers, or of every lab's."""
    return [LABEL_LAB if lab is None else f"{LABEL_LAB}={lab}"]
