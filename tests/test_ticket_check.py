"""The ticket-uniqueness check (spark_analysis/checks/tickets.py) on hand-made histories and on the
ticket changes of the in-memory cluster (tests/cluster_net.py), where breaking the temporary
coordinator's wait must make it fail; the event-identity check (spark_analysis/checks/creators.py)
on hand-made and generated creations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.causal import cluster as cluster_mod
from spark_analysis.checks.creators import check_event_identity
from spark_analysis.checks.tickets import check_ticket_uniqueness

from .test_causal_cluster import cut_link_run


def row(node, t, ticket, coordinates, why="x"):
    return {"node": node, "t": t, "ticket": ticket, "coordinates": coordinates, "why": why}


def test_a_handoff_without_overlap_is_valid_and_an_overlap_is_named():
    rows = [row("a", 0, 3, [3, 2, 1, 0]), row("a", 10, 3, [3, 2], "served cjoin"), row("b", 11, 1, [1, 0], "joined")]
    res = check_ticket_uniqueness(rows, end_ns=100)
    assert res["verdict"] == "valid" and res["stats"]["tickets"] == 4
    rows.append(row("c", 50, 2, [2]))
    res = check_ticket_uniqueness(rows, end_ns=100)
    assert res["verdict"] == "invalid" and res["anomalies"] == {"shared-ticket": 1}
    c = res["counterexamples"]["shared-ticket"][0]
    assert (c["ticket"], c["nodes"], c["from"], c["until"]) == (2, ["a", "c"], 50, 100)
    assert [h["as"] for h in c["held"]] == ["coordinator", "owner"]


def test_a_dead_node_holds_nothing_after_it_went_down():
    rows = [row("a", 0, 5, [5, 4]), row("b", 20, 4, [4])]
    assert check_ticket_uniqueness(rows, end_ns=100)["verdict"] == "invalid"
    assert check_ticket_uniqueness(rows, down={"a": [(15, None)]}, end_ns=100)["verdict"] == "valid"
    assert check_ticket_uniqueness(rows, down={"a": [(25, None)]}, end_ns=100)["verdict"] == "invalid"
    # down and back: a holds nothing again until it logs
    assert check_ticket_uniqueness(rows, down={"a": [(10, 30)]}, end_ns=100)["verdict"] == "valid"


def test_what_happens_after_the_end_of_the_run_is_not_judged():
    """After the run's end the agents are stopped one by one: a process still logging its last
    rows then (an exclusion of one already stopping) is not a violation."""
    rows = [row("a", 0, 5, [5, 4]), row("b", 0, 6, [6]), row("b", 120, 6, [6, 5, 4], "temporary coordination ended"),
            row("a", 130, None, [], "leave"), row("b", 131, None, [], "leave")]
    assert check_ticket_uniqueness(rows, end_ns=100)["verdict"] == "valid"
    assert check_ticket_uniqueness(rows, end_ns=125)["verdict"] == "invalid"


def test_nothing_logged_is_unknown():
    res = check_ticket_uniqueness([])
    assert res["verdict"] == "unknown" and "causal ticket" in res["stats"]["reason"]


def test_the_cluster_algorithm_keeps_tickets_unique_and_the_check_catches_a_broken_one(monkeypatch):
    net = cut_link_run(4)
    assert check_ticket_uniqueness(net.log, end_ns=21)["verdict"] == "valid"
    # a temporary coordinator that counts the excluded tickets at once, without waiting dist(p, q)
    # rounds for the excluded process to stop, shares them with it: the check must say so
    original = cluster_mod.ClusterMember.poll

    def eager(self, now):
        out = original(self, now)
        if self.taken_over:
            self.taken_over.clear()
            self._changed("taken over at once (broken)")
        return out

    monkeypatch.setattr(cluster_mod.ClusterMember, "poll", eager)
    broken = cut_link_run(4)
    res = check_ticket_uniqueness(broken.log, end_ns=21)
    assert res["verdict"] == "invalid", res
    c = res["counterexamples"]["shared-ticket"][0]
    assert set(c["nodes"]) == {"c2", "c3"}


def made(origin, ticket, seq, t, count=None):
    return {"origin": origin, "ticket": ticket, "seq": seq, "t": t, "count": count}


def test_a_ticket_handed_over_and_back_is_one_creator_at_a_time():
    """a creates under ticket 3, goes down, b takes the ticket over and counts on, a comes back
    and gets it again later: three tenures, none overlapping; every name given once."""
    history = [made("a", 3, s, 10 * s) for s in (1, 2, 3)] + [made("b", 3, s, 10 * s + 5) for s in (4, 5)] + [
        made("a", 3, 6, 100)]
    res = check_event_identity(history, breaks={"a": [40], "b": [70]})
    assert res["verdict"] == "valid" and res["stats"] == {"events": 6, "origins": 2, "tickets": 1, "checked": 6}
    # without a's going down, a's first tenure runs until t = 100, over b's
    res = check_event_identity(history, breaks={"b": [70]})
    assert res["anomalies"] == {"repeated-id": 0, "concurrent-creators": 1}
    c = res["counterexamples"]["concurrent-creators"][0]
    assert (c["ticket"], c["origins"], c["from"], c["until"]) == (3, ["a", "b"], 45, 55)


def test_a_restarted_origin_that_numbers_again_gives_names_twice():
    """a creates its events 1..3 under ticket 0, is restarted without its kept number and gets
    ticket 5: (a, 2) and (a, 3) are given twice, although the protocol's names (5, 1), (5, 2)
    differ. A new owner of ticket 1 that counts on from less than the last owner reached gives
    the protocol's name (1, 7) twice, with its own numbers all new."""
    history = [made("a", 0, s, s, count=s) for s in (1, 2, 3)] + [made("a", 5, s, 50 + s, count=s - 1)
                                                                   for s in (2, 3)]
    res = check_event_identity(history, breaks={"a": [10]})
    assert res["anomalies"] == {"repeated-id": 2, "concurrent-creators": 0}
    first = res["counterexamples"]["repeated-id"][0]
    assert first == {"name": "(origin, seq)", "origin": "a", "seq": 2,
                     "creations": [{"origin": "a", "seq": 2, "ticket": 0, "count": 2, "t": 2},
                                   {"origin": "a", "seq": 2, "ticket": 5, "count": 1, "t": 52}]}
    handed = [made("a", 1, 1, 10, count=7), made("b", 1, 1, 30, count=7)]
    res = check_event_identity(handed, breaks={"a": [20]})
    assert res["anomalies"] == {"repeated-id": 1, "concurrent-creators": 0}
    assert res["counterexamples"]["repeated-id"][0]["name"] == "(ticket, count)"
    # a log that does not give the count (written before it did): the protocol's name not judged
    assert check_event_identity([made("a", 1, 1, 10), made("b", 1, 1, 30)], breaks={"a": [20]})["verdict"] == "valid"
    both = [made("a", 1, 7, 10), made("b", 1, 1, 12), made("a", 1, 8, 20)]
    assert check_event_identity(both)["anomalies"] == {"repeated-id": 0, "concurrent-creators": 1}
    assert check_event_identity([])["verdict"] == "unknown"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(1, 4), st.integers(1, 5)), min_size=1, max_size=12),
       st.data())
