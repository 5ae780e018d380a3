"""Fault-tolerant cluster management (agents/causal/cluster.py, Algorithms 2-4) on the in-memory
network of tests/cluster_net.py: a stable ring, joins, a killed coordinator excluded and its
tickets reused, and an unreachable one that must stop by itself; ticket uniqueness (Theorem 4.2)
is checked after every step, and by an observer of the logged ticket changes over generated
ticket layouts, fault-tolerance parameters, faults and round phases (issue 30); and no event name
(ticket, count) given twice over the same generated runs with events flowing (A17's margin)."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st

from agents.causal.cluster import COORDINATOR, DISCONNECTED, LEFT, ClusterMember

from .cluster_net import ClusterNet, shared_tickets

N = 32


def ring(names, n=N):
    step = n // len(names)
    return {(i * step + 3) % n: name for i, name in enumerate(names)}


def test_a_static_ring_stays_up_and_each_process_sends_at_most_2k_plus_1_alives_a_round():
    names = [f"c{i}" for i in range(6)]
    net = ClusterNet(names, N, k=1)
    net.bootstrap(ring(names))
    net.run_until(20.5)
    assert net.coordinators() == names and not net.violations
    assert max(net.alive_sent.values()) <= 3
    held = net.holders()
    assert set().union(*held.values()) == set(range(N)), "the coordinators' tickets cover the ring"


def test_a_ring_smaller_than_2k_plus_2_survives_its_own_quorum():
    net = ClusterNet(["a", "b"], N, k=1)
    net.bootstrap({0: "a", 16: "b"})
    net.run_until(10.5)
    assert net.coordinators() == ["a", "b"] and not net.violations


def test_joiners_get_distinct_tickets_from_the_coordinators_sets_and_announce_them():
    names = [f"c{i}" for i in range(4)]
    net = ClusterNet(names, N, k=1, seed=2)
    net.bootstrap(ring(names))
    net.run_until(2.5)
    for i in range(6):
        joiner = net.add(f"j{i}")
        net.send(joiner.me, joiner.join(names))
        net.run_until(3.5 + 2 * i)
    net.run_until(20.5)
    assert not net.violations
    coords = net.coordinators()
    assert len(coords) == 10, [(n, m.state) for n, m in net.members.items()]
    tickets = [net.members[c].ticket for c in coords]
    assert len(set(tickets)) == 10
    assert set().union(*net.holders().values()) == set(range(N))
    for c in coords:   # every coordinator has every owner in its view after the announcements
        assert sorted(net.members[c].cview.values()) == coords
    joined = [e for e in net.log if e["why"] == "joined"]
    assert len(joined) == 6 and all(e["ticket"] == e["coordinates"][0] for e in joined)
    assert not any(net.members[f"j{i}"].ticket_reused for i in range(6)), "tickets nobody had (A17)"
    # a joiner's ALIVEs on joining and those of its first round fall between different rounds
    assert {m.counters["alive_max_round"] for m in net.members.values()} == {3}


def test_a_joiner_whose_contact_is_dead_asks_another_after_a_silent_round():
    names = [f"c{i}" for i in range(4)]
    net = ClusterNet(names, N, k=1, seed=3)
    net.bootstrap(ring(names))
    net.run_until(1.5)
    net.dead.add("c0")
    joiner = net.add("j")
    joiner._asked = "c1"                # so that the first CJOIN goes to the dead c0 of its two
    first = joiner.join(["c0", "c1"])
    assert [(o.to, o.type) for o in first] == [("c0", "CJOIN")]
    net.send("j", first)
    net.run_until(2.5)
    assert joiner.state == "joining", "nobody answered yet"
    joiner.contacts = names             # the role adds the creators it has heard of since
    net.run_until(8.5)
    assert joiner.state == COORDINATOR and joiner.ticket is not None, "another contact served it"
    assert not net.violations


def test_a_coordinator_without_free_tickets_or_during_an_exclusion_rejects():
    m = ClusterMember("a", 4, 1)
    m.bootstrap({0: "a", 3: "b", 2: "c", 1: "d"})      # S_a = {0}: nothing to give
    out = m.on_message("x", "CJOIN", {}, 0.0)
    assert [(o.to, o.type) for o in out] == [("x", "REJECT")]


def test_a_killed_coordinator_is_excluded_and_its_tickets_are_reused():
    names = [f"c{i}" for i in range(6)]
    net = ClusterNet(names, N, k=1, seed=3)
    net.bootstrap(ring(names))
    net.run_until(3.5)
    victim = "c2"
    owned = {net.members[victim].ticket} | set(net.members[victim].coordinated())
    net.dead.add(victim)
    net.run_until(4.5)
    excluded = [e for e in net.log if e["why"] == "excluded"]
    # the ring runs down the tickets: c3 (ticket 18) is the predecessor of c2 (13)
    assert len(excluded) == 1 and excluded[0]["excluded"] == [victim] and excluded[0]["node"] == "c3"
    temp = excluded[0]["temp_rounds"]
    d = len(excluded[0]["tickets"]) + 1
    assert temp == net.members["c3"].hold_rounds(d) == 1 + d + 2, "1 + d + ceil((2d - 1)·δ/T) rounds (section 7)"
    assert not owned & set(net.members["c3"].coordinated()), "a temporary coordinator does not yet hold them"
    joiner = net.add("new")
    net.send("new", joiner.join(["c3"]))
    net.run_until(4.5 + temp + 1)
    assert not net.violations
    assert net.coordinators() == sorted([n for n in names if n != victim] + ["new"]), "the others stay"
    assert owned <= set(net.members["c3"].coordinated()) | set(net.members["new"].coordinated()), \
        "its predecessor coordinates its tickets after the temporary rounds"
    net.run_until(4.5 + temp + 4)
    new = net.members["new"]
    assert new.state == COORDINATOR and set(new.coordinated()) <= set(excluded[0]["tickets"]), \
        "the joiner was served from the tickets the exclusion freed"
    assert not net.violations
    # A17: the excluder knows those tickets had an owner and tells the joiner (ACKCJOIN "reused");
    # joiners of the earlier test, given tickets nobody had, were told they are fresh
    assert new.ticket_reused and set(excluded[0]["tickets"]) <= net.members["c3"].reused


def cut_link_run(seed: int, layout: str = "spaced", phases: bool = False) -> ClusterNet:
    """Seven coordinators; at 3.5 rounds the link between c3 and its successor c2 is cut (c2 still
    runs), and the cluster goes on to 20.5 rounds. `layout` "spaced": tickets 4 apart (ring());
    "adjacent": tickets 8..14, one ticket each, the layout of a cluster whose tickets equal its
    coordinators. `phases`: each member's rounds at its own random phase."""
    names = [f"c{i}" for i in range(7)]
    net = ClusterNet(names, N, k=1, seed=seed, phases=phases)
    net.bootstrap(ring(names) if layout == "spaced" else {8 + i: name for i, name in enumerate(names)})
    net.run_until(3.5)
    net.cut.add(frozenset(("c3", "c2")))
    net.run_until(20.5)
    return net


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_an_unreachable_coordinator_is_excluded_and_stops_by_itself_within_the_distance(seed):
    """c3 cannot reach its successor c2 (the link is cut, c2 still runs): c3 excludes c2, and c2,
    whose ALIVEs from L now fail the quorum, stops coordinating before c3's temporary rounds end
    (Corollary 4.1, Theorem 4.2): uniqueness holds throughout."""
    net = cut_link_run(seed)
    assert not net.violations, net.violations[:3]
    assert net.members["c2"].state == DISCONNECTED
    stop = next(e for e in net.log if e["node"] == "c2" and e["state"] == DISCONNECTED)
    excluded = next(e for e in net.log if e["why"] == "excluded")
    assert excluded["node"] == "c3" and excluded["excluded"] == ["c2"]
    d = len(excluded["tickets"]) + 1
    assert stop["t"] <= excluded["t"] + d, (stop, excluded)
    assert "c2" not in net.coordinators() and len(net.coordinators()) == 6


