"""The agent runtime's cheap paths (issue 68), each against what it must keep: the event log
written a batch a loop turn but every event in the file before anything it led to leaves the node;
the reliable channel's ACKs read only when the retransmission timer comes, and still every message
delivered once whatever is lost; sleeps that never wake early on a loop with a millisecond clock;
the lag probe that wakes once a second when the agent is idle; the speed-ups' JSON equal to the
standard library's. The same paths run for real in tests/test_agents.py (containers, lossy links,
a killed node); here they are driven in one process so that every case can be generated."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import deque
from typing import Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents import speedups, wire
from agents.clock import Clock
from agents.runtime import Agent, Config, Role
from agents.wire import MessageType

NODES = {"a": {"id": 1, "address": "10.9.0.1", "role": "probe", "params": {}},
         "b": {"id": 2, "address": "10.9.0.2", "role": "probe", "params": {}},
         "c": {"id": 3, "address": "10.9.0.3", "role": "probe", "params": {}}}
PORT = 7777


def make_agent(tmp_path, name: str, use: frozenset = frozenset(), **config) -> Agent:
    cfg = Config(node=name, node_id=NODES[name]["id"], role="probe", params={}, seed=1, nodes=NODES,
                 broadcast=["10.9.0.255"], log=str(tmp_path / f"{name}.jsonl"), port=PORT, **config)
    return Agent(cfg, speedups_used=use)


class Delivering(Role):
    """Delivers every message, as the probe role does."""

    def on_message(self, header, body, sender):
        self.agent.deliver(header, sender=sender)


# -- the event log: a batch a turn, and every event on disk before a datagram leaves ----------------

class SnapshotTransport:
    """A transport (and the reliable channel's socket) that, at every datagram, reads the log file
    as another process would see it at that instant."""

    def __init__(self, log_path: str, written: List[bytes]) -> None:
        self.log_path, self.written, self.checks = log_path, written, []

    def sendto(self, datagram: bytes, address) -> None:
        with open(self.log_path, "rb") as fh:
            on_disk = fh.read().splitlines()
        self.checks.append((len(self.written), on_disk))

    def recvfrom(self, size: int):
        raise BlockingIOError


OPERATION = st.one_of(
    st.tuples(st.just("event"), st.integers(1, 3)),                       # a role logs state events
    st.tuples(st.just("send"), st.sampled_from(["b", ["b", "c"], "broadcast"]), st.booleans()),
    st.tuples(st.just("receive"), st.booleans()),                           # a datagram from b
    st.tuples(st.just("turn"), st.just(0)),                                 # the loop's turn ends
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(OPERATION, min_size=1, max_size=40))
def test_every_event_is_in_the_file_before_the_next_datagram_leaves_and_by_the_end_of_its_turn(tmp_path_factory,
                                                                                              operations):
    """What a SIGKILL can lose is bounded: at each datagram the file holds every event logged
    before it; at the end of each loop turn it holds every event. Checked over generated
    interleavings of events, sends (unicast, several receivers, broadcast; reliable or not),
    receives (which acknowledge) and turns."""
    tmp_path = tmp_path_factory.mktemp("log")

    async def scenario() -> Tuple[int, int]:
        agent = make_agent(tmp_path, "a")
        agent.role = Delivering(agent, {})
        written: List[bytes] = []
        dumps = agent.log._dumps
        agent.log._dumps = lambda record: written.append(dumps(record)) or written[-1]
        transport = SnapshotTransport(agent.config.log, written)
        agent._transport = agent._reliable_sock = transport
        turn: List = []
        agent.log.schedule = turn.append
        peer = 0
        pending_at_send = 0
        for op in operations:
            if op[0] == "event":
                for i in range(op[1]):
                    agent.log.write("state", state=f"step {i}")
            elif op[0] == "send":
                pending_at_send += bool(agent.log._batch)
                agent.send(MessageType.PROBE, b"x", to=op[1], reliable=op[2])
            elif op[0] == "receive":
                peer += 1
                header = wire.Header(type=MessageType.PROBE, origin=2, sequence=peer, sender=2,
                                     flags=wire.Flags.ACK_REQUESTED if op[1] else 0)
                agent._received(wire.encode(header, b"y"), (NODES["b"]["address"], PORT + 1))
            else:
                for callback in turn:
                    callback()
                turn.clear()
                with open(agent.config.log, "rb") as fh:
                    assert fh.read().splitlines() == written, "a turn ends with every event in the file"
        for count, on_disk in transport.checks:
            assert on_disk == written[:count], "a datagram left before an event logged ahead of it"
        if agent._retransmit_timer is not None:
            agent._retransmit_timer.cancel()
        return pending_at_send

    pending = asyncio.run(scenario())
    # the case that matters: a datagram leaving while events of its turn were still unwritten
    logged_then_sent = any(a[0] in ("event", "receive") and b[0] == "send" for a, b in zip(operations, operations[1:]))
    assert pending > 0 or not logged_then_sent


def test_the_log_is_written_a_batch_a_turn_not_a_line_at_a_time(tmp_path, monkeypatch):
    """Three events of one turn: one write()."""
    agent = make_agent(tmp_path, "a")
    calls = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append(bytes(data)) or real_write(fd, data))
    turn = []
    agent.log.schedule = turn.append
    for i in range(3):
        agent.log.write("state", state=f"s{i}")
    assert calls == [] and len(turn) == 1, "gathered, and one flush asked of the loop"
    turn[0]()
    assert len(calls) == 1 and calls[0].count(b"\n") == 3
    agent.log.close()
    with open(agent.config.log) as fh:
        assert [json.loads(line)["state"] for line in fh] == ["s0", "s1", "s2"]


# -- the reliable channel: ACKs read when the timer comes, every message once ------------------------

class Network:
    """Two agents' sockets joined in one process: each datagram is delivered on the loop's next
    turn unless the loss pattern drops it; port 7778 is the reliable channel's socket, which no
    one watches (its datagrams wait until the agent reads them)."""

    def __init__(self, loop, agents: Dict[str, Agent], losses: List[bool]) -> None:
        self.loop, self.agents, self.losses = loop, agents, deque(losses)
        self.queues: Dict[str, deque] = {name: deque() for name in agents}
        self.lost = {"data": 0, "ack": 0}
        for name, agent in agents.items():
            agent._transport = self.Endpoint(self, name, PORT)
            agent._reliable_sock = self.Endpoint(self, name, PORT + 1)

    class Endpoint:
        def __init__(self, net, name, port):
            self.net, self.name, self.port = net, name, port

        def sendto(self, datagram, address):
            net = self.net
            target = next(n for n, info in NODES.items() if info["address"] == address[0])
            header, _ = wire.decode(datagram)
            if net.losses and net.losses.popleft():
                net.lost["ack" if header.type == MessageType.ACK else "data"] += 1
                return
            source = (NODES[self.name]["address"], self.port)
            if address[1] == PORT + 1:
                net.queues[target].append((datagram, source))
            else:
                net.loop.call_soon(net.agents[target]._received, datagram, source)

        def recvfrom(self, size):
            queue = self.net.queues[self.name]
            if not queue:
                raise BlockingIOError
            return queue.popleft()


@settings(max_examples=40, deadline=None)
@given(count=st.integers(1, 12), losses=st.lists(st.booleans(), max_size=60))
@example(count=1, losses=[False, True])  # the ACK lost: the repeat of a delivered message
@example(count=2, losses=[True, False, False, True, True])  # data lost, then ACKs
def test_reliable_messages_arrive_once_whatever_is_lost_and_acks_wake_nobody(count, losses):
    """Generated loss patterns over data and ACKs (up to 60 datagrams' fates): every message is
    delivered exactly once, nothing is left pending, the sender retransmitted at least the data
    that was lost, and no ACK ever reached the sender's event loop (they wait on the unwatched
    socket until the timer reads them)."""
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="reliable-"))

    async def scenario():
        loop = asyncio.get_running_loop()
        a = make_agent(tmp_path, "a", reliable_timeout_ms=10)
        b = make_agent(tmp_path, "b", reliable_timeout_ms=10)
        for agent in (a, b):
            agent.role = Delivering(agent, {})
        net = Network(loop, {"a": a, "b": b}, losses)
        acks_on_loop = []
        received = a._received
        a._received = lambda data, addr: acks_on_loop.append(data) if wire.decode(data)[0].type == MessageType.ACK \
            else received(data, addr)
        for _ in range(count):
            a.send(MessageType.PROBE, b"m", to="b", reliable=True)
        deadline = time.monotonic() + 10
        while (a._pending or a._retransmit_timer is not None) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        for agent in (a, b):
            agent.log.close()
        return a, net, acks_on_loop

    a, net, acks_on_loop = asyncio.run(scenario())
    with open(tmp_path / "b.jsonl") as fh:
        delivered = [e["seq"] for e in map(json.loads, fh) if e["event"] == "deliver"]
    with open(tmp_path / "a.jsonl") as fh:
        log = [json.loads(line) for line in fh]
    exhausted = [e for e in log if e.get("reason") == "retries exhausted"]
    assert not acks_on_loop, "an ACK reached the event loop"
    assert not a._pending and a._retransmit_timer is None, "nothing pending, no timer left set"
    assert sorted(delivered) == sorted(set(delivered)), "a message delivered twice"
    assert set(delivered) | {e["seq"] for e in exhausted} == set(range(1, count + 1))
    if sum(losses) < 20:  # 20 transmissions of one message, each lost (or its ACK): none here
        assert not exhausted, "a message given up though its ACKs came back"
    assert a.counters["retransmissions"] >= net.lost["data"] - len(exhausted)


# -- sleeps never wake early on a loop with a millisecond clock -------------------------------------

@pytest.mark.parametrize("granularity", [0.0, 0.001])
def test_a_sleep_never_wakes_before_its_deadline_on_uvloop(granularity):
    """uvloop counts time in whole milliseconds and, left alone, wakes about two sleeps in five
    before their deadline (by up to the time the loop spent before the sleep was asked): the
    clock sleeps again for the rest. With granularity 0 the early wakes are frequent, so the
    second sleep is exercised; a sleep must be on time or late in every case."""
    uvloop = pytest.importorskip("uvloop")

    async def scenario():
        sleeps = []

        async def counted(seconds):
            sleeps.append(seconds)
            await asyncio.sleep(seconds)

        clock = Clock(wall_sleep=counted, granularity=granularity)
        rng = random.Random(5)
        early, calls = [], 0
        for i in range(300):
            deadline = clock.time() + rng.expovariate(1 / 0.003)
            before = len(sleeps)
            if i % 5 == 0:  # the loop busy before the sleep is asked: uvloop's clock falls behind
                busy_until = time.monotonic() + 0.0008
                while time.monotonic() < busy_until:
                    pass
            await clock.sleep_until(deadline)
            calls += len(sleeps) - before
            if time.monotonic() < deadline:
                early.append(deadline - time.monotonic())
        return early, calls

    loop = uvloop.new_event_loop()
    try:
        early, calls = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert not early, f"{len(early)} sleeps woke early"
    if granularity == 0.0:
        assert calls > 300, "the case that matters (an early wake slept again) never happened"


# -- the lag probe: once a second when idle, every 200 ms when datagrams flow without timers --------

def test_the_lag_probe_wakes_once_a_second_when_idle_and_every_200_ms_when_datagrams_flow(tmp_path):
    """An idle agent wakes once a second (its fidelity window); one that handles datagrams with
    no timer of its role to measure the loop's lag probes it every 200 ms."""
    async def scenario():
        agent = make_agent(tmp_path, "a")
        probes = []
        agent.clock.monitor.loop_lag = lambda late: probes.append(time.monotonic())
        task = asyncio.ensure_future(agent._housekeeping())
        await asyncio.sleep(2.5)
        idle = len(probes)

        async def traffic():
            while True:
                agent.counters["received_datagrams"] += 1
                await asyncio.sleep(0.05)

        flowing = asyncio.ensure_future(traffic())
        start = len(probes)
        await asyncio.sleep(3.0)  # the probe sleeping to the end of its window sees it within a second
        busy = len(probes) - start
        flowing.cancel()
        task.cancel()
        await asyncio.gather(task, flowing, return_exceptions=True)
        agent.log.close()
        return idle, busy

    idle, busy = asyncio.run(scenario())
    assert 1 <= idle <= 3, f"{idle} probes in 2.5 s idle: once a second"
    assert 9 <= busy <= 16, f"{busy} probes in 3 s of datagrams: every 200 ms once it has seen them"


# -- the speed-ups: same JSON as the standard library's, chosen by the environment ------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@given(record=st.dictionaries(st.text(min_size=1, max_size=8), JSON_VALUES, max_size=8))
def test_the_event_logs_json_parses_to_what_the_standard_library_writes(record):
    """Whatever a role logs (integers past 64 bits, integer keys, non-ASCII text), the fast
    encoder's line parses to the same object as json.dumps's."""
    pytest.importorskip("orjson")
    fast, name = speedups.json_encoder(frozenset({"orjson"}))
    slow, _ = speedups.json_encoder(frozenset())
    assert name.startswith("orjson")
    assert b"\n" not in fast(record)
    assert json.loads(fast(record)) == json.loads(slow(record)) == json.loads(json.dumps(record))


def test_integer_keys_and_huge_integers_are_written_as_json_writes_them():
    pytest.importorskip("orjson")
    fast, _ = speedups.json_encoder(frozenset({"orjson"}))
    record = {"late_hist": {3: 1, 10: 2}, "big": 2 ** 65, "name": "n\u00e9"}
    assert json.loads(fast(record)) == json.loads(json.dumps(record)) == {
        "late_hist": {"3": 1, "10": 2}, "big": 2 ** 65, "name": "n\u00e9"}


def test_the_speed_ups_are_chosen_by_the_environment():
    assert speedups.wanted("") == speedups.wanted("all") == frozenset(speedups.NAMES)
    assert speedups.wanted("none") == frozenset()
    assert speedups.wanted("orjson, nonsense") == frozenset({"orjson"})
    _, loop_name, grain = speedups.event_loop(frozenset())
    assert loop_name == "asyncio" and grain == 0.0
    pytest.importorskip("uvloop")
    _, loop_name, grain = speedups.event_loop(frozenset({"uvloop"}))
    assert loop_name.startswith("uvloop") and grain == 0.001
