"""The causal-member role (agents/causal/member.py): its parameters and structure checked like any
role's, then a real run on 25 containers on a switch with a coordinator killed at 4 s: the live
members' events reach every live member once, in optimistic causal order, and the killed one is
excluded by its predecessor while the others stay, each sending at most 2k+1 ALIVE messages a
round, with tickets unique throughout."""

from __future__ import annotations

import collections
import json
import os

import pytest

from agents.roles import check_params, check_structure
from spark_analysis.checks.tickets import check_ticket_uniqueness
from spark_analysis.history import down_intervals

from .test_deeco import ROOT, run_plan

SCENARIO = f"{ROOT}/scenarios/causal-cluster.yaml"


def _nodes(count=6, joiners=0, members=0, **params):
    nodes = {}
    for i in range(count + joiners + members):
        p = dict(params)
        if i >= count + joiners:
            p["coordinator"] = False
        elif i >= count:
            p["join"] = True
        nodes[f"m{i + 1}"] = {"id": i + 1, "role": "causal-member", "params": p}
    return nodes


def test_parameters_are_checked_with_what_is_allowed():
    assert check_params("causal-member", {"tickets": 32, "k": 1, "recovery": "r4", "fanout": 4}) is None
    name, problem, allowed = check_params("causal-member", {"recovery": "r2"})
    assert name == "recovery" and "r1" in allowed and "r4" in allowed
    assert check_params("causal-member", {"gossip_round_ms": 0})[0] == "gossip_round_ms"
    assert check_params("causal-member", {"tickets": 0})[0] == "tickets"
    assert check_params("causal-member", {"events_per_round": float("nan")})[1].endswith("not a number")
    assert check_params("causal-member", {"max_hops": 300})[0] == "max_hops"


def test_the_structure_needs_tickets_for_every_coordinator_and_a_ring_of_k_plus_1():
    assert check_structure("causal-member", "m1", _nodes(6, joiners=2, members=3)) is None
    field, problem, allowed = check_structure("causal-member", "m1", _nodes(6, joiners=2, tickets=7))
    assert field == "tickets" and "8 coordinators" in problem and allowed == "at least 8"
    field, problem, _ = check_structure("causal-member", "m1", _nodes(2, k=2))
    assert field == "k" and "at least 3" in problem
    nodes = _nodes(4)
    nodes["m2"]["params"]["k"] = 2
    assert check_structure("causal-member", "m1", nodes)[0] == "k"
    only_joiners = {n: {**v, "params": {"join": True}} for n, v in _nodes(3).items()}
    assert check_structure("causal-member", "m1", only_joiners)[0] == "join"
    fixed = _nodes(10, updaters=5)
    assert check_structure("causal-member", "m9", fixed) is None
    from agents.causal.member import default_tickets, initial_ring, is_coordinator
    assert [n for n in fixed if is_coordinator(fixed, n)] == ["m1", "m2", "m3", "m4", "m5"]
    assert default_tickets(fixed) == 5 and sorted(initial_ring(fixed, 5).values()) == ["m1", "m2", "m3", "m4", "m5"]
    assert check_structure("causal-member", "m1", _nodes(4, updaters=5))[0] == "updaters"
    both = _nodes(3, events_per_round=1, cluster_events_per_round=3)
    assert check_structure("causal-member", "m1", both)[0] == "cluster_events_per_round"


def _logs(run_dir):
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        t0 = json.load(fh)["t0_ns"]
    out = collections.defaultdict(list)
    for name in os.listdir(os.path.join(run_dir, "logs")):
        with open(os.path.join(run_dir, "logs", name)) as fh:
            for line in fh:
                e = json.loads(line)
                e["s"] = (e["t"] - t0) / 1e9
                out[e["node"]].append(e)
    return out


@pytest.fixture(scope="module")
def causal_runs(machine, images, tmp_path_factory):
    plan = {"kill": (SCENARIO, ("duration=12s", "timeline=[{at: 4s, action: kill, node: m13}]"))}
    return run_plan(tmp_path_factory.mktemp("causal"), plan, "--analyze")


def _checks(run_dir):
    with open(os.path.join(run_dir, "report", "results.json")) as fh:
        return {c["check"]: c for c in json.load(fh)["checks"]}


