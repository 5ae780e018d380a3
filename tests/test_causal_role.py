"""The causal-member role (agents/causal/member.py): its parameters and structure checked like any
role's, its analysis on hand-made frames, then the reduced experiments on the real network
(experiments/causal/reduced.yaml, one Spark job): Figure 5's top load (recovery cuts the losses,
in optimistic causal order), Figure 4's message size (it grows with the coordinators), and the
churn scenario (joiners held for the timeline, a kill, a leave, a cut-off and a joiner killed:
every fault excluded, tickets unique, at most 2k+1 ALIVEs a round, reuse only after the block)."""

from __future__ import annotations

import collections
import json
import os

import pytest

from agents.causal.causality import reuse_margin
from agents.roles import check_params, check_structure
from spark_analysis.checks.tickets import check_ticket_uniqueness
from spark_analysis.history import down_intervals

from .test_deeco import ROOT


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


def test_a_reused_tickets_margin_is_about_the_fastest_coordinator_not_the_new_owner():
    """A17 (issue 30): the counts skipped cover what the last owner can have made unseen, so they
    follow the fastest coordinator's rate rounded up; members that are not coordinators, and
    joiners, which share the initial ring's cluster_events_per_round, do not raise it."""
    from agents.causal.member import most_events_per_round

    assert most_events_per_round(_nodes(6, joiners=2, cluster_events_per_round=3), 6) == 1   # churn: 0.5
    assert most_events_per_round(_nodes(3, cluster_events_per_round=7.5), 3) == 3
    mixed = _nodes(4, members=2, events_per_round=0.2)
    mixed["m2"]["params"]["events_per_round"] = 2.5
    mixed["m6"]["params"]["events_per_round"] = 9   # a member only: creates nothing
    assert most_events_per_round(mixed, 4) == 3
    assert most_events_per_round(_nodes(3), 3) == 0, "nobody creates: no margin"


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


def _created_while_coordinating(run_dir):
    """(events created in the workload's time, seconds the processes held a ticket in it), from
    the logs' ticket states."""
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        end = json.load(fh)["scenario"]["duration_s"]
    held, since, created = 0.0, {}, 0
    for e in sorted((e for es in _logs(run_dir).values() for e in es), key=lambda e: e["s"]):
        if e["event"] == "state" and e.get("state") == "causal ticket":
            if e.get("membership") == "coordinator":
                since.setdefault(e["node"], e["s"])
            elif e["node"] in since:
                held += min(e["s"], end) - since.pop(e["node"])
        elif e["event"] == "send" and e.get("type") == "CAUSAL_EVENT" and e["s"] <= end:
            created += 1
    return created, held + sum(end - s for s in since.values())


@pytest.fixture(scope="module")
def reduced(machine, images, spark, tmp_path_factory):
    """experiments/causal/reduced.yaml, run once: its directory, and per point its run directory."""
    from testbed.cleanup import leftovers

    from .helpers import cli_in_process

    out = tmp_path_factory.mktemp("causal") / "reduced"
    code, _, stderr = cli_in_process("experiment", f"{ROOT}/experiments/causal/reduced.yaml", "--out", out)
    assert code == 0, stderr[-3000:]
    # the churn's claims are about rounds of 1 s: a run in which the machine stalled the agents
    # (in a CI run the disk held all of them for 0.4 s at once, through a rename the members no
    # longer make, and the ring came down) is made again once, as a user would with
    # --redo-unfaithful; the test then wants the remake carried
    if _results(out / "runs" / "churn-s1")["fidelity"]["verdict"] == "unfaithful":
        code, _, stderr = cli_in_process("experiment", f"{ROOT}/experiments/causal/reduced.yaml", "--out", out,
                                         "--only", "churn", "--redo-unfaithful")
        assert code == 0, stderr[-3000:]
        # a slice's analysis describes the slice: the tables and verdicts over every run again
        code, _, stderr = cli_in_process("experiment", f"{ROOT}/experiments/causal/reduced.yaml", "--out", out,
                                         "--no-run")
        assert code == 0, stderr[-3000:]
    assert not leftovers(), "the runs left testbed objects behind"
    return out, {p.split("-s")[0]: str(out / "runs" / p) for p in os.listdir(out / "runs")}


