"""What the AbC component and the three server roles share: message bodies, the structure of the
infrastructure as the topology describes it, and the waiting queue W.

Specification: Abd Alrahman, De Nicola, Garbi, Loreti, "A distributed coordination infrastructure
for attribute-based interaction" (FORTE 2018; /work/shared/papers/abc-distributed-infrastructures.txt),
section 3. The paper's three infrastructure messages map onto the wire (agents/wire.py) as:

- request {'Q', route, dest}: ABC_REQUEST, body {"route": [node ids]}, the first id the
  component that asks; origin and sequence stay the component's as the request travels;
- reply {'R', id, route, dest}: ABC_REPLY, the fresh id in the header's message_id, body
  {"route": [...]}, the ids still to travel (the next hop is the last one);
- data {'D', id, src, dest, msg}: ABC_DATA, the id in message_id, origin and sequence the sending
  component's, hops counting the servers it passed, RELAYED on every copy a server forwards and
  the INFRA_ID extension naming that server; body {"values": [...], "predicate": ...}, the AbC
  message Π(ṽ) (predicate as JSON, agents/abc/correlation.py).

Every link of the infrastructure uses the runtime's reliable channel (acknowledgement and
retransmission), so that the paper's assumption of reliable links holds over lossy emulated
links; the retransmissions are logged and visible in the captures.
"""

from __future__ import annotations

import asyncio
import heapq
import random
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

from ..clock import Clock
from ..roles import MAX_SECONDS, is_number
from ..wire import json_body as encode  # noqa: F401 (the AbC roles import it from here)
from ..wire import read_json_body as decode  # noqa: F401

COMPONENT = "abc-component"
VERTEX = "abc-vertex"  # a component running the graph-colouring example (agents/abc/colouring.py)
COMPONENTS = (COMPONENT, VERTEX)
CLUSTER_SERVER = "abc-cluster-server"
RING_SERVER = "abc-ring-server"
TREE_SERVER = "abc-tree-server"
SERVERS = (CLUSTER_SERVER, RING_SERVER, TREE_SERVER)
#: what every AbC role's protocol promises the analysis (agents.roles.role_promises): the
#: sequencer gives ids 0, 1, 2, ... and every component handles every id in that order
PROMISES = ("contiguous-order",)


def positive(v: Any) -> bool:
    """A finite number above 0 (not a boolean)."""
    return is_number(v) and v > 0


#: the paper's rates, shared by components and servers (section 4). A time unit longer than the
#: longest scenario would only make every node wait for ever (.inf does, and .nan as well).
RATE_PARAMS = {
    "time_unit_ms": (lambda v: positive(v) and v <= MAX_SECONDS * 1000,
                     f"milliseconds per paper time unit, a number above 0, at most {MAX_SECONDS * 1000} (365 days)"),
    "transmission_rate": (positive, "transmissions per time unit (the paper's λt), a finite number above 0"),
}


