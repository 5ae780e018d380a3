"""The `causal-member` role: a member of a cluster running the two-layer causal protocol of
Gidenstam et al. (../shared/papers/causal-cluster-consistency.txt, sections 4-6) over the agent
runtime. It wires three parts without I/O of their own: cluster management (cluster.py,
Algorithms 2-4), PrCast gossip (prcast.py) and the causality layer (causality.py, Algorithm 5).
docs/CAUSAL-READING.md gives the readings (A-numbers) these follow.

Who is who. Every node with this role is a member of the cluster: it gossips and delivers.
A member with `coordinator: true` (the default; with `updaters: N`, the first N members in node
order) is in Core_C: it owns a ticket, a vector entry, and creates events. The coordinators without `join` form the static initial ring (A8): in node
order, their tickets spread evenly over 0..`tickets`-1; a coordinator with `join: true` asks one
of them for a ticket by cjoin when its workload starts (a node started from the timeline joins
that way). A coordinator that leaves or is excluded stops creating events and stays a member.

Rounds. Gossip rounds every `gossip_round_ms`: each coordinator creates floor(x) events plus
one with probability frac(x), x = `events_per_round` (or `cluster_events_per_round` divided
by the initial ring's size: the paper's "coordinators x p = 6"), then the causality layer's
timers run and PrCast sends its buffer to `fanout` members. Cluster-management rounds every
`round_ms` (A1: a round must outlast a PrCast, max_hops gossip rounds). Timers of the causality
layer (time_to_terminate, time_to_recover) count gossip rounds. Both kinds of round go on after
the workload ends, through the quiet period, creating nothing: forwarding is dissemination, not
new traffic, and events in flight then are not cut off as "lost".

On the wire. A gossip message is CAUSAL_DATA whose body is event records (agents/wire.py,
encode_events: index, sequence, origin, creation time, age, vector timestamp, body of
`event_bytes`), one datagram per target, fragmented when larger. Recovery asks for one event
with CAUSAL_RECOVER (JSON {"want": [index, sequence]}) and is answered with CAUSAL_RECOVERY,
whose body is the event's record. Cluster management is MEMBERSHIP with a JSON body {"m": type, "p": payload}; a send
the algorithms need a status of (UPDATE, ACKCJOIN, EXCLUDE) carries "ref", the receiver answers
{"m": "STATUS", "ref": ...} at once, and no answer within `delta_ms` is a failed status: the
connection-oriented send of section 4.2 over UDP. An announcement of a new owner goes to every
member directly (the paper PrCasts it; one message each here, counted as membership traffic).

The log. An event's creation is the application send (type CAUSAL_EVENT: origin the creator,
seq the creator's own number for it, `ticket`, message_id the protocol's name for it (ticket and
count in one number, causality.event_id), `ts` its vector timestamp; the
protocol names the event (ticket, t_e[ticket]), which a process that changed tickets, or was
restarted, could repeat as its own; its own number it keeps across restarts in its directory,
MADE_FILE, and the records carry it), logged only:
on the wire events travel as records. Every delivery is a `deliver` of CAUSAL_EVENT with `ts`
and `how` (in order, forced, own); an event that became obsolete before it could be delivered is
a `drop` with reason "obsolete". Each ticket change is a state `causal ticket` with the
membership state, the ticket owned and the tickets coordinated (the ticket-uniqueness check reads
these), and why. At its stop the role logs state `causal counters`: the layers' counters, and
Figure 5's "gossip only": the same PrCast receive order delivered at once, where an event received
after a causally later one of its index was delivered counts as out of order (lost in optimistic
causal order without the causality layer).
"""

from __future__ import annotations

import asyncio
import math
import os
from typing import Any, Awaitable, Dict, List, Optional, Tuple

from agents import wire
from agents.roles import MAX_BODY_BYTES, is_number, number_at_least, whole_at_least
from agents.runtime import Role
from agents.wire import MessageType

from .causality import RECOVERY, CausalLayer, Event, buffer_size, event_id, reuse_margin
from .cluster import COORDINATOR, JOINING, LEAVING, MESSAGES, ClusterMember, Out
from .prcast import PrCast