def _results(run_dir):
    with open(os.path.join(run_dir, "report", "results.json")) as fh:
        return json.load(fh)


@pytest.mark.network
def test_reduced_figure_5_recovery_cuts_the_losses_in_optimistic_causal_order(reduced):
    out, runs = reduced
    judged = json.loads((out / "shapes.json").read_text())
    shapes = {s["name"]: s["verdict"] for s in judged}
    assert all(v == "valid" for v in shapes.values()), shapes
    none, r1 = _results(runs["f5-none"]), _results(runs["f5-r1"])
    # the machine's say on the top load is recorded with the verdict it did not block (the file
    # accepts unfaithful runs: on two cores, 25 agents at 12.5 events a round may lag)
    lost = next(s for s in judged if s["name"] == "lost: f5-r1 < f5-none")
    unfaithful = [p for p in ("f5-none", "f5-r1") if _results(runs[p])["fidelity"]["verdict"] == "unfaithful"]
    assert lost["fidelity"] == {"unfaithful": unfaithful, "degraded": lost["fidelity"]["degraded"],
                                "accepted": bool(unfaithful)}
    for name, res in (("none", none), ("r1", r1)):
        checks = {c["check"]: c for c in res["checks"]}
        for check in ("at-most-once", "optimistic-causal-order", "no-phantom", "ticket-uniqueness"):
            assert checks[check]["verdict"] == "valid", (name, check, checks[check]["anomalies"])
    # gossip alone > the two-layer protocol without recovery > with R1, which loses at most 1 %
    assert none["causal"]["gossip_only"]["lost_share"] > none["causal"]["events"]["lost_share"], none["causal"]
    assert r1["causal"]["events"]["lost_share"] <= 0.01 and r1["causal"]["recovery"]["requests"] > 0
    assert none["causal"]["events"]["forced"] > 0 and none["causal"]["recovery"]["requests"] == 0
    # 12.5 events a 100 ms round shared by the 25 coordinators: 5 a second each while it holds a
    # ticket (about 1,250 in 10 s when the ring stays whole; a coordinator that lets go of its
    # ticket, as a stall of the machine can make the whole ring do, creates no more)
    made = {p: _created_while_coordinating(runs[p]) for p in ("f5-none", "f5-r1")}
    for p, (created, held_s) in made.items():
        assert 0.8 * 5 * held_s <= created <= 1.2 * 5 * held_s, (p, created, held_s)
    assert none["causal"]["events"]["created"] >= made["f5-none"][0]
    # the gossip carries several events a message, each a record (the wire's count is logged)
    logs = _logs(runs["f5-r1"])
    sizes = [e["events"] for es in logs.values() for e in es if e["event"] == "send" and e.get("type") == "CAUSAL_DATA"]
    assert max(sizes) > 1 and max(sizes) <= 20


def _first_sends(run_dir, kind):
    """Per member, its first send of `kind` (a CAUSAL_DATA gossip message, or an ALIVE of the
    cluster management) in ms after its own workload started."""
    out = {}
    for node, events in _logs(run_dir).items():
        start = next(e["t"] for e in events if e["event"] == "state" and e["state"] == "workload started")
        first = min(e["t"] for e in events if e["event"] == "send"
                    and (e.get("type") == kind or e.get("membership") == kind))
        out[node] = (first - start) / 1e6
    return out


