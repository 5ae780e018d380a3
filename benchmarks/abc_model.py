"""The AbC paper's three infrastructures as the authors' simulator models them, simulated here as
the continuous-time Markov chain it is, to say what the model itself gives for every configuration
the paper names (communication intensive, CI, and data providers, DP), under each reading where the
testbed's and the authors' differ, beside the paper's values and ours.

    python benchmarks/abc_model.py [--seeds N] [--horizon 2000] [--only KEY-TEXT]

The model (ClusterServer.java, RingNode.java, ServerNode.java, SharedCounter.java and
ComponentNode.java of giulio-garbi/AbCSimulator_vertex, read for this; nothing is copied): every
activity takes an exponential time at its rate, in time units (λs = 1, λt = 15, λh = 1000).

- A component that wants to send (CI: always, once its previous data message has left; DP: the
  providers only) makes an id request at λs, which reaches its server's input queue at once. Once
  it holds an id n and has handled every id below n, it sends its data message at λt (one
  transmission). It handles each message that reaches it at λh (a reply gives it its id; a data
  message goes to its delivery queue) and delivers the next id at λh; its own ids count as
  delivered when sent.
- Cluster C[S,155]: the S slots share the input queue I and the counter. Each slot has a handling
  activity at λh while I is not empty: it takes I's head; a request gets the counter's value and
  the reply goes into the slot's output queue; a data message goes into it once for every
  component but its sender. `random` dispatch (the authors'): a slot takes whether or not its
  output queue is busy; `free`: only a slot whose output queue is empty takes (the testbed's
  first reading).
- Ring R[S,k] and tree T[l,c,k]: every server has an input queue handled at λh (only while its
  waiting queue W's head is not the next id to forward), W handled at λh in id order (a copy to
  every node of its multicast set but the one it came from), and a FIFO output queue sent at λt.
  The ring's counter is shared memory (a request is answered by the server that handles it, the
  reply one transmission); `arrival` (the authors') passes a data message on to the next server
  as it handles it from the input queue and drops it back where its id was given; `in-order` (the
  testbed's) forwards it in id order, the next server first, and discards a copy already
  forwarded. The tree's root is the only sequencer; requests and replies travel hop by hop, each
  hop a transmission; a data message from below goes up at once and down in id order. Every
  server has k components (31 servers and 155 components, as the paper counts them).
- Each output queue sends its head at λt, one message to one node at a time.

The measures are the authors' (AbCSystem.java): the delivery time of a message, from the start of
its id request to its delivery at the last component; the message time gap, every interval
between two consecutive deliveries at a component (pooled over components, the authors' mean);
both as cumulative means at the horizon (t = 2000), where the paper reads its figures, and the
delivery time of the messages completed in the horizon's last tenth. Also the testbed's gap (per
component, then the mean over components) and the id chain of spark_analysis/protocols/abc.py (the
next owner's rank among a message's handlers, the send interval), so that the emulation's runs can
be compared measure by measure.

The start: every component makes its first request at λs from t = 0, as the authors' simulator
starts them. `ci-staggered` (and `dp-staggered`) run CI (DP) with component c's first request
c · 0.2 time units later (STAGGER), the way the testbed started its agents before it signalled
them in one sweep. `ci-h100` (CI rings and trees) and `dp-h100`, `dp-h200`, `dp-h400` (the DP
ring and tree; `dp-10-h…` the tree with 10 senders) slow every handling to λh = 100, 200, 400
(HOP_COSTS), a cost on every hop such as a loaded machine adds to each message an agent handles.

Writes benchmarks/results/abc_model.json: per configuration (SCENARIO/INFRASTRUCTURE/READING) the
per-seed values and the mean with its 95% interval (Student's t). With --only, the other
configurations' stored results are kept.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import random
import sys
import time
from collections import deque
from typing import Callable, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "abc_model.json")


class Model:
    """The components and the event queue of one run: `components` components, `senders` of them
    sending (None: all, the CI scenario), rates per time unit. A subclass is the infrastructure:
    `_to_infrastructure` takes a component's request or data message, `_reply` and `_copy` hand a
    reply or a data copy to a component."""

    def __init__(self, components: int, senders: Optional[int], seed: int,
                 rate_s: float = 1.0, rate_t: float = 15.0, rate_h: float = 1000.0, stagger: float = 0.0) -> None:
        self.C = components
        self.ls, self.lt, self.lh = rate_s, rate_t, rate_h
        self.stagger = stagger  # component c's first request waits c · stagger more (0: all start together)
        self.rng = random.Random(seed)
        chosen = range(components) if senders is None else self.rng.sample(range(components), senders)
        self.sends = [c in set(chosen) for c in range(components)]
        self.now = 0.0
        self.heap: List[tuple] = []
        self.version: Dict[tuple, int] = {}
        self.seq = 0
        # the components
        self.inbox: List[deque] = [deque() for _ in range(components)]
        self.pending: List[List[int]] = [[] for _ in range(components)]   # data ids received, a heap
        self.last = [-1] * components                                     # highest id delivered in order
        self.mine: List[set] = [set() for _ in range(components)]         # own ids sent, not yet passed
        self.want = list(self.sends)                                      # an id request to make
        self.holding = [None] * components                                # the id held (None: none)
        self.asking = [False] * components
        self.asked_at = [0.0] * components
        # what is measured
        self.sent_at: Dict[int, float] = {}        # id -> data send
        self.started: Dict[int, float] = {}        # id -> its request's start
        self.owner: Dict[int, int] = {}
        self.count: Dict[int, int] = {}
        self.done: List[tuple] = []                # (completion, delivery time)
        self.deliveries: List[List[float]] = [[] for _ in range(components)]
        self.handled: Dict[int, Dict[int, float]] = {}

    def _to_infrastructure(self, c: int, kind: str, n: Optional[int]) -> None:
        """A component's request (kind "req", n None) or data message ("data", its id n) arrives."""
        raise NotImplementedError

    # -- the event queue: an activity enabled at rate r fires after Exp(r) unless disabled first
    def _arm(self, key: tuple, rate: float, after: float = 0.0) -> None:
        if key in self.version:
            return
        self.seq += 1
        self.version[key] = self.seq
        heapq.heappush(self.heap, (self.now + after + self.rng.expovariate(rate), self.seq, key))

    def _disarm(self, key: tuple) -> None:
        self.version.pop(key, None)

    def _arm_component(self, c: int) -> None:
        if self.inbox[c]:
            self._arm(("recv", c), self.lh)
        if self.pending[c] and self.pending[c][0] == self.last[c] + 1:
            self._arm(("deliver", c), self.lh)
        if self.want[c] and not self.asking[c] and self.holding[c] is None:
            self._arm(("request", c), self.ls)
        n = self.holding[c]
        if n is not None and self.last[c] >= n - 1:
            self._arm(("data", c), self.lt)

    def run(self, horizon: float) -> "Model":
        for c in range(self.C):
            if self.stagger and self.want[c]:
                self._arm(("request", c), self.ls, after=c * self.stagger)
            self._arm_component(c)
        while self.heap:
            t, seq, key = heapq.heappop(self.heap)
            if self.version.get(key) != seq:
                continue
            if t > horizon:
                break
            del self.version[key]
            self.now = t
            getattr(self, "_" + key[0])(*key[1:])
        return self

    def _to_component(self, c: int, kind: str, n: int) -> None:
        """A transmission's end: a reply or a data copy reaches component c's input queue."""
        self.inbox[c].append((kind, n))
        self._arm_component(c)

    # -- the components' activities
    def _request(self, c: int) -> None:
        self.asking[c], self.want[c] = True, False
        self.asked_at[c] = self.now
        self._to_infrastructure(c, "req", None)

    def _recv(self, c: int) -> None:
        kind, n = self.inbox[c].popleft()
        if kind == "reply":
            self.holding[c], self.asking[c] = n, False
            self.started[n] = self.asked_at[c]
        else:
            heapq.heappush(self.pending[c], n)
        self._arm_component(c)

    def _advance(self, c: int) -> None:
        while self.last[c] + 1 in self.mine[c]:
            self.mine[c].discard(self.last[c] + 1)
            self.last[c] += 1

    def _deliver(self, c: int) -> None:
        n = heapq.heappop(self.pending[c])
        self.last[c] = n
        self._advance(c)
        self.deliveries[c].append(self.now)
        self.handled.setdefault(n, {})[c] = self.now
        self.count[n] = self.count.get(n, 0) + 1
        if self.count[n] == self.C - 1:
            self.done.append((self.now, self.now - self.started[n]))
        self._arm_component(c)

    def _data(self, c: int) -> None:
        n = self.holding[c]
        self.holding[c] = None
        self.sent_at[n], self.owner[n] = self.now, c
        self.mine[c].add(n)
        self._advance(c)
        self.want[c] = self.sends[c]
        self._to_infrastructure(c, "data", n)
        self._arm_component(c)

    # -- the measures
    def measures(self, horizon: Optional[float] = None) -> Dict[str, Optional[float]]:
        intervals = [b - a for d in self.deliveries for a, b in zip(d, d[1:])]
        per = [(d[-1] - d[0]) / (len(d) - 1) for d in self.deliveries if len(d) >= 2]
        ranks, steps, reach = [], [], []
        for n in sorted(self.sent_at):
            if n + 1 not in self.sent_at:
                continue
            steps.append(self.sent_at[n + 1] - self.sent_at[n])
            nxt, got = self.owner[n + 1], self.handled.get(n, {})
            if nxt != self.owner[n] and nxt in got:
                reach.append(got[nxt] - self.sent_at[n])
                if len(got) >= 2:
                    ranks.append(sum(1 for v in got.values() if v < got[nxt]) / (len(got) - 1))
        mean = (lambda xs: sum(xs) / len(xs) if xs else None)
        end = self.now if horizon is None else horizon
        return {"delivery_time": mean([d for _, d in self.done]),
                "delivery_time_last_tenth": mean([d for t, d in self.done if t > 0.9 * end]),
                "time_gap": mean(intervals),
                "time_gap_per_component": mean(per), "messages": len(self.sent_at),
                "send_interval": mean(steps), "reach_next_owner": mean(reach), "next_owner_rank": mean(ranks)}


