"""Delivery-property checks (spark_analysis.checks): each anomaly planted in an otherwise valid
history makes exactly the checks it must fail invalid, naming the planted message and node; valid
histories pass everything; an empty history is unknown everywhere. Pure and fast: no network."""

from __future__ import annotations

import json
import random
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_analysis.checks import (
    CHECKS,
    History,
    check_all,
    check_causal_order,
    check_total_order_global,
    expected_pairs,
)
from spark_analysis.checks import causal
from spark_analysis.checks.arrays import order_by

ALL = set(CHECKS)
NO_ORDER = frozenset({"total-order-sequencer"})  # histories whose messages carry no order number


class HB:
    """History builder: sends and deliveries with automatic times, per-origin seq, a global
    sequencer's numbers, and vector clocks kept from the deliveries actually recorded."""

    def __init__(self, nodes: Sequence[str]):
        self.nodes = list(nodes)
        self.now = 0
        self.sends: List[dict] = []
        self.deliveries: List[dict] = []
        self.clock = {n: [0] * len(self.nodes) for n in self.nodes}
        self.seqs: Dict[str, int] = {}
        self.vcs: Dict[str, tuple] = {}
        self.next_order = 0

    def tick(self, t: Optional[int]) -> int:
        self.now = self.now + 10 if t is None else t
        return self.now

    def send(self, origin: str, to: Iterable[str], t: Optional[int] = None, priority: Optional[int] = 1,
             deps: Optional[Sequence[str]] = None, order="auto", sequencer: Optional[str] = None, vc="auto") -> str:
        seq = self.seqs[origin] = self.seqs.get(origin, 0) + 1
        msg = f"{origin}:{seq}"
        clock = self.clock[origin]
        clock[self.nodes.index(origin)] += 1
        if vc == "auto":
            vc = tuple(clock)
        elif vc is not None:
            vc = tuple(vc)
            self.clock[origin] = [max(a, b) for a, b in zip(clock, vc)]
        self.vcs[msg] = vc
        if order == "auto":
            self.next_order += 1
            order = self.next_order
        self.sends.append({"msg": msg, "origin": origin, "seq": seq, "t": self.tick(t), "eligible": tuple(to),
                           "order": order, "sequencer": sequencer, "priority": priority, "vc": vc,
                           "deps": tuple(deps) if deps is not None else None})
        return msg

    def deliver(self, msg: str, node: str, t: Optional[int] = None) -> None:
        vc = self.vcs.get(msg)
        if vc is not None and node in self.clock:
            self.clock[node] = [max(a, b) for a, b in zip(self.clock[node], vc)]
        self.deliveries.append({"msg": msg, "node": node, "t": self.tick(t)})

    def bcast(self, origin: str, to: Sequence[str], skip: Iterable[str] = (), **kw) -> str:
        """Send, then deliver at once to every listed node (but those in `skip`)."""
        m = self.send(origin, to, **kw)
        for n in to:
            if n not in skip:
                self.deliver(m, n)
        return m

    def history(self, drop: Sequence[str] = (), **kw) -> History:
        sends = pd.DataFrame(self.sends, columns=["msg", "origin", "seq", "t", "eligible", "order", "sequencer",
                                                  "priority", "vc", "deps"])
        sends = sends.drop(columns=list(drop))
        deliveries = pd.DataFrame(self.deliveries, columns=["msg", "node", "t"])
        return History(sends=sends, deliveries=deliveries, nodes=list(self.nodes), **kw)


def results(h: History) -> Dict[str, dict]:
    out = check_all(h)
    assert [r["check"] for r in out] == list(CHECKS)
    return {r["check"]: r for r in out}


def assert_only(h: History, invalid: set, unknown: frozenset = frozenset()) -> Dict[str, dict]:
    """The checks in `invalid` are invalid, those in `unknown` unknown, every other one valid."""
    res = results(h)
    got = {name: r["verdict"] for name, r in res.items()}
    want = {name: ("invalid" if name in invalid else "unknown" if name in unknown else "valid") for name in CHECKS}
    assert got == want, {n: (got[n], res[n]["anomalies"], res[n]["stats"].get("reason")) for n in CHECKS
                         if got[n] != want[n]}
    return res


def cex(res: Dict[str, dict], check: str, kind: str) -> List[dict]:
    out = res[check]["counterexamples"][kind]
    assert out, (check, kind)
    return out


