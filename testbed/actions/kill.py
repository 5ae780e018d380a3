"""`kill`: SIGKILL everything the node runs; its interfaces go down, so it goes silent for good."""

from __future__ import annotations

from .base import FaultAction


class Kill(FaultAction):
    name = "kill"
    summary = "SIGKILL the node (container or processes); its interfaces go down; it stays dead"
    target = "node"
    liveness = "down"

    def apply(self, nemesis, planned):
        nemesis.lab.kill_node(planned.node)
        nemesis.killed.add(planned.node)
        nemesis.paused.discard(planned.node)
        return None