def test_one_creator_at_a_time_is_valid_and_any_overlap_is_caught(plan, data):
    """A generated history of one ticket: tenures one after another (origin, how many events,
    gap), each counting on from the last, each ended by its origin letting go. Valid; then one
    creation moved into another origin's tenure, under a fresh count, is caught."""
    history, breaks, t, seq = [], {}, 0, 0
    for origin, events, gap in plan:
        for _ in range(events):
            seq += 1
            t += gap
            history.append(made(origin, 9, seq, t))
        t += 1
        breaks.setdefault(origin, []).append(t)   # let go before the next tenure
    assert check_event_identity(history, breaks)["verdict"] == "valid"
    spans = {}
    for h in history:
        spans.setdefault(h["origin"], []).append(h["t"])
    inside = [(o, ts) for o, ts in spans.items() if len(ts) >= 2]
    others = sorted(set("abcde") - {o for o, _ in inside[:1]})
    if not inside:
        return
    origin, ts = inside[0]
    # an intruder creating strictly inside origin's first tenure (between two of its creations)
    first = [h["t"] for h in history if h["origin"] == origin]
    cut = min((b for b in breaks[origin] if b > first[0]), default=None)
    tenure = [x for x in first if cut is None or x < cut]
    if len(tenure) < 2 or tenure[-1] - tenure[0] < 2:
        return
    at = data.draw(st.integers(tenure[0] + 1, tenure[-1] - 1))
    intruder = data.draw(st.sampled_from(others))
    res = check_event_identity(history + [made(intruder, 9, seq + 1, at)], breaks)
    assert res["verdict"] == "invalid" and res["anomalies"]["concurrent-creators"] >= 1, res


def test_a_served_cjoin_keeps_the_ticket_so_a_creator_under_it_meanwhile_is_concurrent():
    """The analysis breaks a creator's tenure where its own ticket changes or it goes down, not
    at every ticket row it logs: a served cjoin (same ticket) in the middle of a's creations
    leaves b's creation under a's ticket concurrent with a's."""
    import pandas as pd

    from spark_analysis.protocols import causal

    s = 1_000_000_000
    nodes = {n: {"role": "causal-member"} for n in ("a", "b")}
    manifest = {"t0_ns": 0, "scenario": {"duration_s": 60, "quiet_s": 1}, "topology": {"nodes": nodes}}
    mid = lambda ticket, count: ((ticket + 1) << 32) | count  # noqa: E731
    sends = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 5, "origin": ["a", "a", "b", "a", "a"], "seq": [1, 2, 1, 3, 4],
                          "t": [10 * s, 20 * s, 27 * s, 30 * s, 40 * s], "intended": [[]] * 5,
                          "message_id": [mid(3, 1), mid(3, 2), mid(3, 9), mid(3, 3), mid(3, 4)]})
    states = pd.DataFrame([
        {"state": "causal ticket", "node": "a", "t": 0, "ticket": 3, "coordinates": "[3, 2]", "why": "bootstrap"},
        {"state": "causal ticket", "node": "a", "t": 25 * s, "ticket": 3, "coordinates": "[3]", "why": "served cjoin"},
        {"state": "causal ticket", "node": "b", "t": 26 * s, "ticket": 2, "coordinates": "[2]", "why": "joined"}])
    out = causal.measures(sends, sends.iloc[0:0].assign(node=[], produced_ns=[]), manifest, states)
    assert out["event_identity"]["anomalies"] == {"repeated-id": 0, "concurrent-creators": 1}
