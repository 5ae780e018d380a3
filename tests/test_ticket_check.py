"""The ticket-uniqueness check (spark_analysis/checks/tickets.py) on hand-made histories and on the
ticket changes of the in-memory cluster (tests/cluster_net.py), where breaking the temporary
coordinator's wait must make it fail."""

from __future__ import annotations

from agents.causal import cluster as cluster_mod
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
