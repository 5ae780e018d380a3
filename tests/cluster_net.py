"""An in-memory network for the cluster management of agents/causal/cluster.py: virtual time in
rounds of 1.0, messages delayed 0.01-0.05 (δ = 0.1), a connection-oriented send's status OK
when the receiver is up and the link between the two is not cut, and kills, leaves, link cuts
and heals.

Rounds are in phase by default: every live member runs its round at each whole time. With
`phases=True` each member runs its rounds on its own clock, at φ, φ + 1, φ + 2, ... for a phase φ
drawn in [0, 1) (a joiner's first round comes at the first such time after it was added), as the
role does on real hosts (agents/causal/member.py: every process from its own start), and a
member's exclusion deadline is served when it comes rather than on the in-phase 0.1 grid.

With `events` (issue 30's event identity) every coordinator also makes events, on average `events`
a round at its round (the gossip round is the cluster round here), with the causality layer's own
numbering (agents/causal/causality.py: CausalLayer.take and create, reuse_margin); an event goes
to every member it can reach and each forwards it once on first receipt, as gossip would carry it
to everyone connected; a joiner's clock starts from the first event it gets (I10). `made` lists
every creation: who, its own number, the protocol's name (ticket, count), when.

`shared_tickets` is the independent observer of Theorem 4.2: it reads only the ticket changes the
members logged and the network's own record of who went down when, and gives every overlap of two
processes holding one ticket (spark_analysis/checks/tickets.py, the check real runs are judged
by)."""

from __future__ import annotations

import heapq
import math
import random
from typing import Any, Dict, List, Optional, Set, Tuple

from agents.causal.causality import CausalLayer, Event, reuse_margin
from agents.causal.cluster import COORDINATOR, LEAVING, LEFT, ClusterMember, Out
from agents.causal.member import LEAVE_WAIT

DELTA = 0.1
US = 1_000_000          # the observer's time unit: a millionth of a round


