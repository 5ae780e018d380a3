"""The causality layer of the two-layer protocol (Algorithm 5; docs/CAUSAL-READING.md, section 3),
without I/O: the caller gives it events and the clock (in gossip rounds), and sends what it returns.

Clock. A cluster has n tickets; a coordinator owns one (`ticket`) and with it one entry of the
vector timestamps. T is the causal present (the timestamp of what this process delivered), `seq`
the sequence number of the last event it created. An event's id is (index, t_e[index]).

Deliverability (Section 5). With x the event's index, e is deliverable iff t_e[x] = T[x] + 1 and
t_e[i] <= T[i] for every i != x; it is delivered already or obsolete iff t_e[x] <= T[x]. Delivery
sets T to the entrywise maximum, so an event some delivered event depended on that never arrived
becomes obsolete and is never delivered late (optimistic causal order).

Waiting. An event that is not deliverable waits in H for `time_to_terminate` rounds; then the ids
it still misses (to_deliver_before_ids, less what H and R hold and what is already asked for) are
asked for (R1: from the event's originator; R4: from `k_rec` distinct random members other than
this process, once, never propagated), and it waits `time_to_recover` rounds more. Then it is
delivered by force: first the events of H and R that causally precede it (in causal order, each
unless it became obsolete meanwhile), then it, then whatever became deliverable. A recovered event
(ACKRECOVER) that is not deliverable yet waits in R (readings A14, A15, A20).

Buffer. Every event created, received or recovered goes into B, a FIFO of `buffer_size` events from
which recovery requests are answered (Theorem 5.1 sizes it: at least 2·n·p·T, see `buffer_size`).
The creator delivers its own event at once (reading A16)."""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

EventId = Tuple[int, int]
RECOVERY = ("none", "r1", "r4")


@dataclass(frozen=True)
class Event:
    index: int                 # the creator's ticket: its entry of the vector
    ts: Tuple[int, ...]        # the vector timestamp t_e
    origin: str                # the creating process, asked under R1
    created_ns: int = 0        # creation time on the shared clock
    size: int = 0              # the body's size in bytes
    number: int = 0            # the creator's own number for it (1, 2, ... over its life): the logs' seq

    @property
    def eid(self) -> EventId:
        return (self.index, self.ts[self.index])


def event_id(eid: EventId) -> int:
    """The protocol's name of an event, (ticket, t_e[ticket]), as one number for the logs'
    message_id: (ticket + 1) × 2^32 + t_e[ticket] (always at least 2^32, so a reader tells it from
    the bare ticket that logs written before it carried)."""
    return ((eid[0] + 1) << 32) | eid[1]


