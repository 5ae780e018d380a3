"""DEECo gossip (agents/deeco/): the real role classes on an in-memory network with random delays
(tests/deeco_net.py), then the same roles in real runs on the radio medium and on a switch.

The thesis is /work/shared/papers/deeco-gossip-manet.txt; rule numbers are its chapter 5's."""

from __future__ import annotations

import math
import random
import statistics
from typing import Dict, List

import pytest

from agents.deeco.grouper import owner
from agents.roles import check_params, check_structure
from tests.deeco_net import Net, grid, unit_disk
from .helpers import benchmark
from .helpers import testbed_cli as _testbed  # `testbed ARGS` in this process

R = 5.0  # Table 7's periods (s)


def _knowledge_sends(net: Net, node: str) -> List[dict]:
    return net.events(node, "send", type="GOSSIP_KNOWLEDGE")


def _random_field(n: int, side: float, seed: int):
    rng = random.Random(seed)
    return {f"m{i}": (rng.uniform(0, side), rng.uniform(0, side)) for i in range(1, n + 1)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_never_twice_never_ones_own_and_p1_reaches_every_node_of_a_connected_field(seed):
    pos = _random_field(25, 400, seed)
    graph = unit_disk(pos, 150)
    nodes = {n: ("deeco-node", {"rebroadcast_probability": 1.0}) for n in pos}
    net = Net(nodes, graph=graph, positions=pos, seed=seed)
    net.run(31)
    for name in net.agents:
        relays = [(e["origin"], e["seq"]) for e in _knowledge_sends(net, name) if e["hops"] > 0]
        assert len(relays) == len(set(relays)), f"{name} rebroadcast a message twice (Rule 13)"
        assert all(origin != name for origin, _ in relays), f"{name} rebroadcast its own knowledge (Rule 13)"
        got = [(e["component"], e["version"]) for e in net.events(name, "deliver")]
        assert len(got) == len(set(got)), f"{name} accepted a version twice"
    # the field is connected (checked here), so P = 1 floods every publication to every node
    seen, todo = {"m1"}, ["m1"]
    while todo:
        for b in graph[todo.pop()] - seen:
            seen.add(b)
            todo.append(b)
    if len(seen) == len(pos):
        early = [(e["component"], e["version"]) for e in net.all_events("send", type="GOSSIP_KNOWLEDGE")
                 if e["hops"] == 0 and e["t"] < 29]
        for comp, version in early:
            have = sum(1 for name in net.agents if name != comp and net.events(name, "deliver", component=comp,
                                                                                   version=version))
            assert have == len(pos) - 1, (comp, version, have)


def test_p0_knowledge_reaches_only_radio_neighbours():
    graph, pos = grid()
    net = Net({n: ("deeco-node", {}) for n in graph}, graph=graph, positions=pos, seed=4)
    net.run(30)
    for name in net.agents:
        senders = {e["sender"] for e in net.events(name, "deliver")}
        assert senders == graph[name], name
        assert {e["component"] for e in net.events(name, "deliver")} == graph[name]
        assert all(e["hops"] == 0 for e in net.events(name, "deliver"))
        assert not [e for e in _knowledge_sends(net, name) if e["hops"] > 0], "P = 0 rebroadcasts nothing"
    # Rule 9: every node publishes at its fixed offset, every R_K
    for name, agent in net.agents.items():
        times = [e["t"] for e in _knowledge_sends(net, name)]
        assert times == pytest.approx([agent.role.offset_s + k * R for k in range(len(times))])
        assert len(times) == 6


@pytest.mark.parametrize("seed", [1, 2])
def test_nothing_is_rebroadcast_outside_the_boundary(seed):
    # a line of 12 nodes 80 m apart, range 100 m: with P = 1 and a 250 m boundary, a node more
    # than 250 m from the knowledge's source never rebroadcasts it, and the knowledge stops
    # one hop beyond the boundary
    pos = {f"n{i}": (80.0 * (i - 1), 0.0) for i in range(1, 13)}
    graph = unit_disk(pos, 100)
    net = Net({n: ("deeco-node", {"rebroadcast_probability": 1.0, "boundary_m": 250}) for n in pos},
              graph=graph, positions=pos, seed=seed)
    net.run(21)
    relayed = 0
    for name in net.agents:
        for e in _knowledge_sends(net, name):
            if e["hops"] > 0:
                relayed += 1
                d = math.dist(pos[name], pos[e["component"]])
                assert d <= 250, f"{name} rebroadcast {e['component']}'s knowledge {d:.0f} m from it"
        for e in net.events(name, "deliver"):
            assert math.dist(pos[name], pos[e["component"]]) <= 250 + 100
    assert relayed > 0
    # without the boundary the same field floods end to end
    free = Net({n: ("deeco-node", {"rebroadcast_probability": 1.0}) for n in pos}, graph=graph, positions=pos,
               seed=seed)
    free.run(21)
    assert free.events("n12", "deliver", component="n1")
    assert not net.events("n12", "deliver", component="n1")


def _use_case(seed: int, kill_at=None) -> Net:
    graph, pos = grid()
    net = Net({n: ("deeco-node", {"pull": True}) for n in graph}, graph=graph, positions=pos, seed=seed)
    if kill_at is not None:
        net.kill("n1", kill_at)
    net.run(60)
    return net


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_use_case_node_9_gets_node_1s_knowledge_only_by_pulling_every_two_periods(seed):
    """Table 8: P = 0, Table 7's periods; 9 is three hops from 1."""
    net = _use_case(seed)
    got = net.events("n9", "deliver", component="n1")
    assert got, "9 gets 1's knowledge"
    relays = {(e["origin"], e["seq"]): e for n in net.agents for e in _knowledge_sends(net, n) if e["hops"] > 0}
    for e in got:
        assert e["hops"] >= 3 and relays[(e["origin"], e["seq"])]["pulled"], "only pulled copies reach 9"
    times = [e["t"] for e in got]
    assert 2 * R <= times[0] <= 4 * R, times  # the thesis: 15.2 s, about 3 R_P
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps and all(abs(g - R * round(g / R)) < 0.5 for g in gaps), gaps  # a whole number of periods
    assert statistics.median(gaps) == pytest.approx(2 * R, abs=0.5), gaps  # the thesis: every 10 s
    # headers and pulls are never retransmitted (Rule 18)
    for name in net.agents:
        for e in net.events(name, "send"):
            if e["type"] in ("GOSSIP_HEADERS", "GOSSIP_PULL"):
                assert e["hops"] == 0 and e["origin"] == name


@pytest.mark.parametrize("seed", [0, 1])
def test_without_pulling_p0_knowledge_reaches_only_radio_neighbours(seed):
    """P = 0 and pull off: each node hears exactly its radio neighbours' own knowledge, published
    every R_K (Rule 9), and nothing is relayed, pulled or asked for."""
    graph, pos = grid()
    net = Net({n: ("deeco-node", {"pull": False}) for n in graph}, graph=graph, positions=pos, seed=seed)
    net.run(21)
    for name in net.agents:
        got = net.events(name, "deliver")
        assert {e["component"] for e in got} == graph[name] == {e["sender"] for e in got}, name
        sends = net.events(name, "send")
        assert not [e for e in sends if e.get("hops") or e["type"] == "GOSSIP_PULL"], name
        pubs = [e["t"] for e in sends if e["type"] == "GOSSIP_KNOWLEDGE"]
        assert len(pubs) >= 4 and all(abs(b - a - R) < 0.01 for a, b in zip(pubs, pubs[1:])), pubs


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_use_case_node_1_killed_the_others_pull_then_stop_within_the_pull_timeout(seed):
    """Table 9: node 1 fails at 20 s."""
    net = _use_case(seed, kill_at=20.0)
    role = net.agents["n1"].role
    last_pub = max(e["t"] for e in _knowledge_sends(net, "n1") if e["hops"] == 0)
    assert last_pub < 20.0
    t_m, t_p = role.t_m / 1e9, role.t_p / 1e9
    neighbours = {"n2", "n4"}
    starts: Dict[str, float] = {}
    for name in net.agents:
        if name == "n1":
            continue
        pulls = [e["t"] for e in net.events(name, "send", type="GOSSIP_PULL") if "n1" in e["components"]]
        assert all(t < last_pub + t_p for t in pulls), f"{name} pulls after 1's last knowledge + T_p"
        last_got = max((e["t"] for e in net.events(name, "deliver", component="n1")), default=0.0)
        after = [t for t in pulls if t > last_got]
        if after:
            starts[name] = after[0]
            stopped = [e["t"] for e in net.events(name, "state", state="deeco stopped pulling", component="n1")]
            assert stopped and last_pub + t_p <= stopped[-1] <= last_pub + t_p + R + 0.2, (name, stopped)
    # a node pulls at a pull tick in [l + T_m, g + T_p): a window of T_p - T_m = 4 s of every
    # R_P = 5 s, so a node may miss it (Table 9 lists 6 of the 8 too)
    assert len(starts) >= 5 and neighbours & set(starts), "1's neighbours pull it once it stops publishing"
    for n in neighbours & set(starts):
        assert starts[n] >= last_pub + t_m, "a neighbour pulls only once its fresh copy is T_m old"
    first = min(starts, key=starts.get)
    assert first not in neighbours, f"distant nodes pull first: {sorted(starts.items(), key=lambda kv: kv[1])}"
    assert not [e for e in net.all_events("deliver", component="n1") if e["t"] >= last_pub + t_p]


def _ip(n: int, groupers: int, p: float, c: int, groups: int, seed: int) -> Net:
    nodes = {}
    gnames = [f"g{i}" for i in range(1, groupers + 1)]
    for i in range(1, n + 1):
        name = f"h{i}"
        params = {"via": "ip", "rebroadcast_probability": p, "fanout": c, "group": f"route{i % groups}"}
        if groupers:
            params["groupers"] = [gnames[i % groupers]]
        nodes[name] = ("deeco-node", params)
    for g in gnames:
        nodes[g] = ("deeco-grouper", {"rebroadcast_probability": p, "fanout": c})
    net = Net(nodes, seed=seed, delay=(0.001, 0.01))
    net.run(60)
    return net


def test_grouper_clients_learn_their_group_and_gossip_inside_it_with_fewer_messages():
    simple, grouped = _ip(24, 0, 0.5, 2, 4, seed=5), _ip(24, 3, 0.5, 2, 4, seed=5)
    ring = [f"g{i}" for i in range(1, 4)]
    for name, agent in grouped.agents.items():
        if name.startswith("h"):
            group = agent.role.group
            peers = set(agent.role.known_peers())
            members = {m for m, a in grouped.agents.items() if m.startswith("h") and a.role.group == group}
            assert peers == (members - {name}) | {owner(group, ring)}, name
            assert not [e for e in _knowledge_sends(grouped, name) if e["hops"] > 0], "clients never rebroadcast"
    # the owner learned every member of its groups (out-of-range knowledge went round the ring)
    for g in ring:
        for group, members in grouped.agents[g].role.members.items():
            assert owner(group, ring) == g
    count = lambda net: len(net.all_events("send"))  # noqa: E731
    assert count(grouped) < count(simple) / 2, (count(grouped), count(simple))


def test_every_parameter_is_checked_and_structure_mistakes_name_the_field():
    assert check_params("deeco-node", {"rebroadcast_probability": 0.5, "boundary_m": 500, "pull": True}) is None
    for bad in ({"rebroadcast_probability": 1.5}, {"rebroadcast_probability": float("nan")},
                {"knowledge_period_ms": 0}, {"knowledge_period_ms": float("inf")}, {"fanout": 0},
                {"boundary_m": -1}, {"via": "wifi"}, {"pull": "yes"}, {"components": 0}, {"colour": 1}):
        problem = check_params("deeco-node", bad)
        assert problem is not None and problem[0] == next(iter(bad)), bad
    nodes = {"a": {"id": 1, "role": "deeco-node", "params": {"groupers": ["b"]}},
             "b": {"id": 2, "role": "deeco-node", "params": {}},
             "g": {"id": 3, "role": "deeco-grouper", "params": {"via": "radio"}},
             "c": {"id": 4, "role": "deeco-node", "params": {"peers": ["zz"]}}}
    assert check_structure("deeco-node", "a", nodes)[0] == "groupers"
    assert check_structure("deeco-grouper", "g", nodes)[0] == "via"
    assert check_structure("deeco-node", "c", nodes)[0] == "peers"
    assert check_structure("deeco-node", "b", nodes) is None


# -- real runs: the roles in containers on the radio medium -------------------------------------

ROOT = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))
USE_CASE = f"{ROOT}/scenarios/deeco-use-case.yaml"
KILL_AT = 40.0  # s: late enough for 9 to pull 1's knowledge three times first
KILL = f"timeline=[{{at: {KILL_AT:g}s, action: kill, node: n1}}]"
DURATION = 60.0  # s: the others stop pulling 1 at most T_p + R after its last knowledge
GRID = grid()[0]


