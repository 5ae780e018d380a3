"""Registry of agent roles: a role name → the module that implements it.

A topology names a role per node; validation checks the name against this registry. Each role
lives in its own module under `agents/roles/` and registers here, as containerlab registers node
kinds, so that adding a protocol adds a module and a line, not a branch in the orchestrator.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

#: role name → module path, imported only when a node runs the role
_ROLES: Dict[str, str] = {
    "idle": "agents.roles.idle",
    "probe": "agents.roles.probe",
    # AbC (agents/abc/): components and the three sequencing infrastructures of the paper
    "abc-component": "agents.abc.component",
    "abc-vertex": "agents.abc.colouring",
    "abc-cluster-server": "agents.abc.cluster",
    "abc-ring-server": "agents.abc.ring",
    "abc-tree-server": "agents.abc.tree",
    # DEECo gossip (agents/deeco/): nodes hosting components, and groupers
    "deeco-node": "agents.deeco.node",
    "deeco-grouper": "agents.deeco.grouper",
    # causal cluster consistency (agents/causal/): cluster management, PrCast and the causality layer
    "causal-member": "agents.causal.member",
}

#: roles that run no testbed agent: the node runs its image's (or its own) command
NO_AGENT = frozenset({"idle"})


def role_names() -> List[str]:
    return sorted(_ROLES)


def role_module(name: str) -> str:
    return _ROLES[name]


#: a node's place in a generated structure (testbed/generators.py); every role may be given them
STRUCTURE_PARAMS = frozenset({"infrastructure", "parent", "next"})


def check_params(role: str, params: Dict[str, Any]) -> Optional[Tuple[str, str, str]]:
    """(parameter, problem, what is allowed) for the first bad parameter, or None.

    A role module declares PARAMS: name → (check, allowed text); roles without PARAMS accept any.
    """
    spec: Dict[str, Tuple[Callable[[Any], bool], str]] = getattr(importlib.import_module(_ROLES[role]), "PARAMS", None)
    if spec is None:
        return None
    for name, value in params.items():
        if name in STRUCTURE_PARAMS and name not in spec:
            continue
        if name not in spec:
            return name, f"unknown parameter {name!r} of role {role}", ", ".join(sorted(spec))
        check, allowed = spec[name]
        if not check(value):
            if isinstance(value, float) and not math.isfinite(value):
                return name, f"{value!r} is {'not a number' if math.isnan(value) else 'not finite'}", allowed
            return name, f"{value!r} is not allowed", allowed
    return None


def check_structure(role: str, name: str, nodes: Dict[str, Dict[str, Any]]) -> Optional[Tuple[str, str, str]]:
    """(parameter, problem, what is allowed) when node `name` cannot play its role in the structure
    the topology gives (nodes: name → {"id", "role", "params"}), or None. A role module declares
    `check_structure(nodes, name)` when its nodes depend on each other (AbC servers, components)."""
    check = getattr(importlib.import_module(_ROLES[role]), "check_structure", None)
    return check(nodes, name) if check else None


def role_promises(role: str) -> FrozenSet[str]:
    """What a role's protocol promises that the analysis should hold it to, from the module's
    PROMISES: "contiguous-order" (the order numbers its sequencers give are 0, 1, 2, ... without
    holes, so a number a node skips is an anomaly of total order)."""
    return frozenset(getattr(importlib.import_module(_ROLES[role]), "PROMISES", ()))


#: The longest wait a parameter may ask for, in seconds: a year, the longest scenario
#: (testbed/units.py, MAX_TIME_MS). asyncio sleeps through .inf and .nan without a word.
MAX_SECONDS = 365 * 24 * 3600
#: The largest message body: 64 MiB is under 48,000 datagrams of agents/wire.py's 1472 bytes,
#: within the 65,535 fragments its 16-bit count allows, and a few copies fit in a node's memory.
MAX_BODY_BYTES = 64 * 1024 * 1024
#: The most messages a count may ask for: the wire numbers a node's messages with 32-bit
#: sequences, and an AbC send takes two (its request and its data message).
MAX_COUNT = 2 ** 31 - 1


def is_number(v: Any) -> bool:
    """An int or a finite float, not a boolean: YAML reads .inf and .nan as floats."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def number_at_least(low: float, at_most: float = math.inf) -> Callable[[Any], bool]:
    return lambda v: is_number(v) and low <= v <= at_most


def whole_at_least(low: int, at_most: float = math.inf) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= at_most