class Transmitter:
    """How a node puts AbC messages on the wire.

    Without `transmission_rate` every send leaves at once (as fast as the machine goes). With it,
    the node transmits as the paper's model does (section 4): one transmission at a time, to one
    address at a time (rules dFwd/eFwd), each taking an exponential time at rate λt per time
    unit, in FIFO order; so a cluster server that forwards to 155 components is busy ~155/λt time
    units per message, and a tree server ~(children)/λt. The emulated links add no delay of their
    own (no netem here), so this is where λt lives.

    Pacing is against deadlines, so that the achieved rate is λt and not less: a transmission
    that starts service on an idle transmitter is due at now + Exp; while the queue stays
    non-empty (a busy period) the next one is due at the previous deadline + Exp, whatever the
    send itself cost or however late the event loop woke. The transmitter sleeps until the
    deadline, not at all if it has passed (it only yields to the loop then).

    `stats()` counts the transmissions made and the busy time: the sum of the busy periods, each
    from the start of service of its first transmission to the send of its last one before the
    queue emptied."""

    def __init__(self, agent, params: Dict[str, Any]) -> None:
        self.agent = agent
        rate = params.get("transmission_rate")
        self.target_rate = float(rate) if rate else None
        self.unit_s = float(params.get("time_unit_ms", 1000)) / 1000
        self.mean_s = self.unit_s / self.target_rate if rate else None
        self.rng = random.Random(agent.config.seed ^ 0x5A5A)
        self.queue: Deque[Dict[str, Any]] = deque()
        self.task: Optional[asyncio.Task] = None
        # the agent's clock (virtual time, every wake-up measured); a test may give a fake one
        self.clock: Clock = agent.clock
        self.transmissions = 0
        self._queued = 0  # transmissions in the queue (not counting `then` actions)
        self._deadline: Optional[float] = None  # of the transmission in service; None when idle
        self._busy_since = 0.0  # start of the current busy period
        self._last_send = 0.0  # the send of the current busy period's latest transmission
        self._busy_closed = 0.0  # the busy periods that ended

    @property
    def paced(self) -> bool:
        return self.mean_s is not None

    def send(self, mtype: int, to: List[str], **kwargs: Any) -> None:
        """agent.send(mtype, to=..., **kwargs), one target at a time when paced."""
        if self.mean_s is None:
            self.agent.send(mtype, to=to, **kwargs)
            return
        for target in to:
            self.queue.append(dict(kwargs, mtype=mtype, to=[target]))
        self._queued += len(to)
        self._kick()

    def then(self, action) -> None:
        """Run `action` once every transmission queued before it has left."""
        if self.mean_s is None:
            action()
            return
        self.queue.append({"then": action})
        self._kick()

    def stats(self) -> Dict[str, Any]:
        """{transmissions, busy_s, rate (transmissions per time unit of busy time, None before
        any), target_rate (λt, None unpaced)}; a busy period still open counts up to its last send."""
        busy = self._busy_closed + (self._last_send - self._busy_since if self._deadline is not None else 0.0)
        return {"transmissions": self.transmissions, "busy_s": busy,
                "rate": self.transmissions / (busy / self.unit_s) if busy > 0 else None,
                "target_rate": self.target_rate}

    def log_stats(self) -> None:
        """The `abc transmitter` state event (a paced node logs it once, at its stop). Integers
        only: a fraction in a log sends its whole file down the analysis's slow reader
        (spark_analysis/logreader.py), so the rates are left to the analysis, which has λt and
        the time unit from the manifest."""
        if not self.paced:
            return
        stats = self.stats()
        self.agent.log.write("state", state="abc transmitter", transmissions=stats["transmissions"],
                             busy_ns=int(round(stats["busy_s"] * 1e9)))

    def _kick(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_event_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self.queue:
            item = self.queue.popleft()
            if "then" in item:
                item["then"]()
                continue
            self._queued -= 1
            service = self.rng.expovariate(1.0) * self.mean_s
            if self._deadline is None:  # starts service on an idle transmitter: a busy period opens
                self._busy_since = self.clock.time()
                self._last_send = self._busy_since
                self._deadline = self._busy_since + service
            else:
                self._deadline += service
            # at once when late (the loop gets a turn); the lateness is judged against the mean service
            await self.clock.sleep_until(self._deadline, period=self.mean_s)
            self._last_send = self.clock.time()
            self.transmissions += 1
            self.agent.send(item.pop("mtype"), **item)
            if not self._queued:  # the queue emptied: the busy period ends at this send
                self._busy_closed += self._last_send - self._busy_since
                self._deadline = None


#: the fields of the `abc transmitter` state event, for every role with a Transmitter
TRANSMITTER_FIELDS = {
    "transmissions": ("integer", "transmissions the node made, paced at λt (state abc transmitter)"),
    "busy_ns": ("integer", "the node's busy time: the sum of its busy periods, each from the start of service of "
                           "a transmission on an idle transmitter to the send of the last one before its queue "
                           "emptied (state abc transmitter)"),
}


class StructureError(Exception):
    """The topology does not describe an infrastructure this role can run in."""


class Structure:
    """The infrastructure seen from one node: who has which role, who is whose parent."""

    def __init__(self, nodes: Dict[str, Dict[str, Any]]) -> None:
        self.nodes = nodes
        self.ids = {name: int(info["id"]) for name, info in nodes.items()}

    def role(self, name: str) -> Optional[str]:
        return self.nodes[name].get("role")

    def params(self, name: str) -> Dict[str, Any]:
        return self.nodes[name].get("params") or {}

    def with_role(self, *roles: str) -> List[str]:
        """The nodes of these roles, in node-id order (the order of the topology)."""
        return sorted((n for n in self.nodes if self.role(n) in roles), key=self.ids.__getitem__)

    @property
    def components(self) -> List[str]:
        return self.with_role(*COMPONENTS)

    def children(self, name: str) -> List[str]:
        """Servers and components whose `parent` is this node, in node-id order."""
        return [n for n in sorted(self.nodes, key=self.ids.__getitem__)
                if self.params(n).get("parent") == name and self.role(n) in COMPONENTS + SERVERS]

    def _host(self, role: str, what: str, param: str, preferred: Optional[str]) -> str:
        servers = self.with_role(role)
        if preferred is not None:
            if preferred not in servers:
                raise StructureError(f"{param} {preferred!r} is not an {role} (those are: "
                                     f"{', '.join(servers) or 'none'})")
            return preferred
        if not servers:
            raise StructureError(f"a {what} needs at least one node with role {role}")
        return servers[0]

    def cluster_queue(self, preferred: Optional[str] = None) -> str:
        """The node that hosts the cluster's shared counter and FIFO queue: the cluster server named
        by `queue`, else the first cluster server of the topology."""
        return self._host(CLUSTER_SERVER, "cluster", "queue", preferred)

    def ring_counter(self, preferred: Optional[str] = None) -> str:
        """The ring server that hosts the ring's shared counter: `counter`, else the first one."""
        return self._host(RING_SERVER, "ring", "counter", preferred)


def structure_problem(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    """(parameter, problem, what is allowed) when node `name` cannot take its place in the
    infrastructure the topology describes, else None. `nodes`: name → {"id", "role", "params"}.
    Run when a scenario is validated, so that a wrong structure is a usage error, not a dead agent."""
    st = Structure(nodes)
    role, params = st.role(name), st.params(name)

    def names(*roles: str) -> str:
        found = st.with_role(*roles)
        return ", ".join(found[:12]) + (", ..." if len(found) > 12 else "") or f"no node has role {' or '.join(roles)}"

    try:
        if role in COMPONENTS:
            parent = params.get("parent")
            if parent is not None:
                if (st.role(parent) if parent in nodes else None) not in (RING_SERVER, TREE_SERVER):
                    return "parent", f"{parent!r} is not a ring or tree server", names(RING_SERVER, TREE_SERVER)
            else:
                st.cluster_queue(params.get("queue"))
        elif role == CLUSTER_SERVER:
            st.cluster_queue(params.get("queue"))
        elif role == RING_SERVER:
            nxt = params.get("next")
            if nxt is None or (st.role(nxt) if nxt in nodes else None) != RING_SERVER:
                return "next", f"{nxt!r} is not a ring server" if nxt else "a ring server needs next", names(RING_SERVER)
            st.ring_counter(params.get("counter"))
        elif role == TREE_SERVER:
            parent = params.get("parent")
            if parent is not None and (st.role(parent) if parent in nodes else None) != TREE_SERVER:
                return "parent", f"{parent!r} is not a tree server", names(TREE_SERVER)
            roots = [n for n in st.with_role(TREE_SERVER) if st.params(n).get("parent") is None]
            if len(roots) != 1:
                return "parent", f"a tree has exactly one root (a server without parent), not {len(roots)}", \
                    "one tree server without parent, " + (", ".join(roots[:6]) or "none") + " have none"
            seen, node = {name}, parent
            while node is not None:
                if node in seen:
                    return "parent", f"the parents of {name} go round in a cycle through {node}", "a tree"
                seen.add(node)
                node = st.params(node).get("parent")
    except StructureError as exc:
        key = "queue" if role in COMPONENTS + (CLUSTER_SERVER,) else "counter"
        return key, str(exc), names(CLUSTER_SERVER if key == "queue" else RING_SERVER)
    return None


class WaitingQueue:
    """W: data messages ordered by id, the least on top; one entry per id (a second copy of an id
    that is already waiting is a duplicate)."""

    def __init__(self) -> None:
        self._heap: List[Tuple[int, int, Any]] = []
        self._ids: set = set()
        self._tie = 0

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, mid: int) -> bool:
        return mid in self._ids

    def push(self, mid: int, item: Any) -> bool:
        if mid in self._ids:
            return False
        self._tie += 1
        heapq.heappush(self._heap, (mid, self._tie, item))
        self._ids.add(mid)
        return True

    def top(self) -> Optional[int]:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> Any:
        mid, _, item = heapq.heappop(self._heap)
        self._ids.discard(mid)
        return item
