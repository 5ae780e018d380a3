"""The agent runtime: what every role runs on, inside a container or as a plain process.

It reads the node's configuration (a JSON file written by the testbed), opens one UDP socket
for unicast and broadcast, encodes every message with the wire header (agents/wire.py),
fragments and reassembles bodies larger than a datagram, offers a reliable channel
(acknowledgement and retransmission with a bounded number of tries) to roles that assume
reliable links, and writes the event log: JSON lines of send, receive, deliver, drop (with a
reason), retransmit and state events, each stamped with CLOCK_REALTIME in nanoseconds, the
clock that every node on the machine shares and that packet captures use.

Roles take their time from `agent.clock` (agents/clock.py): virtual time when the run is
time-dilated (the config's `time_dilation`), and every timer's wake-up measured; the runtime writes what it measured as a
`fidelity` event every second of wall-clock time (how late timers woke, the event loop's lag, the
CPU the agent used), so that the analysis can tell whether the machine kept up.

With `wait_for_start` (runs), the role starts on SIGUSR2, so that the workload begins for all
agents at the same moment after the warm-up; an agent started mid-run (`--start-now`) starts its
workload at once, and its role sees `config.late_start`. SIGUSR1 ends the workload: the role's main loop stops (no new messages), while the agent keeps
receiving, acknowledging and retransmitting, so that the quiet period at the end of a run can
tell lost messages from late ones. SIGTERM stops the role and the agent within two seconds,
with the log flushed; a role's stop may return an awaitable (a leave that waits for its answer),
which the agent awaits, still receiving, for at most STOP_GRACE_S.

An exception a role raises (in its `run`, its message handler, its `stop` or a task it started)
is logged as an `error` event with its traceback, and the agent goes on: the analysis counts
errors and shows them in the report, instead of a role failing silently.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import importlib
import inspect
import itertools
import json
import os
import random
import signal
import socket
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Deque, Dict, List, Optional, Tuple

from . import speedups, wire
from .clock import Clock
from .roles import role_module
from .wire import Ext, Flags, Header, MessageType

DEFAULT_PORT = 7777
#: wall-clock seconds between two `fidelity` events, and between two probes of the loop's lag
FIDELITY_WINDOW_S = 1.0
#: how long the agent waits for what its role's stop returned (a leave waiting for its answer),
#: within the two seconds a SIGTERM gives an agent
STOP_GRACE_S = 1.5
#: how often the runtime probes its loop's lag while the agent handles datagrams and no timer of
#: its role woke since the last probe (a role's timers measure the lag themselves when they wake,
#: agents/clock.py); otherwise it probes once a fidelity window
LAG_PROBE_S = 0.2
#: how long an acknowledged datagram's sender and sequence are remembered, to acknowledge a
#: retransmission of it without delivering it twice
SEEN_RELIABLE_S = 60.0
#: in the node's directory: its current position on a radio segment, replaced atomically by the
#: testbed at every tick that moves it (testbed.media.radio)
POSITION_FILE = "position.json"


@dataclass(frozen=True)
class Position:
    """Where the radio medium places a node: metres, on `segment`, as of model time `t_s`."""

    x: float
    y: float
    z: float
    segment: str
    t_s: float


def read_position(directory: str) -> Optional[Position]:
    """The node's current position from its directory ($TESTBED_DIR), the same position the
    medium uses; None for a node on no radio segment. The testbed rewrites the file in place
    with the record's sequence number at both ends: a read that caught a write half-done sees
    them differ (or no JSON) and reads again."""
    path = os.path.join(directory, POSITION_FILE)
    for _ in range(100):
        try:
            with open(path, "rb") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if data.get("seq") == data.get("end"):
            return Position(float(data["x"]), float(data["y"]), float(data.get("z", 0.0)), str(data["segment"]),
                            float(data.get("t_s", 0.0)))
    raise OSError(f"{path}: no consistent position after 100 reads")


def now_ns() -> int:
    return time.time_ns()


class EventLog:
    """The event log: JSON lines, one event each, appended to the node's events.jsonl.

    Events are gathered in memory and written together, one write() a batch: before the agent
    sends any datagram (Agent._sendto flushes first), and before its event loop next waits for
    anything (the first event of a batch asks the loop to flush at its next turn, `schedule`).
    So every event is in the file before anything it led to leaves the node, and a node killed
    with SIGKILL loses at most the events of the loop's turn it was killed in that no datagram
    has followed: events no other node can have seen an effect of (docs/EVENTS.md). Until the
    agent's loop runs, and once it has stopped, every event is written at once."""

    def __init__(self, path: str, node: str, dumps: Optional[Callable[[Any], bytes]] = None) -> None:
        self.node = node
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._dumps = dumps or speedups.json_encoder(frozenset())[0]
        self._batch: List[bytes] = []
        #: loop.call_soon while the agent's loop runs: how a batch's first event asks for its flush
        self.schedule: Optional[Callable[[Callable[[], None]], Any]] = None
        self._count = 0

    def write(self, event: str, t: Optional[int] = None, **fields: Any) -> None:
        record = {"t": t or now_ns(), "node": self.node, "event": event}
        record.update(fields)
        batch = self._batch
        batch.append(self._dumps(record))
        self._count += 1
        if len(batch) == 1:
            if self.schedule is None:
                self.flush()
            else:
                self.schedule(self.flush)

    def flush(self) -> None:
        """Write what was gathered (one write, repeated only if the kernel took part of it)."""
        if not self._batch:
            return
        data = b"\n".join(self._batch) + b"\n"
        self._batch.clear()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def close(self) -> None:
        self.schedule = None
        self.flush()
        os.fsync(self._fd)
        os.close(self._fd)