def overlaps_over_seeds(seeds, **kw):
    """For each seed of the cut-link run: (seed, the first overlap the observer saw), for the
    seeds with one; and checks that c3 did exclude c2 in every run."""
    bad = []
    for seed in seeds:
        net = cut_link_run(seed, **kw)
        excluded = [e for e in net.log if e["why"] == "excluded"]
        assert [(e["node"], e["excluded"]) for e in excluded][:1] == [("c3", ["c2"])], (seed, excluded)
        assert net.members["c2"].state == DISCONNECTED, seed
        found = shared_tickets(net)
        if found:
            bad.append((seed, found[0]))
    return bad


def describe(bad, runs):
    seed, c = bad[0]
    return (f"{len(bad)} of {runs} runs: e.g. seed {seed}: {c['nodes'][0]} and {c['nodes'][1]} both held ticket "
            f"{c['ticket']} from {c['from']:.2f} to {c['until']:.2f} ({[h['why'] for h in c['held']]})")


def test_adjacent_tickets_the_cut_off_owner_has_let_go_before_its_excluder_holds_its_ticket():
    """The cut-link run with the seven coordinators on adjacent tickets (dist(c3, c1) = 2): c2
    must have stopped before c3's temporary rounds end, as the observer of the logged ticket
    changes sees it (Theorem 4.2)."""
    bad = overlaps_over_seeds(range(1, 21), layout="adjacent")
    assert not bad, describe(bad, 20)