def base() -> HB:
    """A valid history: four nodes, predicates of all kinds, synchronous deliveries, a declared
    dependency, varied priorities."""
    b = HB(["a", "b", "c", "d"])
    b.bcast("a", ["b", "c", "d"], priority=1)
    b.bcast("b", ["a", "c", "d"], priority=2)
    b.bcast("a", ["b", "c"], priority=1)
    b.bcast("c", ["a", "b", "d"], priority=3, deps=["a:2"])
    b.bcast("d", ["a"], priority=2)
    b.bcast("a", ["b", "c", "d"], priority=1)
    b.bcast("b", ["c"], priority=2)
    b.bcast("c", ["c", "d"], priority=1)  # the sender lists itself
    return b


# ---------------------------------------------------------------------------------------------
# valid and empty histories


def test_valid_history_passes_every_check():
    res = assert_only(base().history(), set())
    json.dumps(list(res.values()))  # plain values only
    assert res["at-least-once"]["stats"]["delivery_counts"] == {1: 18}
    assert res["causal-order"]["stats"]["rules"] == ["a", "b", "c", "d"]
    assert_only(base().history(contiguous_order=True), set())


def test_sender_delivering_its_own_message_is_not_misrouted():
    b = base()
    m = b.bcast("a", ["b", "c"])
    b.deliver(m, "a")
    res = assert_only(b.history(), set())
    assert res["no-misrouted"]["anomalies"] == {"misrouted": 0}


@pytest.mark.parametrize("frames", ["columns", "bare"])
def test_empty_history_is_unknown_for_every_check(frames):
    if frames == "columns":
        h = HB(["a", "b"]).history()
    else:
        h = History(sends=pd.DataFrame(), deliveries=pd.DataFrame(), nodes=["a", "b"])
    for r in check_all(h):
        assert r["verdict"] == "unknown", r
        assert r["stats"]["reason"]
        assert not any(r["anomalies"].values())


def test_sends_without_any_expected_receiver_are_unknown_not_valid():
    b = HB(["a", "b"])
    b.send("a", [])
    res = results(b.history())
    assert res["at-least-once"]["verdict"] == "unknown"
    assert res["exactly-once"]["verdict"] == "unknown"
    assert res["at-most-once"]["verdict"] == "unknown"  # nothing was delivered
    assert res["agreement"]["verdict"] == "unknown"


# ---------------------------------------------------------------------------------------------
# delivery semantics


def test_duplicate_fails_at_most_once_and_exactly_once_only():
    b = base()
    b.deliver("a:1", "c")  # a second time, at the end
    res = assert_only(b.history(), {"at-most-once", "exactly-once"})
    for check in ("at-most-once", "exactly-once"):
        c = cex(res, check, "duplicate")[0]
        assert (c["msg"], c["node"], c["count"]) == ("a:1", "c", 2)
        assert len(c["times"]) == 2
    assert res["at-least-once"]["verdict"] == "valid"
    assert res["at-most-once"]["stats"]["delivery_counts"] == {1: 17, 2: 1}


def test_lost_fails_at_least_once_and_exactly_once():
    b = base()
    b.send("d", ["c"])  # never delivered; c is its only expected receiver
    res = assert_only(b.history(), {"at-least-once", "exactly-once"})
    for check in ("at-least-once", "exactly-once"):
        c = cex(res, check, "lost")[0]
        assert (c["msg"], c["node"]) == ("d:2", "c")
    assert res["at-least-once"]["stats"]["delivery_counts"][0] == 1


def test_phantom_fails_best_effort():
    b = base()
    b.deliver("z:1", "b")
    res = assert_only(b.history(), {"no-phantom", "best-effort"})
    c = cex(res, "no-phantom", "phantom")[0]
    assert (c["msg"], c["node"]) == ("z:1", "b")
    assert res["best-effort"]["stats"]["violated"] == ["phantom"]


def test_phantom_without_any_send_is_invalid_not_unknown():
    h = History(sends=pd.DataFrame(), deliveries=pd.DataFrame({"msg": ["x:1"], "node": ["a"], "t": [5]}),
                nodes=["a"])
    res = results(h)
    assert res["no-phantom"]["verdict"] == "invalid"
    assert res["fifo"]["verdict"] == "unknown"