class Cluster(Model):
    """The cluster: `servers` slots sharing the input queue I and the counter (ClusterServer.java)."""

    def __init__(self, servers: int, components: int, senders: Optional[int], dispatch: str, seed: int,
                 **rates: float) -> None:
        if dispatch not in ("random", "free"):
            raise ValueError(f"dispatch {dispatch!r}: random or free")
        super().__init__(components, senders, seed, **rates)
        self.S, self.dispatch = servers, dispatch
        self.I: deque = deque()
        self.out: List[deque] = [deque() for _ in range(servers)]
        self.counter = 0

    def _to_infrastructure(self, c: int, kind: str, n: Optional[int]) -> None:
        self.I.append(("req", c) if kind == "req" else ("data", (n, c)))
        self._enable()

    def _enable(self) -> None:
        """(Re)arm every slot's take whose guard holds; the memoryless rates make this the chain."""
        for k in range(self.S):
            if self.I and (self.dispatch == "random" or not self.out[k]):
                self._arm(("take", k), self.lh)
            else:
                self._disarm(("take", k))

    def _take(self, k: int) -> None:
        kind, x = self.I.popleft()
        if kind == "req":
            n, self.counter = self.counter, self.counter + 1
            self.out[k].append(("reply", x, n))
        else:
            n, source = x
            for c in range(self.C):
                if c != source:
                    self.out[k].append(("data", c, n))
        self._arm(("send", k), self.lt)
        self._enable()

    def _send(self, k: int) -> None:
        kind, c, n = self.out[k].popleft()
        if self.out[k]:
            self._arm(("send", k), self.lt)
        self._to_component(c, kind, n)
        if self.dispatch == "free":
            self._enable()


