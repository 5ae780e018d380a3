"""The `deeco-node` role: a DEECo node and the components it hosts, disseminating their knowledge by
gossip (Kováč, "Optimization of DEECo gossip-based communication", /work/shared/papers/deeco-gossip-manet.txt, chapter 5).

Knowledge. The node hosts `components` components (one by default, named after the node; more are
named <node>.1, <node>.2, ...). A component's knowledge is a GOSSIP_KNOWLEDGE message whose body is
JSON: the component (`c`), its version (`v`, 1, 2, ...), its creation time (`t`, ns of the clock
every node shares), its position (`x`, `y`, metres) when the component is position-aware and the
node is on a radio segment, and its group (`grp`) when the node has one; padded with spaces to
`knowledge_bytes`, so that a body larger than one datagram is fragmented by the runtime. The
header's message_id is the version and the TIMESTAMP_NS extension the creation time.

Rules, as this role reads them:
- Rule 9 (periodic publish): every `knowledge_period_ms` (R_K) the node publishes a new version of
  each component's knowledge, at a fixed per-node offset `offset_ms` (default: drawn from the
  node's seed in [0, R_K)), counted from the start of the workload.
- Rules 4, 10 (MANET): on a radio segment every send and resend is one broadcast, heard by the
  nodes in range (`via: radio`, the default for a node the radio medium places).
- Rule 11 (IP gossip): on an IP network a message goes to `fanout` (C) peers drawn at random from
  the known peers, one recipient after the other (`via: ip`, the default elsewhere). The known
  peers are `peers` (default: every other DEECo node), or, with `groupers`, the groupers named
  until one of them sends a member table (Rule 17 below).
- Rule 12 (retransmission strategy): on the first reception of a knowledge message that is newer
  than what the node holds of that component, it is rebroadcast with probability
  `rebroadcast_probability` (P). A stale or duplicate copy is not (the thesis: "when some node
  receives V_C not for the first time it is ignored").
- Rule 13: a message (origin, sequence) is rebroadcast at most once by a node, and a node never
  rebroadcasts its own components' knowledge.
- Rule 14 (communication boundary, `boundary_m`): no rebroadcast unless the carried knowledge's
  position is within `boundary_m` metres of this node's position (the node's position-aware
  components are where the node is), the thesis's example (Figure 12; it uses 2 km there and
  0.5 km in its experiments). Knowledge without a position, or a node without one, is outside
  every boundary. The boundary also holds for pulled knowledge (Rule 24): Rule 14 says "only",
  which this reading takes as the stronger rule.
- Rules 15-17 (groupers): see agents/deeco/grouper.py. A node with `groupers` uses the last member
  table each grouper sent it (and that grouper) as its known peers, and never rebroadcasts (the
  thesis's ClientRecipientSelector returns no one: every member hears from the source directly).

Push-pull (section 5.3, Rules 18-25; `pull: true`). The node keeps a buffer B of entries, one per
component it has heard of (its own included), each with l, g and the pulled flag p. Readings
where the thesis is ambiguous:
- l and g are knowledge creation times (the shared clock), not reception times: l is the creation
  time of the newest version this node holds (Rule 19), g the newest creation time any node is
  known to hold (its own l and the headers it heard, Rule 21). For the node's own components
  l = g = the creation time of the last publication (section 6.4). Times are compared with ≥:
  an entry is outdated when now - l ≥ T_m and expired when now - g ≥ T_p.
- An entry known only from a header (or a pull) takes l = g = the remote g.
- Headers (GOSSIP_HEADERS, every `header_period_ms` R_H): [component, g] of every entry, expired
  ones removed first (Rule 25).
- Pulls (GOSSIP_PULL, every `pull_period_ms` R_P): [component, g] of the entries that are
  outdated (Rule 22) or wanted, not expired, not the node's own.
- A pull received flags p on every entry it names (Rule 23), creating entries it did not have.
  A pull is not forwarded: a node that lacks the knowledge (never received a version) records the
  entry as wanted and pulls it itself at its next pull tick, until it receives a version.
- A node holding a flagged entry rebroadcasts the knowledge at its next reception of it (a version
  it has not rebroadcast yet, Rule 13) and clears the flag (Rules 24, 13).
- Headers and pulls are never retransmitted (Rule 18), and go where knowledge goes: broadcast
  on radio, to C random known peers on IP.
- When an entry the node has pulled since it last received a version expires, the node logs the
  state `deeco stopped pulling` with the component (Table 9's "stops pulling").

Logs (what spark_analysis.protocols.deeco reads): every send (publications hop 0 with the
`eligible` nodes, rebroadcasts hop ≥ 1 with `pulled`, headers and pulls with the `components`
they name), every reception (the runtime), and a `deliver` event each time knowledge newer than
what the node held is accepted, with `produced_ns` (creation time: age = t - produced_ns), the
`component`, its `version` and the `hops` of the copy; `eligible` is every other DEECo node, or
those of the node's `group` when it has one (the nodes interested in its knowledge).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..roles import MAX_BODY_BYTES, MAX_SECONDS, is_number, number_at_least, whole_at_least
from ..runtime import Role
from ..wire import Ext, Flags, Header, MessageType
from ..wire import json_body as encode
from ..wire import read_json_body as decode

NODE = "deeco-node"
GROUPER = "deeco-grouper"
ROLES = (NODE, GROUPER)
MAX_MS = MAX_SECONDS * 1000
MAX_COMPONENTS = 1000
#: Table 7's periods and timeouts (ms), the thesis's use case; the defaults of every node
DEFAULTS = {"knowledge_period_ms": 5000, "header_period_ms": 5000, "pull_period_ms": 5000,
            "message_timeout_ms": 6000, "pull_timeout_ms": 10000}
STOPPED_PULLING = "deeco stopped pulling"
#: how long a read of position.json is reused (ms): the medium moves nodes once a tick (1 s or more)
POSITION_CACHE_S = 0.1


def _period(v: Any) -> bool:
    return is_number(v) and 0 < v <= MAX_MS


def _names(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(n, str) for n in v)


PARAMS = {
    "components": (whole_at_least(1, MAX_COMPONENTS), f"components hosted, a whole number from 1 to {MAX_COMPONENTS}"),
    "knowledge_period_ms": (_period, f"R_K in ms, a number above 0, at most {MAX_MS}"),
    "offset_ms": (number_at_least(0, MAX_MS), f"the node's fixed publish offset in ms, from 0 to {MAX_MS}"),
    "rebroadcast_probability": (number_at_least(0, 1), "P, a number from 0 to 1"),
    "boundary_m": (lambda v: is_number(v) and v > 0, "the communication boundary's distance in metres, above 0"),
    "knowledge_bytes": (whole_at_least(0, MAX_BODY_BYTES), f"knowledge body bytes, from 0 to {MAX_BODY_BYTES}"),
    "via": (lambda v: v in ("radio", "ip"), "radio (broadcast in range) or ip (C random known peers)"),
    "fanout": (whole_at_least(1, 10_000), "C, the peers each IP send goes to, a whole number from 1"),
    "peers": (lambda v: v == "all" or _names(v), "all, or a list of node names"),
    "groupers": (_names, "a list of deeco-grouper node names"),
    "group": (lambda v: isinstance(v, (str, int)) and not isinstance(v, bool), "a string or a whole number"),
    "position_aware": (lambda v: isinstance(v, bool), "true or false"),
    "pull": (lambda v: isinstance(v, bool), "true or false"),
    "header_period_ms": (_period, f"R_H in ms, a number above 0, at most {MAX_MS}"),
    "pull_period_ms": (_period, f"R_P in ms, a number above 0, at most {MAX_MS}"),
    "message_timeout_ms": (_period, f"T_m in ms, a number above 0, at most {MAX_MS}"),
    "pull_timeout_ms": (_period, f"T_p in ms, a number above 0, at most {MAX_MS}"),
}

EVENT_FIELDS = {
    "send": {"component": ("string", "the component whose knowledge the message carries (DEECo)"),
             "version": ("integer", "its knowledge version (DEECo)"),
             "pulled": ("boolean", "a rebroadcast in answer to a pull request (DEECo, Rule 24)"),
             "components": ("array", "the components a header or pull message names (DEECo)")},
    "deliver": {"component": ("string", "the component whose knowledge was accepted (DEECo)"),
                "version": ("integer", "its knowledge version (DEECo)")},
    "state": {"component": ("string", "the component the node stopped pulling (state deeco stopped pulling)")},
}


def check_structure(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    """`peers` must name nodes and `groupers` deeco-grouper nodes; a grouper client is on IP."""
    params = nodes[name].get("params") or {}
    peers = params.get("peers")
    if isinstance(peers, list):
        unknown = [p for p in peers if p not in nodes]
        if unknown:
            return "peers", f"{unknown[0]!r} is not a node", ", ".join(sorted(nodes)[:12])
    groupers = params.get("groupers")
    if isinstance(groupers, list):
        known = sorted(n for n, info in nodes.items() if info.get("role") == GROUPER)
        bad = [g for g in groupers if g not in known]
        if bad or not groupers:
            return "groupers", (f"{bad[0]!r} is not a deeco-grouper" if bad else "an empty list"), \
                ", ".join(known) or "no node has role deeco-grouper"
        if params.get("via") == "radio":
            return "via", "a node with groupers gossips on IP (Rule 16: groupers publish on infrastructure only)", "ip"
    return None


def deeco_nodes(nodes: Dict[str, Dict[str, Any]]) -> List[str]:
    """The DEECo nodes of a topology, in node-id order."""
    return sorted((n for n, info in nodes.items() if info.get("role") in ROLES), key=lambda n: nodes[n]["id"])


@dataclass
class Entry:
    """An entry of the header buffer B (section 5.3): l, g and the pulled flag p."""

    l: int            # creation time of the newest version held (ns); the remote g when only heard of
    g: int            # the newest creation time any node is known to hold (ns)
    pulled: bool = False
    wanted: bool = False  # someone pulled it from this node, which lacks it: pull it too
    pulling: bool = False  # this node has pulled it (since it last received a version)


class DeecoNode(Role):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, params)
        p = {**DEFAULTS, **params}
        self.p = p
        nodes = agent.config.nodes
        n = int(p.get("components", 1))
        self.components = [agent.name] if n == 1 else [f"{agent.name}.{i}" for i in range(1, n + 1)]
        self.own = set(self.components)
        self.period_s = float(p["knowledge_period_ms"]) / 1000
        self.rng = agent.rng
        self.offset_s = float(p["offset_ms"]) / 1000 if "offset_ms" in p else self.rng.uniform(0, self.period_s)
        self.header_offset_s = self.rng.uniform(0, float(p["header_period_ms"]) / 1000)
        self.pull_offset_s = self.rng.uniform(0, float(p["pull_period_ms"]) / 1000)
        self.probability = float(p.get("rebroadcast_probability", 0))
        self.boundary = float(p["boundary_m"]) if "boundary_m" in p else None
        self.size = int(p.get("knowledge_bytes", 100))
        self.fanout = int(p.get("fanout", 1))
        self.group = p.get("group")
        self.pull = bool(p.get("pull", False))
        self.t_m = int(float(p["message_timeout_ms"]) * 1e6)
        self.t_p = int(float(p["pull_timeout_ms"]) * 1e6)
        self.via = p.get("via")
        self.position_aware = p.get("position_aware")
        others = [m for m in deeco_nodes(nodes) if m != agent.name]
        self.eligible = [m for m in others if self.group is None
                         or (nodes[m].get("params") or {}).get("group") == self.group]
        peers = p.get("peers", "all")
        self.all_peers = others if peers == "all" else [m for m in peers if m != agent.name]
        self.groupers = list(p.get("groupers") or [])
        self.tables: Dict[str, List[str]] = {}  # grouper → its last member table (Rule 17)
        self.versions = {c: 0 for c in self.components}
        self.buffer: Dict[str, Entry] = {}
        #: the newest knowledge held of each remote component: (creation ns, version); kept when
        #: its buffer entry expires (Rule 25 forgets headers, not the replica)
        self.replica: Dict[str, Tuple[int, int]] = {}
        self.seen: set = set()  # (origin, sequence) of knowledge received
        self.resent: set = set()  # (origin, sequence) rebroadcast (Rule 13)
        self.clock = agent.clock.now_ns  # virtual ns, shared by the nodes; a seam for the in-memory tests
        self._position: Optional[Tuple[float, Any]] = None

    # -- the node's place ---------------------------------------------------------------------

    def position(self) -> Optional[Tuple[float, float]]:
        """This node's (x, y) on its radio segment, None when it is on none."""
        now = self.clock() / 1e9
        if self._position is None or now - self._position[0] > POSITION_CACHE_S:
            pos = self.agent.position()
            self._position = (now, None if pos is None else (pos.x, pos.y))
        return self._position[1]

    def on_radio(self) -> bool:
        if self.via is None:
            self.via = "radio" if self.position() is not None else "ip"
        return self.via == "radio"

    def known_peers(self) -> List[str]:
        """Peer_[C] (Rules 11, 17): with groupers, the groupers until one sent a table, then the
        senders of tables and their last tables' members; else `peers`."""
        if not self.groupers:
            return self.all_peers
        if not self.tables:
            return self.groupers
        known = set(self.tables)
        for members in self.tables.values():
            known.update(members)
        known.discard(self.agent.name)
        return sorted(known, key=lambda m: self.agent.config.nodes[m]["id"])

    def recipients(self, peers: Optional[Sequence[str]] = None) -> Any:
        """Where a send goes: "broadcast" on radio; else C peers drawn at random (Rule 11)."""
        if self.on_radio():
            return "broadcast"
        peers = list(self.known_peers() if peers is None else peers)
        return self.rng.sample(peers, min(self.fanout, len(peers)))

    # -- the schedule (Rules 9, 20, 22) --------------------------------------------------------

    async def run(self) -> None:
        clock = self.agent.clock
        start = clock.time()
        ticks = [(self.offset_s, self.period_s, self.publish)]
        if self.pull:
            ticks += [(self.header_offset_s, float(self.p["header_period_ms"]) / 1000, self.publish_headers),
                      (self.pull_offset_s, float(self.p["pull_period_ms"]) / 1000, self.pull_tick)]
        # a node that fell behind skips the ticks it missed rather than bursting them; one failed
        # tick is logged and the schedule goes on
        await asyncio.gather(*(clock.every(period, action, first=start + offset, on_error=self._tick_failed)
                               for offset, period, action in ticks))

    def _tick_failed(self, action, exc: BaseException) -> None:
        self.agent.log_error(action.__name__, exc)

    def publish(self) -> None:
        """Rule 9: a new version of each component's knowledge, to the radio or C peers."""
        for comp in self.components:
            self.versions[comp] += 1
            version, created = self.versions[comp], self.clock()
            body: Dict[str, Any] = {"c": comp, "v": version, "t": created}
            pos = self.position() if self.position_aware is not False else None
            if pos is not None:
                body["x"], body["y"] = round(pos[0], 2), round(pos[1], 2)
            if self.group is not None:
                body["grp"] = self.group
            self.agent.send(MessageType.GOSSIP_KNOWLEDGE, encode(body, self.size), to=self.publish_to(comp),
                            message_id=version, extensions={Ext.TIMESTAMP_NS: created.to_bytes(8, "big")},
                            eligible=self.eligible, component=comp, version=version)
            entry = self.buffer.setdefault(comp, Entry(l=created, g=created))
            entry.l = entry.g = created

    def publish_to(self, comp: str) -> Any:
        return self.recipients()

    def _expire(self, now: int) -> None:
        """Rule 25: entries whose g is T_p old are removed; a pulled one is logged as stopped."""
        for comp, e in list(self.buffer.items()):
            if comp not in self.own and now - e.g >= self.t_p:
                if e.pulling:
                    self.agent.log.write("state", state=STOPPED_PULLING, component=comp)
                del self.buffer[comp]

    def publish_headers(self) -> None:
        """Rule 20: [component, g] of every entry of B (own ones included)."""
        now = self.clock()
        self._expire(now)
        if not self.buffer:
            return
        entries = [[c, e.g] for c, e in self.buffer.items()]
        self.agent.send(MessageType.GOSSIP_HEADERS, encode({"h": entries}), to=self.recipients(),
                        components=[c for c, _ in entries])

    def pull_tick(self) -> None:
        """Rule 22: pull the outdated entries (now - l ≥ T_m) and the wanted ones."""
        now = self.clock()
        self._expire(now)
        entries = [[c, e.g] for c, e in self.buffer.items()
                   if c not in self.own and (e.wanted or now - e.l >= self.t_m)]
        for c, _ in entries:
            self.buffer[c].pulling = True
        if entries:
            self.agent.send(MessageType.GOSSIP_PULL, encode({"p": entries}), to=self.recipients(),
                            components=[c for c, _ in entries])

    # -- receiving ------------------------------------------------------------------------------

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.GOSSIP_KNOWLEDGE:
            self.on_knowledge(header, body, sender)
        elif header.type == MessageType.GOSSIP_HEADERS:
            self.on_entries(decode(body).get("h"), pulled=False)
        elif header.type == MessageType.GOSSIP_PULL:
            self.on_entries(decode(body).get("p"), pulled=True)
        elif header.type == MessageType.GOSSIP_GROUPS:
            self.on_table(decode(body), sender)

    def on_knowledge(self, header: Header, body: bytes, sender: str,
                     k: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
        """Accept a newer version (Rule 19), then decide on a rebroadcast (Rules 12-14, 24).
        `k` is the body decoded, when the caller has it. Returns the decoded knowledge, None when
        it is the node's own or not knowledge."""
        k = decode(body) if k is None else k
        comp, version, created = k.get("c"), k.get("v"), k.get("t")
        if not isinstance(comp, str) or not isinstance(version, int) or not isinstance(created, int):
            self.agent.log.write("drop", reason="not DEECo knowledge", sender=sender)
            return None
        if header.origin == self.agent.id or comp in self.own:
            return None
        key = (header.origin, header.sequence)
        first = key not in self.seen
        self.seen.add(key)
        held = self.replica.get(comp)
        newer = held is None or (created, version) > held
        pos = (k["x"], k["y"]) if is_number(k.get("x")) and is_number(k.get("y")) else None
        entry = self.buffer.get(comp)
        if newer:
            self.replica[comp] = (created, version)
            if entry is None:
                entry = self.buffer[comp] = Entry(l=created, g=created)
            entry.l, entry.g = created, max(entry.g, created)
            entry.wanted = entry.pulling = False
            self.agent.deliver(header, sender=sender, hops=header.hops, produced_ns=created, component=comp,
                               version=version)
        if key in self.resent or not self.may_rebroadcast():
            return k
        if entry is not None and entry.pulled and (created, version) == self.replica[comp] \
                and self.within_boundary(pos):
            entry.pulled = False
            self.rebroadcast(header, body, comp, version, pulled=True)
        elif first and newer and self.probability > 0 and self.rng.random() < self.probability \
                and self.within_boundary(pos):
            self.rebroadcast(header, body, comp, version, pulled=False)
        return k

    def may_rebroadcast(self) -> bool:
        """A grouper client never rebroadcasts (section 6.3, ClientRecipientSelector)."""
        return not self.groupers

    def within_boundary(self, pos: Optional[Tuple[float, float]]) -> bool:
        """Rule 14: the knowledge's position within boundary_m of this node's (no boundary: true)."""
        if self.boundary is None:
            return True
        here = self.position()
        if pos is None or here is None:
            return False
        return math.hypot(pos[0] - here[0], pos[1] - here[1]) <= self.boundary

    def rebroadcast(self, header: Header, body: bytes, comp: str, version: int, pulled: bool,
                    to: Any = None) -> None:
        self.resent.add((header.origin, header.sequence))
        flags = Flags.RELAYED | (Flags.PULLED if pulled else 0)
        self.agent.send(MessageType.GOSSIP_KNOWLEDGE, body, to=self.recipients() if to is None else to,
                        origin=header.origin, sequence=header.sequence, hops=min(header.hops + 1, 255),
                        message_id=header.message_id, extensions=header.extensions, flags=flags,
                        pulled=pulled, component=comp, version=version)

    def on_entries(self, entries: Any, pulled: bool) -> None:
        """Headers (Rule 21) and pulls (Rule 23): [component, g] pairs into B."""
        if not isinstance(entries, list):
            return
        for item in entries:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], int)):
                continue
            comp, g = item
            if comp in self.own:
                continue
            entry = self.buffer.get(comp)
            held = self.replica.get(comp)
            if entry is None:
                if self.clock() - g >= self.t_p:
                    continue  # expired already: taking it would only pull what nobody has
                entry = self.buffer[comp] = Entry(l=g, g=g) if held is None else Entry(l=held[0], g=max(g, held[0]))
            entry.g = max(entry.g, g)
            if pulled:
                entry.pulled = True
                if held is None:
                    entry.wanted = True

    def on_table(self, body: Dict[str, Any], sender: str) -> None:
        """Rule 17: the last member table a grouper sent is this node's view of that group."""
        members = body.get("members")
        nodes = self.agent.config.nodes
        if self.groupers and (nodes.get(sender) or {}).get("role") == GROUPER and _names(members):
            self.tables[sender] = [m for m in members if m in nodes]


ROLE = DeecoNode
