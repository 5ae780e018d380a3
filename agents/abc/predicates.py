"""AbC predicates: what a message's predicate asks of a receiver's attributes (the send
predicate of /work/shared/papers/abc-distributed-infrastructures.txt), as objects and as the
JSON lists they travel as inside messages, and their evaluation against one component's
attributes.

    p = from_json(["and", ["==", "role", "server"], ["has", "N", 1]])
    evaluate(p, {"role": "server", "N": [1, 4]})          # True
    equality_key(["==", "zone", 3])                        # {"zone": 3}: a partial key

A conjunction of equalities is a partial key (`equality_key`), which agents.abc.correlation
answers from its radix trees; every other predicate is evaluated. Standard library only: this
module runs inside the agent container.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union


_COMPARISONS: Dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class Compare:
    """attribute <op> value, op one of == != < <= > >=; false when the component lacks the
    attribute or the values cannot be compared (a string against a number)."""
    op: str
    attribute: str
    value: Any


@dataclass(frozen=True)
class OneOf:
    """The attribute's value is one of `values` (JSON: ["in", attribute, [values]])."""
    attribute: str
    values: Tuple[Any, ...]


@dataclass(frozen=True)
class Contains:
    """`value` is a member of the attribute, a list or set (JSON: ["has", attribute, value]); the
    AbC paper's (1 ∈ N)."""
    attribute: str
    value: Any


@dataclass(frozen=True)
class And:
    parts: Tuple["Predicate", ...]


@dataclass(frozen=True)
class Or:
    parts: Tuple["Predicate", ...]


@dataclass(frozen=True)
class Not:
    part: "Predicate"


@dataclass(frozen=True)
class Const:
    """true or false (JSON: the booleans)."""
    value: bool


Predicate = Union[Compare, OneOf, Contains, And, Or, Not, Const]
TRUE = Const(True)
FALSE = Const(False)
_PREDICATES = (Compare, OneOf, Contains, And, Or, Not, Const)


def to_json(predicate: Predicate) -> Any:
    """The JSON form: ["==", "role", "server"], ["in", "zone", [1, 2]], ["has", "N", 1],
    ["and", p, ...], ["or", p, ...], ["not", p], true, false."""
    if isinstance(predicate, Compare):
        return [predicate.op, predicate.attribute, predicate.value]
    if isinstance(predicate, OneOf):
        return ["in", predicate.attribute, list(predicate.values)]
    if isinstance(predicate, Contains):
        return ["has", predicate.attribute, predicate.value]
    if isinstance(predicate, (And, Or)):
        return ["and" if isinstance(predicate, And) else "or"] + [to_json(p) for p in predicate.parts]
    if isinstance(predicate, Not):
        return ["not", to_json(predicate.part)]
    if isinstance(predicate, Const):
        return bool(predicate.value)
    raise ValueError(f"not a predicate: {predicate!r}")


_FORMS = "true, false, [op, attribute, value] with op one of == != < <= > >=, [\"in\", attribute, [values]], " \
         "[\"has\", attribute, value], [\"and\", ...], [\"or\", ...], [\"not\", predicate]"


def from_json(data: Any) -> Predicate:
    """The predicate of a JSON form (see to_json); ValueError naming what is wrong and what is allowed."""
    if isinstance(data, bool):
        return TRUE if data else FALSE
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError(f"not a predicate: {data!r} (allowed: {_FORMS})")
    head, args = data[0], data[1:]
    if head in ("and", "or"):
        parts = tuple(from_json(p) for p in args)
        return And(parts) if head == "and" else Or(parts)
    if head == "not":
        if len(args) != 1:
            raise ValueError(f"\"not\" takes one predicate, not {len(args)}: {data!r}")
        return Not(from_json(args[0]))
    if head in _COMPARISONS or head in ("in", "has"):
        if len(args) != 2 or not isinstance(args[0], str):
            raise ValueError(f"{head!r} takes an attribute name and a value: {data!r}")
        if head == "in":
            if not isinstance(args[1], list):
                raise ValueError(f"\"in\" takes a list of values: {data!r}")
            return OneOf(args[0], tuple(args[1]))
        if head == "has":
            return Contains(args[0], args[1])
        return Compare(head, args[0], args[1])
    raise ValueError(f"unknown predicate operator {head!r} (allowed: {_FORMS})")


def as_predicate(predicate: Any) -> Predicate:
    """The predicate object of a predicate or of its JSON form."""
    return predicate if isinstance(predicate, _PREDICATES) else from_json(predicate)


def evaluate(predicate: Any, attributes: Mapping[str, Any]) -> bool:
    """Whether a component with these attributes satisfies the predicate (an object or its JSON
    form). A test on an attribute the component does not have is false, so ["!=", "a", 1] is
    false there while ["not", ["==", "a", 1]] is true."""
    p = as_predicate(predicate)
    if isinstance(p, Compare):
        if p.attribute not in attributes:
            return False
        try:
            return bool(_COMPARISONS[p.op](attributes[p.attribute], p.value))
        except TypeError:
            return False
        except KeyError:
            raise ValueError(f"unknown comparison {p.op!r} (allowed: {' '.join(_COMPARISONS)})") from None
    if isinstance(p, OneOf):
        return p.attribute in attributes and attributes[p.attribute] in p.values
    if isinstance(p, Contains):
        value = attributes.get(p.attribute)
        if not isinstance(value, (list, tuple, set, frozenset)):
            return False
        try:
            return p.value in value
        except TypeError:  # an unhashable value asked of a set
            return False
    if isinstance(p, And):
        return all(evaluate(part, attributes) for part in p.parts)
    if isinstance(p, Or):
        return any(evaluate(part, attributes) for part in p.parts)
    if isinstance(p, Not):
        return not evaluate(p.part, attributes)
    return bool(p.value)


def conjuncts(predicate: Predicate) -> List[Predicate]:
    """The parts of a conjunction, nested ones flattened, in order and without `true`."""
    parts, stack = [], [predicate]
    while stack:
        p = stack.pop()
        if isinstance(p, And):
            stack.extend(reversed(p.parts))
        elif p != TRUE:
            parts.append(p)
    return parts


def equality_of(p: Predicate) -> Optional[Tuple[str, Any]]:
    """(attribute, value) of an equality (== or "in" one value), else None."""
    if isinstance(p, Compare) and p.op == "==":
        return p.attribute, p.value
    if isinstance(p, OneOf) and len(p.values) == 1:
        return p.attribute, p.values[0]
    return None


def equality_key(predicate: Any) -> Optional[Dict[str, Any]]:
    """The partial key {attribute: value} of a predicate that is a conjunction of equalities
    (true is the empty key); None for any other predicate, and for a contradictory one such as
    a == 1 and a == 2, which evaluation answers (with nothing)."""
    key: Dict[str, Any] = {}
    for part in conjuncts(as_predicate(predicate)):
        equality = equality_of(part)
        if equality is None:
            return None
        name, value = equality
        if name in key and key[name] != value:
            return None
        key[name] = value
    return key