def _read_run(run_dir: str) -> Dict[str, List[dict]]:
    """Each node's events with `t` in seconds since the run's t0."""
    import json
    import os
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        t0 = json.load(fh)["t0_ns"]
    out = {}
    for name in os.listdir(os.path.join(run_dir, "logs")):
        with open(os.path.join(run_dir, "logs", name)) as fh:
            events = [json.loads(line) for line in fh]
        for e in events:
            e["t"] = (e["t"] - t0) / 1e9
        out[name[:-len(".jsonl")]] = events
    return out


class _Logged:
    """The logs of a real run with Net.events' interface, so the same assertions read both."""

    def __init__(self, logs: Dict[str, List[dict]]) -> None:
        self.logs = logs
        self.agents = logs

    def events(self, node: str, event: str, **match) -> List[dict]:
        return [e for e in self.logs[node] if e["event"] == event and all(e.get(k) == v for k, v in match.items())]

    def all_events(self, event: str, **match) -> List[dict]:
        return [e for node in self.logs for e in self.events(node, event, **match)]


@pytest.fixture(scope="module")
def deeco_runs(machine, images, tmp_path_factory):
    """The use case with node 1's failure late in the run (Table 9, later: what comes before the
    kill is the fault-free use case), and a boundary line."""
    base = tmp_path_factory.mktemp("deeco")
    plan = {"use-case": (USE_CASE, (KILL, f"duration={DURATION:g}s")),
            "boundary": (f"{ROOT}/scenarios/deeco-boundary-line.yaml", ("duration=8s",))}  # 4 knowledge periods
    return run_plan(base, plan)