ROLE_NAME = "causal-member"
MAX_TICKETS = 65535
MAX_MS = 3_600_000
DEFAULTS = {"k": 1, "round_ms": 1000, "gossip_round_ms": 100, "delta_ms": 100, "p_exclude": 1.0, "fanout": 4,
            "max_hops": 5, "max_events": 20, "history": 40, "recovery": "r1", "k_rec": 4,
            "time_to_terminate": 5, "time_to_recover": 5, "event_bytes": 16}
TICKET_STATE = "causal ticket"
COUNTERS_STATE = "causal counters"


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _ms(v: Any) -> bool:
    return is_number(v) and 0 < v <= MAX_MS


PARAMS = {
    "coordinator": (_bool, "true (in Core_C: owns a ticket, creates events) or false (a member only)"),
    "join": (_bool, "true: join Core_C by cjoin when the workload starts; false: in the initial ring"),
    "updaters": (whole_at_least(1, MAX_TICKETS), "the first N members in node order are coordinators (the others "
                                                 "only members) unless a node sets coordinator"),
    "tickets": (whole_at_least(1, MAX_TICKETS), f"n, the tickets and vector entries, from 1 to {MAX_TICKETS}"),
    "k": (whole_at_least(0, 100), "the fault-tolerance k (2k+1 neighbours, k+1 quorum), from 0 to 100"),
    "round_ms": (_ms, f"the cluster-management round in ms, above 0, at most {MAX_MS}"),
    "gossip_round_ms": (_ms, f"the gossip round in ms, above 0, at most {MAX_MS}"),
    "delta_ms": (_ms, f"δ, the status wait of a connection-oriented send in ms, above 0, at most {MAX_MS}"),
    "p_exclude": (number_at_least(0, 1), "P_exclude, a number from 0 to 1"),
    "fanout": (whole_at_least(1, 10_000), "F, the members each gossip message goes to, from 1"),
    "max_hops": (whole_at_least(1, 255), "the age in hops at which an event stops being forwarded, 1 to 255"),
    "max_events": (whole_at_least(1, 10_000), "the most events in a gossip message (and the buffer), from 1"),
    "history": (whole_at_least(1, 1_000_000), "event ids remembered against duplicates, from 1"),
    "view_size": (whole_at_least(1, 100_000), "a partial view of this many members drawn each round (lpbcast-style)"),
    "recovery": (lambda v: v in RECOVERY, "none, r1 (ask the originator) or r4 (ask k_rec random members)"),
    "k_rec": (whole_at_least(1, 1000), "the members R4 asks, from 1"),
    "time_to_terminate": (number_at_least(0, 1_000_000), "gossip rounds an event waits before recovery, from 0"),
    "time_to_recover": (number_at_least(0, 1_000_000), "gossip rounds more before forced delivery, from 0"),
    "buffer_events": (whole_at_least(1, 10_000_000), "the recovery buffer's size in events (default: Theorem 5.1)"),
    "events_per_round": (number_at_least(0, 10_000), "events a coordinator creates per gossip round, from 0"),
    "cluster_events_per_round": (number_at_least(0, 100_000),
                                 "n·p, events per gossip round in the cluster, shared by the initial ring"),
    "event_bytes": (whole_at_least(0, MAX_BODY_BYTES), f"an event's body in bytes, from 0 to {MAX_BODY_BYTES}"),
    "count": (whole_at_least(0, 2 ** 31 - 1), "the most events this coordinator creates"),
}

