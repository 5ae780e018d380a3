"""Receive-side matching (agents/abc/correlation.py): Algorithm 1's radix-tree schemas, the radix
trees, the session store against a naive scan, and general predicates (agents/abc/predicates.py)."""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Dict, List, Set

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.abc import correlation
from agents.abc.correlation import (CorrelationStore, Matcher, RadixTree, chain_order, radix_tree_chains,
                                    radix_tree_orders)
from agents.abc.predicates import (FALSE, TRUE, And, Compare, Contains, Not, OneOf, Or, equality_key, evaluate,
                                   from_json, to_json)

LETTERS = "abcdefgh"


def names(n: int) -> List[str]:
    return list(LETTERS[:n])


def every_subset(n: int) -> List[tuple]:
    return [c for k in range(n + 1) for c in itertools.combinations(names(n), k)]


def as_sets(masks, n: int) -> List[Set[str]]:
    return [{LETTERS[i] for i in range(n) if m >> i & 1} for m in masks]


def minimum_chain_cover(family: Set[int]) -> int:
    """Brute force: the smallest k such that the sets (bit masks) can be split into k chains,
    trying k = 1, 2, ... and, for each, every way of putting the sets (smallest first) on top of a
    chain. (A cover by overlapping chains can always be thinned to a partition of the same size.)"""
    nodes = sorted(family, key=lambda m: bin(m).count("1"))

    def fits(k: int) -> bool:
        failed = set()

        def place(i: int, tops: tuple) -> bool:
            if i == len(nodes):
                return True
            if (i, tops) in failed:
                return False
            v = nodes[i]
            options = {t for t in tops if t & v == t and t != v}
            for t in options:
                rest = list(tops)
                rest.remove(t)
                if place(i + 1, tuple(sorted(rest + [v]))):
                    return True
            if len(tops) < k and place(i + 1, tuple(sorted(tops + (v,)))):
                return True
            failed.add((i, tops))
            return False

        return place(0, ())

    k = 1
    while not fits(k):
        k += 1
    return k


def maximum_matching(edges: Dict[int, List[int]]) -> int:
    """Size of a maximum matching of a bipartite graph (target -> its sources), by Kuhn's algorithm."""
    owner: Dict[int, int] = {}

    def augment(target: int, seen: set) -> bool:
        for source in edges[target]:
            if source not in seen:
                seen.add(source)
                if source not in owner or augment(owner[source], seen):
                    owner[source] = target
                    return True
        return False

    return sum(augment(t, set()) for t in edges)


families = st.integers(1, 5).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.integers(0, 2 ** n - 1), min_size=1, max_size=2 ** n)))


# ---------------------------------------------------------------------------------------------
# Algorithm 1

@pytest.mark.parametrize("n", range(1, 9))
def test_tree_count_is_the_papers_bound_when_every_subset_occurs(n):
    bound = math.comb(n, math.ceil(n / 2))
    assert len(radix_tree_chains(every_subset(n), names(n))) == bound
    assert len(radix_tree_chains(every_subset(n), names(n), reroute=False)) == bound


@pytest.mark.parametrize("n", range(1, 6))
def test_tree_count_is_the_brute_force_minimum_when_every_subset_occurs(n):
    assert len(radix_tree_chains(every_subset(n), names(n))) == minimum_chain_cover(set(range(2 ** n)))


@settings(max_examples=300, deadline=None)
@given(families)
def test_tree_count_is_the_brute_force_minimum_for_any_family(case):
    n, masks = case
    chains = radix_tree_chains(as_sets(masks, n), names(n))
    assert len(chains) == minimum_chain_cover(masks)
    assert len(chains) <= math.comb(n, math.ceil(n / 2))


def test_the_literal_choice_of_matching_can_miss_the_minimum():
    # the reading written down in radix_tree_chains: step 2 matches {a} -> {a,b} and strands {a,c,d}
    family = [{"a"}, {"b"}, {"a", "b"}, {"a", "c", "d"}]
    assert len(radix_tree_chains(family, names(4), reroute=False)) == 3
    assert len(radix_tree_chains(family, names(4))) == 2 == minimum_chain_cover({0b1, 0b10, 0b11, 0b1101})


