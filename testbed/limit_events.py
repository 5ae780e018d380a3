"""A node meeting its resource limits (testbed/resources.py) during a run, from its control groups.

The kernel counts, per control group, the processes its OOM killer ended (version 1:
`memory.oom_control`'s `oom_kill`; version 2: `memory.events`' `oom_kill`) and the forks the pids
limit refused (`pids.events`' `max`). `LimitWatch.poll` reads both for every node whose processes
have a group of their own (a container, or a process node with limits) and returns what rose
since the last poll: an `oom` event each time the OOM killer ended a node's process, and a
`pids_limit` event the first time a node's forks were refused (a fork bomb is refused thousands
of times a second; the count goes into the totals). The run writes each event into its timeline
(testbed/run.py) and the totals into the manifest (`limits_hit`); the analysis counts a node as
down from an `oom` or `pids_limit` entry on, as after `kill` (testbed/actions: OBSERVED).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .monitor import CGROUP_ROOT, in_group, own_group_dirs

#: the events, in the words of the timeline
OOM, PIDS = "oom", "pids_limit"


def limit_files(pid: int, root: str = CGROUP_ROOT) -> Optional[Tuple[Optional[str], Optional[str]]]:
    """(file counting OOM kills, file counting refused forks) of the groups holding `pid`, each
    None where the process shares the runner's group (nothing of its own to count); None when
    neither is its own or the process is gone."""
    found = own_group_dirs(pid, ("memory", "pids"), root)
    if found is None:
        return None
    version, dirs = found
    files = (in_group(dirs, "memory", "memory.events" if version == 2 else "memory.oom_control"),
             in_group(dirs, "pids", "pids.events"))
    return files if any(files) else None


def _count(path: Optional[str], key: str) -> int:
    if path is None:
        return 0
    with open(path) as handle:
        for line in handle:
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    return 0


def read_counts(files: Tuple[Optional[str], Optional[str]]) -> Tuple[int, int]:
    """(OOM kills, refused forks) so far."""
    return _count(files[0], "oom_kill"), _count(files[1], "max")


class LimitWatch:
    """Follows every node's counters; `poll` returns the new events as (node, event, how many)."""

    def __init__(self, root: str = CGROUP_ROOT) -> None:
        self.root = root
        self._files: Dict[int, Optional[Tuple[Optional[str], Optional[str]]]] = {}
        self._last: Dict[str, Tuple[int, int]] = {}
        #: node → {"oom": kills, "pids_limit": refused forks} over the run
        self.totals: Dict[str, Dict[str, int]] = {}

    def poll(self, pids: Dict[str, int]) -> List[Tuple[str, str, int]]:
        events = []
        for node, pid in pids.items():
            if pid not in self._files:
                self._files[pid] = limit_files(pid, self.root)
            files = self._files[pid]
            if files is None:
                continue
            try:
                ooms, refused = read_counts(files)
            except (OSError, ValueError):
                continue  # the group went away with its node
            last_ooms, last_refused = self._last.get(node, (0, 0))
            self._last[node] = (ooms, refused)
            total = self.totals.setdefault(node, {OOM: 0, PIDS: 0})
            if ooms > last_ooms:
                total[OOM] += ooms - last_ooms
                events.append((node, OOM, ooms - last_ooms))
            if refused > last_refused:
                if total[PIDS] == 0:
                    events.append((node, PIDS, refused - last_refused))
                total[PIDS] += refused - last_refused
        return events

    def hit(self) -> Dict[str, Dict[str, int]]:
        """The nodes that met a limit, with their totals."""
        return {node: {k: v for k, v in t.items() if v} for node, t in sorted(self.totals.items()) if any(t.values())}