EVENT_FIELDS = {
    "send": {"ts": ("array", "the event's vector timestamp, one entry per ticket (causal)"),
             "ticket": ("integer", "the creating coordinator's ticket, the event's index (causal)"),
             "events": ("integer", "event records a gossip message carries (causal)"),
             "membership": ("string", "the cluster-management message a MEMBERSHIP send carries (causal)")},
    "drop": {"ticket": ("integer", "the dropped event's index (causal)")},
    "deliver": {"ts": ("array", "the event's vector timestamp, one entry per ticket (causal)"),
                "ticket": ("integer", "the event's index (causal)"),
                "how": ("string", "in order, forced (after time_to_recover) or own (causal)")},
    "state": {"membership": ("string", "joining, coordinator, leaving, disconnected or left (causal ticket)"),
              "ticket": ("integer", "the ticket owned, null for none (causal ticket)"),
              "coordinates": ("array", "the tickets coordinated, own included (causal ticket)"),
              "why": ("string", "what changed the tickets (causal ticket)"),
              "excluded": ("array", "the processes an exclusion removed (causal ticket)"),
              "joiner": ("string", "the process a cjoin was served to (causal ticket)"),
              "given": ("integer", "the ticket a served cjoin gave the joiner (causal ticket)"),
              "by": ("string", "the excluder whose RETRACT named this process's ticket, or the predecessor "
                               "that took a leaver's tickets over (causal ticket)"),
              "left": ("string", "the successor whose leave (CLEAVE) this process took over (causal ticket)"),
              "tickets": ("array", "the tickets an exclusion took over, E_pq, or a leave handed over (causal ticket)"),
              "temp_rounds": ("integer", "rounds left as a temporary coordinator (causal ticket)"),
              "heard": ("array", "the L members heard from when too few ALIVEs came (causal ticket)"),
              "acks": ("array", "the ACKCOORDs an exclusion got (causal ticket)"),
              "excluding": ("array", "the tickets of an exclusion that failed (causal ticket)"),
              **{f"causal_{k}": ("integer", f"the causality layer's {k.replace('_', ' ')} count (causal counters)")
                 for k in ("recover_requests", "recover_messages", "recovered", "forced", "obsolete", "duplicates")},
              **{f"gossip_{k}": ("integer", f"PrCast's {k} count (causal counters)")
                 for k in ("overflow", "expired", "duplicates", "messages", "records")},
              **{f"cluster_{k}": ("integer", f"cluster management's {what} (causal counters)")
                 for k, what in (("alive_sent", "ALIVE sends, its own included"), ("updates", "UPDATEs sent"),
                                 ("exclusions", "exclusions it completed"), ("excluded", "processes it excluded"),
                                 ("joins_served", "cjoins it served"),
                                 ("cleaves_served", "leaves of its successor it took over (Algorithm 1)"),
                                 ("alive_max_round", "most ALIVEs sent to others between two rounds"))},
              "gossip_only_delivered": ("integer", "events the PrCast receive order delivers in optimistic "
                                                   "causal order without the causality layer (causal counters)"),
              "gossip_only_out_of_order": ("integer", "events that order would have to skip (causal counters)"),
              "gossip_only_latency_ms": ("object", "latency of the events that order delivers, from their "
                                                   "creation to their first receipt here: whole ms → events "
                                                   "(causal counters)"),
              "buffer_events": ("integer", "the recovery buffer's size in events (causal counters)"),
              "events_created": ("integer", "events this member created (causal counters)")},
}


def causal_members(nodes: Dict[str, Dict[str, Any]]) -> List[str]:
    return sorted((n for n, info in nodes.items() if info.get("role") == ROLE_NAME), key=lambda n: nodes[n]["id"])


def _is_coordinator(params: Dict[str, Any], position: int) -> bool:
    if "coordinator" in params:
        return params["coordinator"] is not False
    if "updaters" in params:
        return position < int(params["updaters"])
    return True


def is_coordinator(nodes: Dict[str, Dict[str, Any]], name: str) -> bool:
    """`coordinator` when the node sets it; else, with `updaters` N, whether it is among the first
    N members in node order (Figure 4's fixed updaters); else true."""
    return _is_coordinator(nodes[name].get("params") or {}, causal_members(nodes).index(name))


def _coordinators(nodes: Dict[str, Dict[str, Any]]) -> Tuple[List[str], List[str]]:
    """(the initial ring, the joiners), in node order."""
    ring, joiners = [], []
    for position, n in enumerate(causal_members(nodes)):
        params = nodes[n].get("params") or {}
        if _is_coordinator(params, position):
            (joiners if params.get("join") else ring).append(n)
    return ring, joiners


def _rate(params: Dict[str, Any], ring: int) -> float:
    """A coordinator's events per gossip round: its share of cluster_events_per_round, else
    events_per_round."""
    if "cluster_events_per_round" in params:
        return float(params["cluster_events_per_round"]) / max(ring, 1)
    return float(params.get("events_per_round", 0))


