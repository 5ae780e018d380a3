"""The configuration file every node gets: who it is, who the others are, where to log.

Written by the testbed into each node's directory before the node starts; the directory is the
container's /testbed (docker runtime) or used in place (process runtime). The testbed's agent
reads it; any other program a node runs finds it, and its event log, through the environment
(`node_env`), so that a protocol implementation that is not the testbed's agent can take part
in a run and be judged by the same checks (docs/EVENTS.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Dict, Optional

from agents.roles import NO_AGENT

from .model import Node, Topology

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


def has_agent(node: Node) -> bool:
    """Whether the node runs the testbed's agent (a role with an agent, and no command of its own)."""
    return node.role not in NO_AGENT and node.command is None


def node_env(node: str, node_id: int, inside: str, time_dilation: float = 1.0,
             clock_origin_ns: Optional[int] = None) -> Dict[str, str]:
    """The environment every node's software gets: its name and id, where its directory,
    configuration and event log are as it sees them, and the run's time dilation with the origin
    of its virtual clock (docs/RUNDIR.md: virtual = origin + (wall - origin) / dilation)."""
    env = {"TESTBED_NODE": node, "TESTBED_NODE_ID": str(node_id), "TESTBED_DIR": inside,
           "TESTBED_CONFIG": os.path.join(inside, CONFIG_NAME), "TESTBED_LOG": os.path.join(inside, LOG_NAME),
           "TESTBED_TIME_DILATION": f"{time_dilation:g}"}
    if clock_origin_ns is not None:
        env["TESTBED_CLOCK_ORIGIN_NS"] = str(clock_origin_ns)
    return env


def write_configs(topo: Topology, node_dirs: Dict[str, str], seed: int, inside: Callable[[Node], str],
                  wait_for_start: bool = False, time_dilation: float = 1.0,
                  clock_origin_ns: Optional[int] = None) -> None:
    """One config.json per node; `inside(node)` is where the node sees its directory."""
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
        neighbors = sorted({m for seg in topo.segments if any(n == name for n, _ in seg.members)
                            for m, _ in seg.members if m != name})
        config = {
            "node": name, "node_id": ids[name], "role": node.role, "params": node.params,
            "seed": node_seed(seed, name), "run_seed": seed, "nodes": peers, "neighbors": neighbors,
            "broadcast": [str(e.address.network.broadcast_address) for e in topo.interfaces(name) if e.address],
            "log": os.path.join(inside(node), LOG_NAME), "port": AGENT_PORT, "wait_for_start": wait_for_start,
            "time_dilation": time_dilation, "clock_origin_ns": clock_origin_ns,
        }
        with open(os.path.join(node_dirs[name], CONFIG_NAME), "w") as handle:
            json.dump(config, handle, indent=1)
