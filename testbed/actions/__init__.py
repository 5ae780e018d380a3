"""Timeline actions: the faults and changes a scenario plays on a running lab, one module each.

Each action is a `FaultAction` subclass (testbed.actions.base) that declares what it acts on
(a node, a link, or the whole lab), its own fields and how they are validated, what undoes it
after `for:`, how it is applied to a lab, and its effect on the liveness of a node (which the
analysis uses to judge who was expected to deliver what). Scenario validation, the nemesis
(testbed.faults) and the analysis all read this one registry: a new action is one module and
one line here.
"""

from __future__ import annotations

import importlib
from typing import Dict, List, Optional, Type

#: action name → "module:Class", in the order the documentation lists them
_ACTIONS: Dict[str, str] = {
    "kill": "testbed.actions.kill:Kill",
    "stop": "testbed.actions.stop:Stop",
    "start": "testbed.actions.start:Start",
    "pause": "testbed.actions.pause:Pause",
    "resume": "testbed.actions.resume:Resume",
    "link_down": "testbed.actions.link_down:LinkDown",
    "link_up": "testbed.actions.link_up:LinkUp",
    "set_link": "testbed.actions.set_link:SetLink",
    "partition": "testbed.actions.partition:Partition",
    "heal": "testbed.actions.heal:Heal",
    "exec": "testbed.actions.exec_:Exec",
    "move": "testbed.actions.move:Move",
}

#: what the run observes rather than plays (testbed.limit_events), with its effect on the node's
#: liveness: a node whose process the OOM killer ended at its memory limit, or whose forks its pids
#: limit refused, counts as down from then on, as after `kill` (it no longer runs the protocol as
#: written); a scenario cannot schedule these
OBSERVED: Dict[str, str] = {"oom": "down", "pids_limit": "down"}

_loaded: Dict[str, type] = {}


def action_names() -> List[str]:
    return list(_ACTIONS)


def action_class(name: str) -> Type:
    """The FaultAction subclass of an action name (KeyError for an unknown one)."""
    if name not in _loaded:
        module_name, _, attr = _ACTIONS[name].partition(":")
        _loaded[name] = getattr(importlib.import_module(module_name), attr)
    return _loaded[name]


def liveness(name: str) -> Optional[str]:
    """An action's effect on its node's liveness: "down" (the node stops taking part: kill,
    stop, and the observed oom and pids_limit), "up" (it takes part again: start) or None; None
    for an action this testbed does not know (a manifest written by a later version)."""
    if name in OBSERVED:
        return OBSERVED[name]
    return action_class(name).liveness if name in _ACTIONS else None


def timers(name: str) -> Optional[str]:
    """An action's effect on its node's timers: "held" (frozen: pause, and every "down" action),
    "released" (resume, and every "up" action) or None (also for an action this testbed does not
    know)."""
    if name in OBSERVED:
        return {"down": "held", "up": "released"}.get(OBSERVED[name])
    if name not in _ACTIONS:
        return None
    cls = action_class(name)
    return cls.timers or {"down": "held", "up": "released"}.get(cls.liveness)