@pytest.mark.network
def test_real_cluster_delivers_the_live_members_events_to_every_live_member_in_causal_order(causal_runs):
    logs = _logs(causal_runs["kill"])
    assert not [e for es in logs.values() for e in es if e["event"] == "error"]
    created = [e for es in logs.values() for e in es if e["event"] == "send" and e.get("type") == "CAUSAL_EVENT"]
    # 6 events a 100 ms gossip round in the cluster for 12 s: about 720
    assert 500 <= len(created) <= 950, len(created)
    got = collections.defaultdict(set)
    for es in logs.values():
        for e in es:
            if e["event"] == "deliver":
                got[(e["origin"], e["seq"])].add(e["node"])
    live = [e for e in created if e["node"] != "m13"]
    complete = sum(1 for e in live if got[(e["origin"], e["seq"])] - {"m13"} == set(logs) - {"m13", e["node"]})
    assert complete >= 0.99 * len(live), (complete, len(live))
    checks = _checks(causal_runs["kill"])
    for name in ("at-most-once", "optimistic-causal-order", "no-phantom", "ticket-uniqueness"):
        assert checks[name]["verdict"] == "valid", (name, checks[name]["anomalies"])
    with open(os.path.join(causal_runs["kill"], "report", "results.json")) as fh:
        section = json.load(fh)["causal"]
    assert section["events"]["created"] == len(created) and section["latency"]["median_rounds"] > 0
    assert section["gossip_only"]["delivered"] > 0 and section["message_bytes"] > 0
    # the gossip carries several events a message, each a record (the wire's count is logged)
    sizes = [e["events"] for es in logs.values() for e in es if e["event"] == "send" and e.get("type") == "CAUSAL_DATA"]
    assert max(sizes) > 1 and max(sizes) <= 20


@pytest.mark.network
def test_real_killed_coordinator_is_excluded_by_its_predecessor_and_tickets_stay_unique(causal_runs):
    logs = _logs(causal_runs["kill"])
    assert not [e for es in logs.values() for e in es if e["event"] == "error"]
    tickets = [e for es in logs.values() for e in es if e["event"] == "state" and e.get("state") == "causal ticket"]
    boot = {e["node"]: e["ticket"] for e in tickets if e["why"] == "bootstrap"}
    assert len(boot) == 25 and len(set(boot.values())) == 25
    # the ring runs down the tickets: m13's predecessor owns the next ticket up
    predecessor = min((n for n in boot if boot[n] > boot["m13"]), key=lambda n: boot[n])
    excluded = [e for e in tickets if e["why"] == "excluded"]
    assert [(e["node"], e["excluded"]) for e in excluded] == [(predecessor, ["m13"])], excluded
    with open(os.path.join(causal_runs["kill"], "manifest.json")) as fh:
        manifest = json.load(fh)
    kill = next(a for a in manifest["timeline"] if a["action"] == "kill")
    assert kill["t_s"] < excluded[0]["s"] <= kill["t_s"] + 3, "excluded within a few rounds of the kill"
    assert not [e for e in tickets if e["membership"] != "coordinator" and e["node"] != "m13"], "the others stay"
    res = check_ticket_uniqueness(tickets, down=down_intervals(manifest))
    assert res["verdict"] == "valid", res
    # Section 4.4: at most 2k+1 ALIVE messages a process a round (k = 1, rounds of 1 s)
    per_round = collections.Counter((e["node"], int(e["s"])) for es in logs.values() for e in es
                                    if e["event"] == "send" and e.get("membership") == "ALIVE")
    assert per_round and max(per_round.values()) <= 3 * 2, "at most 3 a round (two rounds may share a second)"


def test_the_analysis_counts_losses_latency_recovery_and_judges_tickets():
    """spark_analysis/protocols/causal.py on hand-made frames: 2 events to 2 members each, one pair
    lost; the gossip-only counters; a ticket shared from t = 5 s is caught."""
    import pandas as pd

    from spark_analysis.protocols import causal

    manifest = {"t0_ns": 0, "scenario": {"duration_s": 10, "quiet_s": 1},
                "topology": {"nodes": {n: {"role": "causal-member", "params": {"gossip_round_ms": 100}}
                                       for n in ("a", "b", "c")}}}
    sends = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 2, "origin": ["a", "b"], "seq": [1, 1], "t": [0, 0],
                          "intended": [["b", "c"], ["a", "c"]]})
    deliveries = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 4, "node": ["b", "c", "a", "a"],
                               "origin": ["a", "a", "b", "b"], "seq": [1, 1, 1, 1],
                               "t": [100_000_000, 300_000_000, 200_000_000, 250_000_000],
                               "produced_ns": [0, 0, 0, 0]})
    states = pd.DataFrame([
        {"state": "causal counters", "node": n, "t": 10, "causal_recover_requests": 2 if n == "c" else 0,
         "causal_recovered": 1 if n == "c" else 0, "causal_forced": 0, "causal_obsolete": 0,
         "gossip_only_delivered": 1, "gossip_only_out_of_order": 1} for n in ("a", "b", "c")] + [
        {"state": "causal ticket", "node": "a", "t": 0, "ticket": 0, "coordinates": "[0, 1]", "why": "bootstrap"},
        {"state": "causal ticket", "node": "b", "t": 5_000_000_000, "ticket": 1, "coordinates": "[1]", "why": "joined"}])
    sent = pd.DataFrame({"node": ["a", "a", "c"], "type": ["CAUSAL_DATA", "MEMBERSHIP", "CAUSAL_RECOVER"],
                         "relayed": [False] * 3, "messages": [10, 4, 2], "transmissions": [40, 4, 2],
                         "datagrams": [40, 4, 2], "bytes": [4000, 200, 40]})
    out = causal.measures(sends, deliveries, manifest, states, sent)
    assert out["events"] == {"created": 2, "expected": 4, "delivered": 3, "lost": 1, "lost_share": 0.25,
                             "forced": 0, "obsolete": 0}
    assert out["gossip_only"]["delivered"] == 3 and out["gossip_only"]["lost"] == 1
    assert out["latency"]["n"] == 4 and out["latency"]["median_ms"] == 225 and out["latency"]["median_rounds"] == 2.25
    assert out["throughput"] == 3 / 3 / 10 and out["message_bytes"] == 100
    assert out["recovery"]["requests"] == 2 and out["recovery"]["success_rate"] == 0.5
    assert out["recovery"]["messages"] == 2
    tickets = out["ticket_uniqueness"]
    assert tickets["verdict"] == "invalid" and tickets["counterexamples"]["shared-ticket"][0]["ticket"] == 1
    assert causal.checks(out) == [tickets]
    assert causal.measures(sends.iloc[0:0], deliveries.iloc[0:0], manifest, states.iloc[0:0], sent) == {}