def most_events_per_round(nodes: Dict[str, Dict[str, Any]], ring: int) -> int:
    """The most events any coordinator can create in one gossip round (its rate rounded up): a
    reused ticket's margin is about its last owner's rate, not the new owner's."""
    initial, joiners = _coordinators(nodes)
    rates = [_rate(nodes[n].get("params") or {}, ring) for n in initial + joiners]
    return math.ceil(round(max(rates, default=0.0), 9))


def initial_ring(nodes: Dict[str, Dict[str, Any]], tickets: int) -> Dict[int, str]:
    ring, _ = _coordinators(nodes)
    return {math.floor(i * tickets / len(ring)): name for i, name in enumerate(ring)} if ring else {}


def default_tickets(nodes: Dict[str, Dict[str, Any]]) -> int:
    ring, joiners = _coordinators(nodes)
    return max(1, len(ring) + len(joiners))


#: the parameters every causal-member node must give the same value (default: None here)
SHARED = ("tickets", "k", "updaters")


def check_structure(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    """Enough tickets for the coordinators, an initial ring of at least k+1 (A8), the same n,
    k and updaters everywhere, and one way of giving the load. The coordinators are found once:
    a 125-member cluster is checked node by node."""
    params = nodes[name].get("params") or {}
    members = causal_members(nodes)
    ring, joiners = _coordinators(nodes)
    coordinators = len(ring) + len(joiners)
    defaults = {"tickets": max(1, coordinators), "k": DEFAULTS["k"], "updaters": None}

    def shared(p: Dict[str, Any]) -> Dict[str, Any]:
        return {key: p.get(key, defaults[key]) for key in SHARED}

    mine = shared(params)
    tickets, k = mine["tickets"], mine["k"]
    if tickets < coordinators:
        return "tickets", f"{tickets} tickets for {coordinators} coordinators", f"at least {coordinators}"
    coordinator = _is_coordinator(params, members.index(name))
    if "updaters" in params and params["updaters"] > len(members):
        return "updaters", f"{params['updaters']} updaters among {len(members)} members", f"at most {len(members)}"
    if coordinator and not ring:
        return "join", "no coordinator is in the initial ring, so nobody can serve a cjoin", \
            "join: false on at least one coordinator"
    if coordinator and len(ring) < k + 1:
        return "k", f"k = {k} needs an initial ring of at least {k + 1} coordinators, there are {len(ring)}", \
            f"k at most {max(len(ring) - 1, 0)}, or more coordinators without join"
    for other in members:
        theirs = shared(nodes[other].get("params") or {})
        for key in SHARED:
            if theirs[key] != mine[key]:
                return key, f"{name} and {other} differ in {key}", "the same value on every causal-member node"
    if "events_per_round" in params and "cluster_events_per_round" in params:
        return "cluster_events_per_round", "given with events_per_round", "one of the two"
    return None



#: how many message delays (δ) a leaving coordinator waits for ACKCLEAVE before it just stops,
#: and at most how many seconds of the wall clock (within the agent's STOP_GRACE_S for a stop)
LEAVE_WAIT = 4
LEAVE_WALL_S = 1.0

#: in the member's directory: the last of its own event numbers, kept across restarts
MADE_FILE = "causal-made"


def read_made(path: Optional[str]) -> int:
    """The last event number a member gave before it was restarted (0: none, or no directory)."""
    if not path:
        return 0
    try:
        with open(path) as handle:
            return max(int(handle.read().strip() or 0), 0)
    except (OSError, ValueError):
        return 0


def write_made(path: Optional[str], number: int) -> None:
    """Keep the last event number given, overwritten in place: one write of a fixed-width field at
    the file's start, within its first block (a kill leaves the previous number or this one, never
    half of one). Not a new file renamed over the old: on ext4 that rename, once an event, could
    wait a second for the disk (submit_bio_wait) and hold the event loop of every member at once,
    which then missed its neighbours' ALIVEs (issue 32: a CI run whose ring came down)."""
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"%20d" % number, 0)
    finally:
        os.close(fd)