class Servers(Model):
    """A ring or a tree of server nodes (RingNode.java, ServerNode.java): each has an input queue
    handled at λh (only while the waiting queue W's head is not the next id to forward), W in id
    order handled at λh, and one FIFO output queue sent at λt. Node ids: components 0..C-1, then
    the servers. Subclasses say what a server does with what it handles."""

    def __init__(self, servers: int, per_server: int, senders: Optional[int], seed: int, **rates: float) -> None:
        super().__init__(servers * per_server, senders, seed, **rates)
        self.S = servers
        self.parent = [self.C + c // per_server for c in range(self.C)]
        self.own = [list(range(s * per_server, (s + 1) * per_server)) for s in range(servers)]
        self.inq: List[deque] = [deque() for _ in range(servers)]
        self.W: List[List[tuple]] = [[] for _ in range(servers)]
        self.nid = [0] * servers
        self.out: List[deque] = [deque() for _ in range(servers)]
        self.counter = 0
        self.reached: Dict[tuple, float] = {}   # (server, id) -> the data message's first arrival there
        self.hops: List[float] = []             # a server's first arrival to a copy's arrival from it

    def measures(self, horizon: Optional[float] = None) -> Dict[str, Optional[float]]:
        """The model's measures and `hop_time`: from a data message's first arrival at a server to
        the arrival of its copy from that server at another (handling, the wait for smaller ids, the
        output queue, the transmission), as benchmarks/abc_hops.py measures it in the runs' logs."""
        return {**super().measures(horizon), "hop_time": sum(self.hops) / len(self.hops) if self.hops else None}

    def _to_infrastructure(self, c: int, kind: str, n: Optional[int]) -> None:
        self._to_server(self.parent[c] - self.C, ("req" if kind == "req" else "data", n, c, [c]))

    def _to_server(self, s: int, message: tuple) -> None:
        kind, n, source = message[:3]
        if kind == "data":
            if source >= self.C and (source - self.C, n) in self.reached:
                self.hops.append(self.now - self.reached[(source - self.C, n)])
            self.reached.setdefault((s, n), self.now)
        self.inq[s].append(message)
        self._arm_server(s)

    def _ready(self, s: int) -> bool:
        return bool(self.W[s]) and self.W[s][0][0] == self.nid[s]

    def _arm_server(self, s: int) -> None:
        if self._ready(s):
            self._arm(("forward", s), self.lh)
            self._disarm(("handle", s))
        else:
            self._disarm(("forward", s))
            if self.inq[s]:
                self._arm(("handle", s), self.lh)
        if self.out[s]:
            self._arm(("send", s), self.lt)

    def _emit(self, s: int, kind: str, n: Optional[int], target: int, route: Optional[list] = None) -> None:
        self.out[s].append((kind, n, target, route))
        self._arm(("send", s), self.lt)

    def _send(self, s: int) -> None:
        kind, n, target, route = self.out[s].popleft()
        self._arm_server(s)
        if target < self.C:
            self._to_component(target, kind, n)
        else:
            self._to_server(target - self.C, (kind, n, self.C + s, route))

    def _forward(self, s: int) -> None:
        n, source = heapq.heappop(self.W[s])
        for target in self.multicast(s):
            if target != source:
                self._emit(s, "data", n, target)
        self.nid[s] = n + 1
        self._arm_server(s)

    def _handle(self, s: int) -> None:
        kind, n, source, route = self.inq[s].popleft()
        if kind == "req":
            self.request(s, source, route)
        elif kind == "reply":
            self._emit(s, "reply", n, route[-1], route[:-1])
        else:
            self.data(s, n, source)
        self._arm_server(s)

    def _wait(self, s: int, n: int, source: int) -> None:
        heapq.heappush(self.W[s], (n, source))

    def multicast(self, s: int) -> List[int]:
        raise NotImplementedError

    def request(self, s: int, source: int, route: list) -> None:
        raise NotImplementedError

    def data(self, s: int, n: int, source: int) -> None:
        raise NotImplementedError


class Ring(Servers):
    """R[S, per_server]: the shared counter answers at once wherever asked (SharedCounter.java),
    the reply is one transmission. `relay`: `arrival` (the authors' RingNode.java) passes a data
    message on to the next server as it handles it from its input queue, in arrival order, and
    drops it back at the server that gave its id; `in-order` (the testbed's reading of Table 6)
    forwards it to the next server with its own components, in id order, next server first, and
    discards a copy whose id it has forwarded already."""

    def __init__(self, servers: int, per_server: int, senders: Optional[int], relay: str, seed: int,
                 **rates: float) -> None:
        if relay not in ("arrival", "in-order"):
            raise ValueError(f"relay {relay!r}: arrival or in-order")
        super().__init__(servers, per_server, senders, seed, **rates)
        self.relay = relay
        self.given: List[set] = [set() for _ in range(servers)]

    def _next(self, s: int) -> Optional[int]:
        return self.C + (s + 1) % self.S if self.S > 1 else None

    def multicast(self, s: int) -> List[int]:
        if self.relay == "in-order" and self._next(s) is not None:
            return [self._next(s)] + self.own[s]
        return self.own[s]

    def request(self, s: int, source: int, route: list) -> None:
        n, self.counter = self.counter, self.counter + 1
        self.given[s].add(n)
        self._emit(s, "reply", n, source)

    def data(self, s: int, n: int, source: int) -> None:
        if self.relay == "arrival":
            from_own = source < self.C
            if not from_own and n in self.given[s]:
                return  # round the ring and back where its id was given
            if self._next(s) is not None:
                self._emit(s, "data", n, self._next(s))
            self._wait(s, n, source)
        else:
            if n < self.nid[s] or any(m == n for m, _ in self.W[s]):
                return  # Discard
            self._wait(s, n, source)


class Tree(Servers):
    """T[levels, children, per_server]: per_server components on every server (as the paper counts
    155 components on 31 servers); requests go up hop by hop to the root, the only sequencer, and
    replies come down, each hop a transmission; a data message from below goes up at once (wNxt)
    and down to every child but its source in id order. A server's children: its child servers,
    then its components."""

    def __init__(self, levels: int, children: int, per_server: int, senders: Optional[int], seed: int,
                 **rates: float) -> None:
        servers = sum(children ** i for i in range(levels))
        super().__init__(servers, per_server, senders, seed, **rates)
        self.up = [None] + [self.C + (s - 1) // children for s in range(1, servers)]
        self.below = [[self.C + c for c in range(s * children + 1, s * children + children + 1) if c < servers]
                      + self.own[s] for s in range(servers)]

    def multicast(self, s: int) -> List[int]:
        return self.below[s]

    def request(self, s: int, source: int, route: list) -> None:
        if self.up[s] is not None:
            self._emit(s, "req", None, self.up[s], route + [self.C + s])
        else:
            n, self.counter = self.counter, self.counter + 1
            self._emit(s, "reply", n, route[-1], route[:-1])

    def data(self, s: int, n: int, source: int) -> None:
        if self.up[s] is not None and source != self.up[s]:
            self._emit(s, "data", n, self.up[s])
        self._wait(s, n, source)


def interval(values: List[float]) -> Dict[str, Optional[float]]:
    xs = [v for v in values if v is not None]
    if not xs:
        return {"n": 0, "mean": None, "ci95": None}
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return {"n": 1, "mean": m, "ci95": None}
    from scipy.stats import t

    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    h = float(t.ppf(0.975, len(xs) - 1)) * sd / math.sqrt(len(xs))
    return {"n": len(xs), "mean": m, "ci95": [m - h, m + h]}


#: the testbed's start before commit d88efb1, in time units of 100 ms: it signalled the agents one
#: by one as it found each (a Docker engine query, about 20 ms under load), so 165 agents started
#: over 3.3 s in node order (a C[10,155] run's `workload started` events: 19.9 ms a node)
STAGGER = 0.2
#: λh for a cost on every hop: a handling of 0.01, 0.005 and 0.0025 time units (1, 0.5 and 0.25 ms
#: at 100 ms a time unit) where the authors' λh = 1000 gives 0.001; what one wall-clock millisecond
#: a handling is at time dilation 1, 2 and 4
HOP_COSTS = (100.0, 200.0, 400.0)


def configurations() -> Dict[str, Callable[[int], Model]]:
    """Every configuration the paper names, by key SCENARIO/INFRASTRUCTURE/READING: a function of
    the seed that makes its model. DP: 15 senders of 155 (the authors' simulator), and the tree
    with 10 as well; CI: every component sends; dp-310 and dp-620: the DP scenario with 310 and
    620 components on 31 servers, 10% of them sending; ci-staggered and dp-staggered: CI and DP
    with the first requests STAGGER apart in the components' order."""
    out: Dict[str, Callable[[int], Model]] = {}
    for scenario, senders in (("ci", None), ("dp", 15)):
        for servers in ((10, 20, 31) if scenario == "ci" else (31,)):  # the paper's DP cluster: C[31,155]
            for dispatch in ("random", "free"):
                out[f"{scenario}/C[{servers},155]/{dispatch}"] = (
                    lambda seed, s=servers, d=dispatch, n=senders, **kw: Cluster(s, 155, n, d, seed, **kw))
        for servers, per in ((5, 31), (31, 5)):
            if scenario == "dp" and servers == 5:
                continue  # the paper's DP ring is R[31,5] only
            for relay in ("arrival", "in-order"):
                out[f"{scenario}/R[{servers},{per}]/{relay}"] = (
                    lambda seed, s=servers, k=per, r=relay, n=senders, **kw: Ring(s, k, n, r, seed, **kw))
        for levels, children in ((5, 2), (3, 5)):
            if scenario == "dp" and levels == 5:
                continue  # the paper's DP tree is T[3,5,5] only
            out[f"{scenario}/T[{levels},{children},5]/authors"] = (
                lambda seed, lv=levels, ch=children, n=senders, **kw: Tree(lv, ch, 5, n, seed, **kw))
    out["dp-10/T[3,5,5]/authors"] = lambda seed: Tree(3, 5, 5, 10, seed)
    # CI and DP with the components' first requests STAGGER apart in their order, the testbed's
    # start (docs/REPRODUCTION.md, the start order), for the readings our runs of them have: the
    # testbed's ring relay, and DP's cluster under the authors' dispatch only
    for key, make in list(out.items()):
        scenario, infrastructure, reading = key.split("/")
        if scenario in ("ci", "dp") and reading != "arrival" and (scenario, reading) != ("dp", "free"):
            out[f"{scenario}-staggered/{infrastructure}/{reading}"] = lambda seed, m=make: m(seed, stagger=STAGGER)
    # the DP scenario's larger sizes (31 servers; 310 and 620 components, 10% sending)
    for per in (10, 20):
        n, senders = 31 * per, 31 * per // 10
        for dispatch in ("random", "free"):
            out[f"dp-{n}/C[31,{n}]/{dispatch}"] = lambda seed, n=n, k=senders, d=dispatch: Cluster(31, n, k, d, seed)
        for relay in ("arrival", "in-order"):
            out[f"dp-{n}/R[31,{per}]/{relay}"] = lambda seed, p=per, k=senders, r=relay: Ring(31, p, k, r, seed)
        out[f"dp-{n}/T[3,5,{per}]/authors"] = lambda seed, p=per, k=senders: Tree(3, 5, p, k, seed)
    # the rings and trees with a cost on every hop, as a loaded machine adds one: every handling at
    # λh of HOP_COSTS instead of the authors' 1000 (docs/REPRODUCTION.md, AbC, the rings); CI at the
    # first, the DP ring and tree at each (one wall-clock cost at time dilation 1, 2 and 4)
    h = HOP_COSTS[0]
    for servers, per in ((5, 31), (31, 5)):
        out[f"ci-h{h:g}/R[{servers},{per}]/in-order"] = (
            lambda seed, s=servers, k=per, h=h: Ring(s, k, None, "in-order", seed, rate_h=h))
    for levels, children in ((5, 2), (3, 5)):
        out[f"ci-h{h:g}/T[{levels},{children},5]/authors"] = (
            lambda seed, lv=levels, ch=children, h=h: Tree(lv, ch, 5, None, seed, rate_h=h))
    for rate_h in HOP_COSTS:
        out[f"dp-h{rate_h:g}/R[31,5]/in-order"] = lambda seed, h=rate_h: Ring(31, 5, 15, "in-order", seed, rate_h=h)
        out[f"dp-h{rate_h:g}/T[3,5,5]/authors"] = lambda seed, h=rate_h: Tree(3, 5, 5, 15, seed, rate_h=h)
        out[f"dp-10-h{rate_h:g}/T[3,5,5]/authors"] = lambda seed, h=rate_h: Tree(3, 5, 5, 10, seed, rate_h=h)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="runs per configuration (default 10, as the paper)")
    ap.add_argument("--horizon", type=float, default=2000.0, help="time units (default 2000, the paper's)")
    ap.add_argument("--only", default="", help="the configurations whose key contains this text (default all), "
                                               "keys SCENARIO/INFRASTRUCTURE/READING such as ci/R[31,5]/arrival")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    todo = {k: make for k, make in configurations().items() if args.only in k}
    if args.seeds < 1 or not args.horizon > 0 or not math.isfinite(args.horizon) or not todo:
        print(f"abc_model: --seeds {args.seeds}, --horizon {args.horizon}, --only {args.only!r}: at least one "
              f"seed, a positive finite horizon, and a text found in a configuration's key (such as "
              f"{next(iter(configurations()))})", file=sys.stderr)
        return 2
    results: Dict[str, Dict] = {}
    if os.path.exists(args.out):   # a partial run (--only) keeps the others' results
        with open(args.out) as f:
            old = json.load(f)
        if old.get("seeds") == args.seeds and old.get("horizon_time_units") == args.horizon:
            known = configurations()
            results = {k: v for k, v in old.get("results", {}).items() if k in known}
    for key, make in todo.items():
        started = time.monotonic()
        runs = [make(seed).run(args.horizon).measures(args.horizon) for seed in range(1, args.seeds + 1)]
        summary = {m: interval([r[m] for r in runs]) for m in runs[0]}
        results[key] = {"runs": runs, **summary}
        g, d = summary["time_gap"], summary["delivery_time"]
        print(f"{key:28s} gap {g['mean']:.3f} {g['ci95'] and [round(x, 3) for x in g['ci95']]}  "
              f"delivery {d['mean']:.1f}  next-owner rank {summary['next_owner_rank']['mean']:.3f}  "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    doc = {"about": __doc__.split("\n\n")[0], "seeds": args.seeds, "horizon_time_units": args.horizon,
           "rates": {"lambda_s": 1.0, "lambda_t": 15.0, "lambda_h": 1000.0},
           "results": {k: results[k] for k in configurations() if k in results}}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