@settings(max_examples=200, deadline=None)
@given(families)
def test_every_occurring_schema_is_a_prefix_of_some_tree_order(case):
    n, masks = case
    family = as_sets(masks, n)
    chains = radix_tree_chains(family, names(n))
    assert sorted(map(sorted, (s for chain in chains for s in chain))) == sorted(map(sorted, family))
    orders = radix_tree_orders(family, names(n))
    for schema in family:
        assert any(set(order[:len(schema)]) == schema for order in orders), schema
    for chain, order in zip(chains, orders):
        assert all(a < b for a, b in zip(chain, chain[1:]))  # proper subsets, a path of G(V)
        assert order == chain_order(chain, names(n)) and set(order) == set(chain[-1])


@settings(max_examples=200, deadline=None)
@given(families)
def test_each_level_gets_a_maximum_matching_as_in_algorithm_1(case):
    # the chains are a run Algorithm 1 allows: at step i, the edges into level i are a maximum
    # matching between V (the lower sets not yet a source) and level i
    n, masks = case
    chains = radix_tree_chains(as_sets(masks, n), names(n))
    edges = {(frozenset(u), frozenset(v)) for chain in chains for u, v in zip(chain, chain[1:])}
    family = [frozenset(s) for s in as_sets(masks, n)]
    used: Set[frozenset] = set()
    for i in range(1, n + 1):
        lower = [u for u in family if len(u) < i and u not in used]
        layer = [v for v in family if len(v) == i]
        chosen = [(u, v) for u, v in edges if len(v) == i]
        assert all(u in lower for u, _ in chosen)
        graph = {j: [lower.index(u) for u in lower if u < v] for j, v in enumerate(layer)}
        assert len(chosen) == maximum_matching(graph)
        used |= {u for u, _ in chosen}


def test_bad_schemas_name_the_attribute_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"unknown attribute 'colour' \(allowed: role, zone\)"):
        radix_tree_chains([["role"], ["colour"]], ["role", "zone"])
    with pytest.raises(ValueError, match="declared twice"):
        radix_tree_chains([], ["role", "role"])


# ---------------------------------------------------------------------------------------------
# The radix tree

def check_compressed(tree: RadixTree) -> None:
    stack = list(tree._root.children.values())
    while stack:
        node = stack.pop()
        children = node.children or {}
        assert node.label and (node.items or len(children) >= 2), node.label
        assert all(c.label[0] == first for first, c in children.items())
        stack.extend(children.values())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.text("ab#", max_size=6), st.integers(0, 3)), max_size=60),
       st.lists(st.text("ab#", max_size=4), min_size=1, max_size=8))
def test_radix_tree_prefix_search_agrees_with_a_scan_and_stays_compressed(operations, prefixes):
    tree, pairs = RadixTree(), set()
    for insert, key, item in operations:
        if insert:
            tree.insert(key, item)
            pairs.add((key, item))
        elif (key, item) in pairs:
            tree.delete(key, item)
            pairs.discard((key, item))
        else:
            with pytest.raises(KeyError):
                tree.delete(key, item)
        check_compressed(tree)
    assert len(tree) == len(pairs)
    for prefix in prefixes + [""]:
        assert tree.find_prefix(prefix) == {item for key, item in pairs if key.startswith(prefix)}


def test_many_items_under_one_key_are_added_and_deleted_once_each():
    tree = RadixTree()
    for item in range(50):
        tree.insert("k#", item)
        tree.insert("k#", item)
    tree.insert("kx#", "other")
    assert len(tree) == 51 and tree.find_prefix("k") == set(range(50)) | {"other"}
    for item in range(0, 50, 2):
        tree.delete("k#", item)
    with pytest.raises(KeyError):
        tree.delete("k#", 0)
    assert tree.find_prefix("k#") == set(range(1, 50, 2))
    for item in range(1, 50, 2):
        tree.delete("k#", item)
    assert tree.find_prefix("") == {"other"} and len(tree) == 1
    check_compressed(tree)


