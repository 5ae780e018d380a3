"""The configuration file each agent reads: who it is, who the others are, where to log.

Written by the testbed into the node's directory before the node starts; the directory is the
container's /testbed (docker runtime) or used in place (process runtime).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Dict, List

from agents.roles import NO_AGENT

from .model import Topology

#: where a container sees its node directory
NODE_DIR_IN_CONTAINER = "/testbed"
CONFIG_NAME = "config.json"
LOG_NAME = "events.jsonl"
AGENT_PORT = 7777
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def node_ids(topo: Topology) -> Dict[str, int]:
    """1-based positions in the topology's node order: the ids of the wire header."""
    return {name: index for index, name in enumerate(topo.nodes, start=1)}


def node_seed(seed: int, node: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{node}".encode()).digest()[:8], "big")


def has_agent(topo: Topology, node: str) -> bool:
    n = topo.nodes[node]
    return n.role not in NO_AGENT and n.command is None


def write_configs(topo: Topology, node_dirs: Dict[str, str], seed: int, wait_for_start: bool = False) -> None:
    ids = node_ids(topo)
    peers = {}
    for name in topo.nodes:
        address = topo.address_of(name)
        node = topo.nodes[name]
        # every agent knows every node's role and parameters: a protocol finds its peers by role
        # (an AbC server its components, a component the cluster's queue) without a directory
        peers[name] = {"id": ids[name], "address": str(address.ip) if address else None, "role": node.role,
                       "params": node.params}
    for name, node in topo.nodes.items():
        os.makedirs(node_dirs[name], exist_ok=True)
        if not has_agent(topo, name):
            continue
        inside = NODE_DIR_IN_CONTAINER if node.runtime == "docker" else node_dirs[name]
        neighbors = sorted({m for seg in topo.segments if any(n == name for n, _ in seg.members)
                            for m, _ in seg.members if m != name})
        config = {
            "node": name, "node_id": ids[name], "role": node.role, "params": node.params,
            "seed": node_seed(seed, name), "run_seed": seed, "nodes": peers, "neighbors": neighbors,
            "broadcast": [str(e.address.network.broadcast_address) for e in topo.interfaces(name) if e.address],
            "log": os.path.join(inside, LOG_NAME), "port": AGENT_PORT, "wait_for_start": wait_for_start,
        }
        with open(os.path.join(node_dirs[name], CONFIG_NAME), "w") as handle:
            json.dump(config, handle, indent=1)


def agent_argv(runtime: str, node_dir: str, start_now: bool = False) -> List[str]:
    extra = ["--start-now"] if start_now else []
    if runtime == "docker":
        return ["python3", "-m", "agents", "--config", f"{NODE_DIR_IN_CONTAINER}/{CONFIG_NAME}"] + extra
    return [sys.executable, "-m", "agents", "--config", os.path.join(node_dir, CONFIG_NAME)] + extra
