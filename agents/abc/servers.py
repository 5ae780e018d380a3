"""The three AbC coordination infrastructures of section 3: cluster (Tables 3–4), ring (Tables
5–6) and tree (Tables 7–8), one server role each (`abc-cluster-server`, `abc-ring-server`,
`abc-tree-server`; modules agents/abc/cluster.py, ring.py, tree.py register them).

Where the paper assumes state shared by several servers, one server hosts it and the others
reach it with messages, because the testbed's nodes share no memory:

- cluster: the shared counter and the shared FIFO input queue I live on the queue host, the first
  `abc-cluster-server` of the topology unless `queue` names another (components use the same
  rule). Components send their requests and data messages to the queue host (rule Qin), which
  gives each, and for a request the counter's value (incrementing the counter in the same step:
  the exclusive lock on queue and counter of the paper), to a server (rule Qout); the server
  replies to the requester (Reply) or forwards the data message to every component but its
  sender (dFwd/eFwd). Which server, by `dispatch`:
  - `random` (the default): as the authors' simulator has it (ClusterServer.java in
    giulio-garbi/AbCSimulator_vertex: each of the S slots has a handling activity at rate λh
    whenever I is not empty, whether or not its own output queue is busy), every slot takes from
    I; with λh = 1000 against λt = 15 the handling is instantaneous at the model's scale, so the
    message goes at once to a slot drawn uniformly (from the run's seed), where it waits behind
    that slot's transmissions still queued.
  - `free`: only a free server takes, by sending ABC_TAKE once its transmissions have left; the
    host hands it the next message (the host takes its turn among the free ones, first come first
    served). A message then never waits behind a busy server.
- ring: the shared counter lives on the counter host, the first `abc-ring-server` unless `counter`
  names another. A server that gets a request from one of its components asks the counter host
  for the counter's value with a request that carries the route back (the copy-and-increment
  under the lock of section 3.3) and relays the reply to the component; the counter host answers
  its own components directly. A ring server's multicast set D is the next server first, then
  its own components, in the order the authors' simulator forwards (Table 6 leaves it open):
  paced, a message moves on round the ring after one transmission instead of after all of them.
- tree: no shared state: the root is the only sequencer (Table 8).

With `transmission_rate` (λt per time unit of `time_unit_ms`), a server transmits as the paper's
model does, one message to one address at a time, each transmission taking an exponential time
(agents/abc/common.py, Transmitter); the messages that stand in for shared memory (a hand-over
from the cluster's queue, a server asking the ring's counter host and its answer, ABC_TAKE) are
not transmissions of the model and leave at once. A cluster server takes again only when its
transmissions have left. A paced server (and a paced component) logs at its stop a state event
`abc transmitter` with its transmissions and busy time, from which the analysis gives the rate
it achieved.

Data messages wait in a server's priority queue W and are forwarded in id order (nid), each to
the server's multicast set minus the node it came from, as the dFwd/eFwd rules do one address at
a time. In the ring a copy that comes back with an id below nid has been round the ring and is
discarded (rule Discard); in the tree a data message from a child also goes up to the parent at
once (rule wNxt).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

from ..runtime import Role
from ..wire import Ext, Flags, Header, MessageType
from .common import (CLUSTER_SERVER, COMPONENTS, RATE_PARAMS, RING_SERVER, SERVERS, TRANSMITTER_FIELDS, TREE_SERVER,
                     Structure, StructureError, Transmitter, WaitingQueue, decode, encode)

_STRUCTURE = {"infrastructure": (lambda v: v in ("cluster", "ring", "tree"), "cluster, ring or tree"),
              **RATE_PARAMS}


class Server(Role):
    """What every server does with data messages: W, nid, and forwarding in id order."""

    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        self.structure = Structure(agent.config.nodes)
        self.nid = 0
        self.W = WaitingQueue()
        self.infra = agent.id.to_bytes(4, "big")
        self.tx = Transmitter(agent, params)
        self.ctr = 0  # used where this server hosts a counter: the cluster's, the ring's, the tree's root

    def stop(self) -> None:
        self.tx.log_stats()

    def fresh_id(self) -> int:
        """The counter's value, then ctr + 1 (rule Rmsg / Reply)."""
        mid, self.ctr = self.ctr, self.ctr + 1
        return mid

    def name_of(self, node_id: int) -> str:
        return self.agent.by_id.get(node_id, str(node_id))

    def forward(self, mtype: int, header: Header, body: bytes, to: List[str], message_id: Optional[int] = None,
                new_body: Optional[bytes] = None, paced: bool = True) -> None:
        """Pass a message on with its identity (origin, sequence), one hop more, over the reliable
        channel; `paced=False` for what stands in for the paper's shared memory (the cluster's
        queue, the ring's counter), which is no transmission of the model."""
        if not to:
            return
        send = self.tx.send if paced else self.agent.send
        send(mtype, to=to, body=body if new_body is None else new_body, reliable=True,
                     message_id=header.message_id if message_id is None else message_id, origin=header.origin,
                     sequence=header.sequence, hops=header.hops + 1, flags=Flags.RELAYED,
                     extensions={Ext.INFRA_ID: self.infra})

    def reply(self, header: Header, route: List[int], mid: int, paced: bool = True) -> None:
        """Reply (the sequencer): a fresh id to the last node of the route, with the rest of the route."""
        target = self.name_of(route[-1])
        send = self.tx.send if paced else self.agent.send
        send(MessageType.ABC_REPLY, to=[target], body=encode({"route": route[:-1]}), reliable=True,
                     message_id=mid, extensions={Ext.INFRA_ID: self.infra},
                     request_origin=self.name_of(header.origin), request_seq=header.sequence)

    def relay_reply(self, header: Header, body: bytes) -> None:
        """rFwd: a reply travels back along its route."""
        route = decode(body).get("route") or []
        if not route:
            self.agent.log.write("drop", reason="reply with an empty route", message_id=header.message_id)
            return
        self.forward(MessageType.ABC_REPLY, header, body, [self.name_of(route[-1])],
                     new_body=encode({"route": route[:-1]}))

    def enqueue(self, header: Header, body: bytes, sender: str) -> None:
        """wIn / Discard: keep a data message in W unless its id was handled already."""
        mid = header.message_id
        if mid < self.nid or mid in self.W:
            self.agent.log.write("drop", reason="data message already handled", message_id=mid, sender=sender,
                                 origin=self.name_of(header.origin), seq=header.sequence)
            return
        self.W.push(mid, (header, body, sender))
        while self.W.top() == self.nid:  # dFwd ... eFwd
            header, body, came_from = self.W.pop()
            self.forward(MessageType.ABC_DATA, header, body, [n for n in self.multicast() if n != came_from])
            self.nid += 1

    def multicast(self) -> List[str]:
        """D: where this server forwards data messages."""
        raise NotImplementedError


