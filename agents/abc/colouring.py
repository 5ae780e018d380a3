"""The `abc-vertex` role: the AbC paper's graph-colouring example (section 2) as an application.

Each vertex is an AbC component (agents/abc/component.py) with the attributes of the paper's
example: `id` (its node id), `N` (the ids of its neighbours, from the `neighbours` parameter),
`round`, `colour`, `used` and `assigned`. Messages are ("try", c, r, id)@(id ∈ N) and
("done", c, r, id)@(id ∈ N): a component receives them when the sender's id is in its N, and
discards them otherwise, as in the paper's step 4/4.

A round, at a vertex that is not yet assigned: it tries the smallest colour nobody around it
has taken (min{i ∉ used}) and collects, from every neighbour still competing, that neighbour's
try of the same round or its done message (a neighbour that was assigned). It takes its colour
when no neighbour took that colour and no neighbour with a greater id tried it in the round
(the paper's rule: the greatest id among those that selected the same colour wins), and tells
its neighbours with a done message; otherwise the next round starts. The infrastructure's total
order gives every vertex its neighbours' messages in the order they were sent, so a neighbour's
messages are taken one at a time, a later round's waiting for this vertex to get there.

The vertex logs `state: coloured` with its colour and round; the analysis checks that no two
neighbours share a colour and reports the rounds (spark_analysis/abc.py).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from ..wire import Header
from .common import PROMISES, VERTEX, Structure  # noqa: F401 (PROMISES: the registry reads it)
from .component import EVENT_FIELDS as COMPONENT_EVENT_FIELDS
from .component import PARAMS as COMPONENT_PARAMS
from .component import Component

#: the fields a vertex adds to a component's (agents/events.py)
EVENT_FIELDS = {
    **COMPONENT_EVENT_FIELDS,
    "state": {**COMPONENT_EVENT_FIELDS["state"],
              "colour": ("integer", "the colour the vertex took (state coloured)"),
              "round": ("integer", "the round in which it took it"),
              "vertex_id": ("integer", "its id, which breaks ties between rivals")},
    "drop": {"values": ("array", "the first values of a message that is not the colouring's")},
}

PARAMS = {
    **{k: v for k, v in COMPONENT_PARAMS.items() if k in ("attributes", "queue", "infrastructure", "parent",
                                                         "start_delay", "size", "time_unit_ms",
                                                         "transmission_rate")},
    "workload": (lambda v: v == "none", "none (a vertex sends what the colouring needs, no workload)"),
    "neighbours": (lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
                   "a list of the names of the vertex's neighbours (abc-vertex nodes)"),
}


def check_structure(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    """The component's own structure, then: neighbours are vertices, listed both ways."""
    from .common import structure_problem

    problem = structure_problem(nodes, name)
    if problem:
        return problem
    st = Structure(nodes)
    vertices = st.with_role(VERTEX)
    for other in st.params(name).get("neighbours") or []:
        if other not in nodes or st.role(other) != VERTEX:
            return "neighbours", f"{other!r} is not an {VERTEX}", ", ".join(vertices[:12])
        if other == name:
            return "neighbours", f"{name} lists itself", "other vertices"
        if name not in (st.params(other).get("neighbours") or []):
            return "neighbours", f"{name} lists {other} but {other} does not list {name}", \
                "an undirected graph: each edge in both vertices' neighbours"
    return None


class Vertex(Component):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        params = dict(params, workload="none")
        super().__init__(agent, params)
        ids = self.structure.ids
        self.neighbours = {ids[n] for n in params.get("neighbours") or []}
        self.attributes.update({"id": agent.id, "N": sorted(self.neighbours), "round": 0, "used": [],
                                "assigned": False})
        self.inbox: Dict[int, Deque[Tuple[str, int, int]]] = {v: deque() for v in self.neighbours}
        self.active: Set[int] = set(self.neighbours)  # neighbours still competing
        self.used: Set[int] = set()
        self.tried: Dict[int, int] = {}  # neighbour -> colour it tried in this round
        self.round = 0
        self.colour: Optional[int] = None
        self.assigned = False

    def _predicate(self) -> Any:
        return ["has", "N", self.agent.id]  # (this.id ∈ N), evaluated at the receiver

    async def run(self) -> None:
        self._start_round()
        self._progress()

    def _start_round(self) -> None:
        self.round += 1
        self.colour = min(i for i in range(len(self.used) + 1) if i not in self.used)
        self.tried = {}
        self.attributes.update(round=self.round, colour=self.colour)
        self.send_abc(["try", self.colour, self.round, self.agent.id], self._predicate())

    def receive(self, values: List[Any], header: Header, sender: str) -> None:
        if len(values) != 4 or values[0] not in ("try", "done") or values[3] not in self.inbox:
            self.agent.log.write("drop", reason="not a colouring message", values=values[:4])
            return
        kind, colour, rnd, vertex = values
        self.inbox[vertex].append((kind, int(colour), int(rnd)))
        self._progress()

    def _progress(self) -> None:
        while self.round and not self.assigned:
            for v in list(self.active):
                queue = self.inbox[v]
                while queue and v in self.active and v not in self.tried:
                    kind, colour, rnd = queue[0]
                    if kind == "done":
                        queue.popleft()
                        self.used.add(colour)
                        self.active.discard(v)
                    elif rnd < self.round:  # a try of a round this vertex has finished: spent
                        queue.popleft()
                    elif rnd == self.round:
                        queue.popleft()
                        self.tried[v] = colour
                    else:
                        break  # the neighbour is a round ahead: wait until this vertex gets there
            if any(v not in self.tried for v in self.active):
                return
            rivals = [v for v, c in self.tried.items() if c == self.colour]
            if self.colour not in self.used and all(self.agent.id > v for v in rivals):
                self.assigned = True
                self.attributes.update(assigned=True, used=sorted(self.used))
                self.send_abc(["done", self.colour, self.round, self.agent.id], self._predicate())
                self.agent.log.write("state", state="coloured", colour=self.colour, round=self.round,
                                     vertex_id=self.agent.id)
                return
            self._start_round()


ROLE = Vertex
NAME = VERTEX
