"""`link_down`: a link (or one direction of it) drops everything until `link_up`."""

from __future__ import annotations

from .base import FaultAction


class LinkDown(FaultAction):
    name = "link_down"
    summary = "the link drops every frame (one direction with direction:) until link_up"
    target = "link"
    inverse = "link_up"

    def apply(self, nemesis, planned):
        nemesis.set_down(planned, True)
        return None