# -- cluster ----------------------------------------------------------------------------------

class ClusterServer(Server):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        self.host = self.structure.cluster_queue(params.get("queue"))
        self.is_host = self.host == agent.name
        self.components = self.structure.components
        self.dispatch = params.get("dispatch", DISPATCH_DEFAULT)
        self.slots = self.structure.with_role(CLUSTER_SERVER)
        self._draw = random.Random(agent.config.seed ^ 0xC1C1)  # the host's draw of a slot
        self.I: Deque[Tuple[Header, bytes, str]] = deque()
        self.free: Deque[str] = deque()
        self._dispatching = False
        agent.log.write("state", state="abc server", infrastructure="cluster", queue=self.host,
                        components=len(self.components), dispatch=self.dispatch)

    def multicast(self) -> List[str]:
        return self.components

    async def run(self) -> None:
        if self.dispatch != "free":
            return  # the host gives each message to a slot as it comes
        if self.is_host:
            self._free(self.agent.name)
        else:
            self._take()

    def _take(self) -> None:
        self.agent.send(MessageType.ABC_TAKE, to=[self.host], reliable=True)

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        role = self.structure.role(sender) if sender in self.structure.nodes else None
        if header.type == MessageType.ABC_TAKE:
            if self.is_host:
                self._free(sender)
        elif role in COMPONENTS and header.type in (MessageType.ABC_REQUEST, MessageType.ABC_DATA):
            if not self.is_host:
                self.agent.log.write("drop", reason=f"not the cluster's queue (that is {self.host})", sender=sender)
                return
            self.I.append((header, body, sender))  # Qin
            self._dispatch()
        elif sender == self.host and header.type in (MessageType.ABC_REQUEST, MessageType.ABC_DATA):
            self._serve(header, body, header.message_id)
            if self.dispatch == "free":
                self.tx.then(self._take)  # free again once its transmissions have left

    def _free(self, server: str) -> None:
        if server not in self.free:
            self.free.append(server)
        if not self._dispatching:  # the host serving itself frees itself from inside the loop
            self._dispatch()

    def _dispatch(self) -> None:
        """Qout: a slot drawn at random takes each message as it comes (`random`), or the free
        servers take the queue's messages in FIFO order (`free`)."""
        if self.dispatch != "free":
            while self.I:
                header, body, sender = self.I.popleft()
                mid = self.fresh_id() if header.type == MessageType.ABC_REQUEST else header.message_id
                slot = self._draw.choice(self.slots)
                if slot == self.agent.name:
                    self._serve(header, body, mid)
                else:
                    self.forward(header.type, header, body, [slot], message_id=mid, paced=False)
            return
        self._dispatching = True
        try:
            while self.I and self.free:
                server = self.free.popleft()
                header, body, sender = self.I.popleft()
                mid = header.message_id
                if header.type == MessageType.ABC_REQUEST:
                    mid = self.fresh_id()
                if server == self.agent.name:
                    self._serve(header, body, mid)
                    self.tx.then(lambda: self._free(self.agent.name))
                else:
                    self.forward(header.type, header, body, [server], message_id=mid, paced=False)
        finally:
            self._dispatching = False

    def _serve(self, header: Header, body: bytes, mid: int) -> None:
        if header.type == MessageType.ABC_REQUEST:  # Reply
            route = decode(body).get("route") or [header.origin]
            self.reply(header, route, mid)
        else:  # dFwd ... eFwd: every component but the sender
            origin = self.name_of(header.origin)
            self.forward(MessageType.ABC_DATA, header, body, [c for c in self.components if c != origin])


