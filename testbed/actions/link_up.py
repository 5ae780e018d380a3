"""`link_up`: a link that was taken down carries frames again (with its other faults)."""

from __future__ import annotations

from .base import FaultAction


class LinkUp(FaultAction):
    name = "link_up"
    summary = "a link taken down carries frames again"
    target = "link"

    def apply(self, nemesis, planned):
        nemesis.set_down(planned, False)
        return None
