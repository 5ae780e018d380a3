"""Fault-tolerant cluster management (Algorithms 2-4, with the cjoin of Algorithm 3), without I/O.
The caller feeds it rounds, messages, the status of connection-oriented sends and the clock, and
sends what it returns. docs/CAUSAL-READING.md gives the algorithms as recovered from the paper and
the readings (A-numbers) taken here.

Tickets 0..n-1 sit on a ring: the successor of ticket i is i-1 mod n. A coordinator owns one ticket
and coordinates the tickets from its own down to its immediate successor's (exclusive): S_p. `k`
below is the fault-tolerance k (k_ft: 2k+1 neighbours, a k+1 quorum), not the R4 fan-out.

- Every round (`round()`), a coordinator first checks that it heard ALIVE from at least k+1 of
  L_p during the last round, else it disconnects (reading A7: a joiner skips the check in its first
  round); then sends ALIVE to its 2k+1 closest successors in Cview, and, unless it is in the
  quiet rounds after an exclusion, UPDATE(R) to its immediate successor with R = {the 2k closest
  predecessors in L_p} ∪ {p}: if the send's status is OK, R_p := R, else it runs the exclusion
  with probability `p_exclude` (A13).
- Closest successors and predecessors walk Cview's owners round the ring; in a ring of fewer than
  2k+2 coordinators the walk wraps and a process counts itself once (A8), so that a small static
  ring (`bootstrap`, at least k+1 coordinators) survives its own quorum.
- cjoin (Algorithm 3): a coordinator with |S_p| > 1 that is not temporary, and that has heard
  ALIVE from k+1 of L_p within the last round (T + δ: `knows_quorum`, the first invariant read
  when it acts; a process being excluded without knowing it seats no joiner late), gives the
  joiner a ticket t drawn from S_p less its own (and less tickets it blocks), sets the joiner as its
  immediate successor and answers ACKCJOIN(R, t, j, Cview) with status. The joiner owns t and
  coordinates t down to j+1, takes L := R, and announces its ticket (`announce` messages, which
  the role disseminates to every member: "it also PrCasts that it became a coordinator").
  Otherwise REJECT; a rejected joiner asks another of its contacts at its next round (A12).
- Leaving (`cleave`, Algorithm 1 inside the fault-tolerant cluster, reading I11): the leaver lets
  go of its tickets, then sends CLEAVE to its immediate predecessor, which takes them over, makes
  the leaver's successor its own (NEWSUCC), answers ACKCLEAVE and RETRACTs the leaver everywhere;
  the tickets go to no joiner for LEAVE_BLOCK rounds. A leaver whose predecessor does not answer
  stops as in A6, and that predecessor's failed UPDATE excludes it (it holds nothing by then).
- UPDATE is taken from the closest predecessor in Cview, which becomes ImmedPred (A9).
- Exclusion (Algorithm 4): p tries successive successors q in Cview with EXCLUDE (status) until
  one answers; q replies ACKEXCLUDE(L_q); p asks REQCOORD(E_pq) of every process in L_q ∩ R_p,
  E_pq being the tickets strictly between p's and q's; a process whose ticket is not in E_pq
  acknowledges (ACKCOORD), removes E_pq's owners from its Cview and refuses new owners of those
  tickets for `hold_rounds(d)` of its rounds (A5). After 2δ, with at least k+1 ACKCOORD, q
  becomes p's successor and p a temporary coordinator: it sends no UPDATE for dist(p, q) - 1
  rounds (Algorithm 4's TempRounds, A3), serves no cjoin and does not hold E_pq for
  hold_rounds(d) = 1 + d + ceil((2d - 1)·δ/T) rounds, by which time every process of E_pq has
  let go even with rounds out of phase (issue 30; docs/CAUSAL-READING.md, section 7), and gives
  E_pq's tickets to joiners a round later still; with fewer, p disconnects. d = dist(p, q) =
  (ticket(p) - ticket(q)) mod n (A2). An exclusion whose q a concurrent exclusion took out of the
  view before the wait ended is given up.
- Ticket changes are returned by `changes()` and written to the log by the role: what the process
  owns and coordinates after each change. A temporary coordinator does not count the tickets it
  took over as coordinated until it stops being temporary (its S_p holds them, but it serves no
  cjoin for them and blocks them): this is how "two processes never have common tickets; they
  either own or coordinate" (Theorem 4.2) is read and checked.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

#: rounds during which a predecessor gives none of the tickets a leaver handed it to a joiner
LEAVE_BLOCK = 2

JOINING, COORDINATOR, DISCONNECTED, LEFT, LEAVING = "joining", "coordinator", "disconnected", "left", "leaving"
MESSAGES = ("CJOIN", "ACKCJOIN", "REJECT", "ALIVE", "UPDATE", "EXCLUDE", "ACKEXCLUDE", "REQCOORD", "ACKCOORD",
            "ANNOUNCE", "RETRACT", "CLEAVE", "ACKCLEAVE", "NEWSUCC")


@dataclass
class Out:
    """A message to send. `ref` set: a connection-oriented send whose status the caller reports
    with `on_status(ref, ok)` within δ. `to` is "all" for an announcement to every member."""
    to: str
    type: str
    payload: Dict[str, Any] = field(default_factory=dict)
    ref: Optional[int] = None


@dataclass
class _Exclusion:
    tried: List[str]               # successors tried, in order
    candidate: Optional[str] = None
    ref: Optional[int] = None
    q: Optional[str] = None
    q_ticket: Optional[int] = None                     # q's ticket when it answered
    tickets: List[int] = field(default_factory=list)   # E_pq
    acks: Set[str] = field(default_factory=set)
    deadline: Optional[float] = None


class ClusterMember:
    def __init__(self, me: str, n: int, k: int = 1, *, delta: float = 0.5, period: float = 1.0,
                 p_exclude: float = 1.0, rng: Optional[random.Random] = None) -> None:
        self.me, self.n, self.k = me, n, k
        self.delta = delta
        self.period = period                     # T: the round's length, in the unit of delta and now
        self.p_exclude = p_exclude
        self.rng = rng or random.Random(0)
        self.state = JOINING
        self.ticket: Optional[int] = None
        self.cview: Dict[int, str] = {}          # ticket → owner, as this process knows it
        self.succ: Optional[str] = None
        self.pred: Optional[str] = None
        self.L: List[str] = []
        self.R: List[str] = []
        self.alive: Set[str] = set()
        self.heard_at: Dict[str, float] = {}     # sender → when its latest ALIVE came (itself: its round)
        self.temp_rounds = 0                     # rounds until the tickets of an exclusion are held
        self.quiet_rounds = 0                    # rounds without UPDATE after it (Algorithm 4's TempRounds)
        self.taken_over: Set[int] = set()        # tickets of the exclusion while temporary
        self.blocked: Dict[int, int] = {}        # ticket → rounds during which no new owner is taken
        # tickets this process knows had an owner: given to a joiner, or taken over from an excluded
        # or leaving process (A17: a joiner given one of them numbers its events past a margin)
        self.reused: Set[int] = set()
        self.ticket_reused = False               # this process's own ticket, as its giver knew it
        self.first_round = False
        self.rounds = 0
        self._ref = 0
        self._pending: Dict[int, Tuple[str, Any]] = {}   # ref → (what, data) awaiting a status
        self._exclusion: Optional[_Exclusion] = None
        self.contacts: List[str] = []
        self._retry = False
        self._asked: Optional[str] = None       # the contact of the last CJOIN
        self._join_rounds = 0                   # rounds since it was sent
        self._changes: List[Dict[str, Any]] = []
        self._left_tickets: List[int] = []      # what a leaver coordinated when it asked to cleave
        self._left_this_round: Set[str] = set()  # L members that left (CLEAVE) since the last check
        # alive_max_round: the most ALIVE messages sent to others between two rounds (at most 2k+1)
        self.counters = {"alive_sent": 0, "updates": 0, "exclusions": 0, "excluded": 0, "joins_served": 0,
                         "cleaves_served": 0, "alive_max_round": 0}
        self._alive_round = 0

    # -- the ring -------------------------------------------------------------------------------

    def owner_ticket(self, process: str) -> Optional[int]:
        for t, owner in self.cview.items():
            if owner == process:
                return t
        return None

    def _walk(self, step: int, count: int) -> List[str]:
        """The `count` closest successors (step -1) or predecessors (+1) in Cview: distinct owners
        in ring order from this process's ticket, itself included once when the walk wraps."""
        out: List[str] = []
        if self.ticket is None:
            return out
        for d in range(1, self.n + 1):
            owner = self.cview.get((self.ticket + step * d) % self.n)
            if owner is not None and owner not in out:
                out.append(owner)
                if len(out) == count:
                    break
        return out

    def successors(self, count: int) -> List[str]:
        return self._walk(-1, count)

    def predecessors(self, count: int) -> List[str]:
        return self._walk(+1, count)

    def dist(self, a: int, b: int) -> int:
        return (a - b) % self.n

    def hold_rounds(self, d: int) -> int:
        """The rounds of its own that the excluder of E_pq (d = dist(p, q)) stays temporary, and
        that an acknowledger blocks E_pq: 1 + ceil((W + 2δ) / T) = 1 + d + ceil((2d - 1)·δ / T).
        W = 2T + δ + (d - 2)(T + 2δ) bounds how long after the acknowledgements a process of E_pq
        (at most d - 1 of them) can still hold a ticket, rounds out of phase: the closest one may
        pass one more check on ALIVEs sent before them, and each further one, or a joiner one of
        them seated, holds on at most a round and two message delays longer than the one it heard
        from. The excluder's first round may come at once (hence 1 +), and an acknowledger may
        have acknowledged up to 2δ before the excluder decided. The paper has dist(p, q) - 1;
        docs/CAUSAL-READING.md, section 7, gives the argument."""
        return 1 + d + math.ceil(round((2 * d - 1) * self.delta / self.period, 9))

    def coordinated(self) -> List[int]:
        """S_p: own ticket down to the successor's ticket, exclusive (all n when alone), less the
        tickets a temporary coordinator took over."""
        if self.state != COORDINATOR or self.ticket is None:
            return []
        j = self.owner_ticket(self.succ) if self.succ is not None else None
        span = self.n if j is None or j == self.ticket else self.dist(self.ticket, j)
        return [(self.ticket - d) % self.n for d in range(span) if (self.ticket - d) % self.n not in self.taken_over]

    # -- life cycle -----------------------------------------------------------------------------

    def bootstrap(self, ring: Dict[int, str]) -> None:
        """The static initial ring (A8): every member of `ring` (ticket → process) starts as a
        coordinator with Cview, neighbours and L preset."""
        self.cview = dict(ring)
        self.ticket = next(t for t, p in ring.items() if p == self.me)
        self.state = COORDINATOR
        self.succ = self.successors(1)[0]
        self.pred = self.predecessors(1)[0]
        self.L = self.predecessors(2 * self.k + 1)
        self.R = []
        self.first_round = True
        self._changed("bootstrap")

    def join(self, contacts: List[str]) -> List[Out]:
        """Init: ask a coordinator for a ticket (cjoin): one of `contacts` (coordinators this
        process knows, which the caller may update while joining) drawn at random; after a
        REJECT, another at the next round (A12), and after a whole round without an answer too
        (the contact may have failed: I9 of docs/CAUSAL-READING.md)."""
        self.state = JOINING
        self.contacts = list(contacts)
        self._retry = False
        return [self._cjoin()]

    def _cjoin(self) -> Out:
        others = [c for c in self.contacts if c != self._asked] or self.contacts
        self._asked = self.rng.choice(others)
        self._join_rounds = 0
        return Out(self._asked, "CJOIN", {})

    def leave(self) -> List[Out]:
        """Stop at once (A6), or give up a cleave nobody acknowledged: the predecessor excludes us."""
        if self.state in (COORDINATOR, LEAVING):
            self._drop("leave")
        self.state = LEFT
        return []

    def cleave(self) -> List[Out]:
        """Algorithm 1's failure-free leave (lines 31-33): stop coordinating, and ask the immediate
        predecessor to take our tickets over (CLEAVE with our successor). We let go of the tickets
        here, before the predecessor takes them (on CLEAVE), so no two hold them at once; the
        caller waits for ACKCLEAVE a few message delays and otherwise stops as in `leave` (the
        predecessor's next UPDATE fails and it excludes us, which is safe as we hold nothing).
        Without a predecessor or successor of its own (a ring of one), or during an exclusion or
        a temporary coordination, it is `leave`."""
        if (self.state != COORDINATOR or self.pred in (None, self.me) or self.succ in (None, self.me)
                or self._exclusion is not None or self.temp_rounds > 0):
            return self.leave()
        self._left_tickets = self.coordinated()
        self.state = LEAVING
        self.ticket = None
        self._changed("leaving", tickets=self._left_tickets)
        return [self._cleave_request()]

    def _cleave_request(self) -> Out:
        blocked = {str(t): n for t, n in self.blocked.items() if t in self._left_tickets}
        return Out(self.pred, "CLEAVE", {"r": self.succ, "tickets": self._left_tickets, "blocked": blocked})

    # -- rounds ---------------------------------------------------------------------------------

    def round(self, now: float) -> List[Out]:
        """Algorithm 2's loop body, once a round."""
        out = self.poll(now)
        self.rounds += 1
        self._alive_round = 0
        for t in list(self.blocked):
            self.blocked[t] -= 1
            if self.blocked[t] <= 0:
                del self.blocked[t]
        if self.state == JOINING:
            self._join_rounds += 1
            if self._retry or self._join_rounds >= 2:
                self._retry = False
                out.append(self._cjoin())
        if self.state != COORDINATOR:
            self.alive.clear()
            return out
        heard = self.alive & (set(self.L) | self._left_this_round)
        self._left_this_round = set()
        if not self.first_round and len(heard) < self.k + 1:
            self._drop("too few ALIVE", heard=sorted(heard))
            self.alive.clear()
            return out
        self.first_round = False
        self.alive.clear()
        for s in self.successors(2 * self.k + 1):
            if s == self.me:
                self.alive.add(self.me)
                self.heard_at[self.me] = now
            else:
                out.append(Out(s, "ALIVE", {}))
                self._count_alive(1)
            self.counters["alive_sent"] += 1
        if self.quiet_rounds == 0:
            if self.succ is not None and self.succ != self.me and self._exclusion is None:
                r = self._r_set()
                out.append(self._status_send(self.succ, "UPDATE", {"R": r}, ("update", r, self.succ)))
                self.counters["updates"] += 1
        else:
            self.quiet_rounds -= 1
        if self.temp_rounds > 0:
            self.temp_rounds -= 1
            if self.temp_rounds == 0 and self.taken_over:
                self.taken_over.clear()
                self._changed("temporary coordination ended")
        return out

    def _r_set(self) -> List[str]:
        closest = self.predecessors(2 * self.k)
        return [r for r in closest if r in self.L and r != self.me] + [self.me]

    # -- statuses and timers --------------------------------------------------------------------

    def on_status(self, ref: int, ok: bool, now: float) -> List[Out]:
        what = self._pending.pop(ref, None)
        if what is None or self.state != COORDINATOR:
            return []
        kind, data = what[0], what[1]
        if kind in ("update", "ackcjoin"):
            if ok:
                self.R = data
                return []
            if what[2] != self.succ:
                # sent to the successor of then (which has left through us since, or was
                # replaced by a joiner): its failure says nothing of the successor of now
                return []
            if self.rng.random() < self.p_exclude:
                return self._exclude_start(now)
            return []
        if kind == "exclude":
            ex = self._exclusion
            if ex is None or ex.ref != ref:
                return []
            if ok:
                ex.deadline = now + 2 * self.delta     # waiting for ACKEXCLUDE, then ACKCOORDs
                return []
            return self._exclude_next(now)
        return []

    def next_deadline(self) -> Optional[float]:
        """When `poll` has something to decide (the exclusion's wait), or None."""
        ex = self._exclusion
        return ex.deadline if ex is not None else None

    def poll(self, now: float) -> List[Out]:
        """Deadlines: the exclusion's 2δ wait for ACKCOORD (and for ACKEXCLUDE)."""
        ex = self._exclusion
        if ex is None or ex.deadline is None or now < ex.deadline or self.state != COORDINATOR:
            return []
        self._exclusion = None
        if ex.q is None or len(ex.acks) < self.k + 1:
            self._drop("exclusion not acknowledged", acks=sorted(ex.acks), excluding=ex.tickets)
            return []
        if self.owner_ticket(ex.q) != ex.q_ticket:
            # a concurrent exclusion took q out of our view meanwhile (we acknowledged it): E_pq
            # no longer ends at a live successor; the next failed UPDATE starts a new exclusion
            self._changed("exclusion abandoned", excluding=ex.tickets)
            return []
        excluded = sorted({self.cview[t] for t in ex.tickets if t in self.cview and self.cview[t] != self.me})
        before = set(self.coordinated())
        for t in ex.tickets:
            if self.cview.get(t) not in (None, self.me):
                del self.cview[t]
        self.succ = ex.q
        d = self.dist(self.ticket, ex.q_ticket)
        m = self.hold_rounds(d)
        self.temp_rounds = m
        self.quiet_rounds = max(d - 1, 0)
        self.taken_over = set(ex.tickets) - before
        self.reused |= set(ex.tickets)
        for t in ex.tickets:
            # given to a joiner only a round after every acknowledger's block has ended, so that
            # none of them ignores the joiner's announcement
            self.blocked[t] = max(self.blocked.get(t, 0), m + 1)
        self.counters["excluded"] += len(excluded)
        self._changed("excluded", excluded=excluded, tickets=ex.tickets, temp_rounds=self.temp_rounds)
        # I12: every member forgets the excluded owners, as every member learns a joiner's ticket
        return [Out("all", "RETRACT", {"tickets": list(ex.tickets), "owners": excluded})]

    # -- exclusion ------------------------------------------------------------------------------

    def _exclude_start(self, now: float) -> List[Out]:
        if self._exclusion is not None:
            return []
        self.counters["exclusions"] += 1
        self._exclusion = _Exclusion(tried=[self.succ] if self.succ else [])
        return self._exclude_next(now)

    def _exclude_next(self, now: float) -> List[Out]:
        ex = self._exclusion
        for candidate in self.successors(self.n):
            if candidate == self.me:
                break
            if candidate in ex.tried:
                continue
            ex.tried.append(candidate)
            ex.candidate = candidate
            out = self._status_send(candidate, "EXCLUDE", {}, ("exclude", candidate))
            ex.ref = out.ref
            return [out]
        self._exclusion = None
        self._drop("no successor reachable")
        return []

    # -- messages -------------------------------------------------------------------------------

    def on_message(self, sender: str, mtype: str, payload: Dict[str, Any], now: float) -> List[Out]:
        handler = getattr(self, "_on_" + mtype.lower(), None)
        if handler is None:
            raise ValueError(f"unknown cluster message {mtype!r}")
        return handler(sender, payload, now) or []

    def _on_alive(self, sender, payload, now):
        self.alive.add(sender)
        self.heard_at[sender] = now

    def knows_quorum(self, now: float) -> bool:
        """Whether k+1 of L_p have been heard from within the last round (T + δ: a live
        predecessor's ALIVEs come a round apart, give or take a message delay): the first invariant
        ("remains in Core_C as long as p knows that at least k+1 of its 2k+1 closest predecessors"
        are up) read at the time p acts rather than at its last round's check."""
        fresh = [s for s in self.L if now - self.heard_at.get(s, -float("inf")) <= self.period + self.delta]
        return len(fresh) >= self.k + 1

    def _on_update(self, sender, payload, now):
        if self.state != COORDINATOR:
            return
        closest = self.predecessors(1)
        if closest and closest[0] == sender or sender == self.pred:
            self.L = list(payload["R"])
            self.pred = sender

    def _on_cjoin(self, sender, payload, now):
        if self.state != COORDINATOR or self.temp_rounds > 0 or self._exclusion is not None:
            return [Out(sender, "REJECT", {})]
        if sender in self.cview.values():   # served already (its retry crossed our ACKCJOIN)
            return [Out(sender, "REJECT", {})]
        if not self.knows_quorum(now):
            # an excluded process that does not know it yet must not seat a joiner it would keep
            # alive past the excluder's wait (docs/CAUSAL-READING.md, section 7)
            return [Out(sender, "REJECT", {})]
        free = [t for t in self.coordinated() if t != self.ticket and t not in self.blocked]
        if not free:
            return [Out(sender, "REJECT", {})]
        t = self.rng.choice(free)
        j = self.owner_ticket(self.succ) if self.succ is not None else self.ticket
        self.cview[t] = sender
        self.succ = sender
        r = self._r_set()
        self.counters["joins_served"] += 1
        self._changed("served cjoin", joiner=sender, given=t)
        reused = t in self.reused
        self.reused.add(t)
        return [self._status_send(sender, "ACKCJOIN", {"L": r, "i": t, "j": j, "cview": dict(self.cview),
                                                       "reused": reused},
                                  ("ackcjoin", r, sender))]

    def _on_ackcjoin(self, sender, payload, now):
        if self.state != JOINING:
            return
        self.cview = {int(t): p for t, p in payload["cview"].items()}
        self.L = list(payload["L"])
        self.R = []
        self.ticket = int(payload["i"])
        self.ticket_reused = bool(payload.get("reused"))
        self.state = COORDINATOR
        self.succ = self.cview.get(int(payload["j"]), sender)
        self.pred = sender
        self.temp_rounds = self.quiet_rounds = 0
        self.first_round = True
        self._changed("joined")
        out = [Out(s, "ALIVE", {}) for s in self.successors(2 * self.k + 1) if s != self.me]
        self._count_alive(len(out))
        out.append(Out("all", "ANNOUNCE", {"ticket": self.ticket, "owner": self.me}))
        return out

    def _on_cleave(self, sender, payload, now):
        """Lines 34-38: our immediate successor leaves; unless we are busy with an exclusion or
        a temporary coordination (then it times out and is excluded), we take its tickets over,
        acknowledge, tell its successor r that we precede it now (NEWSUCC), and tell every member
        that it owns nothing any more (RETRACT, as after an exclusion: I12)."""
        r = payload.get("r")
        if (self.state != COORDINATOR or sender != self.succ or self._exclusion is not None or self.temp_rounds > 0
                or (r != self.me and r not in self.cview.values())):
            return []
        gone = [t for t, p in self.cview.items() if p == sender]
        self._forget({sender}, gone, left=True)
        # the leaver's tickets go to no joiner for LEAVE_BLOCK rounds (A17: the RETRACT reaches
        # every member first, and the leaver's last events their PrCast period), nor before the
        # blocks the leaver itself had on them end
        handed = set(gone) | {int(t) for t in payload.get("tickets") or ()}
        self.reused |= handed
        for t in handed:
            self.blocked[t] = max(self.blocked.get(t, 0), LEAVE_BLOCK)
        for t, n in (payload.get("blocked") or {}).items():
            self.blocked[int(t)] = max(self.blocked.get(int(t), 0), int(n))
        self.succ = r
        self.counters["cleaves_served"] += 1
        self._changed("cleave", left=sender, tickets=sorted(payload.get("tickets") or gone))
        out = [Out(sender, "ACKCLEAVE", {}), Out("all", "RETRACT", {"tickets": gone, "owners": [sender], "left": True})]
        if r != self.me:
            out.append(Out(r, "NEWSUCC", {}))
        return out

    def _on_ackcleave(self, sender, payload, now):
        """Lines 39-42: the predecessor took our tickets over: we are no longer a coordinator."""
        if self.state == LEAVING:
            self.state = LEFT
            self._changed("left", by=sender)

    def _on_newsucc(self, sender, payload, now):
        """Lines 25-30: a new immediate predecessor; a process leaving itself asks it in turn."""
        if self.state in (COORDINATOR, LEAVING):
            self.pred = sender
        return [self._cleave_request()] if self.state == LEAVING else []

    def _on_reject(self, sender, payload, now):
        if self.state == JOINING:
            self._retry = True        # another coordinator at the next round (A12)

    def _on_announce(self, sender, payload, now):
        t, owner = int(payload["ticket"]), payload["owner"]
        if t in self.blocked or owner == self.me or self.state != COORDINATOR:
            return
        for other, p in list(self.cview.items()):   # the owner's old ticket, if it had one
            if p == owner and other != t:
                del self.cview[other]
        self.cview[t] = owner

    def _on_retract(self, sender, payload, now):
        """An exclusion succeeded elsewhere (I12): drop the excluded owners of those tickets from
        Cview, so that ALIVEs, R and L stop naming them and the UPDATE of the excluder, now the
        closest predecessor of its new successor, is taken."""
        gone = set(payload.get("owners") or ())
        if (self.state == COORDINATOR and self.ticket in (payload.get("tickets") or ())
                and (not payload.get("left") or self.me in gone)):
            # excluded while still running: let go (a leave's RETRACT names only the leaver: a
            # process that took one of its tickets since is not the one leaving)
            self._drop("excluded elsewhere", by=sender)
            return
        self._forget(gone, payload.get("tickets") or (), left=bool(payload.get("left")))

    def _forget(self, owners: Set[str], tickets, left: bool) -> None:
        """Drop the gone `owners` of these tickets from Cview, and from the predecessor and L.
        The successor stays: only the excluder's (or the leaver's predecessor's) changes what it
        coordinates; another whose successor went finds out by its own failed UPDATE."""
        for t in tickets:
            if self.cview.get(t) in owners:
                del self.cview[t]
        if self.state != COORDINATOR:
            return
        if self.pred in owners:
            self.pred = (self.predecessors(1) or [None])[0]
        if left:
            # a leave (Algorithm 1), not an exclusion: the leaver's ALIVE of this round was sent
            # before it let go, as a process killed after sending its ALIVE; it still counts at
            # this round's check, so that a leave costs the check no more than a kill
            self._left_this_round |= owners & set(self.L)
        self.L = [x for x in self.L if x not in owners]

    def _on_exclude(self, sender, payload, now):
        if self.state == COORDINATOR:
            return [Out(sender, "ACKEXCLUDE", {"L": list(self.L)})]

    def _on_ackexclude(self, sender, payload, now):
        ex = self._exclusion
        if ex is None or sender != ex.candidate or ex.q is not None:
            return
        q_ticket = self.owner_ticket(sender)
        if q_ticket is None:      # taken out of our view by a concurrent exclusion since we asked
            return
        ex.q, ex.q_ticket = sender, q_ticket
        d = self.dist(self.ticket, q_ticket)
        ex.tickets = [(self.ticket - s) % self.n for s in range(1, d)]
        ex.deadline = now + 2 * self.delta
        askers = [r for r in payload["L"] if r in self.R and r != self.me]
        out = [Out(r, "REQCOORD", {"tickets": ex.tickets, "by": self.me}) for r in askers]
        if self.me in payload["L"] and self.me in self.R:
            ex.acks.add(self.me)                   # p is in L_q ∩ R_p: its own acknowledgement
        return out

    def _on_reqcoord(self, sender, payload, now):
        if self.state != COORDINATOR or self.ticket in payload["tickets"]:
            return
        m = self.hold_rounds(len(payload["tickets"]) + 1)
        for t in payload["tickets"]:
            if self.cview.get(t) not in (None, self.me):
                del self.cview[t]
            self.blocked[t] = max(self.blocked.get(t, 0), m)
        return [Out(sender, "ACKCOORD", {})]

    def _on_ackcoord(self, sender, payload, now):
        if self._exclusion is not None and self._exclusion.q is not None:
            self._exclusion.acks.add(sender)

    # -- inside ---------------------------------------------------------------------------------

    def _status_send(self, to: str, mtype: str, payload: Dict[str, Any], what: Tuple[str, Any]) -> Out:
        self._ref += 1
        self._pending[self._ref] = what
        return Out(to, mtype, payload, ref=self._ref)

    def _count_alive(self, n: int) -> None:
        self._alive_round += n
        self.counters["alive_max_round"] = max(self.counters["alive_max_round"], self._alive_round)

    def _drop(self, why: str, **fields: Any) -> None:
        self.state = DISCONNECTED if why != "leave" else LEFT
        self.ticket = None
        self.taken_over.clear()
        self._exclusion = None
        self._changed(why, **fields)

    def _changed(self, why: str, **fields: Any) -> None:
        self._changes.append({"why": why, "state": self.state, "ticket": self.ticket,
                              "coordinates": self.coordinated(), **fields})

    def changes(self) -> List[Dict[str, Any]]:
        """The ticket changes since the last call (for the log)."""
        out, self._changes = self._changes, []
        return out
