"""Receive-side matching of AbC messages: which components (or sessions) a message's predicate selects.

A predicate that only tests equality on some attributes, leaving the others unspecified, is a
partial key, the broadcast message of Mauro et al., "An efficient management of correlation sets
with broadcast" (COORDINATION 2011, /work/shared/papers/correlation-sets-radix-trees.txt). It is
answered as the paper does: the attribute sets that occur in partial keys (schemas) are covered
with the fewest chains by Algorithm 1; each chain becomes the attribute order of one radix tree
keyed by the values in that order, so a partial key is a prefix of one tree's keys and `find` walks
that one tree. Any other predicate (comparisons, membership, disjunction, negation) is evaluated
against the components' attributes; equalities in a conjunction still narrow the candidates first.

    store = CorrelationStore(["role", "zone"], schemas=[["role"], ["zone"], ["role", "zone"]])
    store.add("c1", {"role": "server", "zone": 3})
    store.find({"zone": 3})                              # {"c1"}
    matcher = Matcher(["role", "zone"])
    matcher.add("c1", {"role": "server", "zone": 3, "N": [1, 4]})
    matcher.match(["and", ["==", "role", "server"], ["has", "N", 1]])   # {"c1"}

The predicates themselves, their JSON form and their evaluation are agents.abc.predicates'.
Standard library only: this module runs inside the agent container.
"""

from __future__ import annotations

import math
import operator
from typing import (Any, Callable, Dict, FrozenSet, Hashable, Iterable, List, Mapping, Optional, Sequence, Set, Tuple,
                    Union)

from .predicates import as_predicate, conjuncts, equality_of, evaluate

Schema = FrozenSet[str]


# ---------------------------------------------------------------------------------------------
# Algorithm 1: the minimal set of radix-tree schemas

def _attribute_index(attributes: Sequence[str]) -> Dict[str, int]:
    index: Dict[str, int] = {}
    for name in attributes:
        if not isinstance(name, str) or not name:
            raise ValueError(f"attribute names are non-empty strings, not {name!r}")
        if name in index:
            raise ValueError(f"attribute {name!r} is declared twice")
        index[name] = len(index)
    return index


def _unknown(name: Any, index: Mapping[str, int]) -> ValueError:
    allowed = ", ".join(index) or "none"
    return ValueError(f"unknown attribute {name!r} (allowed: {allowed})")


def _mask(schema: Iterable[str], index: Mapping[str, int]) -> int:
    if isinstance(schema, str):  # a bare string would be read as a set of one-letter attributes
        raise ValueError(f"a schema is a collection of attribute names, not the string {schema!r}")
    mask = 0
    for name in schema:
        if name not in index:
            raise _unknown(name, index)
        mask |= 1 << index[name]
    return mask


def _bits(mask: int) -> Tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


def _size(mask: int) -> int:
    return bin(mask).count("1")


def _augment(root: int, candidates: Callable[[int], List[int]], movable: Callable[[int], bool],
             source_of: Dict[int, int], target_of: Dict[int, int]) -> bool:
    """Match the unmatched target `root` by an augmenting path (breadth first): a source already
    matched may be taken over when its target is `movable` and can itself be matched elsewhere."""
    reached_from: Dict[int, int] = {}
    queue = [root]
    for target in queue:
        for source in candidates(target):
            if source in reached_from:
                continue
            reached_from[source] = target
            holder = target_of.get(source)
            if holder is None:
                while True:  # flip the path back to the root
                    target = reached_from[source]
                    previous = source_of.get(target)
                    source_of[target], target_of[source] = source, target
                    if target == root:
                        return True
                    source = previous  # type: ignore[assignment]
            if movable(holder):
                queue.append(holder)
    return False


def _step_rules(below: Dict[int, List[int]], available: List[int], level: int, reroute: bool
                ) -> Tuple[Callable[[int], List[int]], Callable[[int], bool]]:
    """The sources a target of this step may take, and whether an edge chosen before may move."""
    if reroute:  # any smaller set; an edge of an earlier step may move to another source
        return below.__getitem__, lambda target: True
    in_v = set(available)  # graph(V, V') exactly; only this step's edges may move
    return (lambda target: [u for u in below[target] if u in in_v]), (lambda target: _size(target) == level)


