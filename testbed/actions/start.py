"""`start`: a fresh agent process on a node whose agent was stopped, or held back for the timeline
(workload `start: timeline`: a node that joins mid-run); not on a killed node."""

from __future__ import annotations

from ..errors import TestbedError
from .base import FaultAction


class Start(FaultAction):
    name = "start"
    summary = "start a fresh agent on a stopped or held-back node (its workload starts at once)"
    target = "node"
    liveness = "up"

    def apply(self, nemesis, planned):
        node = planned.node
        if node in nemesis.killed:
            raise TestbedError(f"start {node}: the node was killed")
        if nemesis.lab.agent_pid(node):
            return None  # already running
        nemesis.lab.start_agent(node)
        return None