def test_the_analysis_expects_events_only_at_members_up_since_and_times_exclusions_against_faults():
    """An event created while a member was down (killed, or held for the timeline) is not expected
    there; each exclusion is set against the fault that caused it, a cut-off member's own
    disconnection against Corollary 4.1's bound, and the reuse of the excluded tickets."""
    import pandas as pd

    from spark_analysis.protocols import causal

    s = 1_000_000_000
    nodes = {n: {"role": "causal-member", "params": {"round_ms": 1000}} for n in ("a", "b", "c", "d")}
    nodes["e"] = {"role": "causal-member", "params": {"round_ms": 1000, "join": True}, "start": "timeline"}
    manifest = {"t0_ns": 0, "scenario": {"duration_s": 10, "quiet_s": 1}, "topology": {"nodes": nodes},
                "timeline": [{"action": "link_down", "link": ["d", "lan"], "t_ns": 1 * s, "ok": True},
                             {"action": "kill", "node": "c", "t_ns": 2 * s, "ok": True},
                             {"action": "start", "node": "e", "t_ns": 5 * s, "ok": True}]}
    everyone = ["b", "c", "d", "e"]
    sends = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 3, "origin": ["a"] * 3, "seq": [1, 2, 3],
                          "t": [int(0.5 * s), 3 * s, 6 * s], "intended": [everyone] * 3})
    deliveries = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 4, "node": ["b", "b", "b", "e"], "origin": ["a"] * 4,
                               "seq": [1, 2, 3, 2], "t": [s, 4 * s, 7 * s, 6 * s], "produced_ns": [0, 0, 0, 0]})
    ticket = lambda node, t, tk, co, why, **kw: {"state": "causal ticket", "node": node, "t": t, "ticket": tk,  # noqa: E731
                                               "coordinates": co, "why": why, **kw}
    states = pd.DataFrame([
        {"state": "causal counters", "node": n, "t": 11 * s, "cluster_alive_max_round": 3} for n in "abcd"] + [
        ticket("a", 0, 0, "[0]", "bootstrap"), ticket("b", 0, 1, "[1]", "bootstrap"),
        ticket("c", 0, 2, "[2]", "bootstrap"), ticket("d", 0, 3, "[3, 4]", "bootstrap"),
        ticket("a", int(1.8 * s), 0, "[0]", "excluded", excluded='["d"]', tickets="[4, 3]"),
        ticket("d", int(2.3 * s), None, "[]", "too few ALIVE"),
        ticket("b", int(2.9 * s), 1, "[1]", "excluded", excluded='["c"]', tickets="[2]"),
        ticket("e", 6 * s, 2, "[2]", "joined")])
    out = causal.measures(sends, deliveries, manifest, states)
    # c is killed at 2 s and e starts at 5 s: event 1 (0.5 s) is expected at b and d (cut off, but
    # running), event 2 at b and d, event 3 at b, d and e; e's delivery of event 2 is not counted
    assert out["events"]["expected"] == 2 + 2 + 3 and out["events"]["delivered"] == 3, out["events"]
    m = out["membership"]
    assert m["alive_per_round_max"] == 3 and m["exclusions"] == 2 and m["joins"] == 1
    first, second = m["exclusion_list"]
    assert first["excluded"] == ["d"] and first["after_fault_rounds"] == pytest.approx(0.8)
    assert first["distance"] == 3 and first["reused_after_rounds"] is None
    assert first["disconnected"]["d"] == {"after_rounds": pytest.approx(0.5), "bound_rounds": 2, "within": True}
    assert second["excluded"] == ["c"] and second["after_fault_rounds"] == pytest.approx(0.9)
    assert second["disconnected"] == {}, "a killed member holds nothing: no disconnection to wait for"
    assert second["reused_after_rounds"] == pytest.approx(3.1)
    assert m["exclusion_after_fault_rounds_max"] == pytest.approx(0.9) and m["disconnect_within_bound"] is True