def radix_tree_chains(occurring: Iterable[Iterable[str]], attributes: Sequence[str], *,
                      reroute: bool = True) -> List[List[Schema]]:
    """The chains (maximal paths, Definition 5) of Algorithm 1 for the occurring attribute sets:
    each chain is a list of the occurring sets, each a proper subset of the next, and every
    occurring set is in exactly one chain. Their number is the minimum (Theorem 3), at most
    C(n, ceil(n/2)) for n attributes (Theorem 1).

    Algorithm 1 as printed, with the paper's names in the comments. Two readings were needed:

    * Line 8 says "maximal_matching" and the text before it "a maximum bipartite matching
      algorithm". A merely maximal matching breaks Theorem 1 already for all subsets of {x, y, z}
      (a maximal matching of size 2 between levels 1 and 2 leaves 4 chains instead of 3), so it is
      read as a maximum matching.
    * "chosen in a non deterministically way": not every choice of maximum matchings gives the
      minimum claimed by Theorem 3 when not all subsets occur. With P = {a}, {b}, {a,b}, {a,c,d},
      step 2 may match {a} -> {a,b}; {b} stays in V, and {a,c,d} has no subset left in V at step 3:
      3 chains, where {b} -> {a,b} and {a} -> {a,c,d} make 2. (When all subsets occur any choice
      works: each step then matches the whole smaller level, which gives Theorem 1's count.)
      So, with `reroute` (the default), when level i is matched, an edge chosen at an earlier
      step may be moved to another source of its target (an augmenting path, as in Kuhn's
      algorithm), which never unmatches an earlier target. Taken level by level, the edges that
      result are a maximum matching of graph(V, V') for that step's V, so the result is one of
      the runs the paper allows: the one its choices should have made. Overall they are a maximum
      matching of the whole subset relation on P, whose complement is a minimum chain cover
      (Dilworth, Fulkerson), which is what Theorem 3 asks for.
      `reroute=False` runs the literal algorithm, with a maximum matching of graph(V, V') fixed
      at each step (shown by the tests to miss the minimum on the family above).

    Ties are broken by the declared attribute order, so the result is deterministic.
    """
    index = _attribute_index(attributes)
    n = len(index)
    family = {_mask(schema, index) for schema in occurring}
    levels: List[List[int]] = [[] for _ in range(n + 1)]  # level_P(i): the sets of i attributes
    for mask in sorted(family, key=lambda m: (_size(m), _bits(m))):
        levels[_size(mask)].append(mask)
    # subsets of each set, the nearest level first (so chains skip as few levels as they can)
    below: Dict[int, List[int]] = {
        v: [u for j in range(_size(v) - 1, -1, -1) for u in levels[j] if u & v == u] for v in family}
    source_of: Dict[int, int] = {}  # 3: M = {} (as target -> source)
    target_of: Dict[int, int] = {}  # M, as source -> target
    level = 0                                                   # 1: i = 0
    available = list(levels[0])                                 # 2: V = level_P(0)
    while level < n:                                            # 4
        level += 1                                              # 5
        layer = levels[level]                                   # 6: V' = level_P(i)
        candidates, movable = _step_rules(below, available, level, reroute)  # 7: G = graph(V, V')
        for target in layer:                                    # 8: M' = maximum matching of G
            _augment(target, candidates, movable, source_of, target_of)
        available = [u for u in available if u not in target_of]   # 9: V = V - matched sources
        available += layer                                      # 10: V = V u V'
        # 11: M = M u M' (source_of and target_of hold M)
    chains = []                                                 # Definition 5: the maximal paths
    for start in sorted(family - set(source_of), key=lambda m: (_size(m), _bits(m))):
        chain, node = [start], start
        while node in target_of:
            node = target_of[node]
            chain.append(node)
        chains.append(chain)
    names = list(index)
    return [[frozenset(names[i] for i in _bits(m)) for m in chain] for chain in chains]


def chain_order(chain: Sequence[Iterable[str]], attributes: Sequence[str]) -> Tuple[str, ...]:
    """The attribute order of the radix tree of a chain (Definition 5): the attributes of its
    first set, then those each next set adds, each group in the declared attribute order, so that
    every set of the chain is a prefix of the order."""
    index = _attribute_index(attributes)
    order: List[str] = []
    for schema in chain:
        mask = _mask(schema, index)
        if _mask(order, index) & ~mask:
            raise ValueError(f"{sorted(schema)} does not contain the sets before it in the chain")
        order += [a for a in index if mask >> index[a] & 1 and a not in order]
    return tuple(order)


def radix_tree_orders(occurring: Iterable[Iterable[str]], attributes: Sequence[str]) -> List[Tuple[str, ...]]:
    """The attribute orders of the minimal set of radix trees for the occurring attribute sets."""
    return [chain_order(chain, attributes) for chain in radix_tree_chains(occurring, attributes)]