@dataclass
class Config:
    node: str
    node_id: int
    role: str
    params: Dict[str, Any]
    seed: int
    nodes: Dict[str, Dict[str, Any]]  # name → {"id", "address", "role", "params"}
    broadcast: List[str]
    log: str
    port: int = DEFAULT_PORT
    neighbors: List[str] = field(default_factory=list)
    wait_for_start: bool = False  # runs: the workload starts on SIGUSR2, for all agents at once
    #: started mid-run (a restart, or a node held back for the timeline): the others have been
    #: running; a role with state to join (a cluster, vector clocks) joins rather than assumes
    late_start: bool = False
    reliable_timeout_ms: float = 200.0
    reliable_tries: int = 20
    run_seed: int = 0  # the scenario's seed, the same for every node (the node's own is `seed`)
    #: the emulated world runs this many times slower than the wall clock (agents/clock.py)
    time_dilation: float = 1.0
    #: the wall-clock instant (ns) from which every node's virtual clock counts; None: the agent's start
    clock_origin_ns: Optional[int] = None

    @classmethod
    def load(cls, path: str) -> "Config":
        with open(path) as handle:
            data = json.load(handle)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


class Role:
    """Base class of every role: `run()` drives it, `on_message()` handles what arrives."""

    def __init__(self, agent: "Agent", params: Dict[str, Any]) -> None:
        self.agent = agent
        self.params = params

    async def run(self) -> None:
        """The role's main loop; returning ends the role, not the agent."""

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        """A whole message arrived (fragments reassembled, duplicates of reliable sends removed)."""

    def stop(self) -> Optional[Awaitable[None]]:
        """Called on SIGTERM before the log is flushed. It may return an awaitable (a leave that
        waits for an answer): the agent awaits it, still receiving, for at most STOP_GRACE_S."""


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, agent: "Agent") -> None:
        self.agent = agent

    def datagram_received(self, data: bytes, addr: Tuple[str, int]) -> None:
        self.agent._received(data, addr)

    def error_received(self, exc: Exception) -> None:
        self.agent.log.write("drop", reason=f"socket error: {exc}")


