"""The causal cluster-consistency layers (agents/causal/) on their own and together on an in-memory
network with random delays and loss: deliverability, obsolete events, forced delivery, R1 and R4
recovery, the recovery buffer, and PrCast's ages, history and overflow policy."""

from __future__ import annotations

import heapq
import os
import random
from typing import List, Tuple

import pytest

from agents.causal.causality import CausalLayer, Event, buffer_size, precedes, reuse_margin
from agents.causal.prcast import PrCast


def layer(n=3, ticket=0, **kw) -> CausalLayer:
    return CausalLayer(n, ticket, me=f"p{ticket}", **kw)


def ev(index, ts, origin=None) -> Event:
    return Event(index, tuple(ts), origin or f"p{index}")


# -- the causality layer -------------------------------------------------------------------------

def test_an_event_waits_for_what_it_depends_on_and_both_are_delivered_in_causal_order():
    c = layer(ticket=2)
    a, b = ev(0, [1, 0, 0]), ev(1, [1, 1, 0])          # b was created after a was delivered at p1
    assert c.receive(b, now=0) == [] and list(c.H) == [(1, 1)]
    assert c.receive(a, now=1) == [a, b]
    assert c.T == [1, 1, 0] and not c.H


def test_an_event_with_a_gap_in_its_own_index_waits_and_a_duplicate_is_not_delivered_twice():
    c = layer(ticket=2)
    e1, e2 = ev(0, [1, 0, 0]), ev(0, [2, 0, 0])
    assert c.receive(e2, now=0) == []
    assert c.receive(e1, now=0) == [e1, e2]
    assert c.receive(e1, now=1) == [] and c.receive(e2, now=1) == []
    assert [e for e, _ in c.delivered] == [e1, e2]


def test_creating_an_event_delivers_it_here_and_stamps_it_with_the_causal_present():
    c = layer(ticket=1)
    c.receive(ev(0, [1, 0, 0]), now=0)
    mine = c.create()
    assert mine.ts == (1, 1, 0) and mine.eid == (1, 1) and c.T == [1, 1, 0]
    assert c.create().ts == (1, 2, 0)
    assert c.delivered[-1][1] == "own"
    with pytest.raises(RuntimeError):
        CausalLayer(3, None).create()


def test_a_creator_numbers_its_events_itself_and_a_restart_goes_on_from_the_kept_number(tmp_path):
    """The logs name an event (origin, the creator's own number): under one ticket and then
    another, and across a restart that restores the number kept in the member's directory, the
    numbers go 1, 2, 3, ... while the tickets' counts start over."""
    from agents.causal.member import MADE_FILE, read_made, write_made

    c = layer(ticket=1)
    first = [c.create() for _ in range(3)]
    assert [e.number for e in first] == [1, 2, 3] and [e.eid for e in first] == [(1, 1), (1, 2), (1, 3)]
    path = str(tmp_path / MADE_FILE)
    assert read_made(path) == 0, "nothing kept yet: a first start"
    write_made(path, first[-1].number)
    again = layer(ticket=2)   # restarted, with another ticket whose count is at 0
    again.made = read_made(path)
    e = again.create()
    assert e.eid == (2, 1) and e.number == 4
    # kept in place: the same file overwritten whole (a fixed-width field), never renamed over
    inode = os.stat(path).st_ino
    write_made(path, 123456789012)
    write_made(path, 7)
    assert read_made(path) == 7 and os.stat(path).st_ino == inode and os.path.getsize(path) == 20
    from agents.causal.causality import event_id

    assert event_id(e.eid) == 3 * 2 ** 32 + 1 and event_id((0, 0)) == 2 ** 32   # above any bare ticket
    (tmp_path / MADE_FILE).write_text("garbage")
    assert read_made(path) == 0 and read_made(None) == 0
    write_made(None, 5)   # no directory (an in-memory member): nothing kept, nothing raised


