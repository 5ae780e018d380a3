"""The `abc-tree-server` role: a server of the AbC tree infrastructure (agents/abc/servers.py)."""

from .servers import TREE_PARAMS as PARAMS
from .servers import TreeServer as ROLE

from .common import structure_problem as check_structure

__all__ = ["PARAMS", "ROLE", "check_structure"]
