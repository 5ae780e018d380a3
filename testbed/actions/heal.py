"""`heal`: end a partition."""

from __future__ import annotations

from .base import FaultAction


class Heal(FaultAction):
    name = "heal"
    summary = "end a partition"
    target = "lab"

    def apply(self, nemesis, planned):
        nemesis.lab.heal()
        nemesis.partitioned = False
        return None