@pytest.mark.network
@pytest.mark.parametrize("kind, round_ms", [("CAUSAL_DATA", 100), ("ALIVE", 1000)])
def test_reduced_members_rounds_run_at_phases_of_their_own(reduced, kind, round_ms):
    """I15 and I17 of docs/CAUSAL-READING.md: each member's gossip rounds and cluster-management
    rounds come at phases drawn from its seed, not one period after its workload's start, whose
    order and spacing are the testbed's (the agents are signalled in one sweep and wake within a
    few ms). On Figure 5's 25 members (gossip rounds of 100 ms, cluster rounds of 1 s) the first
    send of each kind, taken modulo its round from the workload's start, spreads over the round:
    the circular mean of those phases has a length near 1 when they line up and about 1/5 when
    they are uniform."""
    import cmath
    import math

    _, runs = reduced
    phases = [(ms % round_ms) / round_ms for ms in _first_sends(runs["f5-r1"], kind).values()]
    assert len(phases) == 25
    length = abs(sum(cmath.exp(2j * math.pi * x) for x in phases)) / len(phases)
    assert length < 0.6, sorted(round(x, 3) for x in phases)


@pytest.mark.network
def test_reduced_figure_4_messages_grow_with_the_coordinators_not_the_members(reduced):
    _, runs = reduced
    size = {p: _results(runs[p])["causal"]["message_bytes"] for p in ("f4-all-10", "f4-all-30", "f4-u3-30")}
    # a record carries a vector timestamp of 4 bytes a coordinator: 10 → 30 coordinators makes a
    # record about twice as long (84 → 164 bytes), but a message carries fewer records on more
    # members (Figure 4's full runs: 7.3 at 25 members, 4.4 at 125), so the message grows less:
    # 581 → 690 bytes in CI (6.9 → 4.2 records a message), 587 → 691 in a run here (7.2 → 4.3),
    # 1.18-1.19 times, where an earlier 1.2 margin failed. The ordering is Figure 4's shape, as
    # the experiment file states it; the record's growth is checked exactly below
    assert size["f4-u3-30"] < size["f4-all-10"] < size["f4-all-30"], size
    # per record: 25 bytes, 4 a ticket of the vector, the body; every delivery came by 1-5 hops
    per = {p: _results(runs[p])["causal"]["record_bytes"] for p in ("f4-all-10", "f4-all-30")}
    assert per["f4-all-30"] - per["f4-all-10"] == pytest.approx(4 * 20, abs=1), per
    hops = _results(runs["f4-all-30"])["causal"]["latency"]
    assert 1 <= hops["median_hops"] <= 5 and 1 <= hops["mean_hops"] <= 5, hops
    created = [e for es in _logs(runs["f4-u3-30"]).values() for e in es
               if e["event"] == "send" and e.get("type") == "CAUSAL_EVENT"]
    assert {e["node"] for e in created} == {"m1", "m2", "m3"}, "the first three members update"