def precedes(a: Sequence[int], b: Sequence[int]) -> bool:
    """a < b: every entry at most b's and one smaller."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def reuse_margin(most_per_gossip_round: int, round_s: float, gossip_s: float, delta_s: float) -> int:
    """A17 as issue 30 settled it: how many counts the new owner of a reused ticket skips past the
    ticket's entry in its clock, so that no count its last owner gave is given again. What the new
    owner has not seen of the ticket are the events its last owner made after its sends stopped
    reaching anyone (what reached someone, gossip brings within the ticket's blocking period).
    Such an owner lets go within 2T + 2δ of its cut: fully cut off, at its second ALIVE check
    (the first may still count ALIVEs received before the cut, or δ after it); its sends lost but
    its receipts not, at the excluder's RETRACT, T + 5δ (the predecessor's failed UPDATE, the
    exclusion's status, its 2δ wait and the RETRACT's delay), within 2T + 2δ when δ <= T/3. An
    event made δ before the cut can be lost with it. So it made at most `most_per_gossip_round` events
    (the largest rate of any coordinator, rounded up) in each of ceil((2T + 2δ) / T_g) + 1 gossip
    rounds unseen. Not covered: a RETRACT lost on its way (then the owner holds on until its
    ALIVEs stop, hold_rounds(d) of the excluder's rounds)."""
    if most_per_gossip_round <= 0:
        return 0
    return most_per_gossip_round * (math.ceil(round((2 * round_s + 2 * delta_s) / gossip_s, 9)) + 1)


def buffer_size(events_per_round: float, rounds: float) -> int:
    """Theorem 5.1: a recovery buffer of at least 2·(n·p)·T events keeps an event available with
    probability above 1 - (e/4)^(n·p·T); n·p is the expected number of new events a round in the
    cluster (reading A18) and T the rounds an event must stay (PrCast time twice, plus both
    timeouts: L466)."""
    return max(1, math.ceil(2 * events_per_round * rounds))


@dataclass
class _Waiting:
    event: Event
    deadline: float
    recovering: bool = False   # past time_to_terminate: asked for what it misses


class CausalLayer:
    def __init__(self, n: int, ticket: Optional[int], *, recovery: str = "r1", k_rec: int = 4,
                 buffer_events: int = 500, time_to_terminate: float = 5, time_to_recover: float = 5,
                 members: Callable[[], Sequence[str]] = lambda: (), me: str = "",
                 owner_of: Callable[[int], Optional[str]] = lambda ticket: None,
                 rng: Optional[random.Random] = None, late: bool = False) -> None:
        if recovery not in RECOVERY:
            raise ValueError(f"recovery {recovery!r}: one of {', '.join(RECOVERY)}")
        self.n = n
        self.ticket = ticket
        self.recovery = recovery
        self.k_rec = k_rec
        self.buffer_events = buffer_events
        self.time_to_terminate = time_to_terminate
        self.time_to_recover = time_to_recover
        self.members = members      # the cluster's processes, R4's candidates
        self.owner_of = owner_of    # a ticket's owner as this process knows it (R1's target)
        self.me = me
        self.rng = rng or random.Random(0)
        self.T: List[int] = [0] * n
        self.seq = 0
        #: A17 (issue 30): the counts a new owner of a reused ticket skips at its first event, past
        #: those its last owner can have made that nobody received (`reuse_margin`); 0: none
        self.reuse_margin = 0
        self._taken: Optional[Tuple[int, bool]] = None   # a ticket taken, its first event not made yet
        #: the events this process created over its life: its own number for each (the logs' seq);
        #: a member restores it after a restart, so that no number is given twice
        self.made = 0
        # A process that starts mid-run (I10): its clock starts from the first event it receives,
        # which is delivered; what that event's timestamp covers happened before it came
        self.synced = not late
        self.H: "OrderedDict[EventId, _Waiting]" = OrderedDict()
        self.R: "OrderedDict[EventId, Event]" = OrderedDict()
        self.B: "OrderedDict[EventId, Event]" = OrderedDict()
        self.asked: Dict[EventId, float] = {}      # ids under recovery → when asked
        self.delivered: List[Tuple[Event, str]] = []   # (event, how): "in order", "forced", "own"
        self.dropped: List[Tuple[Event, str]] = []   # events never delivered, and why
        self.counters = {"recover_requests": 0, "recover_messages": 0, "recovered": 0, "forced": 0,
                         "obsolete": 0, "duplicates": 0}

    # -- the clock ----------------------------------------------------------------------------

    def deliverable(self, e: Event) -> bool:
        x = e.index
        return e.ts[x] == self.T[x] + 1 and all(e.ts[i] <= self.T[i] for i in range(self.n) if i != x)

    def done(self, e: Event) -> bool:
        """Delivered already, or obsolete: t_e[x] <= T[x]."""
        return e.ts[e.index] <= self.T[e.index]

    def missing_ids(self, e: Event) -> List[EventId]:
        """to_deliver_before_ids(e): the ids of the events e depends on that are not delivered."""
        out = []
        for i in range(self.n):
            top = e.ts[i] if i != e.index else e.ts[i] - 1
            out.extend((i, j) for j in range(self.T[i] + 1, top + 1))
        return out

    # -- events in ----------------------------------------------------------------------------

    def take(self, ticket: Optional[int], reused: bool = False) -> None:
        """This process now owns `ticket` (None: none). `reused`: the ticket had another owner, as
        far as the caller knows; a ticket of which this process knows a count above 0 (`highest`)
        is taken as reused too, judged at the first event it makes with it (a process started
        mid-run learns its clock only then, I10)."""
        if ticket is not None and ticket != self.ticket:
            self._taken = (ticket, reused)
        self.ticket = ticket

    def create(self, origin_ns: int = 0, size: int = 0) -> Event:
        """Lines 1-3: a new event of this process's ticket, delivered here at once (A16). The first
        one with a reused ticket skips `reuse_margin` counts past the highest count of the ticket
        known here (A17, issue 30)."""
        if self.ticket is None:
            raise RuntimeError("only a coordinator (a process owning a ticket) creates events")
        if self._taken is not None:
            ticket, reused = self._taken
            self._taken = None
            top = self.highest(ticket)
            if ticket == self.ticket and (reused or top > 0):
                self.seq = max(self.seq, top + self.reuse_margin)
        self.seq = max(self.seq, self.T[self.ticket]) + 1
        ts = list(self.T)
        ts[self.ticket] = self.seq
        self.made += 1
        e = Event(self.ticket, tuple(ts), self.me, origin_ns, size, self.made)
        self._buffer(e)
        self._deliver(e, "own")
        return e

    def highest(self, ticket: int) -> int:
        """The highest count of `ticket` this process knows: delivered (T), or in the timestamp of
        any event received and still waiting (H, R) or buffered (B). An event waiting for counts
        nobody made (a gap a reused ticket's new owner skipped), or one that depends on it, shows
        the count before it is delivered here."""
        counts = [e.ts[ticket] for e in self.B.values()]
        counts += [w.event.ts[ticket] for w in self.H.values()]
        counts += [e.ts[ticket] for e in self.R.values()]
        return max([self.T[ticket]] + counts)

    def receive(self, e: Event, now: float) -> List[Event]:
        """Lines 4-12: an event from the gossip layer; returns the events delivered now."""
        if not self.synced:
            self.synced = True
            before = self.T[e.index]
            self.T = [max(t, v) for t, v in zip(self.T, e.ts)]
            self.T[e.index] = max(before, e.ts[e.index] - 1)
        self._buffer(e)
        if e.eid in self.H or e.eid in self.R:
            self.counters["duplicates"] += 1
            return []
        mark = len(self.delivered)
        if self.deliverable(e):
            self._deliver(e, "in order")
            self._cascade()
        elif self.done(e):
            self.counters["duplicates"] += 1
        else:
            self.H[e.eid] = _Waiting(e, now + self.time_to_terminate)
        return [ev for ev, _ in self.delivered[mark:]]

    def on_recover(self, eid: EventId) -> Optional[Event]:
        """Lines 19-21: the event asked for, if the buffer still holds it."""
        return self.B.get(tuple(eid))

    def on_ack_recover(self, e: Event) -> List[Event]:
        """Lines 22-28: a recovered event."""
        self._buffer(e)
        if self.asked.pop(e.eid, None) is not None:
            self.counters["recovered"] += 1
        mark = len(self.delivered)
        if self.deliverable(e):
            self._deliver(e, "in order")
            self._cascade()
        elif not self.done(e) and e.eid not in self.H:
            self.R[e.eid] = e
        return [ev for ev, _ in self.delivered[mark:]]

    # -- time ---------------------------------------------------------------------------------

    def tick(self, now: float) -> Tuple[List[Tuple[EventId, List[str]]], List[Event]]:
        """Lines 13-18 for every waiting event whose timer ran out: (recovery requests as
        (id, targets), events delivered)."""
        requests: List[Tuple[EventId, List[str]]] = []
        mark = len(self.delivered)
        for eid in list(self.H):
            w = self.H.get(eid)
            if w is None or w.deadline > now:
                continue
            if not w.recovering:
                w.recovering = True
                w.deadline = now + self.time_to_recover
                if self.recovery != "none":
                    for missing in self.missing_ids(w.event):
                        if missing in self.H or missing in self.R or missing in self.asked:
                            continue
                        targets = self._targets(w.event, missing)
                        if targets:
                            self.asked[missing] = now
                            requests.append((missing, targets))
                            self.counters["recover_requests"] += 1
                            self.counters["recover_messages"] += len(targets)
            else:
                self._force(w.event)
        for eid, since in list(self.asked.items()):   # a reply later than both timers is not awaited
            if now - since > self.time_to_terminate + self.time_to_recover:
                del self.asked[eid]
        return requests, [ev for ev, _ in self.delivered[mark:]]

    # -- inside -------------------------------------------------------------------------------

    def _targets(self, waiting: Event, missing: EventId) -> List[str]:
        if self.recovery == "r1":
            origin = self._origin_of(missing, waiting)
            return [origin] if origin and origin != self.me else []
        others = [m for m in self.members() if m != self.me]
        return self.rng.sample(others, min(self.k_rec, len(others)))

    def _origin_of(self, missing: EventId, waiting: Event) -> Optional[str]:
        """The process that created `missing`: the owner of its index, as far as this process knows
        (the waiting event's own earlier events are its originator's)."""
        if missing[0] == waiting.index:
            return waiting.origin
        return self.owner_of(missing[0])

    def _buffer(self, e: Event) -> None:
        if e.eid in self.B:
            return
        self.B[e.eid] = e
        while len(self.B) > self.buffer_events:
            self.B.popitem(last=False)

    def _deliver(self, e: Event, how: str) -> None:
        self.T = [max(a, b) for a, b in zip(self.T, e.ts)]
        self.H.pop(e.eid, None)
        self.R.pop(e.eid, None)
        self.asked.pop(e.eid, None)
        self.delivered.append((e, how))
        if how == "forced":
            self.counters["forced"] += 1

    def _cascade(self) -> None:
        """Deliver whatever in H and R became deliverable, and drop what became obsolete."""
        progress = True
        while progress:
            progress = False
            for store in (self.R, self.H):
                for eid in list(store):
                    item = store.get(eid)
                    if item is None:
                        continue
                    e = item.event if isinstance(item, _Waiting) else item
                    if self.deliverable(e):
                        self._deliver(e, "in order")
                        progress = True
                    elif self.done(e):
                        store.pop(eid)
                        self.dropped.append((e, "obsolete"))
                        self.counters["obsolete"] += 1

    def _force(self, e: Event) -> None:
        """Lines 16-18: the waiting events and recovered ones that precede e, in causal order, then e."""
        before = [w.event for w in self.H.values() if precedes(w.event.ts, e.ts)]
        before += [r for r in self.R.values() if precedes(r.ts, e.ts)]
        for prior in sorted(before, key=lambda ev: (sum(ev.ts), ev.eid)):   # a linear extension of <
            if self.done(prior):
                continue
            self._deliver(prior, "forced")
        if self.done(e):
            self.H.pop(e.eid, None)
        else:
            self._deliver(e, "forced")
        self._cascade()