# ---------------------------------------------------------------------------------------------
# The radix tree

#: items under one key are a list up to this many (most keys hold one), then a set: a tree whose
#: order is short has many sessions per key, and a list would make adding and deleting linear
_LIST_ITEMS = 8


class _Node:
    __slots__ = ("label", "children", "items")

    def __init__(self, label: str, items: Optional[List[Hashable]] = None) -> None:
        self.label = label
        self.children: Optional[Dict[str, _Node]] = None  # first character of the child's label -> child
        self.items: Union[List[Hashable], Set[Hashable], None] = items  # stored under the key ending here


class RadixTree:
    """A compressed prefix (PATRICIA) tree from strings to the items stored under them: every
    node that is neither the root nor the end of a key has at least two children."""

    def __init__(self) -> None:
        self._root = _Node("")
        self._root.children = {}
        self._count = 0

    def __len__(self) -> int:
        """Stored (key, item) pairs."""
        return self._count

    def insert(self, key: str, item: Hashable) -> None:
        node, i, end = self._root, 0, len(key)
        while i < end:
            children = node.children
            if children is None:
                children = node.children = {}
            child = children.get(key[i])
            if child is None:
                children[key[i]] = _Node(key[i:], [item])
                self._count += 1
                return
            label = child.label
            if key.startswith(label, i):
                i += len(label)
                node = child
                continue
            common, limit = 1, min(len(label), end - i)
            while common < limit and label[common] == key[i + common]:
                common += 1
            middle = _Node(label[:common])  # split the edge where the key leaves it
            child.label = label[common:]
            middle.children = {child.label[0]: child}
            children[key[i]] = middle
            i += common
            if i < end:
                middle.children[key[i]] = _Node(key[i:], [item])
            else:
                middle.items = [item]
            self._count += 1
            return
        items = node.items
        if items is None:
            node.items = [item]
        elif item in items:
            return
        elif type(items) is list and len(items) < _LIST_ITEMS:
            items.append(item)
        else:
            if type(items) is list:
                items = node.items = set(items)
            items.add(item)  # type: ignore[union-attr]
        self._count += 1

    def delete(self, key: str, item: Hashable) -> None:
        """Remove `item` from under `key` (KeyError when it is not there), merging the nodes that
        are left with a single child."""
        path: List[_Node] = []
        node, i, end = self._root, 0, len(key)
        while i < end:
            child = node.children.get(key[i]) if node.children else None
            if child is None or not key.startswith(child.label, i):
                raise KeyError(key)
            path.append(node)
            node = child
            i += len(child.label)
        if not node.items or item not in node.items:
            raise KeyError(key)
        node.items.remove(item)
        self._count -= 1
        if node.items or node is self._root:
            return
        node.items = None
        parent = path[-1]
        if not node.children:
            del parent.children[node.label[0]]  # type: ignore[union-attr]
            if len(path) < 2 or parent.items or len(parent.children) != 1:  # type: ignore[arg-type]
                return
            node, parent = parent, path[-2]
        elif len(node.children) != 1:
            return
        (only,) = node.children.values()  # type: ignore[union-attr]
        only.label = node.label + only.label
        parent.children[node.label[0]] = only  # type: ignore[index]

    def find_prefix(self, prefix: str) -> Set[Hashable]:
        """Every item stored under a key that starts with `prefix`."""
        node, i, end = self._root, 0, len(prefix)
        while i < end:
            child = node.children.get(prefix[i]) if node.children else None
            if child is None:
                return set()
            label = child.label
            if prefix.startswith(label, i):
                i += len(label)
                node = child
            elif label.startswith(prefix[i:]):
                node = child
                break
            else:
                return set()
        found: Set[Hashable] = set()
        stack = [node]
        pop, push, add = stack.pop, stack.extend, found.update  # this loop is most of a broad find
        while stack:
            node = pop()
            if node.items:
                add(node.items)
            if node.children:
                push(node.children.values())
        return found


# ---------------------------------------------------------------------------------------------
# Sessions in radix trees