def test_adjacent_tickets_with_rounds_out_of_phase_the_cut_off_owner_has_let_go_first():
    """The same with each member's rounds at its own random phase, as on real hosts."""
    bad = overlaps_over_seeds(range(1, 61), layout="adjacent", phases=True)
    assert not bad, describe(bad, 60)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_churn_kills_a_leave_a_cut_and_joins_leave_a_working_ring_with_consistent_views(seed):
    """The churn experiment's timeline in memory: m3 killed, j1 joins, m5 leaves, m2 cut off, j2
    joins, j1 killed. Every fault is answered by one exclusion, the survivors stay coordinators
    with unique tickets, and their Cviews name exactly the live coordinators: an exclusion is
    retracted everywhere (I12), so that no L set fills up with excluded processes and a second
    exclusion does not bring the ring down."""
    names = [f"m{i}" for i in range(1, 7)]
    net = ClusterNet(names, 16, k=1, seed=seed)
    net.bootstrap({0: "m1", 2: "m2", 5: "m3", 8: "m4", 10: "m5", 13: "m6"})
    net.run_until(5.0)
    net.dead.add("m3")
    net.run_until(10.0)
    j1 = net.add("j1")
    net.send("j1", j1.join(["m1", "m2", "m4", "m5", "m6"]))
    net.run_until(15.0)
    net.dead.add("m5")
    net.run_until(20.0)
    net.cut |= {frozenset(("m2", x)) for x in net.members}
    net.run_until(25.0)
    j2 = net.add("j2")
    net.send("j2", j2.join(["m1", "m4", "m6"]))
    net.run_until(32.0)
    net.dead.add("j1")
    net.run_until(45.5)
    assert not net.violations
    excluded = sorted(x for e in net.log if e["why"] == "excluded" for x in e["excluded"])
    assert excluded == ["j1", "m2", "m3", "m5"]
    assert [e["node"] for e in net.log if e["why"] == "joined"] == ["j1", "j2"]
    live = net.coordinators()
    assert live == ["j2", "m1", "m4", "m6"]
    for c in live:
        assert sorted(net.members[c].cview.values()) == live, (c, net.members[c].cview)
    assert net.members["m2"].state == DISCONNECTED, "the cut-off coordinator let go by itself"
    assert max(net.alive_sent.values()) <= 3


RING6 = {0: "m1", 2: "m2", 5: "m3", 8: "m4", 10: "m5", 13: "m6"}


def _left_well(net: ClusterNet, leavers, live) -> None:
    """Each leaver let go, then left with its predecessor's acknowledgement; no exclusion; the
    live coordinators' views name exactly them, and nobody ever shared a ticket."""
    assert not net.violations and not shared_tickets(net)
    assert not [e for e in net.log if e["why"] == "excluded"], "a leave is not an exclusion"
    for x in leavers:
        rows = [e["why"] for e in net.log if e["node"] == x]
        assert rows[-2:] == ["leaving", "left"] and net.members[x].state == LEFT, (x, rows)
    assert net.coordinators() == live
    for c in live:
        assert sorted(net.members[c].cview.values()) == live, (c, net.members[c].cview)


