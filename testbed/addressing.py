"""IPv4 subnets, addresses and static routes for a topology.

Every layer-2 segment (switches joined by links, or one node-to-node cable) is one subnet.
Explicit addresses fix their segment's subnet; the other segments get subnets from the pool
(a /24 for a switched segment, larger when it has more than 253 hosts; a /30 for a cable).
Nodes with more than one interface forward, and every node gets a route to every subnet it can
reach through them (shortest path in hops), so that any node reaches any other by IP without a
routing daemon.
"""

from __future__ import annotations

import ipaddress
import math
from collections import deque
from typing import Dict, Iterator, List, Optional, Set, Tuple

from .model import Endpoint, Route, Segment, Topology

Member = Tuple[str, str]  # (node, interface)


class AddressingError(Exception):
    def __init__(self, message: str, allowed: Optional[str] = None, link_index: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.allowed = allowed
        self.link_index = link_index


def assign(topo: Topology) -> None:
    """Fill in `topo.segments`, every endpoint's address and `topo.routes`."""
    segments = _segments(topo)
    used_ips: Dict[ipaddress.IPv4Address, str] = {}
    taken_nets: List[ipaddress.IPv4Network] = []
    explicit: Dict[int, ipaddress.IPv4Network] = {}

    for index, (name, switches, members, ends) in enumerate(segments):
        nets = {end.address.network for end, _ in ends if end.address is not None}
        if len(nets) > 1:
            first_link = min(link_index for _, link_index in ends)
            raise AddressingError(f"segment {name!r} has addresses in different subnets: "
                                  + ", ".join(sorted(map(str, nets))),
                                  "one subnet per switch or cable", first_link)
        if nets:
            net = nets.pop()
            for other in taken_nets:
                if net.overlaps(other):
                    link_index = next(li for e, li in ends if e.address is not None)
                    raise AddressingError(f"subnet {net} of segment {name!r} overlaps {other} of another segment",
                                          "a separate subnet for each switch or cable", link_index)
            explicit[index] = net
            taken_nets.append(net)

    cursor = int(topo.pool.network_address)
    pool_end = int(topo.pool.broadcast_address)
    order = sorted(range(len(segments)), key=lambda i: (len(segments[i][1]) == 0, i))  # LANs first
    nets: Dict[int, ipaddress.IPv4Network] = dict(explicit)
    for index in order:
        if index in nets:
            continue
        name, switches, members, ends = segments[index]
        hosts = len(members)
        prefix = 30 if not switches else min(24, 32 - math.ceil(math.log2(hosts + 2)))
        size = 1 << (32 - prefix)
        while True:
            cursor = (cursor + size - 1) // size * size
            if cursor + size - 1 > pool_end:
                raise AddressingError(f"the address pool {topo.pool} has no room left for segment {name!r} "
                                      f"({hosts} hosts)", "a larger addressing.pool")
            candidate = ipaddress.IPv4Network((cursor, prefix))
            clash = next((n for n in taken_nets if candidate.overlaps(n)), None)
            if clash is None:
                break
            cursor = int(clash.broadcast_address) + 1
        nets[index] = candidate
        taken_nets.append(candidate)
        cursor += size

    topo.segments = []
    for index, (name, switches, members, ends) in enumerate(segments):
        net = nets[index]
        for end, link_index in ends:
            if end.address is not None:
                _claim(used_ips, end.address.ip, f"{end.node}:{end.interface}", link_index)
        free = _hosts(net)
        for end, link_index in ends:
            if end.address is None:
                for ip in free:
                    if ip not in used_ips:
                        break
                else:
                    raise AddressingError(f"subnet {net} of segment {name!r} has no free address for "
                                          f"{end.node}:{end.interface}", "a larger subnet", link_index)
                end.address = ipaddress.IPv4Interface(f"{ip}/{net.prefixlen}")
                _claim(used_ips, ip, f"{end.node}:{end.interface}", link_index)
        topo.segments.append(Segment(name=name, subnet=net, switches=tuple(switches), members=tuple(members)))

    topo.routes = compute_routes(topo) if topo.routing == "static" else {}


def _claim(used: Dict[ipaddress.IPv4Address, str], ip: ipaddress.IPv4Address, owner: str, link_index: int) -> None:
    if ip in used:
        raise AddressingError(f"address {ip} of {owner} is already used by {used[ip]}",
                              "a different address for each interface", link_index)
    used[ip] = owner


def _hosts(net: ipaddress.IPv4Network) -> Iterator[ipaddress.IPv4Address]:
    if net.prefixlen >= 31:
        yield from net
    else:
        yield from net.hosts()


def _segments(topo: Topology) -> List[Tuple[str, List[str], List[Member], List[Tuple[Endpoint, int]]]]:
    """Group switches by switch-to-switch links; each node-to-node cable is a segment alone."""
    parent = {name: name for name in topo.switches}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for link in topo.links:
        if link.a.node in topo.switches and link.b.node in topo.switches:
            parent[find(link.a.node)] = find(link.b.node)

    by_root: Dict[str, int] = {}
    result: List[Tuple[str, List[str], List[Member], List[Tuple[Endpoint, int]]]] = []
    for name in topo.switches:
        root = find(name)
        if root not in by_root:
            by_root[root] = len(result)
            result.append((name, [], [], []))
        result[by_root[root]][1].append(name)
    for link_index, link in enumerate(topo.links):
        a_sw, b_sw = link.a.node in topo.switches, link.b.node in topo.switches
        if a_sw and b_sw:
            continue
        if not a_sw and not b_sw:
            result.append((link.name, [], [(link.a.node, link.a.interface), (link.b.node, link.b.interface)],
                           [(link.a, link_index), (link.b, link_index)]))
            continue
        switch, end = (link.a.node, link.b) if a_sw else (link.b.node, link.a)
        seg = result[by_root[find(switch)]]
        seg[2].append((end.node, end.interface))
        seg[3].append((end, link_index))
    return [seg for seg in result if seg[2]]


def compute_routes(topo: Topology) -> Dict[str, List[Route]]:
    """For every node, a route to each subnet it does not sit on, through the nearest router."""
    attached: Dict[str, List[Tuple[int, str, ipaddress.IPv4Address]]] = {name: [] for name in topo.nodes}
    addr: Dict[Member, ipaddress.IPv4Address] = {}
    for link in topo.links:
        for end in (link.a, link.b):
            if end.node in topo.nodes and end.address is not None:
                addr[(end.node, end.interface)] = end.address.ip
    for index, seg in enumerate(topo.segments):
        for node, intf in seg.members:
            attached[node].append((index, intf, addr[(node, intf)]))
    routers = {name for name, segs in attached.items() if len(segs) > 1}

    routes: Dict[str, List[Route]] = {}
    for source in topo.nodes:
        direct = {index for index, _, _ in attached[source]}
        first_hop: Dict[int, Optional[Tuple[ipaddress.IPv4Address, str]]] = {i: None for i in direct}
        own_intf = {index: intf for index, intf, _ in attached[source]}
        queue = deque(direct)
        seen_routers: Set[str] = {source}
        while queue:
            seg_index = queue.popleft()
            for node, intf in topo.segments[seg_index].members:
                if node in seen_routers or node not in routers:
                    continue
                seen_routers.add(node)
                hop = first_hop[seg_index] or (addr[(node, intf)], own_intf[seg_index])
                for other, _, _ in attached[node]:
                    if other not in first_hop:
                        first_hop[other] = hop
                        queue.append(other)
        routes[source] = [Route(destination=topo.segments[i].subnet, via=hop[0], interface=hop[1])
                          for i, hop in sorted(first_hop.items()) if hop is not None]
    return routes
