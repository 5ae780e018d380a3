"""The `abc-ring-server` role: a server of the AbC ring infrastructure (agents/abc/servers.py)."""

from .servers import RING_PARAMS as PARAMS
from .servers import RingServer as ROLE

from .common import structure_problem as check_structure

__all__ = ["PARAMS", "ROLE", "check_structure"]