# ---------------------------------------------------------------------------------------------
# The session store

ATTRIBUTES = ["role", "zone", "colour", "tag"]
VALUES = {"role": ["server", "client", "a#b", "a", "\\", ""], "zone": [0, 1, 2, 1.0, True, 2.5],
          "colour": ["red", "blue", None], "tag": ["#", "##", "x\\#", "x"]}
sessions = st.fixed_dictionaries({a: st.sampled_from(v) for a, v in VALUES.items()})
partial_keys = st.lists(st.sampled_from(ATTRIBUTES), unique=True).flatmap(
    lambda chosen: st.fixed_dictionaries({a: st.sampled_from(VALUES[a]) for a in chosen}))


def naive_find(stored: Dict[int, dict], key: dict) -> Set[int]:
    return {s for s, values in stored.items() if all(values[a] == v for a, v in key.items())}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(ATTRIBUTES), unique=True), max_size=6),
       st.lists(st.tuples(st.sampled_from(["add", "add", "delete", "find"]), sessions, partial_keys, st.integers()),
                max_size=80))
def test_find_agrees_with_a_naive_scan_including_after_deletes(schemas, operations):
    store, stored, next_id = CorrelationStore(ATTRIBUTES, schemas), {}, 0
    for op, values, key, pick in operations:
        if op == "add":
            store.add(next_id, values)
            stored[next_id] = values
            next_id += 1
        elif op == "delete" and stored:
            victim = sorted(stored)[pick % len(stored)]
            store.delete(victim)
            del stored[victim]
        else:
            assert store.find(key) == naive_find(stored, key), key
    assert len(store) == len(stored)
    assert len(store.tree_orders) <= math.comb(4, 2)
    for key in ({}, {"role": "a"}, {"zone": 1, "tag": "#"}, dict(zip(ATTRIBUTES, ["a#b", 1, None, "x\\#"]))):
        assert store.find(key) == naive_find(stored, key)


def test_a_partial_key_on_a_new_attribute_set_extends_the_trees():
    store = CorrelationStore(ATTRIBUTES, [["role"], ["role", "zone"]])
    assert store.tree_orders == [("role", "zone")]
    store.add("s1", {"role": "server", "zone": 1, "colour": "red", "tag": "x"})
    store.add("s2", {"role": "client", "zone": 1, "colour": "red", "tag": "#"})
    tree = store._trees[("role", "zone")]
    assert store.find({"colour": "red", "zone": 1}) == {"s1", "s2"}  # a set no tree had: one more tree
    assert {"colour", "zone"} in store.schemas and len(store.tree_orders) == 2
    assert store._trees[("role", "zone")] is tree  # the unchanged tree is kept, not rebuilt
    assert store.add_schema([]) is False  # already the prefix of a tree
    assert store.add_schema(ATTRIBUTES) is True
    assert len(store.tree_orders) == 2
    assert store.find({"tag": "#", "role": "client", "zone": 1, "colour": "red"}) == {"s2"}
    store.delete("s2")
    assert store.find({"zone": 1}) == {"s1"} and store.find({}) == {"s1"}


def test_equal_numbers_are_one_key_and_separators_in_values_are_escaped():
    store = CorrelationStore(["k", "v"], [["k"], ["k", "v"]])
    store.add(1, {"k": 1, "v": "a#"})
    store.add(2, {"k": 1.0, "v": "a"})
    store.add(3, {"k": True, "v": "#"})
    store.add(4, {"k": "1", "v": "a\\#"})
    assert store.find({"k": 1}) == {1, 2, 3}
    assert store.find({"k": "1"}) == {4}
    assert store.find({"k": 1, "v": "a"}) == {2}
    assert store.find({"k": 1, "v": "a#"}) == {1}
    assert store.find({"k": True, "v": "#"}) == {3}


