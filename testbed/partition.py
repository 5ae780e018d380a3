"""Partitions: in the lab's bridge table, on the way to each node, drop what comes from nodes of
other groups.

A partition drops IPv4 and ARP by source address in the bridge port that transmits to each node
interface (whatever medium the port belongs to), so nothing crosses it onto a receiver's wire, a
node forwarding between subnets is partitioned like any other, and the testbed's own control
traffic, which never crosses node interfaces, is never affected.
"""

from __future__ import annotations

from typing import Dict, List, Tuple


def partition_script(table: str, groups: List[List[str]], addresses: Dict[str, List[str]],
                     ports: Dict[Tuple[str, str], str], interfaces: Dict[str, List[str]]) -> str:
    """The nftables script that replaces the partition chain's rules: `addresses` per node,
    `interfaces` per node, `ports` per (node, interface) (the bridge port towards it)."""
    lines = [f"flush chain bridge {table} partition"]
    for group in groups:
        others = [a for g in groups if g is not group for n in g for a in addresses[n]]
        if not others:
            continue
        elements = ", ".join(others)
        for node in group:
            for interface in interfaces[node]:
                port = ports.get((node, interface))
                if port is None:
                    continue
                lines.append(f'add rule bridge {table} partition oifname "{port}" ip saddr {{ {elements} }} drop')
                lines.append(f'add rule bridge {table} partition oifname "{port}" arp saddr ip {{ {elements} }} drop')
    return "\n".join(lines) + "\n"


def heal_script(table: str) -> str:
    return f"flush chain bridge {table} partition\n"