def test_misrouted_fails_best_effort():
    b = base()
    m = b.bcast("a", ["b"])
    b.deliver(m, "d")  # d is not eligible
    res = assert_only(b.history(), {"no-misrouted", "best-effort"})
    c = cex(res, "no-misrouted", "misrouted")[0]
    assert (c["msg"], c["node"], c["eligible"]) == (m, "d", ["b"])
    assert res["best-effort"]["stats"]["violated"] == ["misrouted"]


def test_anomalies_are_all_counted_and_counterexamples_bounded():
    b = base()
    for m in ["a:1", "b:1", "a:2", "a:3", "c:2", "b:2"]:
        b.deliver(m, "c")
    b.deliver("a:1", "b")
    res = results(b.history())
    assert res["at-most-once"]["anomalies"] == {"duplicate": 7}
    assert len(res["at-most-once"]["counterexamples"]["duplicate"]) == 5
    assert res["at-most-once"]["stats"]["extra_deliveries"] == 7


# ---------------------------------------------------------------------------------------------
# down nodes and E(m)


def test_node_down_from_before_the_send_is_not_required():
    b = base()
    t0 = b.now
    m = b.bcast("a", ["b", "c", "d"], skip=["d"])
    h = b.history(down={"d": [(t0 + 1, None)]})  # d crashed before the send, for good
    res = assert_only(h, set())
    assert (m, "d") not in set(map(tuple, expected_pairs(h).values))
    assert (m, "c") in set(map(tuple, expected_pairs(h).values))
    assert "d" not in res["agreement"]["stats"]["correct_nodes"]


def test_node_crashing_after_the_send_is_not_required_even_if_restarted():
    b = base()
    m = b.send("a", ["b", "c", "d"])
    t = b.now
    b.deliver(m, "b")
    b.deliver(m, "c")
    assert_only(b.history(down={"d": [(t + 1, t + 2)]}), set())


def test_node_restarted_before_the_send_is_required():
    """Decision: a node down for a while but up again by the send is up for the whole
    [send, end] and must deliver, like any other."""
    b = base()
    m = b.bcast("a", ["b", "c", "d"], skip=["d"])
    # d was down [1, 5) (and restarted long before the send): not correct, but expected
    res = assert_only(b.history(down={"d": [(1, 5)]}), {"at-least-once", "exactly-once"})
    c = cex(res, "at-least-once", "lost")[0]
    assert (c["msg"], c["node"]) == (m, "d")
    assert res["agreement"]["verdict"] == "valid"  # d is not correct: agreement does not cover it


def test_agreement_violation():
    b = base()
    m = b.bcast("b", ["a", "c", "d"], skip=["d"])
    res = assert_only(b.history(), {"agreement", "at-least-once", "exactly-once"})
    c = cex(res, "agreement", "disagreement")[0]
    assert (c["msg"], c["node"]) == (m, "d")
    assert set(c["delivered_by"]) == {"a", "c"}


def test_agreement_ignores_deliveries_by_nodes_that_are_not_correct():
    b = base()
    m = b.bcast("b", ["a", "d"], skip=["d"])
    # a delivered it, then crashed for a while: a is not correct, so d (correct) missing it is
    # a loss but no disagreement
    res = assert_only(b.history(down={"a": [(b.now + 5, b.now + 6)]}), {"at-least-once", "exactly-once"})
    assert cex(res, "at-least-once", "lost")[0]["msg"] == m


# ---------------------------------------------------------------------------------------------
# FIFO


def test_fifo_gap_names_the_skipped_message():
    b = base()
    b.bcast("d", ["c"])
    b.bcast("d", ["c"], skip=["c"])
    b.bcast("d", ["c"])
    res = assert_only(b.history(), {"fifo", "at-least-once", "exactly-once", "causal-order"})
    c = cex(res, "fifo", "gap")[0]
    assert (c["skipped_msg"], c["node"], c["delivered_later_msg"]) == ("d:3", "c", "d:4")
    assert res["fifo"]["anomalies"] == {"inversion": 0, "gap": 1}
    cc = cex(res, "causal-order", "missing-predecessor")[0]
    assert (cc["msg"], cc["predecessor"], cc["node"], cc["rules"]) == ("d:4", "d:3", "c", ["a", "c"])  # vc too