def run_plan(base, plan: Dict[str, tuple], *options: str) -> Dict[str, str]:
    """Runs each plan entry, name → (scenario, --set items), into base/name with `options` (e.g.
    --analyze); their directories by name, after checking that nothing was left behind."""
    from testbed.cleanup import leftovers
    dirs = {}
    for name, (scenario, sets) in plan.items():
        out = base / name
        args = ["run", scenario, "--out", str(out), "--quiet", *options]
        for item in sets:
            args += ["--set", item]
        res = _testbed(*args)
        assert res.returncode == 0, f"{name}: {res.stderr[-3000:]}"
        dirs[name] = str(out)
    assert not leftovers(), "the runs left testbed objects behind"
    return dirs


@pytest.mark.network
def test_real_use_case_node_9_gets_node_1s_knowledge_by_pulling_every_two_periods(deeco_runs):
    run = _Logged(_read_run(deeco_runs["use-case"]))
    assert not run.all_events("error")
    got = [e for e in run.events("n9", "deliver") if e["component"] == "n1" and e["t"] < KILL_AT]
    assert got and all(e["hops"] >= 3 for e in got), "9 gets 1's knowledge, only through relays"
    pulled = {(e["origin"], e["seq"], e["node"]) for e in run.all_events("send", type="GOSSIP_KNOWLEDGE")
              if e["hops"] > 0 and e["pulled"]}
    assert all((e["origin"], e["seq"], e["sender"]) in pulled for e in got), "every copy 9 got was a pulled one"
    times = [e["t"] for e in got]
    assert 2 * R <= times[0] <= 4 * R, times
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(gaps) >= 2 and all(abs(g - R * round(g / R)) < 0.5 for g in gaps), gaps
    assert statistics.median(gaps) == pytest.approx(2 * R, abs=0.5), gaps
    for name in run.agents:  # pushed knowledge (hop 0) comes from radio neighbours only
        assert {e["sender"] for e in run.events(name, "deliver") if e["hops"] == 0} == GRID[name], name
        # P = 0: what is sent on is a pulled copy, never a rebroadcast
        assert all(e["pulled"] for e in run.events(name, "send", type="GOSSIP_KNOWLEDGE") if e["hops"] > 0), name
        if name == "n1":
            continue
        pubs = [e["t"] for e in run.events(name, "send", type="GOSSIP_KNOWLEDGE") if e["hops"] == 0]
        # Rule 9: every R_K from the node's start to the end of the workload (one may come as the
        # end signal travels: the count is not asserted, none missing is)
        assert pubs[0] < R + 0.5 and pubs[-1] >= DURATION - R - 0.5, (name, pubs)
        assert all(abs(b - a - R) < 0.2 for a, b in zip(pubs, pubs[1:])), pubs


