"""Protocol analyses: one module per role family, registered here, so that the generic job and
report hold no protocol knowledge.

A protocol analysis module declares:
- NAME: its section's key in results.json (and its report heading's anchor);
- ROLES: the roles of its family (agents/roles), for the documentation;
- TYPES: the message type codes whose application sends and deliveries it reads;
- STATES: the `state` values of the state events it reads (the job hands over those rows only);
- COMPARED: (label, path in results.json) of its measures worth comparing across runs;
- measures(sends, deliveries, manifest, states, sent) -> dict: its section ({} when the run has
  none of its traffic); sends and deliveries are pandas frames of TYPES (RunData.frames: the
  application sends, hop 0 and the origin's own, with `intended`; the deliveries with node,
  origin, seq, type, t, produced_ns, hops, accepted), states the run's state events of STATES
  (columns run, node, t, state and the role's fields), sent the run's send events of every type,
  relays included, counted per (node, type, relayed) into messages, transmissions, datagrams and
  bytes (RunData.sent, spark_analysis.metrics);
- html(section) -> str: its part of index.html;
- optionally checks(section) -> list: property checks it judges from its own inputs (results in
  the checks' shape, spark_analysis/checks/verdict.py), added to the run's checks after the
  registry's (the causal analysis's ticket uniqueness, from logged ticket changes);
- optionally shortfall(section) -> dict or None: the share of its run a rate-driven role of the
  family lost by falling short of the rate asked, beyond chance ({"value": share, "where",
  "achieved", "asked", "unit", and optionally "busy_share", the share of the run it transmitted}),
  for the run's fidelity (spark_analysis/fidelity.py; the AbC paced transmitters against λt).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import List, Tuple

#: the registered analyses, in the order results.json and the report show them
_PLUGINS: List[str] = [
    "spark_analysis.protocols.abc",
    "spark_analysis.protocols.deeco",
    "spark_analysis.protocols.causal",
]


def plugins() -> List[ModuleType]:
    return [importlib.import_module(name) for name in _PLUGINS]


def states() -> Tuple[str, ...]:
    """Every state value some analysis reads: the protocols' and the fidelity section's (the start)."""
    from ..fidelity import STATES

    return tuple(sorted({s for p in plugins() for s in p.STATES} | set(STATES)))
