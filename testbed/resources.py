"""Per-node resource limits: `resources: {memory, pids, cpus}` on a topology's defaults, kinds and
nodes, so that a runaway or hostile node cannot take the machine down with it.

- `memory`: the most memory the node's processes may use (RAM, no swap), such as `256MiB`, `1GiB`
  or Docker's `512m`; past it the kernel's OOM killer ends a process of the node.
- `pids`: the most processes and threads the node may have at once; past it fork() fails.
- `cpus`: the share of one core the node may use over each scheduling period, such as 0.5 (half
  a core) or 2; none by default.

Defaults (`DEFAULTS`), applied where nothing is said: 1 GiB of memory and 1024 pids, no CPU cap.
They stop a leak or a fork bomb long before the machine (24 GiB and a few thousand processes for
hundreds of nodes here) while no shipped scenario comes near them: an agent uses about 25 MiB
(23 MiB resident, measured in a 200-node run) and a handful of threads. CPU is left to the
kernel's fair share by default, because a default cap would change every experiment's timing;
`cpus` is there for a node that should be bounded.

A node that runs the agent needs `MIN_AGENT_MEMORY` and `MIN_AGENT_PIDS` to start at all; less
is refused when the file is read. Nothing here knows Docker or cgroups: the runtimes apply the
limits (testbed/runtimes/).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Optional

from .units import parse_size_bytes

KEYS = ("memory", "pids", "cpus")
MIB = 1024 ** 2
GIB = 1024 ** 3
#: below this the kernel cannot hold a container's processes at all (Docker refuses less than 6 MiB)
MIN_MEMORY = 6 * MIB
MAX_MEMORY = 1024 * GIB
#: what a node running the agent needs to start: Python and its imports take about 23 MiB resident
MIN_AGENT_MEMORY = 48 * MIB
MIN_PIDS = 1
MAX_PIDS = 4_194_304          # the kernel's pid_max ceiling
#: the agent's process with its event loop, the resolver and executor threads it may start
MIN_AGENT_PIDS = 16
MIN_CPUS = 0.01               # 1 ms of a 100 ms period: the kernel's cfs_quota floor is 1 ms
MAX_CPUS = 1024.0

MEMORY_ALLOWED = "a size from 6MiB to 1024GiB such as 256MiB, 1GiB or 512m (a bare number is bytes)"
PIDS_ALLOWED = "a whole number of processes and threads from 1 to 4194304"
CPUS_ALLOWED = "a share of one core from 0.01 to 1024, such as 0.5 or 2"

_DOCKER_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg])\s*$", re.IGNORECASE)
_DOCKER_FACTOR = {"k": 1024, "m": MIB, "g": GIB}


class ResourceError(ValueError):
    def __init__(self, key: str, message: str, allowed: str) -> None:
        super().__init__(message)
        self.key, self.message, self.allowed = key, message, allowed


@dataclass(frozen=True)
class Resources:
    """A node's limits: memory in bytes, pids, cpus in cores; None is no limit."""

    memory: Optional[int] = None
    pids: Optional[int] = None
    cpus: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        """As the manifest and `testbed topo show` give them, and a topology file takes them back:
        every field, null where there is no limit."""
        return {"memory": None if self.memory is None else size_text(self.memory), "pids": self.pids,
                "cpus": self.cpus}


DEFAULTS = Resources(memory=1 * GIB, pids=1024, cpus=None)


def size_text(n: int) -> str:
    """Bytes as the largest binary unit that holds them whole (1GiB, 48MiB, 1536KiB, 1000B)."""
    for unit, factor in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def parse_memory(value: Any) -> int:
    if isinstance(value, str) and _DOCKER_SIZE.match(value):
        match = _DOCKER_SIZE.match(value)
        number = float(match.group(1)) * _DOCKER_FACTOR[match.group(2).lower()]
    else:
        try:
            number = parse_size_bytes(value)
        except ValueError as exc:
            raise ResourceError("memory", str(exc), MEMORY_ALLOWED) from None
    if number < MIN_MEMORY:
        raise ResourceError("memory", f"{value} is below 6MiB", MEMORY_ALLOWED)
    if number > MAX_MEMORY:
        raise ResourceError("memory", f"{value} is above 1024GiB", MEMORY_ALLOWED)
    return int(number)


def parse_pids(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise ResourceError("pids", f"{value!r} is not a whole number", PIDS_ALLOWED)
    number = int(value)
    if number < MIN_PIDS:
        raise ResourceError("pids", f"{value} is below 1", PIDS_ALLOWED)
    if number > MAX_PIDS:
        raise ResourceError("pids", f"{value} is above 4194304", PIDS_ALLOWED)
    return number


def parse_cpus(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResourceError("cpus", f"{value!r} is not a number", CPUS_ALLOWED)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ResourceError("cpus", f"{value} is not finite", CPUS_ALLOWED)
    if number < MIN_CPUS:
        raise ResourceError("cpus", f"{value} is below 0.01", CPUS_ALLOWED)
    if number > MAX_CPUS:
        raise ResourceError("cpus", f"{value} is above 1024", CPUS_ALLOWED)
    return number


_PARSERS = {"memory": parse_memory, "pids": parse_pids, "cpus": parse_cpus}


def parse_value(key: str, value: Any) -> Optional[Any]:
    """One field of a `resources` mapping: its limit, or None for `null` (no limit, lifting a
    default). Raises ResourceError naming the key."""
    if key not in KEYS:
        raise ResourceError(key, f"unknown field '{key}'", ", ".join(KEYS))
    return None if value is None else _PARSERS[key](value)


def agent_problem(resources: Resources) -> Optional[ResourceError]:
    """Why a node with these limits cannot start the agent, or None."""
    if resources.memory is not None and resources.memory < MIN_AGENT_MEMORY:
        return ResourceError("memory", f"{size_text(resources.memory)} is less than the agent needs to start "
                                       f"({size_text(MIN_AGENT_MEMORY)})",
                             f"at least {size_text(MIN_AGENT_MEMORY)} on a node that runs the agent")
    if resources.pids is not None and resources.pids < MIN_AGENT_PIDS:
        return ResourceError("pids", f"{resources.pids} is fewer than the agent needs to start ({MIN_AGENT_PIDS})",
                             f"at least {MIN_AGENT_PIDS} on a node that runs the agent")
    return None