def test_the_first_event_with_a_reused_ticket_skips_the_margin_and_receivers_get_past_the_gap():
    """A17 (issue 30): a new owner of a reused ticket numbers its first event reuse_margin counts
    past the ticket's entry, above anything its last owner can have made unseen; a fresh ticket
    starts at 1. A receiver waits for the skipped counts, finds nobody has them and delivers the
    event by force; the old owner's unseen event, should it ever come, is obsolete."""
    # (2T + 2δ) / T_g + 1 gossip rounds of the fastest coordinator's events
    assert reuse_margin(1, 1.0, 0.1, 0.1) == 23 and reuse_margin(1, 1.0, 1.0, 0.1) == 4
    assert reuse_margin(3, 1.0, 1.0, 0.1) == 12 and reuse_margin(0, 1.0, 0.1, 0.1) == 0
    c = layer(ticket=None, recovery="none")
    c.reuse_margin = 4
    for count in range(1, 6):
        c.receive(ev(1, [0, count, 0]), now=0)
    c.take(1)                        # its giver did not say, but events of ticket 1 were delivered here
    first, second = c.create(), c.create()
    assert first.eid == (1, 10) and second.eid == (1, 11), "5 seen + 4 skipped, then on by one"
    fresh = layer(ticket=None)
    fresh.reuse_margin = 4
    fresh.take(2)
    assert fresh.create().eid == (2, 1), "a ticket nobody had: no skip"
    told = layer(ticket=None)
    told.reuse_margin = 4
    told.take(0, reused=True)        # its giver knew it had an owner, though none of its events came here
    assert told.create().eid == (0, 5)
    told.take(0)                     # the same ticket again: nothing to skip
    assert told.create().eid == (0, 6)
    other = layer(ticket=2, recovery="none", time_to_terminate=2, time_to_recover=3)
    for count in range(1, 6):
        other.receive(ev(1, [0, count, 0]), now=0)
    assert other.receive(first, now=0) == []
    assert other.tick(2) == ([], []), "nobody to ask: recovery none"
    assert other.tick(5) == ([], [first]) and other.delivered[-1][1] == "forced"
    unseen = ev(1, [0, 6, 0], origin="old owner")
    assert other.receive(unseen, now=6) == [] and other.T[1] == 10


def test_a_process_started_mid_run_takes_its_clock_from_the_first_event_it_receives():
    c = layer(ticket=None, late=True)
    assert not c.synced
    first = ev(1, [7, 4, 2])
    assert c.receive(first, now=0) == [first], "the first event is delivered: its past happened before"
    assert c.synced and c.T == [7, 4, 2]
    assert c.receive(ev(0, [6, 0, 0]), now=0) == [], "an event of that past is not delivered late"
    nxt, after = ev(0, [8, 4, 2]), ev(2, [8, 4, 3])
    assert c.receive(after, now=0) == [] and c.receive(nxt, now=0) == [nxt, after]
    on_time = layer(ticket=None)
    assert on_time.synced and on_time.receive(first, now=0) == [], "from the start: it waits for the past"


def test_after_both_timers_a_waiting_event_is_delivered_and_what_it_missed_is_obsolete_for_good():
    c = layer(ticket=2, recovery="none", time_to_terminate=2, time_to_recover=3)
    lost, later = ev(0, [1, 0, 0]), ev(1, [1, 1, 0])
    c.receive(later, now=0)
    assert c.tick(1) == ([], []) and c.tick(2) == ([], [])        # terminate timer: nothing to ask (none)
    assert c.tick(4) == ([], [])
    requests, delivered = c.tick(5)
    assert requests == [] and delivered == [later] and c.delivered[-1][1] == "forced"
    assert c.T == [1, 1, 0]
    assert c.receive(lost, now=6) == [], "an event that became obsolete is never delivered late"


def test_forced_delivery_first_delivers_the_waiting_events_that_precede_it_in_causal_order():
    c = layer(n=4, ticket=3, recovery="none", time_to_terminate=1, time_to_recover=1)
    # the event (0, 1) is lost; (1, 1) and (2, 1) depend on it, (2, 2) on both
    b, d, e = ev(1, [1, 1, 0, 0]), ev(2, [1, 1, 1, 0]), ev(2, [1, 1, 2, 0])
    for x in (e, d, b):
        c.receive(x, now=0)
    c.tick(1)
    _, delivered = c.tick(2)
    assert delivered == [b, d, e]
    order = [x for x, _ in c.delivered]
    for i, x in enumerate(order):
        assert not any(precedes(y.ts, x.ts) for y in order[i + 1:])


