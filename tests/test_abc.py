"""AbC agents: the component and the cluster, ring and tree servers (agents/abc/).

The first tests drive the real role classes over an in-memory network that delays and reorders
every message at random (no sockets), so that the paper's rules are exercised on many
interleavings in milliseconds; the tests marked `network` run the same roles in real containers
on Mininet, with captures, and analyse the runs with Spark.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import os
import random
from typing import Any, Dict, List, Tuple

import pytest

from agents.abc.common import decode
from agents.clock import Clock
from agents.abc.component import Component, providers
from agents.roles import check_structure, role_module
from agents.wire import Flags, Header, MessageType
from testbed.errors import ValidationError
from testbed.scenario import load_scenario, parse_scenario_text

from .helpers import FakeClock
from .helpers import testbed_cli as _testbed  # `testbed ARGS` in this process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = {kind: os.path.join(ROOT, "scenarios", f"abc-{name}.yaml")
             for kind, name in (("cluster", "cluster-3-9"), ("ring", "ring-5-3"), ("tree", "tree-3-2-2"))}


# -- an in-memory network for the real roles ---------------------------------------------------

class _Log:
    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []

    def write(self, event: str, t=None, **fields) -> None:
        self.events.append({"event": event, **fields})


class _Config:
    def __init__(self, name, nodes, params, run_seed) -> None:
        self.node = name
        self.nodes = nodes
        self.params = params
        self.run_seed = run_seed
        self.seed = run_seed * 1000 + nodes[name]["id"]


class _Agent:
    def __init__(self, net: "_Net", name: str, nodes) -> None:
        self.net = net
        self.name = name
        self.id = nodes[name]["id"]
        self.config = _Config(name, nodes, nodes[name]["params"], net.seed)
        self.by_id = {info["id"]: n for n, info in nodes.items()}
        self.log = _Log()
        self.clock = Clock()
        self._sequence = 0
        self.role = None

    def send(self, mtype, body=b"", to="broadcast", reliable=False, message_id=0, extensions=None, origin=None,
             sequence=None, hops=0, flags=0, log=True, **fields):
        if sequence is None:
            self._sequence += 1
            sequence = self._sequence
        header = Header(type=mtype, origin=origin or self.id, sequence=sequence, sender=self.id, hops=hops,
                        message_id=message_id, extensions=dict(extensions or {}), flags=flags)
        self.log.write("send", type=MessageType(mtype).name, to=list(to), message_id=message_id, hops=hops,
                       origin=self.by_id[header.origin], seq=sequence, **fields)
        for target in to:
            self.net.post(target, header, body, self.name)
        return sequence

    def deliver(self, header, **fields):
        self.log.write("deliver", origin=self.by_id[header.origin], seq=header.sequence,
                       message_id=header.message_id, **fields)


class _Net:
    """Every message arrives after a random delay: any order the real network could produce,
    and more (no FIFO between two nodes), as the reliable channel's retransmissions can."""

    def __init__(self, scenario, seed: int = 0) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0.0
        self.queue: list = []
        self.n = 0
        nodes = {name: {"id": i, "role": node.role, "params": node.params}
                 for i, (name, node) in enumerate(scenario.topology.nodes.items(), start=1)}
        self.agents: Dict[str, _Agent] = {}
        for name, info in nodes.items():
            agent = _Agent(self, name, nodes)
            module = __import__(role_module(info["role"]), fromlist=["ROLE"])
            agent.role = module.ROLE(agent, info["params"])
            self.agents[name] = agent
        for agent in self.agents.values():
            if not isinstance(agent.role, Component):
                asyncio.run(agent.role.run())  # servers: the cluster's TAKEs

    def post(self, target, header, body, sender) -> None:
        self.n += 1
        heapq.heappush(self.queue, (self.now + self.rng.expovariate(1.0), self.n, target, header, body, sender))

    def send(self, component: str, k: int) -> None:
        role = self.agents[component].role
        role.outbox.append(([component, k], role.params.get("predicate", True), 0))
        role._next_send()

    def run(self, sends: int = 30, senders: List[str] = ()) -> None:
        plan = [(self.rng.uniform(0, 20), s, k) for s in senders for k in range(1, sends + 1)]
        plan.sort()
        while self.queue or plan:
            if plan and (not self.queue or plan[0][0] <= self.queue[0][0]):
                self.now, who, k = plan.pop(0)
                self.send(who, k)
                continue
            self.now, _, target, header, body, sender = heapq.heappop(self.queue)
            self.agents[target].role.on_message(header, body, sender)

    def events(self, node: str, event: str) -> List[Dict[str, Any]]:
        return [e for e in self.agents[node].log.events if e["event"] == event]


def _scenario(kind: str, workload: str = "communication-intensive"):
    return load_scenario(SCENARIOS[kind], overrides=(f"workload.kinds.component.params.workload={workload}",))


def _check_total_order_exactly_once(net: _Net, components: List[str]) -> int:
    sent = {}
    for c in components:
        for e in net.events(c, "send"):
            if e["type"] == "ABC_DATA":
                assert e["order"] not in sent, f"id {e['order']} given twice"
                sent[e["order"]] = c
    assert sorted(sent) == list(range(len(sent))), "ids are 0, 1, 2, ... without a hole"
    for c in components:
        got = [e["order"] for e in net.events(c, "deliver")]
        expected = [i for i in range(len(sent)) if sent[i] != c]
        assert got == expected, f"{c} delivers every other component's message once, in id order"
    return len(sent)


