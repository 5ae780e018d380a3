"""The `abc-component` role: an AbC component inside an infrastructure component (Table 2).

A component has an attribute environment Γ (`attributes`). It sends AbC messages (ṽ)@Π: for each,
it asks its server for a fresh id (request), waits for the reply, and sends the data message
with that id once it has handled every message with a smaller id (rule Snd: nid == mid). It
handles data messages strictly in id order: a message with id ≥ nid waits in the priority queue
W, one with id < nid is a duplicate and is dropped, and the top of W is handled when its id is
nid (rule Hnd). Handling is the infrastructure's delivery, logged as a `deliver` event for every
component; `accepted` says whether the component received the message (Γ satisfies the sender's
predicate Π) or discarded it, as the paper's semantics does (rule fComp).

Which server: the `parent` the topology gives (ring and tree); in a cluster, the node hosting
the cluster's shared queue (agents/abc/cluster.py), the first `abc-cluster-server` unless `queue`
names another (give servers the same `queue`).

Workload (the paper's section 4): `workload: data-providers` (default), where a fraction
`providers` (default 0.1) of the components send, or exactly `senders` of them (the authors'
simulator has 15 of 155 where round(0.1 × 155) is 16; give one or the other, not both), chosen
with the scenario's seed so every node agrees; `communication-intensive`, where every component sends; `none`, where it only receives.
A sender draws exponential inter-send times at rate `rate` (λs, default 1) per time unit, and a
time unit lasts `time_unit_ms` milliseconds (default 1000), which maps the paper's time units to
(virtual) time: the agent clock's. A component has one send in flight (the flag `on`) and is blocked meanwhile, so
its next inter-send time starts when the data message has left: an overloaded infrastructure
slows its senders down, as in the paper's model, instead of piling sends up. An application
(agents/abc/colouring.py) may queue several sends; they leave one at a time. When the workload
ends, queued sends not yet started are dropped (and counted in a state event), while one whose
id was asked for completes, since every other component waits for that id. `count` caps the messages a sender sends; `size` adds bytes
of padding to each data message.

Every data message is meant for every other component (the infrastructure delivers to all and
each decides), so its send event lists them in `eligible`, with the id as `order` for the
analysis's total-order check, and in `receivers` the components whose attributes, as the
topology gives them, satisfy the predicate: found with the correlation-set radix trees
(agents/abc/correlation.py) for equality predicates and by evaluation otherwise. The analysis
compares them with the components that accepted the message.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

from ..roles import MAX_BODY_BYTES, MAX_COUNT, MAX_SECONDS, is_number, number_at_least, whole_at_least
from ..runtime import Role
from ..wire import Header, MessageType
from . import correlation, predicates
from .common import (COMPONENT, RATE_PARAMS, TRANSMITTER_FIELDS, positive, Structure, StructureError, Transmitter,
                     WaitingQueue, decode, encode)
from .common import PROMISES  # noqa: F401 (the registry reads it)
from .common import structure_problem

WORKLOADS = ("data-providers", "communication-intensive", "none")


def _predicate_ok(value: Any) -> bool:
    try:
        predicates.from_json(value)
    except (ValueError, TypeError, KeyError):
        return False
    return True


#: the fields a component adds to its events (agents/events.py)
EVENT_FIELDS = {
    "send": {"receivers": ("array", "the components whose attributes satisfy the predicate, as the sender "
                                    "computes them from the topology"),
             "wanted_ns": ("integer", "when the component decided to send (rule Out): its wait for an id starts "
                                      "here")},
    "deliver": {"order": ("integer", "the message's id: a component handles data messages in id order")},
    "state": {"server": ("string", "the component's server (state abc component)"),
              "provider": ("boolean", "whether it sends (data-providers workload)"),
              "workload": ("string", "data-providers, communication-intensive or none"),
              "count": ("integer", "messages queued but never sent when the workload ended "
                                   "(state abc sends not started)"),
              **TRANSMITTER_FIELDS},
}

PARAMS = {
    "workload": (lambda v: v in WORKLOADS, ", ".join(WORKLOADS)),
    "providers": (lambda v: is_number(v) and 0 < v <= 1, "the fraction of components that send, a number in (0, 1]"),
    "senders": (whole_at_least(1, MAX_COUNT), "how many components send (data-providers), a whole number from 1 "
                                              "to the number of components"),
    "rate": (positive, "sends per time unit (λs), a finite number above 0"),
    **RATE_PARAMS,
    "count": (whole_at_least(1, MAX_COUNT), f"a whole number from 1 to {MAX_COUNT}"),
    "size": (whole_at_least(0, MAX_BODY_BYTES),
             f"padding bytes per data message, a whole number from 0 to {MAX_BODY_BYTES} (64 MiB)"),
    "attributes": (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                   "a mapping of attribute names to values"),
    "predicate": (_predicate_ok, "a predicate in JSON form such as [\"==\", \"zone\", 3] or true"),
    "queue": (lambda v: isinstance(v, str), "the name of the cluster server that hosts the shared queue"),
    "start_delay": (number_at_least(0, MAX_SECONDS), f"seconds, a number from 0 to {MAX_SECONDS} (365 days)"),
    "infrastructure": (lambda v: v in ("cluster", "ring", "tree"), "cluster, ring or tree"),
    "parent": (lambda v: isinstance(v, str), "the name of the component's server"),
}


def providers(components: List[str], fraction: float, seed: int, senders: Optional[int] = None) -> List[str]:
    """The data providers: `senders` components when given, else round(fraction × n) (at least
    one), drawn with the run's seed."""
    k = senders if senders is not None else int(round(fraction * len(components)))
    k = max(1, min(len(components), k))
    return sorted(random.Random(seed).sample(list(components), k), key=components.index)