@pytest.mark.network
def test_reduced_churn_excludes_every_fault_reuses_tickets_after_the_block_and_keeps_them_unique(reduced):
    _, runs = reduced
    run = runs["churn"]
    fidelity = _results(run)["fidelity"]
    assert fidelity["verdict"] != "unfaithful", ("the machine did not carry the churn twice", fidelity["reasons"])
    logs = _logs(run)
    assert not [e for es in logs.values() for e in es if e["event"] == "error"]
    with open(os.path.join(run, "manifest.json")) as fh:
        manifest = json.load(fh)
    at = {(a["action"], a.get("node")): a["t_s"] for a in manifest["timeline"] if a.get("node")}
    # the held joiners' agents started at their timeline start, not with the network
    for j in ("j1", "j2"):
        first = next(e for e in logs[j] if e["event"] == "state" and e["state"] == "started")
        assert first["s"] >= at[("start", j)] - 0.5, (j, first["s"], at[("start", j)])
    res = _results(run)
    checks = {c["check"]: c for c in res["checks"]}
    for name in ("at-most-once", "optimistic-causal-order", "no-phantom", "ticket-uniqueness"):
        assert checks[name]["verdict"] == "valid", (name, checks[name]["anomalies"])
    # event identity: never two creators under one ticket at once, never an (origin, seq) or a
    # (ticket, count) twice. A ticket's new owner numbers its first event past the highest count
    # of the ticket it knows by the margin (A17, issue 30): m2, cut off, goes on creating under
    # its ticket until it lets go, and nobody sees those events
    identity = checks["event-identity"]
    assert identity["verdict"] == "valid", identity["counterexamples"]
    margin = reuse_margin(1, 1.0, 0.1, 0.1)   # 3 events a gossip round over 6: at most 1 from each
    created = sorted((e["s"], e["node"], e["ticket"], e["ts"][e["ticket"]]) for es in logs.values() for e in es
                     if e["event"] == "send" and e.get("type") == "CAUSAL_EVENT")
    # a ticket changes hands at a join: the joiner's events under it against every count made
    # under it before. The joiner may be the ticket's own earlier holder (m5, started again, is
    # often given back the ticket it left with: the same creator on both sides, which a test
    # reading consecutive creators missed in CI). Three joins (j1, j2, m5 again) and two tickets
    # nobody held in the initial ring (3 and 7): at least one join is given a ticket that had an
    # owner, once m5 is served (which the test asserts below)
    joins = [(e["s"], e["node"], e["ticket"]) for es in logs.values() for e in es
             if e["event"] == "state" and e.get("state") == "causal ticket" and e.get("why") == "joined"]
    turns = []
    for s, node, t in joins:
        before = [c for at_s, _, ticket, c in created if ticket == t and at_s < s]
        after = [c for at_s, by, ticket, c in created if ticket == t and by == node and at_s > s]
        if before and after:
            turns.append((t, node, max(before), after[0]))
    assert turns, ("the joiners and m5 make events under tickets others (or they) had", joins)
    for t, node, highest, first in turns:
        assert first > highest and first >= margin + 1, (t, node, highest, first, margin)
    m = res["causal"]["membership"]
    # m5's stop is a leave (Algorithm 1): its predecessor takes its tickets over, no exclusion
    assert sorted(x for e in m["exclusion_list"] for x in e["excluded"]) == ["j1", "m2", "m3"], m
    assert m["joins"] == 3 and m["leaves"] == 1 and m["alive_per_round_max"] <= 3
    whys = [e["why"] for e in logs["m5"] if e["event"] == "state" and e.get("state") == "causal ticket"]
    assert "leaving" in whys and whys[whys.index("leaving") + 1] == "left", whys
    # m5, stopped (it left) and started again, joined again and numbered its events on
    made = [(e["s"], e["seq"]) for e in logs["m5"] if e["event"] == "send" and e.get("type") == "CAUSAL_EVENT"]
    before, after = [q for s, q in made if s < at[("stop", "m5")]], [q for s, q in made if s > at[("start", "m5")]]
    assert before and after and after[0] == before[-1] + 1, (before[-3:], after[:3])
    assert [q for _, q in made] == list(range(1, len(made) + 1))
    for e in m["exclusion_list"]:   # each fault answered within about a round; reuse only after the block
        assert e["after_fault_rounds"] is not None and e["after_fault_rounds"] <= 2, e
        assert e["reused_after_rounds"] is None or e["reused_after_rounds"] >= e["distance"] - 1, e
    # m2, cut off, let go of its tickets by itself, within the bound the algorithm's own timing
    # gives (the paper's Corollary 4.1 is a round shorter: reported, docs/CAUSAL-READING.md, 7)
    assert m["disconnect_within_reading_bound"] is True, m["exclusion_list"]
    tickets = [e for es in logs.values() for e in es if e["event"] == "state" and e.get("state") == "causal ticket"]
    assert check_ticket_uniqueness(tickets, down=down_intervals(manifest))["verdict"] == "valid"
    # Section 4.4, from the logs: at most 2k+1 ALIVEs a process a round (rounds of 1 s, so at most
    # 3 × 2 in a second that two rounds share)
    per_second = collections.Counter((e["node"], int(e["s"])) for es in logs.values() for e in es
                                     if e["event"] == "send" and e.get("membership") == "ALIVE")
    assert per_second and max(per_second.values()) <= 6
    # the members that stay up and connected throughout deliver the events of the others
    created = [e for es in logs.values() for e in es if e["event"] == "send" and e.get("type") == "CAUSAL_EVENT"]
    got = collections.defaultdict(set)
    for es in logs.values():
        for e in es:
            if e["event"] == "deliver":
                got[(e["origin"], e["seq"])].add(e["node"])
    for node in ("m1", "m4", "m6"):
        theirs = [e for e in created if e["node"] != node and e["s"] < 40]
        reached = sum(1 for e in theirs if node in got[(e["origin"], e["seq"])])
        assert reached >= 0.97 * len(theirs), (node, reached, len(theirs))