@pytest.mark.network
def test_real_use_case_deliveries_split_into_the_publishers_and_the_pulled(deeco_runs):
    """benchmarks/deeco_ages.py on a real run: the use case at P = 0 with pulling pushes nothing
    on, so every delivery came from the publisher (hop 0) or from a pulled rebroadcast, and
    the split counts every knowledge delivery the logs hold, its ages theirs."""
    deeco_ages = benchmark("deeco_ages")
    run = _Logged(_read_run(deeco_runs["use-case"]))
    got = run.all_events("deliver", type="GOSSIP_KNOWLEDGE")
    row = deeco_ages.measure(deeco_runs["use-case"])
    assert row["deliveries"] == len(got) and row["pushed"]["deliveries"] == 0
    assert row["publisher"]["deliveries"] == sum(1 for e in got if e["hops"] == 0)
    assert row["pulled"]["deliveries"] == sum(1 for e in got if e["hops"] > 0) > 0
    assert row["pulled_rebroadcasts"] == len([e for e in run.all_events("send", type="GOSSIP_KNOWLEDGE")
                                              if e["hops"] > 0 and e["pulled"]])
    # a pulled copy is the relay's own hop-0 delivery passed on once more: older than those
    assert row["pulled"]["median_ms"] > row["publisher"]["median_ms"]


