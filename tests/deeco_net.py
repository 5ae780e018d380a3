"""An in-memory network for the DEECo roles (agents/deeco/): virtual time, each message delayed at
random, radio broadcast to the neighbours of a graph or unicast on IP, node kills. The real role
classes run on it unchanged but for their clock (the role's `clock` seam) and their schedule,
which the network drives at the same offsets and periods the role's own `run` uses."""

from __future__ import annotations

import heapq
import random
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from agents.clock import Clock
from agents.roles import role_module
from agents.runtime import Position
from agents.wire import Header, MessageType


class _Log:
    def __init__(self, net: "Net", node: str) -> None:
        self.net, self.node = net, node
        self.events: List[Dict[str, Any]] = []

    def write(self, event: str, t=None, **fields) -> None:
        self.events.append({"t": self.net.now, "node": self.node, "event": event, **fields})


class _Config:
    def __init__(self, name: str, nodes, seed: int) -> None:
        self.node = name
        self.nodes = nodes
        self.params = nodes[name]["params"]
        self.run_seed = seed
        self.seed = seed * 1000 + nodes[name]["id"]


class _Agent:
    def __init__(self, net: "Net", name: str, nodes) -> None:
        self.net = net
        self.name = name
        self.id = nodes[name]["id"]
        self.config = _Config(name, nodes, net.seed)
        self.rng = random.Random(self.config.seed)
        self.by_id = {info["id"]: n for n, info in nodes.items()}
        self.log = _Log(net, name)
        self.clock = Clock()
        self._sequence = 0

    def send(self, mtype, body=b"", to="broadcast", reliable=False, message_id=0, extensions=None, origin=None,
             sequence=None, hops=0, flags=0, log=True, **fields):
        if sequence is None:
            self._sequence += 1
            sequence = self._sequence
        header = Header(type=mtype, origin=origin or self.id, sequence=sequence, sender=self.id, hops=hops,
                        message_id=message_id, extensions=dict(extensions or {}), flags=flags)
        self.log.write("send", type=MessageType(mtype).name, to=to if isinstance(to, str) else list(to),
                       origin=self.by_id[header.origin], seq=sequence, hops=hops, bytes=len(body), **fields)
        targets = self.net.in_range(self.name) if to == "broadcast" else list(to)
        for target in targets:
            self.net.post(target, header, body, self.name)
        return sequence

    def deliver(self, header, **fields):
        self.log.write("deliver", origin=self.by_id[header.origin], seq=header.sequence,
                       message_id=header.message_id, **fields)

    def log_error(self, where, exc, **fields):
        raise exc

    def position(self) -> Optional[Position]:
        xy = self.net.positions.get(self.name)
        return None if xy is None else Position(xy[0], xy[1], 0.0, "air", self.net.now)


class Net:
    """nodes: name → (role, params), in node-id order; graph: name → the nodes in its radio range
    (None: an IP network where any node reaches any other); delay: (low, high) seconds."""

    def __init__(self, nodes: Dict[str, Tuple[str, Dict[str, Any]]], graph: Optional[Dict[str, Set[str]]] = None,
                 positions: Optional[Dict[str, Tuple[float, float]]] = None, seed: int = 0,
                 delay: Tuple[float, float] = (0.05, 0.15)) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0.0
        self.delay = delay
        self.graph = graph
        self.positions = dict(positions or {})
        self.queue: list = []
        self.n = 0
        self.dead: Set[str] = set()
        info = {name: {"id": i, "role": role, "params": params}
                for i, (name, (role, params)) in enumerate(nodes.items(), start=1)}
        self.agents: Dict[str, _Agent] = {}
        for name, node in info.items():
            agent = _Agent(self, name, info)
            module = __import__(role_module(node["role"]), fromlist=["ROLE"])
            agent.role = module.ROLE(agent, node["params"])
            agent.role.clock = lambda: int(round(self.now * 1e9))
            self.agents[name] = agent
            role = agent.role
            ticks = [(role.offset_s, role.period_s, "publish")]
            if role.pull:
                ticks += [(role.header_offset_s, float(role.p["header_period_ms"]) / 1000, "publish_headers"),
                          (role.pull_offset_s, float(role.p["pull_period_ms"]) / 1000, "pull_tick")]
            for offset, period, action in ticks:
                self._push(offset, ("tick", name, action, period))

    def in_range(self, name: str) -> Iterable[str]:
        if self.graph is None:
            raise AssertionError("a broadcast on an IP network")
        return sorted(self.graph[name])

    def _push(self, t: float, item) -> None:
        self.n += 1
        heapq.heappush(self.queue, (t, self.n, item))

    def post(self, target: str, header, body: bytes, sender: str) -> None:
        self._push(self.now + self.rng.uniform(*self.delay), ("message", target, header, body, sender))

    def kill(self, name: str, at: float) -> None:
        self._push(at, ("kill", name))

    def run(self, until: float) -> None:
        while self.queue and self.queue[0][0] <= until:
            self.now, _, item = heapq.heappop(self.queue)
            if item[0] == "kill":
                self.dead.add(item[1])
            elif item[0] == "tick":
                _, name, action, period = item
                if name in self.dead:
                    continue
                getattr(self.agents[name].role, action)()
                self._push(self.now + period, item)
            else:
                _, target, header, body, sender = item
                if target not in self.dead:
                    self.agents[target].role.on_message(header, body, sender)
        self.now = until

    def events(self, node: str, event: str, **match) -> List[Dict[str, Any]]:
        return [e for e in self.agents[node].log.events
                if e["event"] == event and all(e.get(k) == v for k, v in match.items())]

    def all_events(self, event: str, **match) -> List[Dict[str, Any]]:
        return [e for name in self.agents for e in self.events(name, event, **match)]


def grid(n: int = 3, spacing: float = 100.0) -> Tuple[Dict[str, Set[str]], Dict[str, Tuple[float, float]]]:
    """Nodes 1..n² on an n × n grid numbered row by row, each in range of its horizontal and
    vertical neighbours only (the thesis's Figure 36 as the issue reads it)."""
    graph: Dict[str, Set[str]] = {}
    pos: Dict[str, Tuple[float, float]] = {}
    for i in range(n * n):
        r, c = divmod(i, n)
        name = f"n{i + 1}"
        pos[name] = (c * spacing, r * spacing)
        graph[name] = {f"n{rr * n + cc + 1}" for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
                       if 0 <= rr < n and 0 <= cc < n}
    return graph, pos


def unit_disk(positions: Dict[str, Tuple[float, float]], radius: float) -> Dict[str, Set[str]]:
    return {a: {b for b, q in positions.items() if b != a and (p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 <= radius ** 2}
            for a, p in positions.items()}