def test_the_analysis_counts_losses_latency_recovery_and_judges_tickets():
    """spark_analysis/protocols/causal.py on hand-made frames: 2 events to 2 members each, one pair
    lost; the gossip-only counters; a ticket shared from t = 5 s is caught."""
    import pandas as pd

    from spark_analysis.protocols import causal

    manifest = {"t0_ns": 0, "scenario": {"duration_s": 10, "quiet_s": 1},
                "topology": {"nodes": {n: {"role": "causal-member", "params": {"gossip_round_ms": 100}}
                                       for n in ("a", "b", "c")}}}
    sends = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 2, "origin": ["a", "b"], "seq": [1, 1], "t": [0, 0],
                          "intended": [["b", "c"], ["a", "c"]], "message_id": [(0 + 1) << 32 | 1, (2 + 1) << 32 | 1]})
    deliveries = pd.DataFrame({"type": ["CAUSAL_EVENT"] * 4, "node": ["b", "c", "a", "a"],
                               "origin": ["a", "a", "b", "b"], "seq": [1, 1, 1, 1],
                               "t": [100_000_000, 300_000_000, 200_000_000, 250_000_000],
                               "produced_ns": [0, 0, 0, 0], "hops": [1, 3, 2, None]})
    states = pd.DataFrame([
        {"state": "causal counters", "node": n, "t": 10, "causal_recover_requests": 2 if n == "c" else 0,
         "causal_recovered": 1 if n == "c" else 0, "causal_forced": 0, "causal_obsolete": 0,
         "gossip_only_delivered": 1, "gossip_only_out_of_order": 1, "gossip_records": 50 if n == "a" else 0,
         "gossip_only_latency_ms": {"a": {"150": 1}, "b": '{"250": 1}', "c": {"99": 1}}[n]} for n in ("a", "b", "c")] + [
        {"state": "causal ticket", "node": "a", "t": 0, "ticket": 0, "coordinates": "[0, 1]", "why": "bootstrap"},
        {"state": "causal ticket", "node": "b", "t": 5_000_000_000, "ticket": 1, "coordinates": "[1]", "why": "joined"}])
    sent = pd.DataFrame({"node": ["a", "a", "c"], "type": ["CAUSAL_DATA", "MEMBERSHIP", "CAUSAL_RECOVER"],
                         "relayed": [False] * 3, "messages": [10, 4, 2], "transmissions": [40, 4, 2],
                         "datagrams": [40, 4, 2], "bytes": [4000, 200, 40]})
    out = causal.measures(sends, deliveries, manifest, states, sent)
    assert out["events"] == {"created": 2, "expected": 4, "delivered": 3, "lost": 1, "lost_share": 0.25,
                             "forced": 0, "obsolete": 0, "lost_by_most": 1, "lost_by_several": 0,
                             "lost_by_several_if_independent": pytest.approx(2 * 0.25 ** 2)}
    assert out["gossip_only"]["delivered"] == 3 and out["gossip_only"]["lost"] == 1
    # the members' histograms merged (one as its JSON text), each at the middle of its millisecond
    gossip = out["gossip_only"]["latency"]
    assert gossip["n"] == 3 and gossip["median_ms"] == 150.5 and gossip["median_rounds"] == 1.505
    assert gossip["max_ms"] == 250.5 and "gossip only: first receipt" in causal.html(out)
    assert out["latency"]["n"] == 4 and out["latency"]["median_ms"] == 225 and out["latency"]["median_rounds"] == 2.25
    assert out["throughput"] == 3 / 3 / 10 and out["message_bytes"] == 100 and out["record_bytes"] == 4000 / 50
    assert out["latency"]["median_hops"] == 2 and out["latency"]["mean_hops"] == 2
    assert out["recovery"]["requests"] == 2 and out["recovery"]["success_rate"] == 0.5
    assert out["recovery"]["messages"] == 2
    tickets = out["ticket_uniqueness"]
    assert tickets["verdict"] == "invalid" and tickets["counterexamples"]["shared-ticket"][0]["ticket"] == 1
    identity = out["event_identity"]
    assert identity["verdict"] == "valid" and identity["stats"] == {"events": 2, "origins": 2, "tickets": 2,
                                                                    "checked": 2}
    assert causal.checks(out) == [tickets, identity]
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
        ticket("d", int(2.3 * s), None, "[]", "too few ALIVE", membership="disconnected"),
        ticket("b", int(2.9 * s), 1, "[1]", "excluded", excluded='["c"]', tickets="[2]"),
        ticket("e", 6 * s, 2, "[2]", "joined"),
        ticket("m6", 12 * s, 9, "[9]", "excluded", excluded='["m1"]', tickets="[0]")])   # after the end: not judged
    out = causal.measures(sends, deliveries, manifest, states)
    # c is killed at 2 s and e starts at 5 s: event 1 (0.5 s) is expected at b and d (cut off, but
    # running), event 2 at b and d, event 3 at b, d and e; e's delivery of event 2 is not counted
    assert out["events"]["expected"] == 2 + 2 + 3 and out["events"]["delivered"] == 3, out["events"]
    # lost: d every event, e event 3; so event 3 at two members, and independent losses at
    # q = 4/7 would give q² for each two-member event and 1 − (1 − q)³ − 3q(1 − q)² for event 3
    q = 4 / 7
    assert out["events"]["lost_by_most"] == 2 and out["events"]["lost_by_several"] == 1
    assert out["events"]["lost_by_several_if_independent"] == pytest.approx(
        2 * q ** 2 + 1 - (1 - q) ** 3 - 3 * q * (1 - q) ** 2)
    m = out["membership"]
    assert m["alive_per_round_max"] == 3 and m["exclusions"] == 2 and m["joins"] == 1
    assert m["disconnections"] == 1, "d's own disconnection; a killed member logs none"
    first, second = m["exclusion_list"]
    assert first["excluded"] == ["d"] and first["after_fault_rounds"] == pytest.approx(0.8)
    assert first["distance"] == 3 and first["reused_after_rounds"] is None
    # d owns ticket 3, the second ticket of E but its first process (ticket 4 is one d
    # coordinates): Corollary 4.1's bound is 1 round, not 2
    assert first["disconnected"]["d"] == {"after_rounds": pytest.approx(0.5), "bound_rounds": 1, "within": True,
                                          "reading_bound_rounds": 2.1, "within_reading": True}
    assert second["excluded"] == ["c"] and second["after_fault_rounds"] == pytest.approx(0.9)
    assert second["disconnected"] == {}, "a killed member holds nothing: no disconnection to wait for"
    assert second["reused_after_rounds"] == pytest.approx(3.1)
    assert m["exclusion_after_fault_rounds_max"] == pytest.approx(0.9) and m["disconnect_within_bound"] is True
    assert m["disconnect_within_reading_bound"] is True
