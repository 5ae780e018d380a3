"""`pause`: freeze everything the node runs (its frames queue and drop) until `resume`."""

from __future__ import annotations

from .base import FaultAction


class Pause(FaultAction):
    name = "pause"
    summary = "freeze the node (SIGSTOP, docker pause) until resume"
    target = "node"
    timers = "held"
    inverse = "resume"

    def apply(self, nemesis, planned):
        node = planned.node
        if node in nemesis.paused or node in nemesis.killed:
            return None
        nemesis.lab.pause_node(node)
        nemesis.paused.add(node)
        return None