class Agent:
    def __init__(self, config: Config, speedups_used: Optional[frozenset] = None) -> None:
        self.config = config
        self.name = config.node
        self.id = config.node_id
        self.rng = random.Random(config.seed)
        use = speedups.wanted() if speedups_used is None else speedups_used
        self.loop_factory, loop_name, granularity = speedups.event_loop(use)
        dumps, json_name = speedups.json_encoder(use)
        self.speedups = {"loop": loop_name, "json": json_name}
        self.clock = Clock(config.time_dilation, config.clock_origin_ns, granularity=granularity)
        self.log = EventLog(config.log, config.node, dumps)
        self.by_id = {info["id"]: name for name, info in config.nodes.items()}
        self.by_address = {info["address"]: name for name, info in config.nodes.items() if info.get("address")}
        self._sequence = 0
        self._transport: Optional[asyncio.DatagramTransport] = None
        # the reliable channel's socket (port + 1): reliable datagrams leave from it, so their ACKs
        # come back to it; the event loop does not watch it, so an ACK never wakes the agent: they
        # are read when the retransmission timer comes, and at the stop
        self._reliable_sock: Optional[socket.socket] = None
        self._reassembler = wire.Reassembler()
        # reliable sends awaiting ACK, keyed by (receiver, origin, sequence, fragment): the receiver
        # by node name, since a node with several interfaces may acknowledge from another address;
        # each [datagram, tries, deadline, address]. Their deadlines in a heap of (deadline, tie,
        # key), entries of acknowledged sends left in it until they come to the top; one timer,
        # set for the earliest deadline of a send still unacknowledged (it may come once more after
        # the last ACK, and is then not set again: an agent with nothing to resend has no timer).
        self._pending: Dict[Tuple[str, int, int, int], List[Any]] = {}
        self._deadlines: List[Tuple[float, int, Tuple[str, int, int, int]]] = []
        self._tie = itertools.count()
        self._retransmit_timer: Optional[asyncio.TimerHandle] = None
        self._timeout_s = config.reliable_timeout_ms / 1000
        # reliable datagrams received (sender, origin, sequence, fragment), and in arrival order
        # with their time, so that the old ones are forgotten from the front
        self._seen_reliable: Dict[Tuple[int, int, int, int], float] = {}
        self._seen_order: Deque[Tuple[float, Tuple[int, int, int, int]]] = deque()
        self.role: Optional[Role] = None
        self.counters = {"sent_datagrams": 0, "received_datagrams": 0, "retransmissions": 0}
        self._window_start = time.monotonic()  # of the fidelity window now open

    # -- sending ----------------------------------------------------------------------------------

    def next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def address_of(self, node: str) -> str:
        return self.config.nodes[node]["address"]

    def position(self) -> Optional[Position]:
        """This node's current position on its radio segment (None when it is on none)."""
        return read_position(os.path.dirname(self.config.log))

    def send(self, mtype: int, body: bytes = b"", to: Any = "broadcast", reliable: bool = False,
             message_id: int = 0, extensions: Optional[Dict[int, bytes]] = None, origin: Optional[int] = None,
             sequence: Optional[int] = None, hops: int = 0, flags: int = 0, log: bool = True,
             **log_fields: Any) -> int:
        """Send a message to a node, a list of nodes, or "broadcast"; returns its sequence number.

        A relay passes the original origin and sequence (and hops + 1). `log_fields` are added to
        the send event (the analysis reads `eligible`, `order`, `sequencer`, `priority`, ...)."""
        seq = sequence if sequence is not None else self.next_sequence()
        flags = int(flags)  # an int, not a Flags: enum arithmetic costs more than the rest of a send
        if to == "broadcast":
            targets = [(a, None) for a in self.config.broadcast]
            flags |= _BROADCAST
            reliable = False  # broadcast has no single receiver to acknowledge
        else:
            nodes = self.config.nodes
            names = [to] if isinstance(to, str) else list(to)
            targets = [(nodes[n]["address"], n) for n in names]
        if reliable:
            flags |= _ACK_REQUESTED
        header = Header(type=mtype, origin=origin or self.id, sequence=seq, sender=self.id, hops=hops,
                        message_id=message_id, extensions=dict(extensions) if extensions else {}, flags=flags)
        datagrams = wire.fragment(header, body)
        sent_at = now_ns()  # before the first datagram leaves: a receiver may log before we do
        if log:  # logged before transmitting: a node killed mid-send has no delivery without its send
            self.log.write("send", t=sent_at, type=_type_name(mtype), origin=self.by_id.get(header.origin, header.origin),
                           seq=seq, to=to if isinstance(to, str) else names, bytes=len(body),
                           frags=len(datagrams), reliable=reliable, message_id=message_id, hops=hops, **log_fields)
        for address, target in targets:
            for frag_index, datagram in enumerate(datagrams):  # wire.fragment numbers them in order
                if reliable:
                    self._send_reliable(datagram, address)
                    self._expect_ack((target, header.origin, seq, frag_index), datagram, address)
                else:
                    self._sendto(datagram, address)
        return seq

    def _sendto(self, datagram: bytes, address: str, port: Optional[int] = None) -> None:
        self.log.flush()  # every event is in the file before what it led to leaves the node
        try:
            self._transport.sendto(datagram, (address, port or self.config.port))
            self.counters["sent_datagrams"] += 1
        except OSError as exc:
            self.log.write("drop", reason=f"send failed: {exc}", to=address)

    def _send_reliable(self, datagram: bytes, address: str) -> None:
        """A datagram of the reliable channel, from its own socket (its ACK comes back there). A
        datagram the kernel refuses is logged and left to the retransmission, as a lost one."""
        self.log.flush()
        try:
            self._reliable_sock.sendto(datagram, (address, self.config.port))
            self.counters["sent_datagrams"] += 1
        except OSError as exc:
            self.log.write("drop", reason=f"send failed: {exc}", to=address)

    # -- the reliable channel's retransmissions ---------------------------------------------------

    def _expect_ack(self, key: Tuple[str, int, int, int], datagram: bytes, address: str) -> None:
        deadline = self.clock.time() + self._timeout_s
        self._pending[key] = [datagram, 1, deadline, address]
        heapq.heappush(self._deadlines, (deadline, next(self._tie), key))
        if self._retransmit_timer is None:
            self._retransmit_timer = self.clock.call_later(self._timeout_s, self._retransmit_due)

    def _acknowledged(self, key: Tuple[str, int, int, int]) -> None:
        if self._pending.pop(key, None) is not None and not self._pending:
            # nothing awaits an ACK: the heap's entries are all stale. The timer stays: it finds
            # nothing and is not set again, which costs less than cancelling and setting it anew
            # for every send of a node that sends one reliable message at a time
            self._deadlines.clear()

    def _read_acks(self) -> None:
        """Take the ACKs waiting on the reliable channel's socket."""
        sock, by_address, by_id = self._reliable_sock, self.by_address, self.by_id
        if sock is None:
            return
        while True:
            try:
                data, addr = sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # an ICMP error the kernel queued for an earlier send
                continue
            self.counters["received_datagrams"] += 1
            try:
                header, _ = wire.decode(data)
            except wire.WireError as exc:
                self.log.write("drop", reason=f"not a testbed message: {exc}", peer=addr[0])
                continue
            if header.type != _ACK:
                self.log.write("drop", reason="not an ACK on the reliable channel's port", peer=addr[0])
                continue
            origin, seq, frag = wire.read_acked(header.extensions.get(Ext.ACKED, b"\0" * 10))
            self._acknowledged((by_id.get(header.sender) or by_address.get(addr[0], addr[0]), origin, seq, frag))

    def _retransmit_due(self) -> None:
        """The earliest deadline came: read the ACKs that arrived, send again what is still
        unacknowledged at its deadline (with exponential backoff, up to `reliable_tries`
        transmissions), then set the timer for the next deadline, at least a quarter of the
        timeout away so that a burst of sends is looked at in one go."""
        self._retransmit_timer = None
        self._read_acks()
        now = self.clock.time()
        heap, pending, timeout = self._deadlines, self._pending, self._timeout_s
        while heap:
            deadline, _, key = heap[0]
            entry = pending.get(key)
            if entry is None or entry[2] != deadline:  # acknowledged, or sent again since
                heapq.heappop(heap)
                continue
            if deadline > now:
                break
            heapq.heappop(heap)
            datagram, tries, _, address = entry
            target = key[0]
            if tries >= self.config.reliable_tries:
                del pending[key]
                self.log.write("drop", reason="retries exhausted", origin=self.by_id.get(key[1], key[1]),
                               seq=key[2], frag=key[3], to=target, tries=tries)
                continue
            repeat = bytearray(datagram)
            repeat[4] |= _RETRANSMISSION
            self.log.write("retransmit", origin=self.by_id.get(key[1], key[1]), seq=key[2], frag=key[3],
                           to=target, attempt=tries + 1)
            self._send_reliable(bytes(repeat), address)
            self.counters["retransmissions"] += 1
            entry[1] = tries + 1
            entry[2] = now + timeout * (2 ** min(tries, 4))
            heapq.heappush(heap, (entry[2], next(self._tie), key))
        if heap:
            wait = max(heap[0][0] - now, timeout / 4)
            self._retransmit_timer = self.clock.call_later(wait, self._retransmit_due)

    # -- receiving --------------------------------------------------------------------------------

    def _received(self, data: bytes, addr: Tuple[str, int]) -> None:
        self.counters["received_datagrams"] += 1
        try:
            header, payload = wire.decode(data)
        except wire.WireError as exc:
            self.log.write("drop", reason=f"not a testbed message: {exc}", peer=addr[0])
            return
        if header.sender == self.id:
            return  # our own broadcast, looped back to our socket
        sender = self.by_id.get(header.sender) or self.by_address.get(addr[0], addr[0])
        if header.type == _ACK:  # an agent that sent its reliable datagram from this port
            origin, seq, frag = wire.read_acked(header.extensions.get(Ext.ACKED, b"\0" * 10))
            self._acknowledged((sender, origin, seq, frag))
            return
        flags = header.flags
        if flags & _ACK_REQUESTED:  # acknowledged to where it came from: the sender's reliable channel
            ack = Header(type=_ACK, origin=self.id, sequence=0, sender=self.id,
                         extensions={Ext.ACKED: wire.acked(header.origin, header.sequence, header.frag_index)})
            self._sendto(wire.encode(ack), addr[0], addr[1])
            key = (header.sender, header.origin, header.sequence, header.frag_index)
            if key in self._seen_reliable:
                return  # a retransmission of what arrived already: acknowledged again, not delivered twice
            now = self.clock.time()
            self._seen_reliable[key] = now
            self._seen_order.append((now, key))
        if header.frag_count != 1:
            whole = self._reassembler.add(header, payload, self.clock.time())
            if whole is None:
                return
            header, payload = whole
        origin = header.origin
        self.log.write("receive", type=_type_name(header.type), origin=self.by_id.get(origin, origin),
                       seq=header.sequence, sender=sender, hops=header.hops, bytes=len(payload),
                       message_id=header.message_id, retransmission=bool(flags & _RETRANSMISSION))
        if self.role is not None:
            try:
                self.role.on_message(header, payload, sender)
            except Exception as exc:
                self.log_error("on_message", exc, type=_type_name(header.type),
                               origin=self.by_id.get(origin, origin), seq=header.sequence)

    def log_error(self, where: str, exc: BaseException, **fields: Any) -> None:
        """An exception of the role, as an `error` event with its traceback (the agent goes on)."""
        self.log.write("error", where=where, error=f"{type(exc).__name__}: {exc}",
                       traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), **fields)

    def deliver(self, header: Header, **fields: Any) -> None:
        """Record that the role delivered a message to the application."""
        origin = header.origin
        self.log.write("deliver", type=_type_name(header.type), origin=self.by_id.get(origin, origin),
                       seq=header.sequence, message_id=header.message_id, **fields)

    async def _housekeeping(self) -> None:
        """The loop's lag probed (how late this very sleep woke): every LAG_PROBE_S while the
        agent handles datagrams and its role's timers, which measure the lag whenever they wake,
        were silent since the last probe; otherwise once a window. Every FIDELITY_WINDOW_S the
        `fidelity` event; incomplete messages expired, and old reliable receipts forgotten."""
        counters, monitor = self.counters, self.clock.monitor
        datagrams, wakeups = -1, -1
        while True:
            moved = counters["sent_datagrams"] + counters["received_datagrams"]
            step = LAG_PROBE_S
            if moved == datagrams or monitor.wakeups != wakeups:  # to the end of the window
                step = max(LAG_PROBE_S, FIDELITY_WINDOW_S - (time.monotonic() - self._window_start))
            datagrams, wakeups = moved, monitor.wakeups
            asked = time.monotonic() + step
            await asyncio.sleep(step)
            woke = time.monotonic()
            monitor.loop_lag((woke - asked) / self.clock.dilation)
            if woke - self._window_start >= FIDELITY_WINDOW_S - LAG_PROBE_S / 2:
                self._log_fidelity()
            now = self.clock.time()
            if self._reassembler.pending:
                for key, got, expected in self._reassembler.expire(now):
                    self.log.write("drop", reason="incomplete message", origin=self.by_id.get(key[0], key[0]),
                                   seq=key[1], fragments=got, expected=expected)
            order, seen_reliable = self._seen_order, self._seen_reliable
            while order and now - order[0][0] > SEEN_RELIABLE_S:
                del seen_reliable[order.popleft()[1]]

    def _log_fidelity(self) -> None:
        now = time.monotonic()
        self.log.write("fidelity", window_us=int(round((now - self._window_start) * 1e6)),
                       **self.clock.monitor.window())
        self._window_start = now

    # -- life cycle -------------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._task_failed)
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind(("0.0.0.0", self.config.port))
        self._transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), sock=sock)
        reliable = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        reliable.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reliable.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        reliable.bind(("0.0.0.0", self.config.port + 1))
        reliable.setblocking(False)
        self._reliable_sock = reliable
        module = importlib.import_module(role_module(self.config.role))
        self.role = module.ROLE(self, self.config.params)
        go = asyncio.Event()
        loop.add_signal_handler(signal.SIGUSR2, go.set)
        if not self.config.wait_for_start:
            go.set()

        async def workload_when_told() -> None:
            await go.wait()
            if self.config.wait_for_start:
                self.log.write("state", state="workload started")
            try:
                await self.role.run()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the role's loop ends; the agent keeps receiving
                self.log_error("run", exc)

        workload = asyncio.ensure_future(workload_when_told())

        def quiesce() -> None:
            if not workload.done():
                workload.cancel()
            self.log.write("state", state="quiesced")

        loop.add_signal_handler(signal.SIGUSR1, quiesce)
        self.log.write("state", state="started", role=self.config.role, pid=os.getpid(), node_id=self.id,
                       **self.speedups)
        self.log.flush()  # the runner waits for this line before it starts the workload
        self.log.schedule = loop.call_soon  # from here on, events are written a batch a turn
        # what start-up made (modules, the configuration, the role's tables) lives as long as the
        # agent: out of the collector's way, so that its passes look at what messages make
        gc.freeze()
        tasks = [workload, asyncio.ensure_future(self._housekeeping())]
        await stop.wait()
        try:
            leaving = self.role.stop()
            if inspect.isawaitable(leaving):
                await asyncio.wait_for(leaving, STOP_GRACE_S)
        except asyncio.TimeoutError:
            self.log_error("stop", TimeoutError(f"the role's stop took more than {STOP_GRACE_S:g} s"))
        except Exception as exc:
            self.log_error("stop", exc)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._retransmit_timer is not None:
            self._retransmit_timer.cancel()
        self._read_acks()
        self._log_fidelity()
        self.log.write("state", state="stopped", **self.counters, pending_reliable=len(self._pending))
        self._transport.close()
        self._reliable_sock.close()
        self.log.close()


    def _task_failed(self, loop, context: Dict[str, Any]) -> None:
        """asyncio's handler for an exception nobody awaited (a task or callback a role started)."""
        exc = context.get("exception")
        if exc is None:
            self.log.write("error", where="task", error=str(context.get("message")), traceback="")
        else:
            self.log_error("task", exc)