def test_the_age_split_sorts_each_delivery_by_the_way_it_came():
    """deeco_ages.split: hop 0 is the publisher's; a relayed copy is pulled when its sender's
    rebroadcast of that message was a pulled one, pushed otherwise; medians per way in ms."""
    deeco_ages = benchmark("deeco_ages")
    ms = 1_000_000
    deliveries = [("a", "a", 1, 0, 2 * ms), ("b", "a", 1, 1, 4 * ms), ("c", "a", 1, 2, 6 * ms),
                  ("b", "a", 2, 1, 900 * ms), ("c", "x", 1, 1, 1000 * ms)]
    row = deeco_ages.split(deliveries, {("b", "a", 2), ("c", "x", 1)})
    assert row["deliveries"] == 5 and row["publisher"]["deliveries"] == 1
    assert row["pushed"]["deliveries"] == 2 and row["pushed"]["median_ms"] == 5.0
    assert row["pulled"]["share"] == 0.4 and row["pulled"]["median_ms"] == 950.0
    assert row["median_ms"] == 6.0 and row["median_without_pulled_ms"] == 4.0
    empty = deeco_ages.split([], set())
    assert empty["deliveries"] == 0 and empty["median_ms"] is None and empty["pulled"]["share"] is None


@pytest.mark.network
def test_real_use_case_node_1_killed_the_others_pull_then_stop(deeco_runs):
    run = _Logged(_read_run(deeco_runs["use-case"]))
    assert not run.all_events("error")
    pubs = [e["t"] for e in run.events("n1", "send", type="GOSSIP_KNOWLEDGE") if e["hops"] == 0]
    last_pub = max(pubs)
    assert KILL_AT - R < last_pub < KILL_AT + 0.5
    starts = {}
    for name in run.agents:
        if name == "n1":
            continue
        pulls = [e["t"] for e in run.events(name, "send", type="GOSSIP_PULL") if "n1" in e["components"]]
        assert all(t < last_pub + 10 for t in pulls), f"{name} pulls 1 after its last knowledge + T_p"
        last_got = max((e["t"] for e in run.events(name, "deliver") if e["component"] == "n1"), default=0.0)
        after = [t for t in pulls if t > last_got]
        if after:
            starts[name] = after[0]
            stopped = [e["t"] for e in run.events(name, "state", state="deeco stopped pulling", component="n1")]
            assert stopped and last_pub + 10 <= stopped[-1] <= last_pub + 10 + R + 0.5, (name, stopped)
    assert len(starts) >= 5 and {"n2", "n4"} & set(starts), starts
    for n in {"n2", "n4"} & set(starts):
        assert starts[n] >= last_pub + 6
    assert min(starts, key=starts.get) not in ("n2", "n4"), starts
    assert not [e for e in run.all_events("deliver") if e["component"] == "n1" and e["t"] >= last_pub + 10]