def check_structure(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    """The component's place in the infrastructure (agents/abc/common.py), then what one
    parameter's check cannot see: `senders` with `providers`, and more senders than components."""
    problem = structure_problem(nodes, name)
    if problem:
        return problem
    params = nodes[name].get("params") or {}
    if "senders" in params:
        if "providers" in params:
            return ("senders", "senders and providers are both given: senders says how many components send, "
                               "providers which fraction", "one of them")
        n = len(Structure(nodes).components)
        if params["senders"] > n:
            return "senders", f"{params['senders']} senders but only {n} components", f"a whole number from 1 to {n}"
    return None


class Component(Role):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        self.structure = Structure(agent.config.nodes)
        self.attributes: Dict[str, Any] = dict(params.get("attributes") or {})
        if "parent" in params:
            self.server = params["parent"]
        else:
            self.server = self.structure.cluster_queue(params.get("queue"))
        if self.server not in agent.config.nodes:
            raise StructureError(f"parent {self.server!r} is not a node of the topology")
        self.others = [c for c in self.structure.components if c != agent.name]
        self._position = {c: i for i, c in enumerate(self.others)}  # receivers listed in topology order
        # the receivers a predicate selects, by the attributes the topology gives the others
        known = {c: self.structure.params(c).get("attributes") or {} for c in self.others}
        scalar = sorted({a for attrs in known.values() for a, v in attrs.items()
                         if isinstance(v, (str, int, float, bool))})
        self.matcher = correlation.Matcher(scalar)
        for name, attrs in known.items():
            self.matcher.add(name, attrs)
        self.nid = 0        # id of the next data message to handle
        self.mid = -1       # id of the most recent reply, -1 when none is held
        self.on = False     # a request is out (or its id held) for the message in `self.sending`
        self.sending: Optional[Tuple[List[Any], Any, int]] = None
        self.outbox: Deque[Tuple[List[Any], Any, int]] = deque()
        self.W = WaitingQueue()
        self.quiesced = False
        self._sent: Optional[asyncio.Event] = None  # set when a data message leaves (Snd)
        self.tx = Transmitter(agent, params)
        workload = params.get("workload", "data-providers")
        if workload == "communication-intensive":
            self.provider = True
        elif workload == "data-providers":
            chosen = providers(self.structure.components, float(params.get("providers", 0.1)),
                               agent.config.run_seed, params.get("senders"))
            self.provider = agent.name in chosen
        else:
            self.provider = False
        agent.log.write("state", state="abc component", server=self.server, provider=self.provider,
                        workload=workload)

    def stop(self) -> None:
        self.tx.log_stats()

    # -- sending: Out, Req, RcvR, Snd ----------------------------------------------------------

    async def run(self) -> None:
        if not self.provider:
            return
        rate = float(self.params.get("rate", 1.0))
        unit = float(self.params.get("time_unit_ms", 1000)) / 1000
        count = self.params.get("count")
        predicate = self.params.get("predicate", True)
        padding = "x" * int(self.params.get("size", 0))
        rng = random.Random(self.agent.config.seed)
        await self.agent.clock.sleep(float(self.params.get("start_delay", 0)))
        try:
            await self._generate(rng, rate, unit, count, predicate, padding)
        except asyncio.CancelledError:  # the workload ended (SIGUSR1): no new request; one whose id is out completes
            self.quiesced = True
            if self.outbox:
                self.agent.log.write("state", state="abc sends not started", count=len(self.outbox))
                self.outbox.clear()
            raise

    async def _generate(self, rng, rate, unit, count, predicate, padding) -> None:
        """Exponential inter-send times at rate λs; a component that is sending is blocked (its
        process is in the intermediate state [Γ : P] of rule Out), so the next time is drawn once
        the data message has left, as the paper's model enables a send only then."""
        self._sent = asyncio.Event()
        made = 0
        while count is None or made < int(count):
            await self.agent.clock.sleep(rng.expovariate(rate) * unit, period=unit / rate)
            made += 1
            self.send_abc([self.agent.name, made] + ([padding] if padding else []), predicate)
            while self.on or self.outbox:
                self._sent.clear()
                await self._sent.wait()

    def send_abc(self, values: List[Any], predicate: Any) -> None:
        """(values)@predicate: queue an AbC send; it leaves once the infrastructure gives it an id."""
        self.outbox.append((values, predicate, self.agent.clock.now_ns()))
        self._next_send()

    def receive(self, values: List[Any], header: Header, sender: str) -> None:
        """An accepted message, in id order: what an application process does with it (a
        subclass; the workloads only count deliveries)."""

    def _next_send(self) -> None:
        """Out and Req: take the next message to send and ask the server for an id."""
        if self.on or not self.outbox or self.quiesced:
            return
        self.sending = self.outbox.popleft()
        self.on = True
        self.tx.send(MessageType.ABC_REQUEST, [self.server], body=encode({"route": [self.agent.id]}), reliable=True)

    def _try_send(self) -> None:
        """Snd: with a fresh id and every smaller id handled, send the data message."""
        if self.mid < 0 or self.nid != self.mid or self.sending is None:
            return
        values, predicate, wanted = self.sending
        body = {"values": values, "predicate": predicate}
        receivers = sorted(self.matcher.match(predicate), key=self._position.__getitem__)
        self.tx.send(MessageType.ABC_DATA, [self.server], body=encode(body), reliable=True, message_id=self.mid,
                     eligible=self.others, order=self.mid, receivers=receivers, wanted_ns=wanted)
        self.nid += 1
        self.mid = -1
        self.on = False
        self.sending = None
        if self._sent is not None:
            self._sent.set()
        self._handle()
        self._next_send()

    # -- receiving: RcvR, RcvD, Hnd ------------------------------------------------------------

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.ABC_REPLY:
            if not self.on or self.mid >= 0:
                self.agent.log.write("drop", reason="reply without a pending request", message_id=header.message_id,
                                     sender=sender)
                return
            self.mid = header.message_id
            self._try_send()
        elif header.type == MessageType.ABC_DATA:
            mid = header.message_id
            if mid < self.nid or mid in self.W:
                self.agent.log.write("drop", reason="duplicate data message", message_id=mid, sender=sender,
                                     origin=self.agent.by_id.get(header.origin, header.origin), seq=header.sequence)
                return
            self.W.push(mid, (header, body, sender))
            self._handle()

    def _handle(self) -> None:
        """Hnd: hand the top of W to the component while its id is nid."""
        progressed = False
        while self.W.top() == self.nid:
            header, body, sender = self.W.pop()
            message = decode(body)
            try:
                accepted = predicates.evaluate(message.get("predicate", True), self.attributes)
            except (ValueError, TypeError, KeyError):
                accepted = False
            self.agent.deliver(header, sender=sender, order=self.nid, accepted=accepted)
            self.nid += 1
            progressed = True
            if accepted:
                self.receive(message.get("values") or [], header, sender)
        if progressed:
            self._try_send()


ROLE = Component
NAME = COMPONENT
