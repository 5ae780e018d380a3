"""Delivery-property checks over a recorded history of application sends and deliveries, and
their registry.

In the spirit of Jepsen's checkers, each check reads a finished history and returns a verdict, the
anomalies it counted and a few counterexamples, but without their blind spots: a duplicate fails
at-most-once and exactly-once, a message nobody was expected to receive is not "lost", a message
a crashed node never got is not held against it, and "valid" is never the answer for a history
that gives the check nothing to judge. The properties are the delivery semantics and orderings of
the publish/subscribe literature (Mahambre et al. 2007, as modelled by Loulou et al.): at-most-once,
at-least-once, exactly-once, best effort, pair-wise FIFO, total order (per sequencer and global),
priority order, plus causal order (strict, and optimistic: no late predecessor, loss allowed) and
agreement. Redundant receptions on the network are not the
checks' concern: only deliveries to the application are.

The package: `history` holds the input contract (`History`) and its encoding shared by every
check (`Prepared`); `verdict` the shape of a result; `arrays` the numpy helpers the checks and the
analysis's metrics share; one module per property family (`delivery`, `fifo`, `total_order`,
`priority`, `causal`, `agreement`) holds its checks with their exact definitions. FAMILIES below
is the registry: check_all runs it in order, and CHECKS lists the names it produces.

Ordering checks judge the first delivery of each (msg, node): later copies are duplicates, which
are at-most-once's business, and phantoms are left out of them. "Before" between times is strict:
a delivery at the very nanosecond of a send did not happen before it (rules b of causal order and
the "sent before" of priority order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple, Union

from .agreement import check_agreement
from .causal import (check_causal_order, check_causal_order_unless_skipped, check_causal_orders,
                     check_optimistic_causal_order)
from .delivery import check_delivery
from .fifo import check_fifo
from .history import History, Prepared, expected_pairs, prepare
from .priority import check_priority_order
from .total_order import check_total_order_global, check_total_order_sequencer
from .verdict import MAX_COUNTEREXAMPLES

__all__ = [
    "CHECKS",
    "FAMILIES",
    "MAX_COUNTEREXAMPLES",
    "Family",
    "History",
    "Prepared",
    "check_agreement",
    "check_all",
    "check_causal_order",
    "check_causal_orders",
    "check_optimistic_causal_order",
    "check_delivery",
    "check_fifo",
    "check_priority_order",
    "check_total_order_global",
    "check_total_order_sequencer",
    "expected_pairs",
    "prepare",
]


@dataclass(frozen=True)
class Family:
    """One property family of the registry.

    `run(prepared, **options)` judges one Prepared history and returns one result, or a list of
    results when one computation gives several checks (delivery gives six), in the order of
    `names`. `options` names the keyword arguments of check_all that `run` takes (causal order can
    be switched off)."""

    names: Tuple[str, ...]
    run: Callable[..., Union[Dict[str, Any], List[Dict[str, Any]]]]
    options: Tuple[str, ...] = ()


#: every check family, in the order check_all runs them and results.json lists them; a new family
#: is a module and one line here
FAMILIES: Tuple[Family, ...] = (
    Family(("at-most-once", "at-least-once", "exactly-once", "best-effort", "no-phantom", "no-misrouted"),
           check_delivery),
    Family(("fifo",), check_fifo),
    Family(("total-order-sequencer",), check_total_order_sequencer),
    Family(("total-order-global",), check_total_order_global),
    Family(("priority-order",), check_priority_order),
    Family(("causal-order", "optimistic-causal-order"), check_causal_order_unless_skipped, options=("causal",)),
    Family(("agreement",), check_agreement),
)
CHECKS: Tuple[str, ...] = tuple(name for family in FAMILIES for name in family.names)


def check_all(history: Union[History, Prepared], causal: bool = True) -> List[Dict[str, Any]]:
    """Every check, in the order of CHECKS; the ones whose inputs are absent are "unknown" with
    stats["reason"]. causal=False skips causal order (its closure is the costly part on large
    histories whose protocol declares no causality); it is then "unknown" with the reason."""
    p = prepare(history)
    options = {"causal": causal}
    out: List[Dict[str, Any]] = []
    for family in FAMILIES:
        produced = family.run(p, **{k: options[k] for k in family.options})
        produced = [produced] if isinstance(produced, dict) else list(produced)
        names = tuple(r["check"] for r in produced)
        if names != family.names:  # the registry's names are the ones results.json will carry
            raise RuntimeError(f"{family.run.__name__} produced {names}, the registry says {family.names}")
        out.extend(produced)
    return out