def test_fifo_inversion():
    b = base()
    m1 = b.send("d", ["c"], order=None)
    m2 = b.send("d", ["c"], order=None)
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(), {"fifo", "causal-order", "optimistic-causal-order"})
    c = cex(res, "fifo", "inversion")[0]
    assert (c["msg"], c["after_msg"], c["node"], c["origin"]) == (m1, m2, "c", "d")
    cc = cex(res, "causal-order", "late-predecessor")[0]
    assert (cc["msg"], cc["predecessor"], cc["node"]) == (m2, m1, "c")
    assert "a" in cc["rules"]


# ---------------------------------------------------------------------------------------------
# total order per sequencer


def test_sequencer_number_reuse():
    b = base()
    m1 = b.bcast("a", ["b", "c"], order=100, sequencer="s1")
    m2 = b.bcast("b", ["c", "d"], order=100, sequencer="s1")
    b.bcast("c", ["a"], order=100, sequencer="s2")  # another sequencer: no reuse
    res = assert_only(b.history(), {"total-order-sequencer"})
    assert res["total-order-sequencer"]["anomalies"]["reuse"] == 1
    c = cex(res, "total-order-sequencer", "reuse")[0]
    assert (c["sequencer"], c["order"], sorted(c["msgs"])) == ("s1", 100, sorted([m1, m2]))


def test_sequencer_out_of_order_delivery():
    b = base()
    m1 = b.send("a", ["c"])
    m2 = b.send("b", ["c"])
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(), {"total-order-sequencer"})
    c = cex(res, "total-order-sequencer", "out-of-order")[0]
    assert (c["msg"], c["after_msg"], c["node"], c["sequencer"]) == (m1, m2, "c", None)


def test_independent_sequencers_are_checked_separately():
    b = HB(["a", "b", "c"])
    b.bcast("a", ["c"], order=1, sequencer="s1")
    b.bcast("b", ["c"], order=1, sequencer="s2")
    b.bcast("a", ["c"], order=2, sequencer="s1")
    b.bcast("b", ["c"], order=2, sequencer="s2")
    assert_only(b.history(contiguous_order=True), set())


def test_contiguity_hole_only_when_required():
    b = base()
    b.bcast("a", ["b", "c", "d"], order=20)  # the numbers 9..19 were never given
    assert_only(b.history(), set())
    res = assert_only(b.history(contiguous_order=True), {"total-order-sequencer"})
    holes = res["total-order-sequencer"]["counterexamples"]["hole"]
    assert {h["node"] for h in holes} == {"b", "c", "d"}
    assert holes[0]["missing"][:3] == [9, 10, 11]
    assert res["total-order-sequencer"]["anomalies"]["hole"] == 3 * 11


def test_contiguity_hole_names_the_missing_message():
    b = base()
    m = b.bcast("a", ["c", "d"], skip=["c"])  # number 9
    b.bcast("b", ["c", "d"])                    # number 10
    res = results(b.history(contiguous_order=True))
    assert res["total-order-sequencer"]["verdict"] == "invalid"
    c = cex(res, "total-order-sequencer", "hole")[0]
    assert (c["node"], c["missing"], c["missing_msgs"]) == ("c", [9], {"9": m})


def test_contiguity_does_not_require_numbers_of_messages_a_node_is_not_in_e_for():
    b = base()
    b.bcast("a", ["d"])  # 9: c is not eligible
    b.bcast("b", ["c", "d"])
    assert_only(b.history(contiguous_order=True), set())


# ---------------------------------------------------------------------------------------------
# global total order


def test_global_order_cycle_reports_the_smallest_cycle():
    nodes = ["p1", "p2", "p3", "p4", "p5", "r1", "r2", "r3", "r4", "r5", "r6"]
    b = HB(nodes)
    x = b.send("p1", ["r1", "r3", "r6"], order=None)
    y = b.send("p2", ["r1", "r2", "r4"], order=None)
    z = b.send("p3", ["r2", "r3"], order=None)
    u = b.send("p4", ["r4", "r5"], order=None)
    v = b.send("p5", ["r5", "r6"], order=None)
    for node, first, second in [("r6", v, x), ("r5", u, v), ("r4", y, u),  # 4-cycle x y u v
                                ("r1", x, y), ("r2", y, z), ("r3", z, x)]:  # 3-cycle x y z
        b.deliver(first, node)
        b.deliver(second, node)
    res = assert_only(b.history(), {"total-order-global"}, unknown=NO_ORDER)
    json.dumps(list(res.values()))
    r = res["total-order-global"]
    assert r["anomalies"] == {"cycle": 1}
    c = r["counterexamples"]["cycle"][0]
    assert c["length"] == 3 and set(c["cycle"]) == {x, y, z}
    assert {e["node"] for e in c["edges"]} == {"r1", "r2", "r3"}
    assert r["stats"]["smallest_cycle"] == 3 and r["stats"]["smallest_cycle_exact"]