@pytest.mark.network
def test_real_boundary_run_rebroadcasts_nothing_outside_the_boundary(deeco_runs):
    run = _Logged(_read_run(deeco_runs["boundary"]))
    x = {f"n{i}": 80.0 * (i - 1) for i in range(1, 6)}
    relays = [e for e in run.all_events("send", type="GOSSIP_KNOWLEDGE") if e["hops"] > 0]
    assert relays, "P = 1 rebroadcasts inside the boundary"
    for e in relays:
        assert abs(x[e["node"]] - x[e["component"]]) <= 100, e
    # 1's knowledge: 2 (80 m) rebroadcasts it, 3 (160 m) hears it but must not pass it on, 4 never gets it
    assert run.events("n3", "deliver", component="n1") and not run.events("n4", "deliver", component="n1")


@pytest.mark.network
@pytest.mark.spark
def test_reduced_experiments_run_and_show_the_theses_orderings(tmp_path, no_leftovers, spark):
    """experiments/deeco/reduced.yaml: small versions of the MANET sweep, the knowledge-age
    comparison (push-pull's place in it is the full experiment's: it is not the thesis's here) and
    IP gossip against groupers, analysed by the DEECo plugin."""
    import json

    import pandas as pd

    out = tmp_path / "deeco"
    from .helpers import cli_in_process

    code, _, stderr = cli_in_process("experiment", f"{ROOT}/experiments/deeco/reduced.yaml", "--out", out)
    assert code == 0, stderr[-3000:]
    runs = pd.read_csv(out / "runs.csv").set_index("point")
    assert sorted(runs.index) == ["boundary", "ip-groupers", "ip-simple", "simple", "simple-p0"]
    # P = 0: every message is a publication, and 16 nodes publish 2 or 3 times in 12 s (every 5 s)
    assert runs.loc["simple-p0", "rebroadcasts"] == 0 and 16 * 2 <= runs.loc["simple-p0", "messages"] <= 16 * 4
    assert (runs.loc[["simple", "boundary", "ip-simple", "ip-groupers"], "rebroadcasts"] > 0).all()
    assert (runs["age_median"] > 0).all()
    assert runs.loc["simple", "sources"] > runs.loc["simple-p0", "sources"], "rebroadcasts reach beyond one hop"
    shapes = json.loads((out / "shapes.json").read_text())
    assert len(shapes) == 4 and all(s["verdict"] == "valid" for s in shapes), shapes


