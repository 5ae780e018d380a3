"""An in-memory network for the cluster management of agents/causal/cluster.py: virtual time in
rounds of 1.0, messages delayed 0.01-0.05 (δ = 0.1), a connection-oriented send's status OK
when the receiver is up and the link between the two is not cut, and kills and link cuts."""

from __future__ import annotations

import heapq
import random
from typing import Dict, List, Set, Tuple

from agents.causal.cluster import COORDINATOR, ClusterMember, Out


class ClusterNet:
    def __init__(self, names: List[str], n: int, k: int = 1, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.n, self.k = n, k
        self.now = 0.0
        self.members: Dict[str, ClusterMember] = {
            m: ClusterMember(m, n, k, delta=0.1, rng=random.Random(f"{seed}:{m}")) for m in names}
        self.dead: Set[str] = set()
        self.cut: Set[frozenset] = set()
        self.queue: List[Tuple[float, int, str, str, Out]] = []
        self._count = 0
        self.log: List[Dict] = []          # every ticket change, with time and process
        self.alive_sent: Dict[Tuple[str, int], int] = {}
        self.violations: List[str] = []
        self.next_round = 1.0

    def add(self, name: str) -> ClusterMember:
        self.members[name] = ClusterMember(name, self.n, self.k, delta=0.1, rng=random.Random(f"{self.rng.random()}:{name}"))
        return self.members[name]

    def bootstrap(self, ring: Dict[int, str]) -> None:
        for m in ring.values():
            self.members[m].bootstrap(ring)
        self._collect()

    def reachable(self, a: str, b: str) -> bool:
        return b not in self.dead and a not in self.dead and frozenset((a, b)) not in self.cut

    def send(self, sender: str, outs: List[Out]) -> None:
        for out in outs:
            targets = [m for m in self.members if m != sender] if out.to == "all" else [out.to]
            if out.type == "ALIVE":
                key = (sender, int(self.now))
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
        """Messages in time order and a round for every live member at each whole time."""
        while True:
            head = self.queue[0][0] if self.queue else None
            if head is not None and head < self.next_round and head <= t_end:
                at, _, sender, to, out = heapq.heappop(self.queue)
                self.now = at
                if out == "poll":
                    for name in self.members:
                        if name not in self.dead:
                            self.send(name, self.members[name].poll(at))
                    self._collect()
                    continue
                if to in self.dead:
                    continue
                m = self.members[to]
                if isinstance(out, tuple):
                    self.send(to, m.on_status(out[1], out[2], at))
                else:
                    self.send(to, m.on_message(sender, out.type, out.payload, at))
                for name in self.members:
                    if name not in self.dead:
                        self.send(name, self.members[name].poll(at))
                self._collect()
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

    def _collect(self) -> None:
        for name, m in self.members.items():
            for change in m.changes():
                self.log.append({"t": self.now, "node": name, **change})
        self.check_unique()

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