def test_global_order_two_nodes_disagreeing():
    b = HB(["a", "b", "c", "d"])
    m1 = b.send("a", ["c", "d"], order=None)
    m2 = b.send("b", ["c", "d"], order=None)
    b.deliver(m1, "c")
    b.deliver(m2, "c")
    b.deliver(m2, "d")
    b.deliver(m1, "d")
    res = assert_only(b.history(), {"total-order-global"}, unknown=NO_ORDER)
    assert set(cex(res, "total-order-global", "cycle")[0]["cycle"]) == {m1, m2}


def test_global_order_counts_every_cycle_and_reports_the_shortest_first():
    # one 3-cycle, then eight disjoint 2-cycles (pairs delivered in opposite orders by c and d):
    # nine components are counted, the five counterexamples are 2-cycles, the smallest exact
    b = HB(["a", "b", "c", "d", "r1", "r2", "r3"])
    x = b.send("a", ["r1", "r3"], order=None)
    y = b.send("a", ["r1", "r2"], order=None)
    z = b.send("b", ["r2", "r3"], order=None)
    for node, first, second in [("r1", x, y), ("r2", y, z), ("r3", z, x)]:
        b.deliver(first, node)
        b.deliver(second, node)
    pairs = []
    for _ in range(8):
        m1 = b.send("a", ["c", "d"], order=None)
        m2 = b.send("b", ["c", "d"], order=None)
        pairs.append({m1, m2})
        b.deliver(m1, "c")
        b.deliver(m2, "c")
        b.deliver(m2, "d")
        b.deliver(m1, "d")
    r = check_total_order_global(b.history())
    assert r["verdict"] == "invalid" and r["anomalies"] == {"cycle": 9}
    cycles = r["counterexamples"]["cycle"]
    assert len(cycles) == 5 and all(c["length"] == 2 and set(c["cycle"]) in pairs for c in cycles)
    assert r["stats"]["smallest_cycle"] == 2 and r["stats"]["smallest_cycle_exact"]
    assert r["stats"]["vertices_in_cycles"] == 3 + 16


def test_global_order_different_subsets_consistent():
    b = HB(["a", "b", "c", "d", "e"])
    m1 = b.send("a", ["c", "d"], order=None)
    m2 = b.send("b", ["d", "e"], order=None)
    m3 = b.send("a", ["c", "e"], order=None)
    # c: m1 m3, d: m2 m1 (m2 before m1 is fine: one global order m2 m1 m3 fits all), e: m2 m3
    for n, ms in [("c", [m1, m3]), ("d", [m2, m1]), ("e", [m2, m3])]:
        for m in ms:
            b.deliver(m, n)
    assert_only(b.history(), set(), unknown=NO_ORDER)


# ---------------------------------------------------------------------------------------------
# priority


def test_priority_violation():
    b = base()
    low = b.send("a", ["c"], priority=1)
    high = b.send("b", ["c"], priority=5)  # sent before low is delivered at c
    b.deliver(low, "c")
    b.deliver(high, "c")
    res = assert_only(b.history(), {"priority-order"})
    c = cex(res, "priority-order", "inversion")[0]
    assert (c["msg"], c["overtaken_msg"], c["node"]) == (low, high, "c")


def test_priority_respected_or_not_pending():
    b = base()
    low = b.send("a", ["c"], priority=1, order=None)
    high = b.send("b", ["c"], priority=5, order=None)
    b.deliver(high, "c")  # the urgent one first: fine
    b.deliver(low, "c")
    low2 = b.bcast("a", ["c"], priority=1)  # delivered before the urgent one is even sent: fine
    b.bcast("b", ["c"], priority=5)
    assert_only(b.history(), set())
    assert low2


# ---------------------------------------------------------------------------------------------
# causal order, one rule at a time; the closure is computed by vectorised passes, or (0 passes)
# entirely by the sequential fallback: both must agree