class CausalMember(Role):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        p = {**DEFAULTS, **params}
        self.p = p
        nodes = agent.config.nodes
        self.members = causal_members(nodes)
        self.n = int(p.get("tickets", default_tickets(nodes)))
        self.ring = initial_ring(nodes, self.n)
        self.coordinator = is_coordinator(nodes, agent.name)
        # a coordinator started mid-run (a restart, or held back for the timeline) joins by cjoin
        # whatever `join` says: its initial-ring ticket may have been excluded and reused meanwhile
        self.late = bool(getattr(agent.config, "late_start", False))
        self.joiner = (bool(p.get("join", False)) or self.late) and self.coordinator
        self.rate = _rate(p, len(self.ring))
        self.count = p.get("count")
        self.created = 0
        self.gossip_s = float(p["gossip_round_ms"]) / 1000
        self.round_s = float(p["round_ms"]) / 1000
        self.delta_s = float(p["delta_ms"]) / 1000
        self.size = int(p["event_bytes"])
        rng = agent.rng
        self.rng = rng
        members = lambda: self.members  # noqa: E731
        self.owners: Dict[int, str] = dict(self.ring)   # ticket → the creator of its latest event seen
        self._owner_seq: Dict[int, int] = {}
        self._hops: Dict[Tuple[int, int], int] = {}   # event → hops of the copy that brought it, until delivered
        self.cluster = ClusterMember(agent.name, self.n, int(p["k"]), delta=self.delta_s, period=self.round_s,
                                     p_exclude=float(p["p_exclude"]), rng=rng) if self.coordinator else None
        self.gossip = PrCast(agent.name, members, fanout=int(p["fanout"]), max_hops=int(p["max_hops"]),
                             max_events=int(p["max_events"]), history=int(p["history"]),
                             view_size=p.get("view_size"), rng=rng)
        rounds = 2 * int(p["max_hops"]) + float(p["time_to_terminate"]) + float(p["time_to_recover"])
        cluster_rate = self.rate * max(len(self.ring), 1)
        self.buffer_events = int(p.get("buffer_events") or buffer_size(cluster_rate, rounds))
        self.causal = CausalLayer(self.n, None, recovery=p["recovery"], k_rec=int(p["k_rec"]),
                                  buffer_events=self.buffer_events, time_to_terminate=float(p["time_to_terminate"]),
                                  time_to_recover=float(p["time_to_recover"]), members=members, me=agent.name,
                                  owner_of=self._owner_of, rng=rng, late=self.late)
        # its own event numbers go on after a restart: the last one given is kept in its directory
        log = getattr(agent.config, "log", None)
        self._made_path = os.path.join(os.path.dirname(log), MADE_FILE) if log else None
        self.causal.made = read_made(self._made_path)
        self.causal.reuse_margin = reuse_margin(most_events_per_round(nodes, len(self.ring)), self.round_s,
                                                self.gossip_s, self.delta_s)
        self.round_no = 0
        self.creating = True
        self._starts: Dict[str, float] = {}   # each loop's schedule origin (the agent clock's time)
        # the first gossip round and the first cluster-management round come at phases of the
        # member's own, drawn from its seed (I15 and I17 of docs/CAUSAL-READING.md), as on hosts of
        # their own: rounds that follow the testbed's start follow whatever order and spacing it
        # signals the agents in (one by one in node order, or all within a millisecond)
        self._first = {"gossip_round": self.gossip_s * (1.0 - rng.random()),
                       "cluster_round": self.round_s * (1.0 - rng.random())}
        # Figure 5's "gossip only": the same PrCast receive order delivered at once, each event
        # unless a causally later one of its index was delivered already (optimistic order)
        self.gossip_only_T = [0] * self.n
        self.gossip_only_seen: set = set()
        self.gossip_only = {"delivered": 0, "out_of_order": 0}
        self.gossip_only_latency: Dict[int, int] = {}   # whole virtual ms → events
        self._statuses: Dict[int, float] = {}       # ref → deadline (the agent clock's time)
        self._armed: Optional[float] = None          # the cluster deadline a poll is scheduled for
        self._logged_drops = 0
        self.clock = agent.clock.now_ns  # virtual ns, shared by the members

    # -- helpers --------------------------------------------------------------------------------

    def _owner_of(self, ticket: int) -> Optional[str]:
        if self.cluster is not None and ticket in self.cluster.cview:
            return self.cluster.cview[ticket]
        return self.owners.get(ticket)

    def _node_id(self, name: str) -> int:
        return int(self.agent.config.nodes[name]["id"])

    def _record(self, e: Event, age: int) -> "wire.EventRecord":
        return wire.EventRecord(index=e.index, sequence=e.number, origin=self._node_id(e.origin),
                                created_ns=e.created_ns, age=age, ts=tuple(e.ts), body=bytes(e.size))

    def _event(self, r: "wire.EventRecord") -> Event:
        origin = self.agent.by_id.get(r.origin, str(r.origin))
        return Event(r.index, tuple(r.ts), origin, r.created_ns, len(r.body), r.sequence)

    def _log_delivered(self, events: List[Event]) -> None:
        if not events:
            return
        how = {id(e): h for e, h in self.causal.delivered[-len(events):]}
        for e in events:
            self.agent.log.write("deliver", type="CAUSAL_EVENT", origin=e.origin, seq=e.number,
                                 message_id=event_id(e.eid), ticket=e.index, ts=list(e.ts), how=how.get(id(e), "in order"),
                                 produced_ns=e.created_ns, hops=self._hops.pop(e.eid, None))
        self._log_drops()

    def _log_drops(self) -> None:
        for e, reason in self.causal.dropped[self._logged_drops:]:
            self._hops.pop(e.eid, None)
            self.agent.log.write("drop", reason=reason, origin=e.origin, seq=e.number, message_id=event_id(e.eid),
                                 ticket=e.index)
        self._logged_drops = len(self.causal.dropped)

    def _gossip_only(self, e: Event) -> None:
        if e.eid in self.gossip_only_seen or e.origin == self.agent.name:
            return
        self.gossip_only_seen.add(e.eid)
        if e.ts[e.index] <= self.gossip_only_T[e.index]:
            self.gossip_only["out_of_order"] += 1
            return
        self.gossip_only["delivered"] += 1
        self.gossip_only_T = [max(a, b) for a, b in zip(self.gossip_only_T, e.ts)]
        ms = max(int((self.clock() - e.created_ns) // 1_000_000), 0)   # delivered on receipt
        self.gossip_only_latency[ms] = self.gossip_only_latency.get(ms, 0) + 1

    # -- cluster management plumbing -------------------------------------------------------------

    def _send_cluster(self, outs: List[Out]) -> None:
        clock = self.agent.clock
        # the ticket changes first: a served cjoin gives a ticket up before the ACKCJOIN leaves,
        # so that the log never shows the giver holding it after the joiner took it
        self._sync_ticket()
        for out in outs:
            body: Dict[str, Any] = {"m": out.type, "p": out.payload}
            if out.ref is not None:
                body["ref"] = out.ref
                self._statuses[out.ref] = clock.time() + self.delta_s
                clock.call_later(self.delta_s, self._status_timeout, out.ref)
            targets = [m for m in self.members if m != self.agent.name] if out.to == "all" else out.to
            if targets:
                self.agent.send(MessageType.MEMBERSHIP, wire.json_body(body), to=targets, membership=out.type)
        deadline = self.cluster.next_deadline() if self.cluster is not None else None
        if deadline is not None and deadline != self._armed:
            self._armed = deadline
            clock.call_later(max(deadline - clock.time(), 0) + 0.001, self.poll)

    def _sync_ticket(self) -> None:
        if self.cluster is None:
            return
        for change in self.cluster.changes():
            fields = {k: v for k, v in change.items() if k not in ("state", "why", "ticket", "coordinates")}
            self.agent.log.write("state", state=TICKET_STATE, membership=change["state"], ticket=change["ticket"],
                                 coordinates=change["coordinates"], why=change["why"], **fields)
        ticket = self.cluster.ticket if self.cluster.state == COORDINATOR else None
        # A17: a ticket whose giver knew it had an owner, or whose last creator seen is another
        # process, is reused: the first event with it skips reuse_margin counts
        self.causal.take(ticket, reused=self.cluster.ticket_reused
                         or self.owners.get(ticket) not in (None, self.agent.name))
        if ticket is not None:
            self.owners[self.causal.ticket] = self.agent.name

    # -- the loops ------------------------------------------------------------------------------

    async def run(self) -> None:
        if self.cluster is not None:
            if self.joiner:
                self._send_cluster(self.cluster.join(self._contacts()))
            else:
                self.cluster.bootstrap(self.ring)
                self._sync_ticket()
        try:
            await asyncio.gather(*self._loops())
        except asyncio.CancelledError:
            # the workload ends (SIGUSR1): no new events, but gossip and membership go on through
            # the quiet period, so that events in flight are not cut off as "lost"
            self.creating = False
            for loop in self._loops():
                asyncio.ensure_future(loop)
            raise

    def _loops(self) -> list:
        loops = [self._every(self.gossip_s, self.gossip_round)]
        if self.cluster is not None:
            loops.append(self._every(self.round_s, self.cluster_round))
        return loops

    async def _every(self, period: float, action) -> None:
        """`action` every `period` from the workload's start, the first at a phase of the member's
        own within the first period; restarted after the workload ends, it
        keeps its phase (a cluster round that slipped would miss its neighbours' ALIVEs). A round
        that fell behind skips the rounds it missed; one failed round is logged and the schedule
        goes on."""
        clock = self.agent.clock
        resume = action.__name__ in self._starts
        start = self._starts.setdefault(action.__name__, clock.time())
        first = start + self._first.get(action.__name__, period)
        await clock.every(period, action, first=first, resume=resume, on_error=self._round_failed)

    def _round_failed(self, action, exc: BaseException) -> None:
        self.agent.log_error(action.__name__, exc)

    def gossip_round(self) -> None:
        self.round_no += 1
        if self.causal.ticket is not None and self.creating and self.causal.synced:
            k = math.floor(self.rate) + (1 if self.rng.random() < self.rate - math.floor(self.rate) else 0)
            for _ in range(k):
                if self.count is not None and self.created >= self.count:
                    break
                e = self.causal.create(self.clock(), self.size)
                self.created += 1
                write_made(self._made_path, e.number)
                self.agent.log.write("send", type="CAUSAL_EVENT", origin=self.agent.name, seq=e.number,
                                     to="all", message_id=event_id(e.eid), ticket=e.index, ts=list(e.ts), bytes=e.size,
                                     frags=0, reliable=False, hops=0,
                                     eligible=[m for m in self.members if m != self.agent.name])
                self.gossip.broadcast(e.eid, e)
        requests, delivered = self.causal.tick(self.round_no)
        self._log_delivered(delivered)
        for eid, targets in requests:
            self.agent.send(MessageType.CAUSAL_RECOVER, wire.json_body({"want": list(eid)}), to=targets)
        targets, entries = self.gossip.round()
        if targets and entries:
            body = wire.encode_events([self._record(e, age) for _, e, age in entries])
            self.agent.send(MessageType.CAUSAL_DATA, body, to=targets, events=len(entries))

    def cluster_round(self) -> None:
        if self.cluster.state == JOINING:
            self.cluster.contacts = self._contacts()
        self._send_cluster(self.cluster.round(self.agent.clock.time()))

    def _contacts(self) -> List[str]:
        """The coordinators a cjoin may ask: the initial ring, then whoever created events since."""
        return sorted(set(self.owners.values()) - {self.agent.name}) or sorted(self.ring.values())

    def _status_timeout(self, ref: int) -> None:
        """No STATUS within δ: the send failed (section 4.2's weak detection)."""
        if self._statuses.pop(ref, None) is not None and self.cluster is not None:
            self._guard(lambda now: self.cluster.on_status(ref, False, now))

    def poll(self) -> None:
        """The cluster's own deadline (the exclusion's 2δ wait) came."""
        if self.cluster is not None:
            self._guard(self.cluster.poll)

    def _guard(self, call) -> None:
        """A cluster call from a timer: its exception is logged like a round's."""
        try:
            self._send_cluster(call(self.agent.clock.time()))
        except Exception as exc:
            self.agent.log_error("cluster timer", exc)

    # -- messages -------------------------------------------------------------------------------

    def on_message(self, header, body: bytes, sender: str) -> None:
        if header.type == MessageType.CAUSAL_DATA:
            entries = []
            for r in wire.decode_events(body):
                e = self._event(r)
                if e.ts[e.index] > self._owner_seq.get(e.index, 0):   # a reused ticket's new owner
                    self.owners[e.index], self._owner_seq[e.index] = e.origin, e.ts[e.index]
                entries.append((e.eid, e, r.age))
            ages = {eid: age for eid, _, age in reversed(entries)}   # the first copy's, if twice
            for eid, e in self.gossip.receive(entries):
                if not self.causal.done(e):   # a late copy of an event delivered already: no hops to keep
                    self._hops[eid] = ages[eid]
                self._gossip_only(e)
                self._log_delivered(self.causal.receive(e, self.round_no))
        elif header.type == MessageType.CAUSAL_RECOVER:
            want = wire.read_json_body(body).get("want")
            if isinstance(want, list) and len(want) == 2 and all(isinstance(x, int) for x in want):
                found = self.causal.on_recover((want[0], want[1]))
                if found is not None:
                    self.agent.send(MessageType.CAUSAL_RECOVERY, wire.encode_events([self._record(found, 0)]),
                                    to=sender, events=1)
        elif header.type == MessageType.CAUSAL_RECOVERY:
            for r in wire.decode_events(body):
                e = self._event(r)
                self._hops.setdefault(e.eid, 1)   # straight from the process that had it
                self._log_delivered(self.causal.on_ack_recover(e))
        elif header.type == MessageType.MEMBERSHIP:
            msg = wire.read_json_body(body)
            kind, ref = msg.get("m"), msg.get("ref")
            if kind == "STATUS":
                if self.cluster is not None and self._statuses.pop(ref, None) is not None:
                    now = self.agent.clock.time()
                    self._send_cluster(self.cluster.on_status(ref, True, now))
                return
            late_ack = kind == "ACKCJOIN" and (self.cluster is None or self.cluster.state != JOINING)
            if ref is not None and not late_ack:   # a second ACKCJOIN fails, so its giver takes the ticket back
                self.agent.send(MessageType.MEMBERSHIP, wire.json_body({"m": "STATUS", "ref": ref}), to=sender,
                                membership="STATUS")
            if self.cluster is not None and kind in MESSAGES:
                now = self.agent.clock.time()
                self._send_cluster(self.cluster.on_message(sender, kind, msg.get("p") or {}, now))

    def stop(self) -> Optional[Awaitable[None]]:
        if self.cluster is not None and self.cluster.state == COORDINATOR:
            if self.creating:
                # stopped during the workload: Algorithm 1's leave, the predecessor taking the
                # tickets over; after the workload (the run's end) every agent stops: no leave
                self._send_cluster(self.cluster.cleave())
                if self.cluster.state == LEAVING:
                    return self._leaving()
            self.cluster.leave()   # A6: a leaver just stops; its ticket row ends here
            self._sync_ticket()
        self._last_words()
        return None

    async def _leaving(self) -> None:
        """Wait for ACKCLEAVE up to LEAVE_WAIT message delays (it comes within two), and never
        past a second of the wall clock (the agent waits STOP_GRACE_S for a stop), then stop;
        unacknowledged, the leave becomes a plain stop, which the predecessor's exclusion ends.
        The last rows are written however the wait ends."""
        clock = self.agent.clock
        budget = min(LEAVE_WAIT * self.delta_s, clock.virtual(LEAVE_WALL_S))
        deadline = clock.time() + budget
        try:
            while self.cluster.state == LEAVING and clock.time() < deadline:
                await clock.sleep(min(self.delta_s / 10, 0.01))
        finally:
            if self.cluster.state == LEAVING:
                self.cluster.leave()
            self._sync_ticket()
            self._last_words()

    def _last_words(self) -> None:
        self._log_drops()
        self.agent.log.write("state", state=COUNTERS_STATE, **{f"causal_{k}": v for k, v in self.causal.counters.items()},
                             **{f"gossip_{k}": v for k, v in self.gossip.counters.items()},
                             **{f"cluster_{k}": v for k, v in (self.cluster.counters if self.cluster else {}).items()},
                             **{f"gossip_only_{k}": v for k, v in self.gossip_only.items()},
                             gossip_only_latency_ms={str(ms): n for ms, n in sorted(self.gossip_only_latency.items())},
                             buffer_events=self.buffer_events, events_created=self.created)


ROLE = CausalMember
