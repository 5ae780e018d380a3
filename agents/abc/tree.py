"""The `abc-tree-server` role: a server of the AbC tree infrastructure (agents/abc/servers.py)."""

from .servers import EVENT_FIELDS
from .servers import TREE_PARAMS as PARAMS
from .servers import TreeServer as ROLE

from .common import PROMISES
from .common import structure_problem as check_structure

__all__ = ["EVENT_FIELDS", "PARAMS", "PROMISES", "ROLE", "check_structure"]