@pytest.fixture(params=[causal.CLOSURE_PASSES, 0], ids=["passes", "sequential"], autouse=False)
def closure(request, monkeypatch):
    monkeypatch.setattr(causal, "CLOSURE_PASSES", request.param)


def test_causal_rule_a_same_origin(closure):
    b = base()
    m1 = b.send("a", ["c"], order=None)
    m2 = b.send("a", ["c"], order=None)
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(drop=["vc", "deps"]), {"causal-order", "optimistic-causal-order", "fifo"})
    c = cex(res, "causal-order", "late-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m2, m1, "c", ["a"])
    assert cex(res, "optimistic-causal-order", "late-predecessor")[0] == c


def test_causal_rule_b_sender_delivered_it_first(closure):
    b = base()
    m1 = b.send("a", ["b", "c"], order=None)
    b.deliver(m1, "b")
    m2 = b.send("b", ["c"], order=None)
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(drop=["vc", "deps"]), {"causal-order", "optimistic-causal-order"})
    assert res["causal-order"]["stats"]["rules"] == ["a", "b"]
    c = cex(res, "causal-order", "late-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m2, m1, "c", ["b"])


def test_causal_rule_c_vector_clocks(closure):
    b = base()
    m1 = b.send("a", ["c"], order=None)
    # b learnt of m1 out of band: its vector timestamp says so, though it never delivered m1
    vc = [max(x, y) for x, y in zip(b.clock["b"], b.vcs[m1])]
    vc[1] += 1
    m2 = b.send("b", ["c"], order=None, vc=vc)
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(drop=["deps"]), {"causal-order", "optimistic-causal-order"})
    c = cex(res, "causal-order", "late-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m2, m1, "c", ["c"])
    # without the vector timestamps nothing relates them
    assert_only(b.history(drop=["vc", "deps"]), set())


def test_causal_rule_d_declared_dependency(closure):
    b = base()
    m1 = b.send("a", ["c"], order=None)
    m2 = b.send("b", ["c"], order=None, deps=[m1])
    b.deliver(m2, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(drop=["vc"]), {"causal-order", "optimistic-causal-order"})
    c = cex(res, "causal-order", "late-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m2, m1, "c", ["d"])


def test_causal_missing_predecessor(closure):
    b = base()
    m1 = b.send("a", ["b", "c"])
    b.deliver(m1, "b")
    m2 = b.bcast("b", ["c"])  # c delivers m2 but never m1, though it was expected to
    res = assert_only(b.history(drop=["vc", "deps"]), {"causal-order", "at-least-once", "exactly-once",
                                                         "agreement"})
    c = cex(res, "causal-order", "missing-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m2, m1, "c", ["b"])
    assert c["predecessor_delivered_at"] is None
    # optimistic causal order allows a predecessor never delivered: loss, not disorder
    assert res["optimistic-causal-order"]["verdict"] == "valid"


def test_causal_transitive_chain_through_a_message_the_node_never_gets(closure):
    b = base()
    m1 = b.send("a", ["b", "c"], order=None)
    b.deliver(m1, "b")
    m2 = b.bcast("b", ["d"], order=None)  # c is not eligible for m2
    m3 = b.send("d", ["c"], order=None)
    b.deliver(m3, "c")
    b.deliver(m1, "c")
    res = assert_only(b.history(drop=["vc", "deps"]), {"causal-order", "optimistic-causal-order"})
    c = cex(res, "causal-order", "late-predecessor")[0]
    assert (c["msg"], c["predecessor"], c["node"], c["rules"]) == (m3, m1, "c", ["transitive"])
    assert m2


# ---------------------------------------------------------------------------------------------
# skipping checks whose inputs are absent


def test_check_all_marks_checks_without_inputs_unknown():
    res = results(base().history(drop=["order", "sequencer", "priority", "vc", "deps"]))
    assert res["total-order-sequencer"]["verdict"] == "unknown"
    assert "order" in res["total-order-sequencer"]["stats"]["reason"]
    assert res["priority-order"]["verdict"] == "unknown"
    assert "priority" in res["priority-order"]["stats"]["reason"]
    assert res["causal-order"]["verdict"] == "valid"
    assert res["causal-order"]["stats"]["rules"] == ["a", "b"]
    for name in ALL - {"total-order-sequencer", "priority-order"}:
        assert res[name]["verdict"] == "valid", name


def test_bad_input_is_rejected():
    b = base()
    h = b.history()
    h.sends = pd.concat([h.sends, h.sends.iloc[:1]])
    with pytest.raises(ValueError, match="duplicate msg"):
        check_all(h)
    with pytest.raises(ValueError, match="deliveries lacks"):
        check_all(History(sends=base().history().sends, deliveries=pd.DataFrame({"msg": ["a:1"]}), nodes=["a"]))


# ---------------------------------------------------------------------------------------------
# property: random valid histories


@st.composite
def valid_histories(draw):
    n = draw(st.integers(2, 5))
    nodes = [f"n{i}" for i in range(n)]
    # n0 stays up; others may be dead from the start or down a while before the first send
    status = {"n0": "up"}
    for node in nodes[1:]:
        status[node] = draw(st.sampled_from(["up", "up", "dead", "restarted"]))
    alive = [x for x in nodes if status[x] != "dead"]
    b = HB(nodes)
    b.now = 1000
    delivered: Dict[str, List[str]] = {x: [] for x in nodes}
    for _ in range(draw(st.integers(0, 20))):
        origin = draw(st.sampled_from(alive))
        eligible = draw(st.lists(st.sampled_from(nodes), unique=True, max_size=n))
        known = delivered[origin] + [m["msg"] for m in b.sends if m["origin"] == origin]
        deps = draw(st.lists(st.sampled_from(known), unique=True, max_size=2)) if known else []
        m = b.send(origin, eligible, priority=draw(st.integers(0, 3)), deps=deps or None)
        order = draw(st.permutations([x for x in eligible if x in alive]))
        for x in order:  # synchronous: every expected node delivers before the next send
            b.deliver(m, x)
            delivered[x].append(m)
    if not delivered["n0"]:  # something for every check to judge: n0 is correct
        b.bcast("n0", ["n0"])
    down = {x: [(0, None)] if s == "dead" else [(100, 200)] for x, s in status.items() if s != "up"}
    return b.history(down=down, end_ns=b.now + 1000, contiguous_order=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_histories(), st.randoms(use_true_random=False))
def test_random_valid_histories_pass_and_a_deleted_delivery_is_caught(h, rnd: random.Random):
    for r in check_all(h):
        assert r["verdict"] == "valid", r
    i = rnd.randrange(len(h.deliveries))
    gone = h.deliveries.iloc[i]
    h.deliveries = h.deliveries.drop(index=h.deliveries.index[i]).reset_index(drop=True)
    res = results(h)
    assert res["at-least-once"]["verdict"] == "invalid"
    assert res["at-least-once"]["anomalies"] == {"lost": 1}
    c = res["at-least-once"]["counterexamples"]["lost"][0]
    assert (c["msg"], c["node"]) == (gone["msg"], gone["node"])
    assert res["at-most-once"]["verdict"] in ("valid", "unknown")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_histories(), st.randoms(use_true_random=False))
def test_random_duplicate_fails_at_most_once_only(h, rnd: random.Random):
    i = rnd.randrange(len(h.deliveries))
    again = h.deliveries.iloc[[i]].assign(t=h.end_ns - 1)
    h.deliveries = pd.concat([h.deliveries, again], ignore_index=True)
    res = results(h)
    bad = {n for n, r in res.items() if r["verdict"] != "valid"}
    assert bad == {"at-most-once", "exactly-once"}
    c = res["at-most-once"]["counterexamples"]["duplicate"][0]
    assert (c["msg"], c["node"], c["count"]) == (again["msg"].iloc[0], again["node"].iloc[0], 2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_histories(), st.randoms(use_true_random=False))
def test_closure_passes_and_sequential_agree_on_shuffled_deliveries(h, rnd: random.Random):
    times = list(h.deliveries["t"])
    rnd.shuffle(times)
    h.deliveries = h.deliveries.assign(t=times)
    old = causal.CLOSURE_PASSES
    try:
        a = check_causal_order(h)
        causal.CLOSURE_PASSES = 0
        b = check_causal_order(h)
    finally:
        causal.CLOSURE_PASSES = old
    assert a["anomalies"] == b["anomalies"]
    assert a["counterexamples"] == b["counterexamples"]


_KEY_RANGES = [(0, 2), (-3, 3), (-5, 70_000), (0, 1 << 40), (-(1 << 63), (1 << 63) - 1)]


@st.composite
def _key_columns(draw):
    n = draw(st.integers(0, 60))
    ranges = draw(st.lists(st.sampled_from(_KEY_RANGES), min_size=1, max_size=4))
    return [np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=np.int64)
            for lo, hi in ranges]


@settings(max_examples=200, deadline=None)
@given(_key_columns())
def test_order_by_orders_rows_as_lexsort_does(keys):
    """Combined keys, radix sorts of narrow keys and stable passes over wide ones: the same
    permutation as lexsort (ties in row order), even for keys spanning the whole int64 range."""
    want = np.lexsort(keys[::-1]) if len(keys[0]) else np.zeros(0, np.int64)
    assert order_by(*keys).tolist() == want.tolist()


# ---------------------------------------------------------------------------------------------
# real runs: the manifest's promises say whether sequencer numbers must be contiguous


def _run_data(manifest: dict, orders: Sequence[int]):
    """A run's codes (codes.RunData) as the analysis collects them: n1 sends one ABC_DATA per
    number in `orders` to n2 and n3, which deliver each."""
    import pyarrow as pa

    from spark_analysis.inputs import RunInfo
    from spark_analysis.codes import RunData

    k = len(orders)
    sends = pa.table({"run": ["r"] * k, "origin": ["n1"] * k, "seq": list(range(1, k + 1)),
                      "type": ["ABC_DATA"] * k, "t": [1000 * (i + 1) for i in range(k)],
                      "intended": [["n2", "n3"]] * k, "order": list(orders), "sequencer": [None] * k},
                     schema=pa.schema([("run", pa.string()), ("origin", pa.string()), ("seq", pa.int64()),
                                       ("type", pa.string()), ("t", pa.int64()),
                                       ("intended", pa.list_(pa.string())), ("order", pa.int64()),
                                       ("sequencer", pa.string())]))
    rows = [(node, i) for i in range(k) for node in ("n2", "n3")]
    deliveries = pa.table({"run": ["r"] * len(rows), "node": [n for n, _ in rows], "origin": ["n1"] * len(rows),
                           "seq": [i + 1 for _, i in rows], "type": ["ABC_DATA"] * len(rows),
                           "t": [1000 * (i + 1) + 500 for _, i in rows], "produced_ns": pa.nulls(len(rows), pa.int64()),
                           "hops": pa.nulls(len(rows), pa.int64()), "accepted": pa.nulls(len(rows), pa.bool_())})
    wire = pa.table({"run": pa.array([], pa.string()), "origin": pa.array([], pa.int32()),
                     "seq": pa.array([], pa.int64()), "type": pa.array([], pa.int16()),
                     "t": pa.array([], pa.int64()), "tx": pa.array([], pa.int64())})
    return RunData(RunInfo("r", "/nowhere", manifest), sends, deliveries, wire, pd.DataFrame(), 0)


@pytest.mark.parametrize("promises, holes", [(None, None), ([], None), (["fifo"], None),
                                             (["contiguous-order"], 2), (["fifo", "contiguous-order"], 2)])
def test_a_real_run_requires_contiguous_numbers_only_when_its_manifest_promises_them(promises, holes):
    from spark_analysis.history import prepared_history

    manifest = {"run_id": "r", "node_ids": {"n1": 1, "n2": 2, "n3": 3}}
    if promises is not None:
        manifest["promises"] = promises
    res = {r["check"]: r for r in check_all(prepared_history(_run_data(manifest, [0, 1, 3]), manifest))}
    seq = res["total-order-sequencer"]
    assert seq["stats"]["contiguity_required"] is (holes is not None)
    if holes is None:
        assert seq["verdict"] == "valid"
    else:  # number 2 was given to no message: a hole at both receivers
        assert (seq["verdict"], seq["anomalies"]["hole"]) == ("invalid", holes)
        assert {(c["node"], tuple(c["missing"])) for c in seq["counterexamples"]["hole"]} == {("n2", (2,)),
                                                                                           ("n3", (2,))}
    assert {n for n, r in res.items() if r["verdict"] == "invalid"} == ({"total-order-sequencer"} if holes else set())


@pytest.mark.parametrize("promises", ["contiguous-order", {"contiguous-order": True}, ["contiguous-order", 1]])
def test_promises_that_are_not_a_list_of_strings_are_refused(promises):
    from spark_analysis.history import promises_contiguous_order

    with pytest.raises(ValueError, match="promises"):
        promises_contiguous_order({"promises": promises})
