"""The `abc-ring-server` role: a server of the AbC ring infrastructure (agents/abc/servers.py)."""

from .servers import EVENT_FIELDS
from .servers import RING_PARAMS as PARAMS
from .servers import RingServer as ROLE

from .common import PROMISES
from .common import structure_problem as check_structure

__all__ = ["EVENT_FIELDS", "PARAMS", "PROMISES", "ROLE", "check_structure"]