@pytest.mark.parametrize("phases", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_leave_hands_the_tickets_to_the_predecessor_without_an_exclusion(seed, phases):
    """Algorithm 1's leave (lines 31-42): m5 (ticket 10) asks its predecessor m6 (13) with
    CLEAVE; m6 takes 10 and 9 over, acknowledges, tells m4 that it precedes it now (NEWSUCC) and
    every member that m5 owns nothing (RETRACT). The ring goes on with five coordinators."""
    net = ClusterNet(list(RING6.values()), 16, k=1, seed=seed, phases=phases)
    net.bootstrap(RING6)
    net.run_until(4.5)
    net.leave("m5")
    net.run_until(12.0)
    _left_well(net, ["m5"], ["m1", "m2", "m3", "m4", "m6"])
    took = [e for e in net.log if e["why"] == "cleave"]
    assert [(e["node"], e["left"], e["tickets"]) for e in took] == [("m6", "m5", [9, 10])]
    assert set(net.members["m6"].coordinated()) == {13, 12, 11, 10, 9} and net.members["m6"].succ == "m4"
    assert net.members["m4"].pred == "m6"
    leaving = next(e for e in net.log if e["node"] == "m5" and e["why"] == "leaving")
    assert leaving["t"] <= took[0]["t"] and leaving["ticket"] is None, "let go before the takeover"


def test_two_neighbours_leaving_at_once_both_leave_through_the_one_before_them():
    """m4 and m5 leave together: m4's CLEAVE reaches m5, itself leaving, and is not taken; m6
    takes m5's tickets, and its NEWSUCC makes m4 ask m6 in turn (line 26), which takes m4's."""
    net = ClusterNet(list(RING6.values()), 16, k=1, seed=4)
    net.bootstrap(RING6)
    net.run_until(4.5)
    net.leave("m4")
    net.leave("m5")
    net.run_until(12.0)
    _left_well(net, ["m4", "m5"], ["m1", "m2", "m3", "m6"])
    assert set(net.members["m6"].coordinated()) == set(range(6, 14)) and net.members["m6"].succ == "m3"


def test_a_leave_nobody_acknowledges_ends_in_an_exclusion_and_keeps_the_tickets_unique():
    """m5's link to m6 is cut: its CLEAVE never arrives. Having let go, it stops after LEAVE_WAIT
    δ, and m6 excludes it when its next UPDATE fails."""
    net = ClusterNet(list(RING6.values()), 16, k=1, seed=5)
    net.bootstrap(RING6)
    net.run_until(4.5)
    net.cut.add(frozenset(("m5", "m6")))
    net.leave("m5")
    net.run_until(14.0)
    assert not net.violations and not shared_tickets(net)
    assert [e["why"] for e in net.log if e["node"] == "m5"][-2:] == ["leaving", "leave"]
    assert [(e["node"], e["excluded"]) for e in net.log if e["why"] == "excluded"] == [("m6", ["m5"])]
    assert net.coordinators() == ["m1", "m2", "m3", "m4", "m6"]


def test_the_leavers_tickets_go_to_no_joiner_at_once_and_a_stale_update_failure_starts_no_exclusion():
    """After m5's CLEAVE, m6 blocks 10 and 9 for LEAVE_BLOCK rounds (a joiner seated there could
    meet the RETRACT of the leaver after its ACKCJOIN, or count on from a stale view of the
    ticket); a RETRACT for a leave drops only the leaver named; and the failed status of an
    UPDATE m6 had sent to m5 before the leave does not make m6 exclude m4, its successor now."""
    from agents.causal.cluster import LEAVE_BLOCK

    m6 = ClusterMember("m6", 16, 1)
    m6.bootstrap(RING6)
    m6.round(1.0)
    for x in ("m1", "m2"):
        m6.on_message(x, "ALIVE", {}, 1.1)
    update = next(o for o in m6.round(2.0) if o.type == "UPDATE")
    assert update.to == "m5"
    out = m6.on_message("m5", "CLEAVE", {"r": "m4", "tickets": [10, 9], "blocked": {}}, 2.05)
    assert [o.type for o in out] == ["ACKCLEAVE", "RETRACT", "NEWSUCC"] and m6.succ == "m4"
    assert {m6.blocked[t] for t in (9, 10)} == {LEAVE_BLOCK}
    assert m6.on_status(update.ref, False, 2.1) == [] and m6._exclusion is None, "m5's UPDATE failed, not m4's"
    m6.on_message("m1", "ALIVE", {}, 2.2)
    m6.on_message("m2", "ALIVE", {}, 2.2)
    given = m6.on_message("j", "CJOIN", {}, 2.3)
    assert all(o.type != "ACKCJOIN" or o.payload["i"] not in (9, 10) for o in given)
    j = ClusterMember("j", 16, 1)
    j.bootstrap({10: "j", 13: "m6"})       # as if j held ticket 10 already
    j.on_message("m6", "RETRACT", {"tickets": [10, 9], "owners": ["m5"], "left": True}, 2.4)
    assert j.state == COORDINATOR, "a leave's RETRACT names the leaver only"


def test_a_retract_drops_the_excluded_owners_everywhere_and_an_owner_of_a_retracted_ticket_lets_go():
    m = ClusterMember("a", 16, 1)
    m.bootstrap({12: "a", 8: "b", 4: "c", 0: "d"})
    assert m.succ == "b" and m.pred == "d"
    m.on_message("c", "RETRACT", {"tickets": [0, 15, 14, 13], "owners": ["d"]}, 1.0)
    assert "d" not in m.cview.values() and m.pred == "c" and m.state == COORDINATOR
    assert m.succ == "b", "only the excluder's successor changes"
    m.on_message("b", "RETRACT", {"tickets": [12, 11, 10, 9], "owners": ["a"]}, 2.0)
    assert m.state == DISCONNECTED and m.ticket is None, "excluded while running: it lets go"


def test_a_cjoin_from_a_process_already_in_the_view_is_rejected():
    m = ClusterMember("a", 16, 1)
    m.bootstrap({12: "a", 4: "c"})
    m.round(1.0)                                   # a counts itself in a ring this small (A8)
    m.on_message("c", "ALIVE", {}, 1.1)
    assert [o.type for o in m.on_message("j", "CJOIN", {}, 1.2)] == ["ACKCJOIN"]
    assert [o.type for o in m.on_message("j", "CJOIN", {}, 1.5)] == ["REJECT"], "its retry crossed our ACKCJOIN"


def test_an_exclusion_whose_new_successor_a_concurrent_exclusion_took_away_is_abandoned():
    """a excludes b (its UPDATE failed) with c answering as q; before a's 2δ wait ends, a
    acknowledges d's exclusion of a range holding c's ticket, which takes c out of a's view. a
    must not complete its own exclusion towards a successor it no longer knows (this crashed
    on c's missing ticket): it gives the exclusion up, stays, and retries at its next failed
    UPDATE. Found by the generated runs of issue 30."""
    a = ClusterMember("a", 16, 1)
    a.bootstrap({12: "a", 8: "b", 4: "c", 0: "d"})
    a.R = ["d", "a"]                                # as after an UPDATE that went through
    update = [o for o in a.round(1.0) if o.type == "UPDATE"][0]
    exclude = a.on_status(update.ref, False, 1.06)
    assert [(o.to, o.type) for o in exclude] == [("c", "EXCLUDE")]
    a.on_status(exclude[0].ref, True, 1.12)
    assert [(o.to, o.type) for o in a.on_message("c", "ACKEXCLUDE", {"L": ["b", "a", "d"]}, 1.1)] == [("d", "REQCOORD")]
    a.on_message("d", "ACKCOORD", {}, 1.2)
    assert [o.type for o in a.on_message("d", "REQCOORD", {"tickets": [7, 6, 5, 4, 3, 2, 1], "by": "d"}, 1.3)] \
        == ["ACKCOORD"]
    assert "c" not in a.cview.values()
    assert a.poll(3.0) == [] and a.state == COORDINATOR and a.succ == "b"
    assert a.changes()[-1]["why"] == "exclusion abandoned"
    assert a.next_deadline() is None, "no exclusion left pending"


# -- Theorem 4.2 over ticket layouts, k, faults and round phases (issue 30) -----------------------

HORIZON = 24.0
# weighted towards cuts: they leave the excluded process running, which is what issue 30 is about
FAULTS = ("cut", "cut", "cut", "isolate", "isolate", "kill", "leave", "leave", "join", "join", "heal")


def _layout(draw, n: int, c: int):
    """c tickets of n: adjacent (from a random start), spaced evenly, or random."""
    layout = draw(st.sampled_from(["adjacent", "spaced", "random"]))
    if layout == "adjacent":
        start = draw(st.integers(0, n - 1))
        return layout, [(start + i) % n for i in range(c)]
    if layout == "spaced":
        return layout, [i * n // c for i in range(c)]
    return layout, draw(st.randoms(use_true_random=False)).sample(range(n), c)


@st.composite
def cluster_scenarios(draw):
    """A cluster and what befalls it: k in 1..3; k+1..2k+5 coordinators on n tickets (n from
    the coordinators' count, the layout of tickets = coordinators, up to four times it); tickets
    adjacent (from a random start), spaced evenly, or random; rounds in phase or each member at
    its own phase; one to four faults at random times: a kill, a leave (A6), a link cut between a
    coordinator and its successor or another coordinator, a coordinator cut off from everyone, a
    join (contacts: every coordinator the network sees, cut-off ones included), all cuts healed."""
    k = draw(st.integers(1, 3))
    small = draw(st.sampled_from([True, False, False, False]))   # a ring of k+1..2k+1 (A8) falls to one fault
    c = draw(st.integers(k + 1, 2 * k + 1) if small else st.integers(2 * k + 2, 2 * k + 5))
    n = c + draw(st.sampled_from([0, 0, 1, 2, 3, c, 3 * c]))
    layout, tickets = _layout(draw, n, c)
    faults = draw(st.lists(st.tuples(st.integers(150, int(HORIZON - 10) * 100).map(lambda t: t / 100),
                                     st.sampled_from(FAULTS), st.integers(0, 99), st.integers(0, 99)),
                           min_size=1, max_size=4))
    return {"k": k, "n": n, "ring": {t: f"c{i}" for i, t in enumerate(tickets)}, "layout": layout,
            "phases": draw(st.booleans()), "seed": draw(st.integers(0, 2 ** 31)), "faults": sorted(faults)}


def scenario_run(sc, events: float = 0.0, margin: Optional[int] = None) -> ClusterNet:
    net = ClusterNet(list(sc["ring"].values()), sc["n"], k=sc["k"], seed=sc["seed"], phases=sc["phases"],
                     events=events, margin=margin)
    net.bootstrap(sc["ring"])
    joiners = 0
    for at, kind, a, b in sc["faults"]:
        net.run_until(at)
        coords = net.coordinators()
        if not coords:
            break
        x = coords[a % len(coords)]
        if kind == "kill":
            net.kill(x)
        elif kind == "leave":   # Algorithm 1's leave, or (one in three) A6's plain stop
            net.leave(x, graceful=b % 3 != 0)
        elif kind == "isolate":
            net.isolate(x)
        elif kind == "heal":
            net.heal()
        elif kind == "cut":
            succ = net.members[x].succ
            y = succ if b % 2 == 0 and succ not in (None, x) else coords[b % len(coords)]
            if y != x:
                net.cut.add(frozenset((x, y)))
        else:
            joiners += 1
            j = net.add(f"j{joiners}")
            net.send(j.me, j.join(coords))
    net.run_until(HORIZON)
    return net


def let_go_by(net: ClusterNet, node: str, t: float) -> bool:
    """Whether `node` held no ticket at time t, by its logged rows and the network's down times."""
    if node in net.down and net.down[node] <= t:
        return True
    rows = [r for r in net.log if r["node"] == node and r["t"] <= t]
    return bool(rows) and rows[-1]["ticket"] is None


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cluster_scenarios())
def test_no_two_processes_ever_hold_one_ticket_whatever_the_layout_k_faults_and_phases(sc):
    """Theorem 4.2 as an observer outside the members sees it (the logged ticket changes and the
    network's down times): no overlap, in 500 generated runs. And the exclusion stays live: an
    excluded process that still runs has let go within the excluder's temporary rounds, and the
    excluder takes the tickets when they end (hold_rounds(d), docs/CAUSAL-READING.md section 7)."""
    net = scenario_run(sc)
    exclusions = [e for e in net.log if e["why"] == "excluded"]
    event(f"layout {sc['layout']}, k = {sc['k']}, {'out of' if sc['phases'] else 'in'} phase")
    event(f"exclusions: {min(len(exclusions), 3)}{'+' if len(exclusions) > 2 else ''}")
    if any(x not in net.down and not let_go_by(net, x, e["t"]) for e in exclusions for x in e["excluded"]):
        event("an excluded process still ran and held its ticket when its exclusion was decided")
    if any(e["why"] == "joined" for e in net.log):
        event("a join succeeded")
    found = shared_tickets(net, end=HORIZON)
    assert not found, f"{sc['layout']} k={sc['k']} n={sc['n']} phases={sc['phases']}: {found[:2]}"
    for i, e in enumerate(net.log):
        if e["why"] != "excluded":
            continue
        p, a, m = e["node"], e["t"], e["temp_rounds"]
        if a + m + 1 > HORIZON:
            continue
        for x in e["excluded"]:
            assert let_go_by(net, x, a + m), (x, e)
        took = [r for r in net.log[i + 1:] if r["node"] == p and r["t"] <= a + m + 1
                and (r["why"] in ("temporary coordination ended", "excluded") or r["ticket"] is None)]
        assert took or net.down.get(p, HORIZON) <= a + m + 1, f"{p} did not take {e['tickets']} within {m} rounds"



# -- event identity over the same runs, events flowing (issue 30, A17) ----------------------------

RATES = (0.5, 1.0, 2.5)


@st.composite
def reuse_scenarios(draw):
    """Runs in which tickets change owners: the generator above narrowed to a coordinator cut off
    (wholly, or from its successor or another coordinator) or killed at a random time, once or
    twice, and then one or two joiners, each a random 1-6 rounds after a fault, on a ring with
    few or no spare tickets (so a joiner mostly gets one an exclusion freed); 0.5-2.5 events a
    round from every coordinator."""
    k = draw(st.integers(1, 2))
    c = draw(st.integers(k + 2, 2 * k + 4))
    n = c + draw(st.sampled_from([0, 0, 1, 2]))
    layout, tickets = _layout(draw, n, c)
    faults = []
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(200, 1000)) / 100
        faults.append((at, draw(st.sampled_from(["isolate", "isolate", "cut", "cut", "kill"])),
                       draw(st.integers(0, 99)), draw(st.integers(0, 99))))
        faults.append((at + draw(st.integers(100, 600)) / 100, "join", 0, 0))
    return {"k": k, "n": n, "ring": {t: f"c{i}" for i, t in enumerate(tickets)}, "layout": layout,
            "phases": draw(st.booleans()), "seed": draw(st.integers(0, 2 ** 31)), "faults": sorted(faults),
            "rate": draw(st.sampled_from(RATES))}


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(reuse_scenarios(), reuse_scenarios(), st.tuples(cluster_scenarios(), st.sampled_from(RATES)).map(
    lambda x: {**x[0], "rate": x[1]})))