def test_the_flood_replay_counts_what_each_flood_sends_with_and_without_the_boundary():
    """benchmarks/deeco_flood.py on five nodes of a line (0, 80, 160, 240 and 400 m) whose pairs
    deliver within 100 m always and never beyond: the first four make one cluster, the fifth is
    alone; at twice the reach all five are one. The boundary (170 m from the publisher) stops the
    nodes beyond it passing a knowledge on."""
    import numpy as np
    import pandas as pd

    deeco_flood = benchmark("deeco_flood")
    positions = pd.DataFrame({"t_s": 0.0, "node": [f"n{i}" for i in range(5)], "x": [0.0, 80, 160, 240, 400],
                              "y": 0.0})
    one, two = deeco_flood.replay(positions, lambda d: (d <= 100).astype(float), boundary_m=170,
                                  scales=(1.0, 2.0), every=1)
    # 1, 2, 2, 1 and 0 receivers; floods of 4, 4, 4, 4 and 1 messages; with the boundary 3
    # (240 m: n0 hears from n1 and stops), 4, 4, 3 (n0 again) and 1
    assert (one["receivers_per_broadcast"], one["component_mean"]) == (pytest.approx(1.2), pytest.approx(3.4))
    assert (one["flood_P1"], one["boundary_P1"], one["floods"]) == (pytest.approx(3.4), pytest.approx(3.0), 5)
    assert (two["receivers_per_broadcast"], two["component_mean"], two["flood_P1"]) == (
        pytest.approx(2.4), pytest.approx(5.0), pytest.approx(5.0))
    # the boundary stays 170 m on the ground at the longer reach: 3, 4, 4, 4 and 2 messages
    assert two["boundary_P1"] == pytest.approx(3.4)
    # 4 messages a publication lies between the two reaches, on the logarithm of the flood
    expected = 1 + (math.log(4) - math.log(3.4)) / (math.log(5) - math.log(3.4))
    assert deeco_flood.reach_for([one, two], 4.0) == pytest.approx(expected)
    assert deeco_flood.reach_for([one, two], 6.0) is None
    # with loss, a flood reaches on average what the pairs' probabilities give: two nodes 50 m
    # apart delivering half the time send 1.5 messages a publication
    pair = pd.DataFrame({"t_s": 0.0, "node": ["a", "b"], "x": [0.0, 50.0], "y": 0.0})
    (half,) = deeco_flood.replay(pair, lambda d: (d <= 100) * 0.5, scales=(1.0,), every=1, seed=3)
    assert half["boundary_P1"] is None and half["receivers_per_broadcast"] == pytest.approx(0.5)
    rng = np.random.default_rng(7)
    many = [deeco_flood._flood(np.array([[0, 0.5], [0.5, 0]]), 0, rng) for _ in range(4000)]
    assert 1.45 < sum(many) / len(many) < 1.55


def test_the_flood_replay_keeps_the_stored_seeds_whose_runs_are_gone(tmp_path):
    """A seed replayed in an earlier sitting stays in deeco_flood.json when its runs are no longer
    in the directory; a seed replayed again replaces its row; rows replayed at another `every`
    are not kept beside new ones."""
    import json

    deeco_flood = benchmark("deeco_flood")
    path = tmp_path / "deeco_flood.json"
    assert deeco_flood.stored_rows(str(path), [], 10) == []
    old = [{"medium": m, "seed": s, "measured": {"flood_P1": float(s)}} for m in ("kernel", "wifi") for s in (1, 2)]
    path.write_text(json.dumps({"every": 10, "runs": old}))
    fresh = [{"medium": "kernel", "seed": 2, "measured": {"flood_P1": 9.0}},
             {"medium": "kernel", "seed": 3, "measured": {"flood_P1": 3.0}}]
    kept = deeco_flood.stored_rows(str(path), fresh, 10)
    assert [(r["medium"], r["seed"]) for r in kept] == [("kernel", 1), ("wifi", 1), ("wifi", 2)]
    assert deeco_flood.stored_rows(str(path), fresh, 5) == []
