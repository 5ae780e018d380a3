"""The `deeco-grouper` role: a DEECo node that also runs the grouper service (Kováč's thesis,
/work/shared/papers/deeco-gossip-manet.txt, sections 5.2.4 and 6.3, Rules 15-17).

The partition function Part is the knowledge's group (`grp`, a node's `group` parameter). The
groupers of the topology, in node-id order, share the key space as a DHT would: the group's
CRC-32 times the number of groupers, divided by 2^32, is the index of the grouper that owns it.
The groupers form a ring in that order (Figure 20): a grouper that receives knowledge of a group
it does not own forwards it, once, to the next grouper; the owner records the knowledge's source
node as a member of the group.

Every knowledge period the grouper publishes its knowledge by parts (Rule 15): one GOSSIP_GROUPS
message per group it owns, {"grouper", "group", "members"}, to `fanout` (C) members of that group
drawn at random (Rule 16: on the infrastructure network only, to members only). A node that
receives a table takes it as its known peers (Rule 17, agents/deeco/node.py).

The grouper node publishes its own components' knowledge to C random nodes of the whole network
(the thesis's ServerRecipientSelector: "for non-grouper knowledge behaves as ...
RangeRecipientSelector"). For others' knowledge this role reads the selector together with the
grouper's purpose ("to prevent from sending knowledge valuation to uninterested nodes"): knowledge
of a group the grouper owns is rebroadcast with probability P to C random members of that group
(Rules 12-13 as for any node), and knowledge of another group goes round the ring instead, never
to random nodes of the whole network. Membership does not expire: the thesis implements no
leaving.
"""

from __future__ import annotations

import zlib
from typing import Any, Dict, List, Optional, Set, Tuple

from ..wire import Flags, Header, MessageType
from .node import EVENT_FIELDS, GROUPER, PARAMS, DeecoNode, decode, deeco_nodes, encode
from .node import check_structure as _node_structure

__all__ = ["EVENT_FIELDS", "PARAMS", "ROLE", "check_structure", "owner"]


def check_structure(nodes: Dict[str, Dict[str, Any]], name: str) -> Optional[Tuple[str, str, str]]:
    params = nodes[name].get("params") or {}
    if params.get("groupers"):
        return "groupers", "a grouper is not a grouper client", "leave groupers out on a deeco-grouper"
    if params.get("via") == "radio":
        return "via", "a grouper publishes on IP only (Rule 16)", "ip"
    return _node_structure(nodes, name)


def groupers_of(nodes: Dict[str, Dict[str, Any]]) -> List[str]:
    return [n for n in deeco_nodes(nodes) if nodes[n].get("role") == GROUPER]


def owner(group: Any, groupers: List[str]) -> str:
    """The grouper whose share of the key space holds the group."""
    key = zlib.crc32(str(group).encode())
    return groupers[key * len(groupers) >> 32]


class DeecoGrouper(DeecoNode):
    def __init__(self, agent, params: Dict[str, Any]) -> None:
        super().__init__(agent, {**params, "via": "ip"})
        self.ring = groupers_of(agent.config.nodes)
        me = self.ring.index(agent.name)
        self.next_grouper = self.ring[(me + 1) % len(self.ring)]
        self.members: Dict[str, Set[str]] = {}  # group → member nodes (its register)
        self.forwarded: set = set()
        self._relay_to: Optional[List[str]] = None  # where a rebroadcast goes, while handling knowledge
        if self.group is not None and owner(self.group, self.ring) == agent.name:
            self.members.setdefault(str(self.group), set()).add(agent.name)

    def publish(self) -> None:
        super().publish()
        for group, members in sorted(self.members.items()):
            others = sorted(members - {self.agent.name})
            if not others:
                continue
            to = self.rng.sample(others, min(self.fanout, len(others)))
            self.agent.send(MessageType.GOSSIP_GROUPS,
                            encode({"grouper": self.agent.name, "group": group, "members": sorted(members)}), to=to)

    def may_rebroadcast(self) -> bool:
        return self._relay_to is not None

    def recipients(self, peers=None):
        return super().recipients(self._relay_to if peers is None and self._relay_to is not None else peers)

    def on_knowledge(self, header: Header, body: bytes, sender: str) -> Optional[Dict[str, Any]]:
        # rebroadcasts (the base class's, with P) go to the members of a group this grouper owns
        body_k = decode(body)
        group = None if body_k.get("grp") is None else str(body_k["grp"])
        owned = group is not None and owner(group, self.ring) == self.agent.name
        self._relay_to = None
        if owned:
            members = self.members.setdefault(group, set())
            source = self.agent.by_id.get(header.origin)
            if source is not None:
                members.add(source)
            self._relay_to = sorted(members - {self.agent.name, source})
        try:
            k = super().on_knowledge(header, body, sender, body_k)
        finally:
            self._relay_to = None
        if k is None or group is None or owned:
            return k
        if (header.origin, header.sequence) not in self.forwarded and self.next_grouper != self.agent.name:
            self.forwarded.add((header.origin, header.sequence))
            self.agent.send(MessageType.GOSSIP_KNOWLEDGE, body, to=[self.next_grouper], origin=header.origin,
                            sequence=header.sequence, hops=min(header.hops + 1, 255),
                            message_id=header.message_id, extensions=header.extensions, flags=Flags.RELAYED,
                            pulled=False, component=k.get("c"), version=k.get("v"))
        return k


ROLE = DeecoGrouper