def _encode(value: Any) -> str:
    """One attribute value as a key part ending in the separator "#", as in the paper's
    d1#d2#...#; equal values (by ==, so 1, 1.0 and True) give equal parts and different ones
    different parts, and "#" and "\\" inside strings are escaped so the separator is unambiguous."""
    kind = type(value)
    if kind is str:
        if "#" in value or "\\" in value:
            value = value.replace("\\", "\\\\").replace("#", "\\#")
        return "s" + value + "#"
    if kind is int or kind is bool:
        return "n%d#" % value
    if kind is float:
        if value.is_integer():
            return "n%d#" % value
        if math.isnan(value):
            raise ValueError("NaN is not a value a key can match (NaN != NaN)")
        return "n" + repr(value) + "#"
    if value is None:
        return "z#"
    if isinstance(value, str):  # subclasses, such as a str Enum (whose str() is its name)
        return _encode(str.__str__(value))
    if isinstance(value, (int, float)):  # IntEnum and the like
        return _encode(float(value) if isinstance(value, float) else int(value))
    raise ValueError(f"{value!r} is not a key value (allowed: a string, a number, a boolean or null)")


def _encodable(value: Any) -> bool:
    try:
        _encode(value)
    except ValueError:
        return False
    return True


def _key_function(positions: Tuple[int, ...]) -> Callable[[Tuple[str, ...]], str]:
    """The tree key of a session's encoded values (in declared order), for a tree's attribute positions."""
    if len(positions) == 1:
        return operator.itemgetter(positions[0])
    if not positions:
        return lambda parts: ""
    pick = operator.itemgetter(*positions)
    return lambda parts: "".join(pick(parts))


class CorrelationStore:
    """Sessions (an identifier and a value for every attribute) in the minimal set of radix trees
    for the attribute sets that partial keys use (section 4.1 of the paper: add_session,
    del_session and find_session).

    `schemas` are the attribute sets that partial keys are expected to use. A partial key on a set
    that no tree has as a prefix adds that set: Algorithm 1 runs again and the trees whose
    attribute order changed are built again from the sessions (the others are kept), which costs
    one insertion per session and new tree; `add_schema` does the same ahead of time.
    """

    def __init__(self, attributes: Sequence[str], schemas: Iterable[Iterable[str]] = ()) -> None:
        self._index = _attribute_index(attributes)
        self.attributes: Tuple[str, ...] = tuple(self._index)
        self._schemas: Set[Schema] = {self._schema(s) for s in schemas}
        self._sessions: Dict[Hashable, Dict[str, Any]] = {}
        self._parts: Dict[Hashable, Tuple[str, ...]] = {}  # encoded values, in declared attribute order
        self._trees: Dict[Tuple[str, ...], RadixTree] = {}
        self._key_of: Dict[Tuple[str, ...], Callable[[Tuple[str, ...]], str]] = {}  # tree order -> key
        self._by_schema: Dict[Schema, Tuple[RadixTree, Tuple[str, ...]]] = {}  # every prefix set of an order
        self._build()

    # -- what the store holds

    @property
    def schemas(self) -> FrozenSet[Schema]:
        """The attribute sets that occur (the paper's P)."""
        return frozenset(self._schemas)

    @property
    def tree_orders(self) -> List[Tuple[str, ...]]:
        """The attribute order of each radix tree."""
        return list(self._trees)

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: Hashable) -> bool:
        return session_id in self._sessions

    def values(self, session_id: Hashable) -> Dict[str, Any]:
        """The attribute values of a session."""
        return dict(self._sessions[session_id])

    # -- schemas

    def _schema(self, schema: Iterable[str]) -> Schema:
        if isinstance(schema, str):
            raise ValueError(f"a schema is a collection of attribute names, not the string {schema!r}")
        names = frozenset(schema)
        for name in names:
            if name not in self._index:
                raise _unknown(name, self._index)
        return names

    def add_schema(self, schema: Iterable[str]) -> bool:
        """Make partial keys on this attribute set answerable by one tree walk; True when the
        trees had to change (a set that is already a prefix of a tree's order changes nothing,
        and the number of trees stays the minimum)."""
        names = self._schema(schema)
        self._schemas.add(names)
        if names in self._by_schema:
            return False
        self._build()
        return True

    def _build(self) -> None:
        orders = radix_tree_orders(self._schemas, self.attributes)
        trees: Dict[Tuple[str, ...], RadixTree] = {}
        for order in orders:
            key_of = self._key_of.get(order) or _key_function(tuple(self._index[a] for a in order))
            self._key_of[order] = key_of
            tree = self._trees.get(order)
            if tree is None:
                tree = RadixTree()
                for session_id, parts in self._parts.items():
                    tree.insert(key_of(parts), session_id)
            trees[order] = tree
        self._trees = trees
        self._key_of = {order: self._key_of[order] for order in trees}
        self._by_schema = {}
        for order, tree in trees.items():
            for length in range(len(order) + 1):
                self._by_schema.setdefault(frozenset(order[:length]), (tree, order[:length]))

    # -- sessions

    def add(self, session_id: Hashable, values: Mapping[str, Any]) -> None:
        """add_session: `values` assigns every attribute (strings, numbers, booleans or null)."""
        if session_id in self._sessions:
            raise ValueError(f"session {session_id!r} is already in the store")
        for name in values:
            if name not in self._index:
                raise _unknown(name, self._index)
        missing = [a for a in self.attributes if a not in values]
        if missing:
            raise ValueError(f"session {session_id!r} has no value for attribute {missing[0]!r} "
                             f"(a session assigns every attribute: {', '.join(self.attributes)})")
        parts = tuple(_encode(values[a]) for a in self.attributes)
        for order, tree in self._trees.items():
            tree.insert(self._key_of[order](parts), session_id)
        self._sessions[session_id] = dict(values)
        self._parts[session_id] = parts

    def delete(self, session_id: Hashable) -> None:
        """del_session; KeyError when there is no such session."""
        parts = self._parts.pop(session_id)
        del self._sessions[session_id]
        for order, tree in self._trees.items():
            tree.delete(self._key_of[order](parts), session_id)

    def find(self, partial_key: Mapping[str, Any]) -> Set[Hashable]:
        """find_session: the sessions whose values equal the partial key's on every attribute it
        names; the attributes it leaves out match anything (the empty key matches every session)."""
        if not partial_key:
            return set(self._sessions)
        schema = frozenset(partial_key)
        entry = self._by_schema.get(schema)
        if entry is None:
            self.add_schema(schema)
            entry = self._by_schema[schema]
        tree, order = entry
        return tree.find_prefix("".join([_encode(partial_key[a]) for a in order]))


