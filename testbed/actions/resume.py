"""`resume`: thaw a paused node."""

from __future__ import annotations

from .base import FaultAction


class Resume(FaultAction):
    name = "resume"
    summary = "thaw a paused node"
    target = "node"
    timers = "released"

    def apply(self, nemesis, planned):
        if planned.node in nemesis.paused:
            nemesis.resume_node(planned.node)
        return None