def test_r1_asks_the_originator_whose_buffer_answers_and_the_recovered_event_unblocks_the_waiting_one():
    sender = layer(ticket=0, buffer_events=10)
    first = sender.create()
    second = sender.create()
    c = layer(ticket=2, recovery="r1", time_to_terminate=2, time_to_recover=3)
    c.receive(second, now=0)
    assert c.tick(1) == ([], [])
    requests, _ = c.tick(2)
    assert requests == [((0, 1), ["p0"])]
    assert c.tick(3) == ([], []), "an id under recovery is not asked for twice"
    reply = sender.on_recover((0, 1))
    assert reply == first
    assert c.on_ack_recover(reply) == [first, second]
    assert c.counters["recovered"] == 1 and c.T == [2, 0, 0]


def test_r1_asks_the_owner_of_another_index_and_r4_asks_k_distinct_other_members():
    owners = {0: "p0", 1: "p1"}
    c = layer(ticket=2, recovery="r1", time_to_terminate=1, owner_of=owners.get)
    c.receive(ev(1, [1, 1, 0]), now=0)
    requests, _ = c.tick(1)
    assert requests == [((0, 1), ["p0"])]
    members = [f"p{i}" for i in range(10)]
    r4 = CausalLayer(3, 2, me="p2", recovery="r4", k_rec=4, time_to_terminate=1, members=lambda: members,
                     rng=random.Random(7))
    r4.receive(ev(1, [2, 1, 0]), now=0)
    requests, _ = r4.tick(1)
    assert [eid for eid, _ in requests] == [(0, 1), (0, 2)]
    for _, targets in requests:
        assert len(targets) == 4 == len(set(targets)) and "p2" not in targets
    assert r4.counters["recover_messages"] == 8


def test_a_recovered_event_that_is_not_deliverable_waits_in_r():
    c = layer(ticket=2, recovery="r1", time_to_terminate=1, time_to_recover=10)
    a, b, d = ev(0, [1, 0, 0]), ev(0, [2, 0, 0]), ev(1, [2, 1, 0])
    c.receive(d, now=0)
    c.tick(1)
    assert c.on_ack_recover(b) == [] and list(c.R) == [(0, 2)]
    assert c.on_ack_recover(a) == [a, b, d] and not c.R and not c.H


def test_the_recovery_buffer_is_a_fifo_of_its_size_and_theorem_5_1_sizes_it():
    c = layer(ticket=0, buffer_events=3)
    made = [c.create() for _ in range(5)]
    assert list(c.B) == [e.eid for e in made[2:]]
    assert c.on_recover((0, 1)) is None and c.on_recover((0, 5)) == made[4]
    # Figure 5's top load: 25 coordinators x p = 12.5 events a round, T = 5 + 5 + 5 + 5 rounds
    assert buffer_size(12.5, 20) == 500 and buffer_size(6, 20) == 240


# -- PrCast --------------------------------------------------------------------------------------

def test_prcast_forwards_an_event_every_round_until_it_is_max_hops_old_to_fanout_distinct_members():
    members = [f"n{i}" for i in range(10)]
    g = PrCast("n0", lambda: members, fanout=4, max_hops=5, rng=random.Random(1))
    g.broadcast("e", "payload")
    ages = []
    for _ in range(7):
        targets, entries = g.round()
        if entries:
            assert len(targets) == 4 == len(set(targets)) and "n0" not in targets
            ages.append(entries[0][2])
    assert ages == [1, 2, 3, 4, 5] and not g.buffer


def test_prcast_history_keeps_duplicates_out_and_the_larger_age_wins():
    g = PrCast("a", lambda: ["a", "b"], history=2)
    assert g.receive([("x", 1, 1), ("y", 2, 3)]) == [("x", 1), ("y", 2)]
    assert g.receive([("x", 1, 4)]) == [] and g.buffer["x"][1] == 4
    g.receive([("z", 3, 1)])                  # history of 2: x is forgotten
    assert g.receive([("x", 1, 2)]) == [("x", 1)]
    assert g.receive([("w", 4, 5)]) == [("w", 4)] and "w" not in g.buffer, "an event at max_hops is not forwarded"