# ---------------------------------------------------------------------------------------------
# The matcher

class Matcher:
    """The components (or sessions) a message's predicate selects.

    `indexed` are the attributes kept in radix trees (those equality predicates use, with
    scalar values); a component's other attributes are only evaluated. A predicate that is a
    conjunction of equalities on indexed attributes is answered by the trees alone; a conjunction
    with other parts too is narrowed by the trees on its equalities and its candidates evaluated;
    anything else is evaluated on every component. A component that lacks an indexed attribute
    (or has a list there) is kept aside and always evaluated.
    """

    def __init__(self, indexed: Sequence[str], schemas: Iterable[Iterable[str]] = ()) -> None:
        self.store = CorrelationStore(indexed, schemas)
        self._attributes: Dict[Hashable, Dict[str, Any]] = {}
        self._aside: Set[Hashable] = set()

    def __len__(self) -> int:
        return len(self._attributes)

    def add(self, component_id: Hashable, attributes: Mapping[str, Any]) -> None:
        if component_id in self._attributes:
            raise ValueError(f"component {component_id!r} is already in the matcher")
        attributes = dict(attributes)
        key = {a: attributes[a] for a in self.store.attributes if a in attributes}
        if len(key) == len(self.store.attributes) and all(_encodable(v) for v in key.values()):
            self.store.add(component_id, key)
        else:
            self._aside.add(component_id)
        self._attributes[component_id] = attributes

    def delete(self, component_id: Hashable) -> None:
        """KeyError when there is no such component."""
        del self._attributes[component_id]
        if component_id in self._aside:
            self._aside.discard(component_id)
        else:
            self.store.delete(component_id)

    def update(self, component_id: Hashable, attributes: Mapping[str, Any]) -> None:
        """Replace a component's attributes (an AbC attribute update)."""
        self.delete(component_id)
        self.add(component_id, attributes)

    def match(self, predicate: Any) -> Set[Hashable]:
        """The components whose attributes satisfy the predicate (an object or its JSON form)."""
        p = as_predicate(predicate)
        key: Dict[str, Any] = {}
        rest = False
        for part in conjuncts(p):
            equality = equality_of(part)
            if (equality is None or equality[0] not in self.store._index or equality[0] in key
                    or not _encodable(equality[1])):
                rest = True
            else:
                key[equality[0]] = equality[1]
        attributes = self._attributes
        if not key and rest:
            return {c for c, attrs in attributes.items() if evaluate(p, attrs)}
        found = self.store.find(key)
        if rest:
            found = {c for c in found if evaluate(p, attributes[c])}
        found.update(c for c in self._aside if evaluate(p, attributes[c]))
        return found
