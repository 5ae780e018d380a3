"""Registry of agent roles: a role name → the module that implements it.

A topology names a role per node; validation checks the name against this registry. Each role
lives in its own module under `agents/roles/` and registers here, as containerlab registers node
kinds, so that adding a protocol adds a module and a line, not a branch in the orchestrator.
"""

from __future__ import annotations

from typing import Dict, List

#: role name → module path, imported only when a node runs the role
_ROLES: Dict[str, str] = {
    "idle": "agents.roles.idle",
    "probe": "agents.roles.probe",
}

#: roles that run no testbed agent: the node runs its image's (or its own) command
NO_AGENT = frozenset({"idle"})


def role_names() -> List[str]:
    return sorted(_ROLES)


def role_module(name: str) -> str:
    return _ROLES[name]