def test_prcast_overflow_drops_the_oldest_events_first():
    g = PrCast("a", lambda: ["a", "b"], max_events=3)
    g.receive([("old", 0, 3), ("mid", 0, 2), ("new1", 0, 1), ("new2", 0, 1)])
    assert list(g.buffer) == ["mid", "new1", "new2"] and g.counters["overflow"] == 1
    g.receive([("older", 0, 4)])                # itself the oldest: it goes at once
    assert "older" not in g.buffer and g.counters["overflow"] == 2


# -- both layers on an in-memory network ---------------------------------------------------------

def _simulate(recovery: str, n=12, rounds=60, rate=0.5, loss=0.05, max_events=20, seed=3):
    """n coordinators (ticket i = process i) gossiping through PrCast every round, each creating an
    event with probability `rate` a round; messages are lost with probability `loss` and delayed
    0.05-0.9 rounds. Returns the processes' delivery orders and the events created."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(n)]
    gossip = {m: PrCast(m, lambda: names, rng=random.Random(f"{seed}:{m}"), max_events=max_events) for m in names}
    causal = {m: CausalLayer(n, i, me=m, recovery=recovery, members=lambda: names, owner_of=lambda t: names[t],
                             time_to_terminate=5, time_to_recover=5, buffer_events=buffer_size(n * rate, 20),
                             rng=random.Random(f"{seed}:{m}:c"))
              for i, m in enumerate(names)}
    queue: List[Tuple[float, int, str, str, object]] = []
    counter = 0
    created: List[Event] = []

    def post(at, to, kind, payload):
        nonlocal counter
        if rng.random() < loss:
            return
        counter += 1
        heapq.heappush(queue, (at + rng.uniform(0.05, 0.9), counter, to, kind, payload))

    for r in range(rounds + 15):
        while queue and queue[0][0] <= r:
            at, _, to, kind, payload = heapq.heappop(queue)
            c = causal[to]
            if kind == "gossip":
                for _, e in gossip[to].receive(payload):
                    c.receive(e, at)
            elif kind == "recover":
                eid, asker = payload
                found = c.on_recover(eid)
                if found is not None:
                    post(at, asker, "ack", found)
            else:
                c.on_ack_recover(payload)
        for m in names:
            if r < rounds and rng.random() < rate:
                e = causal[m].create()
                created.append(e)
                gossip[m].broadcast(e.eid, e)
            requests, _ = causal[m].tick(r)
            for eid, targets in requests:
                for t in targets:
                    post(r, t, "recover", (eid, m))
            targets, entries = gossip[m].round()
            for t in targets:
                post(r, t, "gossip", list(entries))
    return causal, created


@pytest.mark.parametrize("recovery", ["none", "r1", "r4"])
def test_both_layers_keep_optimistic_causal_order_and_at_most_once(recovery):
    causal, created = _simulate(recovery, loss=0.15, max_events=6)
    stress = sum(c.counters["forced"] + c.counters["recover_requests"] for c in causal.values())
    assert stress > 0, "the run has events that wait: forced deliveries or recoveries"
    for m, c in causal.items():
        order = [e for e, _ in c.delivered]
        assert len({e.eid for e in order}) == len(order), f"{m} delivered an event twice"
        for i, e in enumerate(order):
            later = order[i + 1:]
            assert not any(precedes(x.ts, e.ts) for x in later), f"{m} delivered {e.eid} before an event it follows"


def test_recovery_delivers_more_events_than_none_and_r1_loses_almost_nothing():
    lost = {}
    for recovery in ("none", "r1", "r4"):
        causal, created = _simulate(recovery, loss=0.15, max_events=6)
        expected = len(created) * len(causal)
        got = sum(len(c.delivered) for c in causal.values())
        lost[recovery] = 1 - got / expected
    assert lost["none"] > lost["r1"] and lost["none"] > lost["r4"], lost
    assert lost["r1"] < 0.02 and lost["none"] > 0.01, lost