class ClusterNet:
    def __init__(self, names: List[str], n: int, k: int = 1, seed: int = 1, phases: bool = False,
                 events: float = 0.0, margin: Optional[int] = None) -> None:
        self.rng = random.Random(seed)
        self.n, self.k = n, k
        self.now = 0.0
        self.phases = phases
        self.events = events
        # the counts a reused ticket's new owner skips: the role's own rule unless a test sets it
        self.margin = reuse_margin(math.ceil(events), 1.0, 1.0, DELTA) if margin is None else margin
        self.causal: Dict[str, CausalLayer] = {}
        self.owners: Dict[str, Dict[int, str]] = {}      # each member's last creator seen of each ticket
        self.owner_count: Dict[str, Dict[int, int]] = {}  # and the count of that creator's event
        self.seen: Dict[str, Set[Tuple[str, int]]] = {}  # each member's events got, as (origin, number)
        self.made: List[Dict[str, Any]] = []
        self.members: Dict[str, ClusterMember] = {}
        self.phase: Dict[str, float] = {}
        self.round_at: Dict[str, float] = {}     # with phases: each member's next round
        for m in names:
            self._new(m, random.Random(f"{seed}:{m}"))
        self.dead: Set[str] = set()
        self.down: Dict[str, float] = {}         # when the network saw a member go (killed or left)
        self.cut: Set[frozenset] = set()
        self.queue: List[Tuple[float, int, str, str, Any]] = []
        self._count = 0
        self.log: List[Dict] = []          # every ticket change, with time and process
        self.alive_sent: Dict[Tuple[str, int], int] = {}
        self.violations: List[str] = []
        self.next_round = 1.0
        self._armed: Dict[str, float] = {}

    def _new(self, name: str, rng: random.Random) -> ClusterMember:
        self.members[name] = ClusterMember(name, self.n, self.k, delta=DELTA, rng=rng)
        if self.events:
            # a member added after the start (a joiner) takes its clock from its first event (I10);
            # the timers as the role's defaults have them (5 gossip rounds each, half a cluster
            # round), though events come once a cluster round here
            self.causal[name] = CausalLayer(self.n, None, recovery="none", me=name, late=hasattr(self, "dead"),
                                            time_to_terminate=0.5, time_to_recover=0.5)
            self.causal[name].reuse_margin = self.margin
            # every member starts knowing the initial ring's owners, as the role does
            self.owners[name], self.owner_count[name], self.seen[name] = dict(getattr(self, "ring", {})), {}, set()
        if self.phases:
            phi = self.rng.random()
            self.phase[name] = phi
            first = math.floor(self.now - phi) + 1 + phi       # the first φ + j after now
            self.round_at[name] = first if first > self.now else first + 1
        return self.members[name]

    def add(self, name: str) -> ClusterMember:
        return self._new(name, random.Random(f"{self.rng.random()}:{name}"))

    def bootstrap(self, ring: Dict[int, str]) -> None:
        self.ring = dict(ring)
        for m in ring.values():
            self.members[m].bootstrap(ring)
            if self.events:
                self.owners[m].update(ring)
        self._collect()

    # -- faults ---------------------------------------------------------------------------------

    def kill(self, name: str) -> None:
        self.dead.add(name)
        self.down.setdefault(name, self.now)

    def leave(self, name: str, graceful: bool = True) -> None:
        """The role's stop during the workload: Algorithm 1's leave (cleave), the process gone
        once its predecessor acknowledged, or after LEAVE_WAIT δ without an answer (then it stops
        as in A6 and is excluded); `graceful=False`: A6's stop at once."""
        m = self.members[name]
        self.send(name, m.cleave() if graceful else m.leave())
        self._collect()
        if m.state == LEAVING:
            self._count += 1
            heapq.heappush(self.queue, (self.now + LEAVE_WAIT * DELTA, self._count, "", name, "die"))
        else:
            self.kill(name)

    def isolate(self, name: str) -> None:
        self.cut |= {frozenset((name, x)) for x in self.members if x != name}

    def heal(self, name: Optional[str] = None) -> None:
        self.cut = set() if name is None else {c for c in self.cut if name not in c}

    # -- the network ----------------------------------------------------------------------------

    def reachable(self, a: str, b: str) -> bool:
        return b not in self.dead and a not in self.dead and frozenset((a, b)) not in self.cut

    def send(self, sender: str, outs: List[Out]) -> None:
        for out in outs:
            targets = [m for m in self.members if m != sender] if out.to == "all" else [out.to]
            if out.type == "ALIVE":
                key = (sender, math.floor(self.now - self.phase.get(sender, 0.0)))
                self.alive_sent[key] = self.alive_sent.get(key, 0) + 1
            for t in targets:
                if self.reachable(sender, t):
                    self._count += 1
                    heapq.heappush(self.queue, (self.now + self.rng.uniform(0.01, 0.05), self._count, sender, t, out))
            if out.ref is not None:
                ok = self.reachable(sender, out.to)
                self._count += 1
                heapq.heappush(self.queue, (self.now + 0.06, self._count, sender, sender, ("status", out.ref, ok)))

    def run_until(self, t_end: float) -> None:
        """Messages in time order and a round for every live member at each whole time (each at
        its own phase with `phases`)."""
        if self.phases:
            return self._run_phased(t_end)
        while True:
            head = self.queue[0][0] if self.queue else None
            if head is not None and head < self.next_round and head <= t_end:
                self._step()
                continue
            if self.next_round > t_end:
                self.now = t_end
                return
            self.now = self.next_round
            self.next_round += 1.0
            for name in sorted(self.members):
                if name not in self.dead:
                    self.send(name, self.members[name].round(self.now))
            for tenth in range(1, 10):   # the members' timers (2δ waits) are polled every 0.1
                self._count += 1
                heapq.heappush(self.queue, (self.now + tenth / 10, self._count, "", "", "poll"))
            self._collect()
            for name in sorted(self.members):
                self._make(name)

    def _run_phased(self, t_end: float) -> None:
        while True:
            head = self.queue[0][0] if self.queue else math.inf
            live = [(at, name) for name, at in self.round_at.items() if name not in self.dead]
            at, name = min(live) if live else (math.inf, "")
            if head < at and head <= t_end:
                self._step()
            elif at <= t_end:
                self.now = at
                self.round_at[name] = at + 1.0
                self.send(name, self.members[name].round(at))
                self._collect()
                self._make(name)
            else:
                self.now = t_end
                return
            self._arm()

    def _arm(self) -> None:
        """With phases, a member's exclusion deadline is polled when it comes (the role arms a
        timer for it)."""
        for name, m in self.members.items():
            d = m.next_deadline()
            if d is not None and name not in self.dead and self._armed.get(name) != d:
                self._armed[name] = d
                self._count += 1
                heapq.heappush(self.queue, (max(d, self.now) + 1e-6, self._count, "", name, "poll"))

    def _step(self) -> None:
        at, _, sender, to, out = heapq.heappop(self.queue)
        self.now = at
        if isinstance(out, tuple) and out[0] == "event":
            self._got(to, out[1])
            return
        if isinstance(out, str) and out == "die":
            if to not in self.dead:
                if self.members[to].state == LEAVING:
                    self.send(to, self.members[to].leave())
                    self._collect()
                self.kill(to)
            return
        if isinstance(out, str) and out == "poll":
            for name in self.members:
                if name not in self.dead:
                    self.send(name, self.members[name].poll(at))
            self._collect()
            return
        if to in self.dead:
            return
        m = self.members[to]
        if isinstance(out, tuple):
            self.send(to, m.on_status(out[1], out[2], at))
        else:
            self.send(to, m.on_message(sender, out.type, out.payload, at))
            if m.state == LEFT and out.type == "ACKCLEAVE":   # its leave done, the process stops
                self._collect()
                self.kill(to)
        for name in self.members:
            if name not in self.dead:
                self.send(name, self.members[name].poll(at))
        self._collect()

    # -- what happened --------------------------------------------------------------------------

    def _collect(self) -> None:
        for name, m in self.members.items():
            for change in m.changes():
                self.log.append({"t": self.now, "node": name, **change})
            if self.events:   # the role's _sync_ticket
                ticket = m.ticket if m.state == COORDINATOR and name not in self.dead else None
                self.causal[name].take(ticket, reused=m.ticket_reused or self.owners[name].get(ticket) not in (None, name))
                if ticket is not None:
                    self.owners[name][ticket] = name
        self.check_unique()

    # -- events ---------------------------------------------------------------------------------

    def _make(self, name: str) -> None:
        """A member's gossip round: the causality layer's timers (the round is the gossip round
        here), then its new events."""
        c = self.causal.get(name)
        if c is None or name in self.dead:
            return
        c.tick(self.now)
        if c.ticket is None or not c.synced:
            return
        k = math.floor(self.events) + (1 if self.rng.random() < self.events - math.floor(self.events) else 0)
        for _ in range(k):
            e = c.create()
            self.made.append({"t": self.now, "origin": name, "number": e.number, "name": e.eid})
            self.seen[name].add((name, e.number))
            self._spread(name, e)

    def _spread(self, sender: str, e: Event) -> None:
        for t in self.members:
            if t != sender and self.reachable(sender, t):
                self._count += 1
                heapq.heappush(self.queue, (self.now + self.rng.uniform(0.01, 0.05), self._count, sender, t,
                                            ("event", e)))

    def _got(self, to: str, e: Event) -> None:
        if to in self.dead or (e.origin, e.number) in self.seen[to]:
            return
        self.seen[to].add((e.origin, e.number))
        if e.ts[e.index] > self.owner_count[to].get(e.index, 0):   # as the role's on_message
            self.owners[to][e.index], self.owner_count[to][e.index] = e.origin, e.ts[e.index]
        self.causal[to].receive(e, self.now)
        self._spread(to, e)

    def repeated_names(self) -> List[List[Dict[str, Any]]]:
        """Every (ticket, count) given to more than one event, with its creations."""
        by: Dict[Tuple[int, int], List[Dict[str, Any]]] = {}
        for m in self.made:
            by.setdefault(m["name"], []).append(m)
        return [v for v in by.values() if len(v) > 1]

    def holders(self) -> Dict[str, Set[int]]:
        return {name: {m.ticket} | set(m.coordinated()) for name, m in self.members.items()
                if name not in self.dead and m.state == COORDINATOR}

    def check_unique(self) -> None:
        held = self.holders()
        names = sorted(held)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                common = held[a] & held[b]
                if common:
                    self.violations.append(f"t={self.now:.2f}: {a} and {b} both hold {sorted(common)}")

    def coordinators(self) -> List[str]:
        return sorted(n for n, m in self.members.items() if n not in self.dead and m.state == COORDINATOR)


def shared_tickets(net: ClusterNet, end: Optional[float] = None) -> List[Dict[str, Any]]:
    """Every time two processes held one ticket at once, as an observer outside the members sees
    it: from the ticket changes they logged (a row holds its ticket and the tickets it coordinates
    until the member's next row) and the network's record of kills and leaves (a process that is
    gone holds nothing). Each overlap: ticket, the two nodes, from and until (rounds, until None:
    still at `end`), and what each row said."""
    from spark_analysis.checks.tickets import check_ticket_uniqueness

    def us(t: float) -> int:
        return round(t * US)

    rows = [{**r, "t": us(r["t"])} for r in net.log]
    down = {name: [(us(t), None)] for name, t in net.down.items()}
    res = check_ticket_uniqueness(rows, down, us(net.now if end is None else end))
    if res["verdict"] not in ("valid", "invalid"):
        raise AssertionError(f"nothing to judge: {res}")
    found = res["anomalies"]["shared-ticket"]
    cex = res["counterexamples"]["shared-ticket"]
    out = [{**c, "from": c["from"] / US, "until": None if c["until"] is None else c["until"] / US} for c in cex]
    if found > len(cex):
        out.append({"more": found - len(cex)})
    return out
