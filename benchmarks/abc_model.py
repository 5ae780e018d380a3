"""The AbC paper's cluster as the authors' simulator models it, simulated here as the continuous-time
Markov chain it is, to say what the model itself gives for the communication-intensive (CI) and
data-provider (DP) clusters under each dispatch reading, beside the paper's values and ours.

    python benchmarks/abc_model.py [--seeds N] [--servers 10,20,31] [--horizon 2000]

The model (ClusterServer.java and ComponentNode.java of giulio-garbi/AbCSimulator_vertex, read
for this; nothing is copied): every activity takes an exponential time at its rate, in time units.

- A component that wants to send (CI: always, once its previous data message has left; DP: the
  providers only) makes an id request at λs, which reaches the cluster's shared input queue I at
  once. Once it holds an id n and has handled every id below n, it sends its data message at λt
  (one transmission), which reaches I.
- Each of the S server slots has a handling activity at λh while I is not empty: it takes I's
  head; a request gets the counter's value, and the reply goes into the slot's output queue; a
  data message goes into it once for every component but its sender. `random` dispatch (the
  authors'): a slot takes whether or not its output queue is busy; `free`: only a slot whose
  output queue is empty takes (the reading the testbed had first).
- Each slot's output queue sends its head at λt (one message to one component at a time).
- A component handles each message that reaches it at λh (a reply gives it its id; a data
  message goes to its delivery queue), and delivers the next id at λh; its own ids count as
  delivered when sent.

The measures are the authors' (AbCSystem.java): the delivery time of a message, from the start of
its id request to its delivery at the last component; the message time gap, every interval
between two consecutive deliveries at a component (pooled over components, the authors' mean);
both as cumulative means at the horizon (t = 2000), where the paper reads its figures, and the
delivery time of the messages completed in the horizon's last tenth (t in (1800, 2000]). Also the
testbed's gap (per component, then the mean over components) and the id chain of
spark_analysis/protocols/abc.py (the next owner's rank among a message's handlers, the send
interval), so that the emulation's runs can be compared measure by measure.

Writes benchmarks/results/abc_model.json: per configuration and dispatch the per-seed values and
the mean with its 95% interval (Student's t).
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
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "abc_model.json")


class Cluster:
    """One run of the chain: `components` components on `servers` slots, `senders` of them sending
    (all for CI), rates per time unit."""

    def __init__(self, servers: int, components: int, senders: Optional[int], dispatch: str, seed: int,
                 rate_s: float = 1.0, rate_t: float = 15.0, rate_h: float = 1000.0) -> None:
        if dispatch not in ("random", "free"):
            raise ValueError(f"dispatch {dispatch!r}: random or free")
        self.S, self.C, self.dispatch = servers, components, dispatch
        self.ls, self.lt, self.lh = rate_s, rate_t, rate_h
        self.rng = random.Random(seed)
        chosen = range(components) if senders is None else self.rng.sample(range(components), senders)
        self.sends = [c in set(chosen) for c in range(components)]
        self.now = 0.0
        self.heap: List[tuple] = []
        self.version: Dict[tuple, int] = {}
        self.seq = 0
        # the cluster
        self.I: deque = deque()
        self.out: List[deque] = [deque() for _ in range(servers)]
        self.counter = 0
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

    # -- the event queue: an activity enabled at rate r fires after Exp(r) unless disabled first
    def _arm(self, key: tuple, rate: float) -> None:
        if key in self.version:
            return
        self.seq += 1
        self.version[key] = self.seq
        heapq.heappush(self.heap, (self.now + self.rng.expovariate(rate), self.seq, key))

    def _disarm(self, key: tuple) -> None:
        self.version.pop(key, None)

    def _enable(self) -> None:
        """(Re)arm every activity whose guard holds; the memoryless rates make this the chain."""
        if self.I:
            for k in range(self.S):
                if self.dispatch == "random" or not self.out[k]:
                    self._arm(("take", k), self.lh)
                else:
                    self._disarm(("take", k))
        else:
            for k in range(self.S):
                self._disarm(("take", k))

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

    def run(self, horizon: float) -> "Cluster":
        for c in range(self.C):
            self._arm_component(c)
        while self.heap:
            t, seq, key = heapq.heappop(self.heap)
            if self.version.get(key) != seq:
                continue
            if t > horizon:
                break
            del self.version[key]
            self.now = t
            getattr(self, "_" + key[0])(key[1])
        return self

    # -- the activities
    def _request(self, c: int) -> None:
        self.asking[c], self.want[c] = True, False
        self.asked_at[c] = self.now
        self.I.append(("req", c))
        self._enable()

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
        self.inbox[c].append((kind, n))
        if self.out[k]:
            self._arm(("send", k), self.lt)
        self._arm_component(c)
        if self.dispatch == "free":
            self._enable()

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
        self.I.append(("data", (n, c)))
        self._enable()
        self._arm_component(c)

    # -- the measures
    def measures(self, horizon: Optional[float] = None) -> Dict[str, Optional[float]]:
        intervals = [b - a for d in self.deliveries for a, b in zip(d, d[1:])]
        per = [(d[-1] - d[0]) / (len(d) - 1) for d in self.deliveries if len(d) >= 2]
        ranks, steps = [], []
        for n in sorted(self.sent_at):
            if n + 1 not in self.sent_at:
                continue
            steps.append(self.sent_at[n + 1] - self.sent_at[n])
            nxt, got = self.owner[n + 1], self.handled.get(n, {})
            if nxt != self.owner[n] and nxt in got and len(got) >= 2:
                ranks.append(sum(1 for v in got.values() if v < got[nxt]) / (len(got) - 1))
        mean = (lambda xs: sum(xs) / len(xs) if xs else None)
        end = self.now if horizon is None else horizon
        return {"delivery_time": mean([d for _, d in self.done]),
                "delivery_time_last_tenth": mean([d for t, d in self.done if t > 0.9 * end]),
                "time_gap": mean(intervals),
                "time_gap_per_component": mean(per), "messages": len(self.sent_at),
                "send_interval": mean(steps), "next_owner_rank": mean(ranks)}


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


CONFIGS = {"ci": None, "dp": 15}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="runs per configuration (default 10, as the paper)")
    ap.add_argument("--servers", default="10,20,31", help="comma-separated slot counts (default 10,20,31)")
    ap.add_argument("--components", type=int, default=155)
    ap.add_argument("--horizon", type=float, default=2000.0, help="time units (default 2000, the paper's)")
    ap.add_argument("--scenario", choices=sorted(CONFIGS) + ["all"], default="all")
    ap.add_argument("--out", default=RESULTS)
    args = ap.parse_args(argv)
    try:
        servers = [int(s) for s in args.servers.split(",")]
        if not servers or min(servers) < 1 or args.seeds < 1 or args.components < 2 or args.horizon <= 0:
            raise ValueError
    except ValueError:
        print(f"abc_model: --servers {args.servers!r}, --seeds {args.seeds}, --components {args.components}, "
              f"--horizon {args.horizon}: positive integers (at least 2 components) and a positive horizon",
              file=sys.stderr)
        return 2
    results: Dict[str, Dict] = {}
    scenarios = sorted(CONFIGS) if args.scenario == "all" else [args.scenario]
    for scenario in scenarios:
        for s in servers:
            for dispatch in ("random", "free"):
                key = f"{scenario}/C[{s},{args.components}]/{dispatch}"
                started = time.monotonic()
                runs = [Cluster(s, args.components, CONFIGS[scenario], dispatch, seed).run(args.horizon).measures(args.horizon)
                        for seed in range(1, args.seeds + 1)]
                summary = {m: interval([r[m] for r in runs]) for m in runs[0]}
                results[key] = {"runs": runs, **summary}
                g, d = summary["time_gap"], summary["delivery_time"]
                print(f"{key:28s} gap {g['mean']:.3f} {g['ci95'] and [round(x, 3) for x in g['ci95']]}  "
                      f"delivery {d['mean']:.1f}  next-owner rank {summary['next_owner_rank']['mean']:.3f}  "
                      f"({time.monotonic() - started:.0f} s)", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    doc = {"about": __doc__.split("\n\n")[0], "seeds": args.seeds, "horizon_time_units": args.horizon,
           "components": args.components, "rates": {"lambda_s": 1.0, "lambda_t": 15.0, "lambda_h": 1000.0},
           "results": results}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
