"""`stop`: stop the node's agent (SIGTERM, its log flushed); the node's network stays up."""

from __future__ import annotations

from .base import FaultAction


class Stop(FaultAction):
    name = "stop"
    summary = "stop the node's agent (SIGTERM, then SIGKILL after 3 s); its network stays"
    target = "node"
    inverse = "start"
    liveness = "down"

    def apply(self, nemesis, planned):
        exited = nemesis.lab.stop_agents([planned.node])
        return {"exited_in_time": exited.get(planned.node, False)}