# -- ring -------------------------------------------------------------------------------------

class RingServer(Server):
    """A ring server (Tables 5-6): D is [next server] + its own components, the next server first
    as in the authors' simulator (the paper's rules leave the order of the multicast set open)."""

    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        self.counter_host = self.structure.ring_counter(params.get("counter"))
        nxt = params.get("next")
        if nxt is None:
            raise StructureError("a ring server needs `next`, its neighbour in the ring")
        if self.structure.role(nxt) != RING_SERVER:
            raise StructureError(f"next {nxt!r} is not an {RING_SERVER}")
        self.next = nxt
        self.own = [c for c in self.structure.children(agent.name) if self.structure.role(c) in COMPONENTS]
        # the next server first, then the own components: Table 6 leaves the order of D open,
        # and the authors' simulator forwards round the ring before handing out locally, so a
        # message's hop to the next server waits for one transmission, not for y + 1
        self.D = ([nxt] if nxt != agent.name else []) + self.own
        agent.log.write("state", state="abc server", infrastructure="ring", next=nxt, counter=self.counter_host,
                        components=self.own)

    def multicast(self) -> List[str]:
        return self.D

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.ABC_REQUEST:
            route = decode(body).get("route") or [header.origin]
            if self.agent.name == self.counter_host:
                mid = self.fresh_id()
                # to another server: the end of the counter's critical section, not a transmission
                self.reply(header, route, mid, paced=len(route) == 1)
            else:  # ask the counter's host, which answers along the route
                self.forward(MessageType.ABC_REQUEST, header, body, [self.counter_host],
                             new_body=encode({"route": route + [self.agent.id]}), paced=False)
        elif header.type == MessageType.ABC_REPLY:
            self.relay_reply(header, body)
        elif header.type == MessageType.ABC_DATA:
            self.enqueue(header, body, sender)


# -- tree -------------------------------------------------------------------------------------

class TreeServer(Server):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        self.parent = params.get("parent")
        if self.parent is not None and self.structure.role(self.parent) != TREE_SERVER:
            raise StructureError(f"parent {self.parent!r} is not an {TREE_SERVER}")
        self.D = self.structure.children(agent.name)
        agent.log.write("state", state="abc server", infrastructure="tree", parent=self.parent,
                        root=self.parent is None, children=self.D)

    def multicast(self) -> List[str]:
        return self.D

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.ABC_REQUEST:
            route = decode(body).get("route") or [header.origin]
            if self.parent is None:  # Reply: only the root sequences
                self.reply(header, route, self.fresh_id())
            else:  # qFwd
                self.forward(MessageType.ABC_REQUEST, header, body, [self.parent],
                             new_body=encode({"route": route + [self.agent.id]}))
        elif header.type == MessageType.ABC_REPLY:
            self.relay_reply(header, body)
        elif header.type == MessageType.ABC_DATA:
            if self.parent is not None and sender != self.parent:  # wNxt: up as well
                self.forward(MessageType.ABC_DATA, header, body, [self.parent])
            self.enqueue(header, body, sender)


#: the fields the servers add to their events (agents/events.py)
EVENT_FIELDS = {
    "send": {"request_origin": ("string", "the component whose request for an id a reply answers"),
             "request_seq": ("integer", "that request's sequence number")},
    "state": {"infrastructure": ("string", "cluster, ring or tree (state abc server)"),
              "queue": ("string", "the cluster server that hosts the shared queue"),
              "dispatch": ("string", "how the cluster's queue host gives messages to servers: random or free"),
              "components": (["integer", "array"], "the components the server forwards to: their number "
                                                   "(cluster) or names (ring)"),
              "next": ("string", "the next ring server"),
              "counter": ("string", "the ring server that hosts the shared counter"),
              "parent": (["string", "null"], "the parent tree server (null at the root)"),
              "root": ("boolean", "the tree's root, its sequencer"),
              "children": ("array", "the tree server's children"),
              **TRANSMITTER_FIELDS},
}

#: how the cluster's queue host gives messages to servers (see the module's docstring)
DISPATCHES = ("random", "free")
DISPATCH_DEFAULT = "random"
CLUSTER_PARAMS = {**_STRUCTURE, "queue": (lambda v: isinstance(v, str), "the cluster server hosting the shared queue"),
                  "dispatch": (lambda v: v in DISPATCHES,
                               "random (every slot takes from the shared queue whether or not it is busy, as the "
                               "authors' simulator does; the default) or free (only a free server takes)")}
RING_PARAMS = {**_STRUCTURE, "next": (lambda v: isinstance(v, str), "the next ring server"),
               "counter": (lambda v: isinstance(v, str), "the ring server hosting the shared counter")}
TREE_PARAMS = {**_STRUCTURE, "parent": (lambda v: isinstance(v, str), "the parent tree server")}

assert set(SERVERS) == {CLUSTER_SERVER, RING_SERVER, TREE_SERVER}