def test_bad_sessions_and_keys_are_errors_naming_what_is_allowed():
    store = CorrelationStore(["role", "zone"], [["role"]])
    with pytest.raises(ValueError, match=r"unknown attribute 'colour' \(allowed: role, zone\)"):
        store.find({"colour": "red"})
    with pytest.raises(ValueError, match=r"unknown attribute 'colour' \(allowed: role, zone\)"):
        store.add_schema(["role", "colour"])
    with pytest.raises(ValueError, match=r"unknown attribute 'colour' \(allowed: role, zone\)"):
        CorrelationStore(["role", "zone"], [["colour"]])
    with pytest.raises(ValueError, match=r"unknown attribute 'colour' \(allowed: role, zone\)"):
        store.add("s", {"role": "x", "zone": 1, "colour": "red"})
    with pytest.raises(ValueError, match=r"no value for attribute 'zone' \(a session assigns every attribute"):
        store.add("s", {"role": "x"})
    with pytest.raises(ValueError, match="not a key value"):
        store.add("s", {"role": "x", "zone": [1, 2]})
    with pytest.raises(ValueError, match="NaN"):
        store.add("s", {"role": "x", "zone": float("nan")})
    with pytest.raises(ValueError, match="not the string"):
        store.add_schema("role")
    store.add("s", {"role": "x", "zone": 1})
    with pytest.raises(ValueError, match="already in the store"):
        store.add("s", {"role": "x", "zone": 1})
    with pytest.raises(KeyError):
        store.delete("t")
    assert len(store) == 1 and store.schemas == {frozenset({"role"})}


# ---------------------------------------------------------------------------------------------
# General predicates

COMPONENT = {"role": "server", "zone": 3, "load": 0.5, "N": [1, 4], "up": True}


@pytest.mark.parametrize("predicate, expected", [
    (["==", "role", "server"], True), (["!=", "role", "server"], False), (["<", "zone", 4], True),
    (["<=", "zone", 3], True), ([">", "load", 0.5], False), ([">=", "load", 0.5], True),
    (["<", "role", 4], False),  # a string against a number: false, not an error
    (["==", "missing", 1], False), (["!=", "missing", 1], False), (["not", ["==", "missing", 1]], True),
    (["in", "zone", [1, 2, 3]], True), (["in", "role", ["client"]], False),
    (["has", "N", 1], True), (["has", "N", 2], False), (["has", "role", "s"], False),
    (["and", ["==", "role", "server"], ["has", "N", 4], [">", "zone", 2]], True),
    (["and", ["==", "role", "server"], ["has", "N", 3]], False),
    (["or", ["==", "role", "client"], ["==", "up", True]], True), (["or"], False), (["and"], True),
    (["not", ["or", ["==", "zone", 1], ["==", "zone", 2]]], True), (True, True), (False, False),
])
def test_evaluate_general_predicates(predicate, expected):
    assert evaluate(predicate, COMPONENT) is expected
    assert evaluate(from_json(predicate), COMPONENT) is expected


scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, -2.25]),
                    st.text("ab#", max_size=3))
leaves = st.one_of(
    st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.sampled_from(["a", "b", "N"]), scalars),
    st.builds(OneOf, st.sampled_from(["a", "b"]), st.lists(scalars, max_size=3).map(tuple)),
    st.builds(Contains, st.just("N"), scalars), st.sampled_from([TRUE, FALSE]))
