"""Control groups for the `process` runtime's limits (testbed/resources.py), on cgroup v1 (one
hierarchy per controller, as on this machine) or v2 (the unified hierarchy).

A lab's nodes each get a group `testbed/<lab>/<node>` under the memory, pids and cpu controllers
(v1: /sys/fs/cgroup/<controller>/testbed/...; v2: /sys/fs/cgroup/testbed/...), with the node's
memory limit (and the same limit on memory plus swap where the kernel accounts swap), its pids
limit and its CPU quota (`cpus` × a 100 ms period). The node's processes join it when they start;
what they fork stays in it. `remove` takes the lab's groups away once its processes are gone, and
`testbed clean` removes what a killed run left (`leftovers`).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from ..resources import Resources

ROOT = "/sys/fs/cgroup"
TOP = "testbed"
#: a limit and the controller that applies it
CONTROLLERS = {"memory": "memory", "pids": "pids", "cpus": "cpu"}
CPU_PERIOD_US = 100_000


class Cgroups:
    """The machine's control groups as far as the limits need them."""

    def __init__(self, root: str = ROOT) -> None:
        self.root = root
        self.v2 = os.path.exists(os.path.join(root, "cgroup.controllers"))
        self._can: Optional[Dict[str, bool]] = None
        self._enabled: set = set()  # v2: labs whose parents hand the controllers down already

    # -- what the machine can do
    def _base(self, controller: str) -> str:
        return self.root if self.v2 else os.path.join(self.root, controller)

    def available(self) -> Dict[str, bool]:
        """Per limit (memory, pids, cpus): whether a group can apply it here."""
        if self.v2:
            try:
                with open(os.path.join(self.root, "cgroup.controllers")) as fh:
                    have = set(fh.read().split())
            except OSError:
                have = set()
            writable = os.access(self.root, os.W_OK)
            return {limit: writable and controller in have for limit, controller in CONTROLLERS.items()}
        return {limit: os.path.isdir(self._base(controller)) and os.access(self._base(controller), os.W_OK)
                for limit, controller in CONTROLLERS.items()}

    def _dir(self, controller: str, lab: str, node: Optional[str] = None) -> str:
        parts = [self._base(controller), TOP, lab] + ([node] if node else [])
        return os.path.join(*parts)

    # -- a lab's groups
    def create(self, lab: str, node: str, resources: Resources) -> List[str]:
        """Make the node's group with its limits; the limits it could not apply (no controller)."""
        missing = []
        if self._can is None:  # the machine's answer does not change within a lab's build
            self._can = self.available()
        for limit, controller in CONTROLLERS.items():
            value = getattr(resources, limit)
            if value is None:
                continue
            if not self._can[limit]:
                missing.append(limit)
                continue
            path = self._dir(controller, lab, node)
            if self.v2 and lab not in self._enabled:
                self._enable_v2(lab)
                self._enabled.add(lab)
            os.makedirs(path, exist_ok=True)
            self._limit(path, limit, value)
        return missing

    def _enable_v2(self, lab: str) -> None:
        """v2 hands a controller down only where each parent's subtree_control names it."""
        wanted = " ".join(f"+{c}" for c in sorted(set(CONTROLLERS.values())))
        for path in (self.root, os.path.join(self.root, TOP), os.path.join(self.root, TOP, lab)):
            os.makedirs(path, exist_ok=True)
            _write(os.path.join(path, "cgroup.subtree_control"), wanted)

    def _limit(self, path: str, limit: str, value) -> None:
        if limit == "memory":
            if self.v2:
                _write(os.path.join(path, "memory.max"), str(value))
                _write(os.path.join(path, "memory.swap.max"), "0", optional=True)
            else:
                _write(os.path.join(path, "memory.limit_in_bytes"), str(value))
                _write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(value), optional=True)
        elif limit == "pids":
            _write(os.path.join(path, "pids.max"), str(value))
        else:
            quota = max(1000, int(round(value * CPU_PERIOD_US)))
            if self.v2:
                _write(os.path.join(path, "cpu.max"), f"{quota} {CPU_PERIOD_US}")
            else:
                _write(os.path.join(path, "cpu.cfs_period_us"), str(CPU_PERIOD_US))
                _write(os.path.join(path, "cpu.cfs_quota_us"), str(quota))

    def add(self, lab: str, node: str, pid: int) -> None:
        """Move a process into the node's groups (those that exist)."""
        for procs in self.procs_files(lab, node):
            _write(procs, str(pid))

    def procs_files(self, lab: str, node: str) -> List[str]:
        """The node's groups' `cgroup.procs` files (a process joins by writing its pid there)."""
        return [os.path.join(self._dir(c, lab, node), "cgroup.procs") for c in sorted(set(CONTROLLERS.values()))
                if os.path.isdir(self._dir(c, lab, node))]

    def remove(self, lab: Optional[str] = None) -> int:
        """Remove a lab's groups (every lab's with None), deepest first; those still holding a
        process stay. Returns how many were removed."""
        removed = 0
        for path in self.leftovers(lab):
            try:
                os.rmdir(path)
                removed += 1
            except OSError:
                pass
        for controller in sorted(set(CONTROLLERS.values())):
            top = os.path.join(self._base(controller), TOP)
            for path in ([os.path.join(top, lab)] if lab else _subdirs(top)) + [top]:
                try:
                    os.rmdir(path)   # only once empty: another lab's groups keep the top
                except OSError:
                    pass
        return removed

    def leftovers(self, lab: Optional[str] = None) -> List[str]:
        """The node groups that exist (of one lab, or of every lab)."""
        found = []
        for controller in sorted(set(CONTROLLERS.values())):
            top = os.path.join(self._base(controller), TOP)
            for labdir in ([os.path.join(top, lab)] if lab else _subdirs(top)):
                found += _subdirs(labdir)
        return sorted(set(found))


def _subdirs(path: str) -> List[str]:
    try:
        return [os.path.join(path, e) for e in os.listdir(path) if os.path.isdir(os.path.join(path, e))]
    except OSError:
        return []


def _write(path: str, text: str, optional: bool = False) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError:
        if not optional:
            raise