_ACK = int(MessageType.ACK)
_ACK_REQUESTED = int(Flags.ACK_REQUESTED)
_RETRANSMISSION = int(Flags.RETRANSMISSION)
_BROADCAST = int(Flags.BROADCAST)
_TYPE_NAMES = {int(t): t.name for t in MessageType}


def _type_name(mtype: int) -> str:
    name = _TYPE_NAMES.get(mtype)
    return name if name is not None else str(mtype)


def _run(main: Awaitable[None], loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
    """asyncio.run on the loop the factory makes (asyncio.Runner takes a factory from Python 3.11)."""
    runner = getattr(asyncio, "Runner", None)
    if runner is not None:
        with runner(loop_factory=loop_factory) as r:
            r.run(main)
        return
    loop = loop_factory()
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(main)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="agent", description="The testbed's node agent.")
    parser.add_argument("--config", required=True, help="the node's configuration (JSON)")
    parser.add_argument("--start-now", action="store_true",
                        help="start the workload at once even if the config says to wait (a restart mid-run)")
    args = parser.parse_args(argv)
    # Until the event loop takes SIGTERM over, it interrupts start-up, which is logged below.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    config = Config.load(args.config)
    if args.start_now:
        config.wait_for_start = False
        config.late_start = True
    agent = Agent(config)
    try:
        _run(agent.run(), agent.loop_factory)
    except KeyboardInterrupt:
        agent.log.write("state", state="stopped", during="start-up")
        agent.log.close()
    except Exception as exc:
        agent.log_error("start", exc)
        agent.log.write("state", state="failed", error=f"{type(exc).__name__}: {exc}")
        agent.log.close()
        raise
    return 0

