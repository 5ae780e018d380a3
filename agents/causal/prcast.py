"""PrCast, the gossip layer under the causality layer (Section 6: the ETTB dissemination of [20]
with lpbcast's membership), without I/O: the caller runs `round()` once a gossip round and sends
the message it returns to each target, and hands every message received to `receive()`.

- Every round a process sends one gossip message to `fanout` (F, 4 in Section 6) members drawn
  at random from its view (all members: "PrCast was allowed to know all members"; `view_size`
  draws an lpbcast-style partial view of that many instead, refreshed each round).
- A message carries the events of the buffer, each with its age in hops; an event is forwarded
  every round, its age one more each time, until it is `max_hops` (5) old, then dropped.
- At most `max_events` (20) events go in a message; the buffer holds no more. When more are
  eligible, the oldest go first (highest age, then earliest arrival): reading A21, the ETTB
  policy. Each such event is counted as an overflow drop: under load it is where events are lost.
- A history of the last `history` (40) event ids keeps a process from taking an event twice; an
  event older than the history can come back and is then handed up again (the causality layer
  sees it as delivered or obsolete). An event received again while still buffered keeps the
  larger age (ETTB)."""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from typing import Any, Callable, Deque, Hashable, List, Optional, Sequence, Set, Tuple


class PrCast:
    def __init__(self, me: str, members: Callable[[], Sequence[str]], *, fanout: int = 4, max_hops: int = 5,
                 max_events: int = 20, history: int = 40, view_size: Optional[int] = None,
                 rng: Optional[random.Random] = None) -> None:
        self.me = me
        self.members = members
        self.fanout = fanout
        self.max_hops = max_hops
        self.max_events = max_events
        self.view_size = view_size
        self.rng = rng or random.Random(0)
        self.buffer: "OrderedDict[Hashable, List[Any]]" = OrderedDict()   # id → [event, age]
        self._history: Deque[Hashable] = deque()
        self._seen: Set[Hashable] = set()
        self.history_size = history
        self.counters = {"overflow": 0, "expired": 0, "duplicates": 0, "messages": 0, "records": 0}

    def view(self) -> List[str]:
        others = [m for m in self.members() if m != self.me]
        if self.view_size is not None and len(others) > self.view_size:
            return self.rng.sample(others, self.view_size)
        return others

    def broadcast(self, eid: Hashable, event: Any) -> None:
        """PrCast(e): e joins the buffer at age 0 and is sent from the next round on."""
        self._remember(eid)
        self._add(eid, event, 0)

    def receive(self, entries: Sequence[Tuple[Hashable, Any, int]]) -> List[Tuple[Hashable, Any]]:
        """A gossip message's (id, event, age) entries; returns the events new to this process,
        in the message's order, for the layer above."""
        fresh = []
        for eid, event, age in entries:
            if eid in self._seen:
                self.counters["duplicates"] += 1
                held = self.buffer.get(eid)
                if held is not None and age > held[1]:
                    held[1] = age
                continue
            self._remember(eid)
            fresh.append((eid, event))
            if age < self.max_hops:
                self._add(eid, event, age)
            else:
                self.counters["expired"] += 1
        return fresh

    def round(self) -> Tuple[List[str], List[Tuple[Hashable, Any, int]]]:
        """One gossip round: (targets, entries to send them), the entries one hop older than
        they were held; events that reach `max_hops` leave the buffer after this send."""
        if not self.buffer:
            return [], []
        view = self.view()
        targets = self.rng.sample(view, min(self.fanout, len(view)))
        entries = []
        for eid, held in list(self.buffer.items()):
            held[1] += 1
            entries.append((eid, held[0], held[1]))
            if held[1] >= self.max_hops:
                del self.buffer[eid]
                self.counters["expired"] += 1
        if targets:
            self.counters["messages"] += len(targets)
            self.counters["records"] += len(targets) * len(entries)   # event records sent, copies counted
        return targets, entries

    def _add(self, eid: Hashable, event: Any, age: int) -> None:
        self.buffer[eid] = [event, age]
        while len(self.buffer) > self.max_events:
            oldest = max(self.buffer, key=lambda k: self.buffer[k][1])   # first of the oldest age
            del self.buffer[oldest]
            self.counters["overflow"] += 1

    def _remember(self, eid: Hashable) -> None:
        self._history.append(eid)
        self._seen.add(eid)
        while len(self._history) > self.history_size:
            self._seen.discard(self._history.popleft())