@pytest.mark.parametrize("kind", ["cluster", "ring", "tree"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_component_delivers_every_message_once_in_id_order(kind, seed):
    net = _Net(_scenario(kind), seed=seed)
    components = [n for n, a in net.agents.items() if isinstance(a.role, Component)]
    net.run(sends=15, senders=components)
    assert _check_total_order_exactly_once(net, components) == 15 * len(components)
    # every data message was forwarded by servers only with its identity and one hop more
    for agent in net.agents.values():
        for e in agent.log.events:
            if e["event"] == "send" and e["type"] == "ABC_DATA" and e["origin"] != agent.name:
                assert e["hops"] >= 1


def test_tree_only_the_root_replies_and_the_ring_discards_a_copy_that_went_round():
    net = _Net(_scenario("tree"), seed=4)
    components = [n for n, a in net.agents.items() if isinstance(a.role, Component)]
    net.run(sends=5, senders=components[:4])
    repliers = {n for n, a in net.agents.items() for e in a.log.events
                if e["event"] == "send" and e["type"] == "ABC_REPLY" and e["hops"] == 0}
    assert repliers == {"srv1"}
    net = _Net(_scenario("ring"), seed=4)
    components = [n for n, a in net.agents.items() if isinstance(a.role, Component)]
    net.run(sends=5, senders=components)
    drops = [e for a in net.agents.values() for e in a.log.events if e["event"] == "drop"]
    assert drops and all(e["reason"] == "data message already handled" for e in drops)
    assert len(drops) == 5 * len(components), "each message comes back once to its own server"
    counted = [e for n, a in net.agents.items() if n != "srv1" for e in a.log.events
               if e["event"] == "send" and e["type"] == "ABC_REPLY" and e["hops"] == 0]
    assert not counted, "only the counter's host (srv1) numbers messages"


@pytest.mark.parametrize("dispatch", ["random", "free"])
def test_cluster_servers_take_turns_from_the_shared_queue(dispatch):
    """Every data message is fanned out by one server and every server serves: under `random`
    (the default) the host draws a slot for each message and no server asks; under `free` the
    servers ask the host (ABC_TAKE) when free."""
    scenario = load_scenario(SCENARIOS["cluster"], overrides=(
        "workload.kinds.component.params.workload=communication-intensive",
        f"workload.kinds.server.params.dispatch={dispatch}"))
    net = _Net(scenario, seed=5)
    components = [n for n, a in net.agents.items() if isinstance(a.role, Component)]
    net.run(sends=10, senders=components)
    forwards = {n: sum(1 for e in a.log.events if e["event"] == "send" and e["type"] == "ABC_DATA"
                       and len(e["to"]) > 1) for n, a in net.agents.items() if n.startswith("srv")}
    assert sum(forwards.values()) == 10 * len(components), "each data message is fanned out by one server"
    assert all(v > 0 for v in forwards.values()), f"every server served: {forwards}"
    replies = [e for a in net.agents.values() for e in a.log.events if e["event"] == "send" and e["type"] == "ABC_REPLY"]
    assert sorted(e["message_id"] for e in replies) == list(range(10 * len(components)))
    takes = {n: [e for e in net.events(n, "send") if e["type"] == "ABC_TAKE"] for n in ("srv2", "srv3")}
    if dispatch == "random":
        assert not any(takes.values()), "slots are drawn by the host: nobody asks"
    else:  # only the queue's host received from components; the others ask it for work
        assert all(takes.values()) and all(e["to"] == ["srv1"] for t in takes.values() for e in t)


def test_a_component_discards_what_its_attributes_do_not_satisfy_and_the_sender_names_the_receivers():
    text = open(SCENARIOS["tree"]).read().replace("topology: ../", f"topology: {ROOT}/") + """
  nodes:
    c1: {params: {workload: communication-intensive, predicate: ["==", "zone", 2]}}
    c2: {params: {attributes: {zone: 2}}}
    c3: {params: {attributes: {zone: 3}}}
    c4: {params: {attributes: {zone: 2, team: blue}}}
"""
    net = _Net(parse_scenario_text(text, "t.yaml"), seed=6)
    net.run(sends=3, senders=["c1"])
    (send, *_) = [e for e in net.events("c1", "send") if e["type"] == "ABC_DATA"]
    assert send["receivers"] == ["c2", "c4"] and len(send["eligible"]) == 13
    for c, accepted in (("c2", True), ("c3", False), ("c4", True), ("c5", False)):
        assert [e["accepted"] for e in net.events(c, "deliver")] == [accepted] * 3, c


def test_a_paced_node_transmits_one_at_a_time_at_rate_lambda_t_in_fifo_order():
    from agents.abc.common import Transmitter
    import time

    sent = []

    class Agent:
        class config:
            seed = 3

        clock = Clock()

        def send(self, mtype, to, **kw):
            sent.append((time.monotonic(), mtype, to, kw.get("tag")))

    async def go():
        tx = Transmitter(Agent(), {"transmission_rate": 10, "time_unit_ms": 100})  # mean 10 ms
        start = time.monotonic()
        tx.send(12, ["a", "b", "c"], tag=1)
        tx.then(lambda: sent.append((time.monotonic(), "then", None, None)))
        tx.send(11, ["d"], tag=2)
        for _ in range(200):
            tx.send(12, ["x"], tag=3)
        while tx.queue or (tx.task and not tx.task.done()):
            await asyncio.sleep(0.01)
        return start

    start = asyncio.run(go())
    assert [s[2] for s in sent[:5]] == [["a"], ["b"], ["c"], None, ["d"]], "one address at a time, in order"
    assert sent[3][1] == "then" and sent[3][0] - sent[2][0] < 0.005, "then() runs once the earlier ones left"
    per = (sent[-1][0] - start) / 204
    assert 0.007 < per < 0.02, f"about 10 ms per transmission, got {per * 1000:.1f} ms"
    unpaced = Transmitter(Agent(), {})
    sent.clear()
    unpaced.send(12, ["a", "b"], tag=4)
    assert sent[0][2] == ["a", "b"], "without a rate everything leaves at once, in one send"


def _paced(clock: FakeClock, cost: float, sent: list, seed: int = 3):
    from agents.abc.common import Transmitter

    class Agent:
        class config:
            pass

        log = _Log()
        clock = Clock()

        def send(self, mtype, to, **kw):
            sent.append((clock.now, to[0]))
            clock.now += cost  # what the send itself takes

    Agent.config.seed = seed
    tx = Transmitter(Agent(), {"transmission_rate": 15, "time_unit_ms": 100})
    tx.clock = Clock(monotonic=clock.time, wall_sleep=clock.sleep)
    return tx


def test_pacing_keeps_to_deadlines_whatever_a_send_costs_and_counts_busy_time():
    """Deadline pacing: in a busy period transmission k is due at start + the first k exponential
    draws, so a send that costs time delays that send only, not the ones after it; the achieved
    rate over busy time is what the draws give, and idle time between busy periods is not counted."""
    mean = 0.1 / 15
    draws = random.Random(3 ^ 0x5A5A)
    clock, sent = FakeClock(), []
    tx = _paced(clock, cost=0.8 * mean, sent=sent)

    async def go():
        start = clock.now
        tx.send(12, [f"a{i}" for i in range(40)])
        await tx.task
        first = (start, clock.now)
        clock.now += 5.0  # idle: not busy time
        start2 = clock.now
        tx.send(12, ["b0", "b1"])
        tx.then(lambda: tx.send(12, ["c0"]))  # after the queue emptied: a new busy period
        await tx.task
        return first, start2

    (start, _), start2 = asyncio.run(go())
    deadlines, due = [], start
    for _ in range(40):
        due += draws.expovariate(1.0) * mean
        deadlines.append(due)
    expected, ready = [], start
    for d in deadlines:  # a send leaves at its deadline, or when the previous send is done if later
        expected.append(max(d, ready))
        ready = expected[-1] + 0.8 * mean
    assert [t for t, _ in sent[:40]] == pytest.approx(expected, abs=1e-9)
    assert any(e > d for e, d in zip(expected, deadlines)), "some sends were late (the test's point)"
    assert any(expected[k - 1] > deadlines[k - 1] and expected[k] == deadlines[k] for k in range(1, 40)), \
        "a late send does not push later deadlines: the next one is back on time"
    b = [start2 + draws.expovariate(1.0) * mean]
    b.append(max(b[0] + draws.expovariate(1.0) * mean, b[0] + 0.8 * mean))
    c0_start = b[1] + 0.8 * mean
    c0 = c0_start + draws.expovariate(1.0) * mean
    assert [t for t, _ in sent[40:]] == pytest.approx(b + [c0], abs=1e-9)
    assert [to for _, to in sent] == [f"a{i}" for i in range(40)] + ["b0", "b1", "c0"]
    stats = tx.stats()
    busy = (expected[-1] - start) + (b[1] - start2) + (c0 - c0_start)
    assert stats["transmissions"] == 43 and stats["busy_s"] == pytest.approx(busy, abs=1e-9)
    assert stats["rate"] == pytest.approx(43 / (busy / 0.1)) and stats["target_rate"] == 15.0
    assert min(clock.sleeps) == 0.0, "a passed deadline is not waited for"
    tx.log_stats()
    (event,) = tx.agent.log.events
    assert event == {"event": "state", "state": "abc transmitter", "transmissions": 43,
                     "busy_ns": round(busy * 1e9)}


def test_an_open_busy_period_counts_up_to_its_last_send():
    clock, sent = FakeClock(), []
    tx = _paced(clock, cost=0.0, sent=sent)

    async def go():
        tx.send(12, ["a", "b", "c"])
        while len(sent) < 2:
            await asyncio.sleep(0)
        tx.task.cancel()  # stopped with one transmission still queued

    start = clock.now
    asyncio.run(go())
    stats = tx.stats()
    assert stats["transmissions"] == 2 and stats["busy_s"] == pytest.approx(sent[1][0] - start)
    unpaced = _paced(clock, 0.0, [])
    unpaced.mean_s = unpaced.target_rate = None
    assert unpaced.stats()["rate"] is None
    unpaced.log_stats()
    assert not unpaced.agent.log.events, "an unpaced node logs no transmitter state"


def test_data_providers_are_a_seeded_fraction_that_every_node_agrees_on():
    names = [f"c{i}" for i in range(1, 156)]
    chosen = providers(names, 0.1, 7)
    assert len(chosen) == 16 and chosen == providers(names, 0.1, 7) != providers(names, 0.1, 8)
    assert providers(names[:9], 0.1, 1) and len(providers(names[:9], 0.1, 1)) == 1
    net = _Net(_scenario("ring", "data-providers"), seed=7)
    flagged = sorted(n for n, a in net.agents.items() if getattr(a.role, "provider", False))
    assert flagged == sorted(providers([n for n in net.agents if n.startswith("c")], 0.1, 7))


def test_senders_sets_exactly_how_many_components_send_and_excludes_providers(tmp_path):
    names = [f"c{i}" for i in range(1, 156)]
    chosen = providers(names, 0.1, 7, senders=15)
    assert len(chosen) == 15 and chosen == providers(names, 0.5, 7, senders=15) != providers(names, 0.1, 8, 15)
    base = open(SCENARIOS["ring"]).read().replace("topology: ../", f"topology: {ROOT}/")
    assert "providers: 0.1, " in base
    path = tmp_path / "s.yaml"
    path.write_text(base.replace("providers: 0.1, ", "senders: 4, "))
    net = _Net(load_scenario(str(path)), seed=7)
    flagged = sorted(n for n, a in net.agents.items() if getattr(a.role, "provider", False))
    assert flagged == sorted(providers([n for n in net.agents if n.startswith("c")], 0.1, 7, 4)) and len(flagged) == 4
    path.write_text(base.replace("providers: 0.1, ", "senders: 99, "))
    with pytest.raises(ValidationError) as err:
        load_scenario(str(path))
    assert "senders" in str(err.value) and "99 senders but only 15 components" in str(err.value)
    path.write_text(base + "  nodes:\n    c2: {params: {senders: 3}}\n")  # with the kind's providers: 0.1
    with pytest.raises(ValidationError) as err:
        load_scenario(str(path))
    assert "senders and providers are both given" in str(err.value) and "c2" in str(err.value)
    assert "s.yaml:20: workload.nodes.c2.params.senders:" in str(err.value), "it points at the line that set senders"


def test_structure_mistakes_are_usage_errors_naming_the_node_and_field(tmp_path):
    base = open(SCENARIOS["tree"]).read().replace("topology: ../", f"topology: {ROOT}/")
    path = tmp_path / "s.yaml"
    path.write_text(base.replace("role: abc-tree-server", "role: abc-ring-server"))
    with pytest.raises(ValidationError) as err:
        load_scenario(str(path))
    assert "next" in str(err.value) and "ring server" in str(err.value)
    path.write_text(base + "  nodes:\n    c1: {params: {workload: sometimes}}\n")
    with pytest.raises(ValidationError) as err:
        load_scenario(str(path))
    assert "sometimes" in str(err.value) and "communication-intensive" in str(err.value)
    cluster = open(SCENARIOS["cluster"]).read().replace("topology: ../", f"topology: {ROOT}/")
    path.write_text(cluster.replace("server: {role: abc-cluster-server}",
                                    "server: {role: abc-cluster-server, params: {dispatch: busy}}"))
    with pytest.raises(ValidationError) as err:
        load_scenario(str(path))
    assert "dispatch" in str(err.value) and "random" in str(err.value) and "free" in str(err.value)
    nodes = {"srv1": {"id": 1, "role": "abc-tree-server", "params": {"parent": "srv2"}},
             "srv2": {"id": 2, "role": "abc-tree-server", "params": {"parent": "srv1"}}}
    param, problem, _ = check_structure("abc-tree-server", "srv1", nodes)
    assert param == "parent" and "root" in problem
    nodes = {"c1": {"id": 1, "role": "abc-component", "params": {}}}
    param, problem, _ = check_structure("abc-component", "c1", nodes)
    assert param == "queue" and "cluster" in problem


def test_every_numeric_parameter_of_every_role_refuses_infinite_and_nan():
    """Whatever PARAMS check a role declares for a number, .inf, -.inf and .nan fail it (an infinite
    time_unit_ms or transmission_rate makes a node wait for ever; asyncio takes them silently)."""
    import importlib

    from agents.roles import check_params, role_names

    numeric = []
    for role in role_names():
        spec = getattr(importlib.import_module(role_module(role)), "PARAMS", None) or {}
        numeric += [(role, name) for name, (check, _) in spec.items() if check(1) or check(0.5)]
    assert ("abc-vertex", "time_unit_ms") in numeric and ("abc-tree-server", "transmission_rate") in numeric
    assert len(numeric) >= 17
    for role, name in numeric:
        for value, words in ((float("inf"), "inf is not finite"), (float("-inf"), "-inf is not finite"),
                             (float("nan"), "nan is not a number")):
            assert check_params(role, {name: value})[:2] == (name, words), (role, name, value)


def test_bodies_and_wire_identity_of_a_forwarded_data_message():
    net = _Net(_scenario("tree"), seed=8)
    seen = []
    orig = net.post

    def spy(target, header, body, sender):
        seen.append((target, header, body, sender))
        orig(target, header, body, sender)

    net.post = spy
    net.run(sends=1, senders=["c3"])
    data = [(t, h, b, s) for t, h, b, s in seen if h.type == MessageType.ABC_DATA]
    first = data[0]
    assert first[3] == "c3" and first[1].hops == 0 and not first[1].flags & Flags.RELAYED
    assert decode(first[2])["values"][:2] == ["c3", 1]
    relayed = data[1:]
    assert relayed and all(h.flags & Flags.RELAYED and h.origin == first[1].origin
                           and h.sequence == first[1].sequence and h.message_id == 0 for _, h, _, _ in relayed)
    assert {t for t, *_ in relayed} >= {f"c{i}" for i in range(1, 15)} - {"c3"}
    json.dumps([e for a in net.agents.values() for e in a.log.events])  # the logs are JSON


# -- real runs: containers on Mininet, captures, Spark ------------------------------------------

RUNS = {  # name: (scenario, --set overrides)
    "cluster-ci": ("cluster", ("workload.kinds.component.params.workload=communication-intensive",)),
    "ring-ci": ("ring", ("workload.kinds.component.params.workload=communication-intensive",)),
    "tree-ci": ("tree", ("workload.kinds.component.params.workload=communication-intensive",)),
}
COMMON = ("duration=4s", "quiet=2s", "workload.kinds.component.params.time_unit_ms=250")


def _logs(run_dir) -> Dict[str, List[Dict[str, Any]]]:
    out = {}
    for name in os.listdir(os.path.join(run_dir, "logs")):
        with open(os.path.join(run_dir, "logs", name)) as fh:
            out[name[:-len(".jsonl")]] = [json.loads(line) for line in fh]
    return out


def _from_logs(run_dir, settled_only: bool = False):
    """Total order and exactly-once from the logs alone: the ids the data sends carry are 0..n-1,
    once each, and every component delivers all others' messages once, in id order. With
    `settled_only` (a paced, lossy tree, whose components still send what they queued during the
    quiet period), a component delivers a prefix of that order, holding every message sent by the
    workload's end: one sent in the run's last milliseconds may reach nobody before the stop.
    Returns (the messages sent, or sent by the workload's end with settled_only; the logs)."""
    logs = _logs(run_dir)
    components = [n for n, ev in logs.items() if any(e.get("state") == "abc component" for e in ev)]
    sent, at = {}, {}
    for c in components:
        for e in logs[c]:
            if e["event"] == "send" and e["type"] == "ABC_DATA":
                assert e["order"] not in sent
                sent[e["order"]] = c
                at[e["order"]] = e["t"]
    assert sorted(sent) == list(range(len(sent)))
    settled = list(sent)
    if settled_only:
        with open(os.path.join(run_dir, "manifest.json")) as fh:
            end = json.load(fh)["workload_end_ns"]
        settled = [i for i in sent if at[i] <= end]
    for c in components:
        got = [e["order"] for e in logs[c] if e["event"] == "deliver"]
        upto = max([-1] + got + [i for i in settled if sent[i] != c]) + 1
        assert got == [i for i in range(upto) if sent.get(i) != c], c
    return len(settled), logs


@pytest.fixture(scope="module")
def abc_runs(machine, images, spark, tmp_path_factory):
    """The three communication-intensive runs, a paced one with 20% loss on a server link, and a
    graph colouring, analysed together in one Spark job."""
    from testbed.cleanup import leftovers
    base = tmp_path_factory.mktemp("abc")
    dirs = {}
    plan = dict(RUNS)
    plan["colouring"] = ("colouring", ())
    plan["tree-paced"] = ("tree", ("workload.kinds.component.params.workload=communication-intensive",
                                   "workload.defaults.params.transmission_rate=15",
                                   "workload.defaults.params.time_unit_ms=250"))
    for name, (kind, sets) in plan.items():
        out = base / name
        if kind == "colouring":
            args = ["run", os.path.join(ROOT, "scenarios", "abc-colouring.yaml"), "--out", str(out), "--quiet"]
        else:
            args = ["run", SCENARIOS[kind], "--out", str(out), "--quiet"]
            for item in COMMON + sets:
                args += ["--set", item]
        if name == "tree-paced":  # paced, and lossy: one run for both (the suite's time)
            lossy = base / "lossy.yaml"
            lossy.write_text(open(SCENARIOS["tree"]).read().replace("topology: ../", f"topology: {ROOT}/")
                             + "timeline:\n  - {at: 0s, action: set_link, link: [srv1, srv2], loss: 0.2}\n")
            args[1] = str(lossy)
        res = _testbed(*args)
        assert res.returncode == 0, f"{name}: {res.stderr[-3000:]}"
        dirs[name] = str(out)
    assert not leftovers(), "the runs left testbed objects behind"
    from .helpers import cli_in_process

    code, _, stderr = cli_in_process("analyze", "--quiet", *dirs.values())
    assert code == 0, stderr[-3000:]
    results = {}
    for name, d in dirs.items():
        with open(os.path.join(d, "report", "results.json")) as fh:
            results[name] = json.load(fh)
    return dirs, results


def assert_fault_free(run_dir: str, r: Dict[str, Any], time_unit_ms: int, providers: Any = None) -> None:
    """A fault-free AbC run, from its logs and its results: ids 0..n-1 once each, every component
    delivers every other's messages once and in id order, every check of order and delivery valid,
    every data message on every component's capture, and `providers` data providers (None: all
    components send). Also used on the runs of the reduced data-provider experiment."""
    n, logs = _from_logs(run_dir)
    assert n > 0, "the workload sent data messages"
    checks = {c["check"]: c for c in r["checks"]}
    for check in ("exactly-once", "at-most-once", "at-least-once", "total-order-sequencer", "total-order-global",
                  "no-phantom", "agreement"):
        assert checks[check]["verdict"] == "valid", (check, checks[check])
    a = r["abc"]
    assert a["messages"] == n and a["delivered_to_all"] == n
    assert a["ids"] == {"count": n, "reused": 0, "first": 0, "last": n - 1, "contiguous": True}
    assert a["dissemination_time"]["n"] == n and a["dissemination_time"]["mean_ms"] > 0
    assert a["message_time_gap"]["mean_ms"] > 0 and a["time_unit_ms"] == time_unit_ms
    assert a["dissemination_time"]["mean_time_units"] == pytest.approx(a["dissemination_time"]["mean_ms"] / time_unit_ms)
    # from wanting to send: the wait for an id comes on top of the dissemination
    assert a["delivery_time"]["n"] == n and a["delivery_time"]["mean_ms"] > a["dissemination_time"]["mean_ms"]
    assert a["accepted"] == a["messages"] * (a["components"] - 1) and a["discarded"] == 0
    assert a["receivers_disagree"] == 0
    providers_ = {node for node, ev in logs.items() for e in ev if e.get("state") == "abc component" and e["provider"]}
    assert len(providers_) == (a["components"] if providers is None else providers), providers_
    # the wire agrees: every data message reached every component's capture
    assert r["messages"]["ABC_DATA"]["sent"] == n
    assert r["messages"]["ABC_DATA"]["delivery_ratio"] == 1.0


@pytest.mark.spark
@pytest.mark.network
@pytest.mark.parametrize("name", list(RUNS))
def test_a_fault_free_run_keeps_total_order_and_exactly_once(abc_runs, name):
    """Every component sends (communication-intensive) on the three infrastructures; the data
    providers' workload is checked the same way on the reduced experiment's runs
    (tests/test_experiments.py)."""
    dirs, results = abc_runs
    assert_fault_free(dirs[name], results[name], 250)


def _ordered_run(abc_runs, name):
    """A run's logs and results, with data sent, exactly-once and per-sequencer total order (the
    messages sent by the workload's end all delivered: `_from_logs`'s settled_only)."""
    dirs, results = abc_runs
    n, logs = _from_logs(dirs[name], settled_only=True)
    assert n > 0
    r = results[name]
    checks = {c["check"]: c["verdict"] for c in r["checks"]}
    assert checks["exactly-once"] == "valid" and checks["total-order-sequencer"] == "valid"
    return n, logs, r


@pytest.mark.spark
@pytest.mark.network
def test_a_paced_infrastructure_keeps_the_order_and_takes_longer(abc_runs):
    _, _, r = _ordered_run(abc_runs, "tree-paced")
    results = abc_runs[1]
    paced, free = r["abc"]["dissemination_time"]["mean_ms"], results["tree-ci"]["abc"]["dissemination_time"]["mean_ms"]
    # a message crosses at least 3 paced transmissions (component, servers, component) of 1/15 of
    # a 250 ms time unit each, ~17 ms apiece, and usually waits behind others
    assert paced > 3 * 250 / 15 > free, (paced, free)
    # every paced node logged its transmitter at its stop; the servers all transmitted
    servers = r["abc"]["transmitters"]["servers"]
    assert servers["target_rate"] == 15 and servers["transmitting"] == servers["nodes"] > 0
    assert servers["median_rate"] > 0 and "transmitters" not in results["tree-ci"]["abc"], "unpaced: no events"


@pytest.mark.spark
@pytest.mark.network
def test_twenty_percent_loss_on_a_server_link_still_delivers_everything_in_order(abc_runs):
    n, logs, r = _ordered_run(abc_runs, "tree-paced")
    retransmits = sum(1 for ev in logs.values() for e in ev if e["event"] == "retransmit")
    assert retransmits > 0 and r["overhead"]["total"]["retransmissions"] > 0
    assert r["abc"]["delivered_to_all"] >= n


def _coloured(net: _Net):
    out = {}
    for name, agent in net.agents.items():
        for e in agent.log.events:
            if e.get("state") == "coloured":
                out[name] = (e["colour"], e["round"])
    return out


@pytest.mark.parametrize("infrastructure", ["cluster", "ring", "tree"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_graph_colouring_colours_every_vertex_unlike_its_neighbours(infrastructure, seed):
    text = open(os.path.join(ROOT, "scenarios", "abc-colouring.yaml")).read().replace("topology: ../", f"topology: {ROOT}/")
    if infrastructure != "cluster":  # the same graph on the first nine components of R[5,3] or T[3,2,2]
        topo = {"ring": "ring-5-3", "tree": "tree-3-2-2"}[infrastructure]
        text = text.replace("cluster-3-9.yaml", f"{topo}.yaml").replace("abc-cluster-server", f"abc-{infrastructure}-server")
        text = text.replace("component: {role: abc-vertex}", "component: {role: abc-component, params: {workload: none}}")
        for i in range(1, 10):
            text = text.replace(f"    c{i}: {{params:", f"    c{i}: {{role: abc-vertex, params:")
    scenario = parse_scenario_text(text, "colouring.yaml")
    net = _Net(scenario, seed=seed)
    for agent in net.agents.values():
        if agent.role.__class__.__name__ == "Vertex":
            asyncio.run(agent.role.run())
    net.run()
    coloured = _coloured(net)
    graph = {n: scenario.topology.nodes[n].params["neighbours"] for n in coloured}
    assert sorted(coloured) == [f"c{i}" for i in range(1, 10)], "every vertex is coloured"
    for v, ns in graph.items():
        for u in ns:
            assert coloured[u][0] != coloured[v][0], f"neighbours {u} and {v} share colour {coloured[u][0]}"
    assert len({c for c, _ in coloured.values()}) >= 4, "the king's graph needs four colours"
    assert coloured["c9"] == (0, 1), "the greatest id takes the smallest colour in round one"
    components = [n for n, a in net.agents.items() if isinstance(a.role, Component)]
    _check_total_order_exactly_once(net, components)


def test_a_vertex_graph_must_be_undirected_and_of_vertices():
    text = open(os.path.join(ROOT, "scenarios", "abc-colouring.yaml")).read().replace("topology: ../", f"topology: {ROOT}/")
    with pytest.raises(ValidationError) as err:
        parse_scenario_text(text.replace("c9: {params: {neighbours: [c5, c6, c8]}}", "c9: {params: {neighbours: [c5, c6]}}"),
                            "g.yaml")
    assert "c8 lists c9 but c9 does not list c8" in str(err.value)
    with pytest.raises(ValidationError) as err:
        parse_scenario_text(text.replace("[c5, c6, c8]", "[c5, c6, c8, srv1]"), "g.yaml")
    assert "'srv1' is not an abc-vertex" in str(err.value)


@pytest.mark.network
def test_graph_colouring_run_colours_the_kings_graph_and_the_analysis_checks_it(abc_runs):
    n, logs, r = _ordered_run(abc_runs, "colouring")
    col = r["abc"]["colouring"]
    assert col["verdict"] == "valid" and col["vertices"] == 9 and col["edges"] == 20 and col["coloured"] == 9
    assert col["colours"] >= 4 and col["rounds"] >= 2 and col["conflicts"] == 0
    coloured = {node: e["colour"] for node, ev in logs.items() for e in ev if e.get("state") == "coloured"}
    assert coloured == col["colouring"]
    html = open(os.path.join(abc_runs[0]["colouring"], "report", "index.html")).read()
    assert "Graph colouring" in html


def test_the_colouring_check_names_conflicting_edges_and_uncoloured_vertices():
    import pandas as pd
    from spark_analysis.protocols.abc import colouring
    manifest = {"topology": {"nodes": {
        "a": {"role": "abc-vertex", "params": {"neighbours": ["b", "c"]}},
        "b": {"role": "abc-vertex", "params": {"neighbours": ["a", "c"]}},
        "c": {"role": "abc-vertex", "params": {"neighbours": ["a", "b"]}},
        "s": {"role": "abc-cluster-server", "params": {}}}}}
    good = pd.DataFrame({"node": ["a", "b", "c"], "colour": [0, 1, 2], "round": [1, 1, 2]})
    assert colouring(manifest, good)["verdict"] == "valid" and colouring(manifest, good)["rounds"] == 2
    bad = pd.DataFrame({"node": ["a", "b"], "colour": [0, 0], "round": [1, 1]})
    res = colouring(manifest, bad)
    assert res["verdict"] == "invalid" and res["conflicts"] == 1 and res["uncoloured"] == ["c"]
    assert res["counterexamples"] == [{"edge": ["a", "b"], "colour": 0}]
    assert colouring({"topology": {"nodes": {}}}, good) is None


# -- the AbC measures, on a small run computed by hand ------------------------------------------

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000  # ns per second; one time unit is 100 ms here


def _paper_run(unit_ms=(100, 100, 100)):
    """Three components, four messages, a horizon at 10 s (100 time units):
    m1 c1→{c2,c3} wanted 0.5 s, sent 1.0, handled 1.2 and 1.5: delivery 1.0 s, dissemination 0.5 s;
    m2 c2→{c1,c3} wanted 2.0, sent 3.0, handled 3.1 and 4.0: delivery 2.0 s, dissemination 1.0 s;
    m3 c1→{c2,c3} wanted 8.0, sent 9.0, handled 9.5 and 12.0 (after the horizon): 4.0 s and 3.0 s;
    m4 c3→{c1,c2} wanted 4.5, sent 5.0, handled by c1 at 5.5 only: not complete."""
    import pandas as pd

    def at(seconds):
        return T0 + int(round(seconds * S))

    sends = pd.DataFrame({
        "origin": ["c1", "c2", "c1", "c3"], "seq": [1, 1, 2, 1], "type": ["ABC_DATA"] * 4,
        "t": [at(1.0), at(3.0), at(9.0), at(5.0)],
        "intended": [["c2", "c3"], ["c1", "c3"], ["c2", "c3"], ["c1", "c2"]],
        "order": pd.array([0, 1, 3, 2], "Int64"), "receivers": [None] * 4,
        "wanted_ns": pd.array([at(0.5), at(2.0), at(8.0), at(4.5)], "Int64")})
    rows = [("c2", "c1", 1, 1.2), ("c3", "c1", 1, 1.5), ("c1", "c2", 1, 3.1), ("c3", "c2", 1, 4.0),
            ("c1", "c3", 1, 5.5), ("c2", "c1", 2, 9.5), ("c3", "c1", 2, 12.0)]
    deliveries = pd.DataFrame({"node": [r[0] for r in rows], "origin": [r[1] for r in rows],
                               "seq": pd.array([r[2] for r in rows], "Int64"), "type": ["ABC_DATA"] * len(rows),
                               "t": [at(r[3]) for r in rows], "accepted": [True] * len(rows)})
    paced = {"transmission_rate": 15}
    nodes = {f"c{i + 1}": {"role": "abc-component", "params": {"time_unit_ms": u, **paced}}
             for i, u in enumerate(unit_ms)}
    nodes.update({f"s{i}": {"role": "abc-tree-server", "params": {"time_unit_ms": 100, **paced}} for i in (1, 2, 3)})
    manifest = {"t0_ns": T0, "started_ns": T0 - 3 * S, "scenario": {"duration_s": 10.0}, "topology": {"nodes": nodes}}
    # s3 restarted once: its two stops add up; c2 never transmitted; c3 logged nothing
    states = pd.DataFrame({"node": ["s1", "s2", "s3", "s3", "c1", "c2"], "state": ["abc transmitter"] * 6,
                           "t": [at(40)] * 6, "transmissions": pd.array([300, 150, 50, 50, 30, 0], "Int64"),
                           "busy_ns": pd.array([int(2.5 * S), S, S // 2, S // 2, 2 * S, 0], "Int64")})
    return sends, deliveries, manifest, states


def test_delivery_time_runs_from_wanting_to_send_and_dissemination_time_from_the_data_send():
    from spark_analysis.protocols.abc import measures

    sends, deliveries, manifest, states = _paper_run()
    a = measures(sends, deliveries, manifest, states)
    assert a["delivered_to_all"] == 3 and a["messages"] == 4 and a["time_unit_ms"] == 100
    dt, dis = a["delivery_time"], a["dissemination_time"]
    assert dt["n"] == 3 and dt["mean_ms"] == pytest.approx(7000 / 3) and dt["max_ms"] == pytest.approx(4000)
    assert dt["mean_time_units"] == pytest.approx(70 / 3)
    assert dis["n"] == 3 and dis["mean_ms"] == pytest.approx(1500) and dis["mean_time_units"] == pytest.approx(15)
    assert a["id_wait"]["mean_ms"] == pytest.approx(750)
    # at the horizon (10 s = 100 time units) m3 has not reached c3 yet: m1 and m2 only
    assert a["horizon_s"] == 10.0 and a["horizon_time_units"] == pytest.approx(100) and a["t_unit"] == "time unit"
    assert dt["at_horizon"] == {"n": 2, "mean_ms": pytest.approx(1500), "mean_time_units": pytest.approx(15)}
    assert dis["at_horizon"] == {"n": 2, "mean_ms": pytest.approx(750), "mean_time_units": pytest.approx(7.5)}
    # the gap: c1 3.1→5.5 (2.4 s), c2 1.2→9.5 (8.3 s), c3 1.5→4.0→12.0 (2.5 and 8.0 s, mean 5.25)
    gap = a["message_time_gap"]
    assert gap["mean_ms"] == pytest.approx((2400 + 8300 + 5250) / 3) and gap["components"] == 3
    assert gap["at_horizon"] == {"n": 3, "mean_ms": pytest.approx((2400 + 8300 + 2500) / 3),
                                 "mean_time_units": pytest.approx((24 + 83 + 25) / 3)}


def test_id_chain_follows_each_id_to_the_next_owner():
    """ids 0 c1 (sent 1.0), 1 c2 (3.0), 2 c3 (5.0), 3 c1 (9.0): c2 handled id 0 at 1.2, first of
    its two handlers; c3 handled id 1 at 4.0, last of two; c1 handled id 2 at 5.5, its only one."""
    from spark_analysis.protocols.abc import measures

    sends, deliveries, manifest, states = _paper_run()
    chain = measures(sends, deliveries, manifest, states)["id_chain"]
    assert chain["pairs"] == 3 and chain["same_owner"] == 0 and chain["owners"] == 3
    assert chain["send_interval"]["mean_ms"] == pytest.approx((2000 + 2000 + 4000) / 3)
    assert chain["send_interval"]["mean_time_units"] == pytest.approx(80 / 3)
    assert chain["reach_next_owner"]["mean_ms"] == pytest.approx((200 + 1000 + 500) / 3)
    assert chain["next_owner_rank"] == pytest.approx(0.5), "first of two, then last of two; one handler: no rank"
    assert chain["cycle_repeats"] == 1.0, "id 3's owner is id 0's"
    assert chain["first_wave_vs_node_order"] == pytest.approx(1.0), "c1, c2, c3 as the topology lists them"
    # the owners reversed against the topology's order, and one id whose owner sends twice running
    manifest["topology"]["nodes"] = dict(reversed(list(manifest["topology"]["nodes"].items())))
    sends.loc[2, "origin"] = "c3"  # id 3: c3 again, after its id 2
    chain = measures(sends, deliveries, manifest, states)["id_chain"]
    assert chain["first_wave_vs_node_order"] == pytest.approx(-1.0)
    assert chain["same_owner"] == 1 and chain["cycle_repeats"] == 0.0
    # one id alone: no chain
    one = sends.iloc[[0]].reset_index(drop=True)
    assert "id_chain" not in measures(one, deliveries, manifest, states)


def test_over_time_is_the_cumulative_mean_of_what_completed_by_each_point():
    from spark_analysis.protocols.abc import measures

    a = measures(*_paper_run())
    # up to the last handling at 12 s = 120 time units: 60 points, every 2 time units
    dt = dict((t, m) for t, m in a["delivery_time"]["over_time"])
    assert min(dt) == 16.0 and max(dt) == 120.0 and len(dt) == 53, "from the first completion (m1 at 15)"
    assert dt[16.0] == pytest.approx(10) and dt[38.0] == pytest.approx(10)
    assert dt[40.0] == pytest.approx(15) and dt[118.0] == pytest.approx(15), "m2 completes at 40"
    assert dt[120.0] == pytest.approx(70 / 3), "m3 completes at 120"
    dis = dict((t, m) for t, m in a["dissemination_time"]["over_time"])
    assert dis[40.0] == pytest.approx(7.5) and dis[120.0] == pytest.approx(15)
    gap = dict((t, m) for t, m in a["message_time_gap"]["over_time"])
    assert min(gap) == 40.0 and gap[40.0] == pytest.approx(25), "c3's first interval ends at 4.0 s"
    assert gap[56.0] == pytest.approx((24 + 25) / 2), "c1's ends at 5.5 s"
    assert gap[96.0] == pytest.approx((24 + 83 + 25) / 3) and gap[120.0] == pytest.approx((24 + 83 + 52.5) / 3)


def test_without_one_time_unit_over_time_is_in_seconds():
    from spark_analysis.protocols.abc import measures

    a = measures(*_paper_run(unit_ms=(100, 200, 100)))
    assert a["time_unit_ms"] is None and a["t_unit"] == "s" and a["horizon_time_units"] is None
    dt = dict((t, m) for t, m in a["delivery_time"]["over_time"])
    assert min(dt) == 1.6 and dt[1.6] == pytest.approx(1.0) and dt[12.0] == pytest.approx(7 / 3)
    assert a["delivery_time"]["at_horizon"] == {"n": 2, "mean_ms": pytest.approx(1500)}


def test_transmitters_report_each_paced_nodes_achieved_rate_and_each_groups_spread():
    from spark_analysis.protocols.abc import measures

    tx = measures(*_paper_run())["transmitters"]
    # rates per time unit (100 ms) of busy time: s1 300 in 25, s2 150 in 10, s3 100 in 10, c1 30 in 20
    assert tx["nodes"]["s1"] == {"transmissions": 300, "busy_s": 2.5, "rate": pytest.approx(12)}
    assert tx["nodes"]["s3"]["transmissions"] == 100 and tx["nodes"]["s3"]["rate"] == pytest.approx(10)
    assert tx["nodes"]["c2"] == {"transmissions": 0, "busy_s": 0.0, "rate": None} and "c3" not in tx["nodes"]
    from scipy.stats import chi2

    # pooled: 550 transmissions in 45 time units of busy time, and the one-sided 95% bound of a Gamma(550) time
    assert tx["servers"] == {"nodes": 3, "transmitting": 3, "transmissions": 550, "min_rate": pytest.approx(10),
                             "median_rate": pytest.approx(12), "max_rate": pytest.approx(15), "target_rate": 15.0,
                             "run_time_units": pytest.approx(300), "pooled_rate": pytest.approx(550 / 45),
                             "pooled_rate_high95": pytest.approx(chi2.ppf(0.95, 1100) / 90)}
    assert tx["components"]["transmitting"] == 1 and tx["components"]["median_rate"] == pytest.approx(1.5)


def test_the_report_section_shows_both_times_and_the_transmitters():
    from spark_analysis.protocols.abc import html, measures

    page = html(measures(*_paper_run()))
    assert "delivery time: wanting to send" in page and "dissemination time: data send" in page
    assert "horizon (end of the workload) at 100 time units" in page and "target rate" in page
    assert "next owner&#x27;s rank" in page or "next owner's rank" in page


@pytest.mark.spark
def test_the_analysis_job_reads_the_abc_measures_and_transmitter_states_from_logs(spark, tmp_path):
    """The same run as logs in a run directory (no captures): the job hands the plugin the data
    sends with wanted_ns, the deliveries and the `abc transmitter` state events with their columns."""
    from spark_analysis.job import analyze

    sends, deliveries, manifest, states = _paper_run()
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    names = sorted(manifest["topology"]["nodes"])
    manifest.update({"manifest_version": 1, "run_id": "run", "status": "completed",
                     "node_ids": {n: i + 1 for i, n in enumerate(names)},
                     "addresses": {n: {"eth0": f"10.0.0.{i + 1}/24"} for i, n in enumerate(names)}})
    manifest["scenario"]["name"] = "abc-by-hand"
    (run / "manifest.json").write_text(json.dumps(manifest))
    logs: Dict[str, List[dict]] = {n: [] for n in names}
    for s in sends.itertuples():
        logs[s.origin].append({"t": int(s.t), "node": s.origin, "event": "send", "type": "ABC_DATA", "origin": s.origin,
                               "seq": int(s.seq), "to": ["s1"], "bytes": 10, "frags": 1, "reliable": True,
                               "message_id": int(s.order), "hops": 0, "eligible": list(s.intended),
                               "order": int(s.order), "wanted_ns": int(s.wanted_ns)})
    for d in deliveries.itertuples():
        logs[d.node].append({"t": int(d.t), "node": d.node, "event": "deliver", "type": "ABC_DATA", "origin": d.origin,
                             "seq": int(d.seq), "message_id": 0, "sender": "s1", "accepted": True})
    for st in states.itertuples():
        logs[st.node].append({"t": int(st.t), "node": st.node, "event": "state", "state": "abc transmitter",
                              "transmissions": int(st.transmissions), "busy_ns": int(st.busy_ns)})
    for n, events in logs.items():
        (run / "logs" / f"{n}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in sorted(events, key=lambda e: e["t"])))
    (r,) = analyze([str(run)], spark=spark, progress=False).values()
    a = r["abc"]
    assert a["delivery_time"]["mean_ms"] == pytest.approx(7000 / 3) and a["dissemination_time"]["n"] == 3
    assert a["delivery_time"]["at_horizon"]["n"] == 2
    assert a["transmitters"]["servers"]["median_rate"] == pytest.approx(12)
    assert a["id_chain"]["pairs"] == 3 and a["id_chain"]["next_owner_rank"] == pytest.approx(0.5)
    assert r["input"]["undeclared_log_fields"] == [] and r["input"]["unreadable_log_lines"] == 0


def _waited_behind_a_busy_slot(run_dir: str) -> Tuple[int, int]:
    """(messages a server got from the queue host while transmissions of a message it got
    earlier were still to go out, messages servers got from the host), from the servers' logs:
    a data message's fan-out sends carry its id, a request's reply carries the id it gives."""
    answer = {"ABC_DATA": "ABC_DATA", "ABC_REQUEST": "ABC_REPLY"}
    waited = handed = 0
    for node, events in _logs(run_dir).items():
        if not node.startswith("srv") or node == "srv1":
            continue
        got = [(e["t"], answer[e["type"]], e["message_id"]) for e in events
               if e["event"] == "receive" and e.get("sender") == "srv1" and e.get("type") in answer]
        sends = [(e["t"], e["type"], e["message_id"]) for e in events
                 if e["event"] == "send" and e.get("type") in ("ABC_DATA", "ABC_REPLY")]
        handed += len(got)
        for t, kind, mid in got:
            before = {(k, m) for tt, k, m in got if tt < t}
            if any(st > t and (k, m) in before for st, k, m in sends):
                waited += 1
    return waited, handed


@pytest.mark.parametrize("dispatch, waits", [("random", True), ("free", False)])
def test_the_clusters_dispatch_reading_a_message_waits_behind_a_busy_slot_only_when_slots_take_regardless(
        no_leftovers, images, tmp_path, dispatch, waits):
    """C[3,9], every component sending, transmissions paced at λt: under the authors' dispatch
    (`random`, the default) a server gets messages from the queue while its transmissions of
    earlier ones are still going out, so a message waits behind a busy slot; under `free` a
    server takes only once its transmissions have left, so none ever does."""
    out = tmp_path / dispatch
    res = _testbed("run", SCENARIOS["cluster"], "--out", str(out), "--quiet", "--set", "duration=4s",
                   "--set", "quiet=2s", "--set", "workload.kinds.component.params.workload=communication-intensive",
                   "--set", "workload.defaults.params.transmission_rate=15",
                   "--set", "workload.defaults.params.time_unit_ms=250",
                   "--set", f"workload.kinds.server.params.dispatch={dispatch}")
    assert res.returncode == 0, res.stderr[-3000:]
    waited, handed = _waited_behind_a_busy_slot(str(out))
    assert handed > 20, handed
    assert (waited > 0) == waits, (dispatch, waited, handed)