def test_no_event_name_is_given_twice_whatever_the_cut_times_layouts_and_phases(sc):
    """The protocol names an event (ticket, t_e[ticket]). A coordinator cut off (wholly, or from
    one neighbour) goes on making events until it lets go, and those made after its cut reach
    nobody; the ticket's next owner skips reuse_margin counts past what it has seen
    (agents/causal/causality.py), so no name is given twice: 200 generated runs, a third of the
    generator above (every kind of fault), two thirds narrowed to tickets changing owners."""
    net = scenario_run(sc, events=sc["rate"])
    origins: dict = {}
    for m in net.made:
        origins.setdefault(m["name"][0], set()).add(m["origin"])
    event(f"tickets with events by two owners or more: {min(sum(len(o) > 1 for o in origins.values()), 2)}")
    repeats = net.repeated_names()
    assert not repeats, f"{sc['layout']} k={sc['k']} n={sc['n']} rate={sc['rate']}: {repeats[:2]}"


def test_without_the_margin_the_same_generator_finds_a_name_given_twice():
    """The property above can fail: with the margin at 0 (A17 as it was, counting on from the
    ticket's entry) the narrowed generator finds a run where a cut-off owner's unseen count is
    given again by the ticket's next owner, and the margin removes it from that run."""
    found = find(reuse_scenarios(), lambda sc: bool(scenario_run(sc, events=sc["rate"], margin=0).repeated_names()),
                 settings=settings(max_examples=200, derandomize=True, database=None, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
    net = scenario_run(found, events=found["rate"], margin=0)
    first, later = sorted(net.repeated_names()[0], key=lambda m: m["t"])[:2]
    assert first["origin"] != later["origin"], (first, later)
    assert not scenario_run(found, events=found["rate"]).repeated_names(), "the margin removes it"