predicates = st.recursive(leaves, lambda inner: st.one_of(
    st.builds(And, st.lists(inner, max_size=3).map(tuple)), st.builds(Or, st.lists(inner, max_size=3).map(tuple)),
    st.builds(Not, inner)), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(predicates)
def test_predicates_round_trip_through_json(predicate):
    data = json.loads(json.dumps(to_json(predicate)))
    assert from_json(data) == predicate
    assert to_json(from_json(data)) == data


@pytest.mark.parametrize("data, message", [
    (["~", "a", 1], "unknown predicate operator '~'"), (["==", "a"], "takes an attribute name and a value"),
    (["in", "a", 1], "takes a list of values"), (["not"], "takes one predicate"), ({"==": 1}, "not a predicate"),
    ([], "not a predicate"), (["and", ["==", 1, 2]], "takes an attribute name"),
])
def test_bad_json_predicates_are_errors(data, message):
    with pytest.raises(ValueError, match=message):
        from_json(data)


def test_equality_key_of_conjunctions_of_equalities_only():
    assert equality_key(["==", "a", 1]) == {"a": 1}
    conjunction = ["and", ["==", "a", 1], ["and", ["in", "b", ["x"]], True], ["==", "a", 1.0]]
    assert equality_key(conjunction) == {"a": 1, "b": "x"}
    assert equality_key(True) == {} and equality_key(["and"]) == {}
    assert equality_key(["and", ["==", "a", 1], ["==", "a", 2]]) is None  # contradiction: left to evaluation
    for other in (["and", ["==", "a", 1], ["<", "b", 2]], ["or", ["==", "a", 1]], ["not", ["==", "a", 1]],
                  ["in", "a", [1, 2]], ["!=", "a", 1], False):
        assert equality_key(other) is None


# ---------------------------------------------------------------------------------------------
# The matcher

components = st.fixed_dictionaries({}, optional={
    "a": st.sampled_from(["x", "y", 1, 2, 2.0]), "b": st.sampled_from([0, 1, "#", None]),
    "c": st.sampled_from(["p", [1], 3]), "N": st.lists(st.integers(0, 3), max_size=3)})
equalities = st.lists(st.builds(Compare, st.just("=="), st.sampled_from(["a", "b", "c", "d"]),
                                st.sampled_from(["x", "y", 1, 2, 0, "#", None, "p", 3])), max_size=3)
matcher_predicates = st.one_of(predicates, equalities.map(lambda parts: And(tuple(parts))),
                               st.tuples(equalities, predicates).map(lambda t: And(tuple(t[0]) + (t[1],))))


@settings(max_examples=200, deadline=None)
@given(st.lists(components, max_size=12), st.lists(matcher_predicates, min_size=1, max_size=6),
       st.lists(st.lists(st.sampled_from(["a", "b", "c"]), unique=True), max_size=3))
def test_matcher_agrees_with_evaluating_every_component(population, queries, schemas):
    matcher = Matcher(["a", "b", "c"], schemas)
    for i, attributes in enumerate(population):
        matcher.add(i, attributes)
    for i in range(0, len(population), 3):
        matcher.update(i, dict(population[i], a="y"))
        population[i] = dict(population[i], a="y")
    for i in range(1, len(population), 4):
        matcher.delete(i)
    alive = {i: attrs for i, attrs in enumerate(population) if i % 4 != 1}
    for predicate in queries:
        assert matcher.match(predicate) == {i for i, attrs in alive.items() if evaluate(predicate, attrs)}
        assert matcher.match(to_json(predicate)) == matcher.match(predicate)


def test_matcher_answers_equality_conjunctions_from_the_trees(monkeypatch):
    matcher = Matcher(["role", "zone"], [["role"], ["role", "zone"]])
    rng = random.Random(1)
    for i in range(200):
        matcher.add(i, {"role": rng.choice(["server", "client"]), "zone": rng.randrange(5), "N": [i % 7]})
    expected = {i for i in range(200) if matcher.store.values(i) == {"role": "server", "zone": 2}}
    wanted = ["and", ["==", "role", "server"], ["==", "zone", 2], ["has", "N", 3]]
    narrowed = {i for i in expected if i % 7 == 3}
    assert matcher.match(wanted) == narrowed

    def no_evaluation(predicate, attributes):
        raise AssertionError("evaluated although the trees answer")

    monkeypatch.setattr(correlation, "evaluate", no_evaluation)
    assert matcher.match(["and", ["==", "zone", 2], ["==", "role", "server"]]) == expected
    assert matcher.match(True) == set(range(200))
    with pytest.raises(AssertionError):
        matcher.match(["<", "zone", 2])
