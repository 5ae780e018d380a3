"""The nemesis: timeline actions carried out on a running lab.

Link faults are kept as state and the shaping of a link direction is rebuilt from the merged set
of active faults each time one changes (set_link overrides on top of the topology's values, and
a link that is down drops everything), so faults stack and every value can return to where it
was. Partitions drop, in the bridge port that transmits to each node, what comes from nodes of
other groups (a node forwarding between subnets is partitioned like any other); the
testbed's own control traffic does not cross node interfaces, so it is never affected.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any, Dict, List, Optional, Set, Tuple

from .errors import TestbedError
from .model import LinkProps
from .network import Lab
from .scenario import Action
from .shaping import nft_in_root
from .topology import apply_impairments


class Nemesis:
    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.overrides: Dict[Tuple[int, int], Dict[str, Any]] = {}  # (link, side) → impairments
        self.down: Set[Tuple[int, int]] = set()
        self.paused: Set[str] = set()
        self.killed: Set[str] = set()
        self.partitioned = False

    # -- entry point ----------------------------------------------------------------------------

    def apply(self, action: Action) -> Optional[Dict[str, Any]]:
        """Carry out one action; returns details worth recording (or None)."""
        handler = getattr(self, f"_{action.action}")
        return handler(action)

    def heal_all(self) -> List[str]:
        """Undo every active fault but kills and stops: links back to the topology's values,
        partitions healed, paused nodes resumed."""
        done = []
        if self.partitioned:
            self._heal(None)
            done.append("partition healed")
        links = {index for index, _ in list(self.overrides) + list(self.down)}
        self.overrides.clear()
        self.down.clear()
        for index in sorted(links):
            self._reshape(index)
        if links:
            done.append(f"{len(links)} link(s) restored")
        for node in sorted(self.paused):
            self._resume_node(node)
            done.append(f"{node} resumed")
        return done

    # -- nodes ----------------------------------------------------------------------------------

    def _kill(self, action: Action) -> None:
        node = action.node
        topo_node = self.lab.topo.nodes[node]
        started = self.lab.started[node]
        if topo_node.runtime == "docker":
            runtime = self.lab.runtimes["docker"]
            try:
                runtime.docker.api.kill(started.container_id, signal="SIGKILL")
            except Exception as exc:
                raise TestbedError(f"kill {node}: {exc}") from None
        else:
            for pid in (self.lab.agent_pid(node), started.process_pid):
                if pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        # The namespace outlives the processes (the testbed's shell and capture are in it); take
        # its interfaces down so that a dead node neither answers nor sends anything.
        interfaces = [e.interface for e in self.lab.topo.interfaces(node)]
        if interfaces:
            self.lab.exec(node, "; ".join(f"ip link set dev {i} down" for i in interfaces))
        self.killed.add(node)
        self.paused.discard(node)

    def _stop(self, action: Action) -> Dict[str, Any]:
        exited = self.lab.stop_agents([action.node])
        return {"exited_in_time": exited.get(action.node, False)}

    def _start(self, action: Action) -> None:
        if action.node in self.killed:
            raise TestbedError(f"start {action.node}: the node was killed")
        if self.lab.agent_pid(action.node):
            return
        self.lab.start_agent(action.node)

    def _pause(self, action: Action) -> None:
        node = action.node
        if node in self.paused or node in self.killed:
            return
        if self.lab.topo.nodes[node].runtime == "docker":
            self.lab.runtimes["docker"].docker.api.pause(self.lab.started[node].container_id)
        else:
            self._signal_process(node, signal.SIGSTOP)
        self.paused.add(node)

    def _resume(self, action: Action) -> None:
        if action.node in self.paused:
            self._resume_node(action.node)

    def _resume_node(self, node: str) -> None:
        if self.lab.topo.nodes[node].runtime == "docker":
            self.lab.runtimes["docker"].docker.api.unpause(self.lab.started[node].container_id)
        else:
            self._signal_process(node, signal.SIGCONT)
        self.paused.discard(node)

    def _signal_process(self, node: str, signum: int) -> None:
        for pid in {self.lab.agent_pid(node), self.lab.started[node].process_pid} - {None}:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def _exec(self, action: Action) -> Dict[str, Any]:
        node = self.lab.topo.nodes[action.node]
        state = self.lab.state()["nodes"][action.node]
        argv = self.lab.runtimes[node.runtime].exec_args(state, ["sh", "-c", action.command], interactive=False)
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            return {"exit_code": None, "output": "timed out after 30 s"}
        return {"exit_code": res.returncode, "output": (res.stdout + res.stderr)[-2000:]}

    # -- links ----------------------------------------------------------------------------------

    def _sides(self, action: Action) -> Tuple[int, List[int]]:
        a, b = action.link
        index = self.lab.link_index(a, b)
        link = self.lab.topo.links[index]
        forward = 0 if link.a.node == a else 1  # side whose egress carries a → b
        if action.direction == "a_to_b":
            return index, [forward]
        if action.direction == "b_to_a":
            return index, [1 - forward]
        return index, [0, 1]

    def _link_down(self, action: Action) -> None:
        index, sides = self._sides(action)
        self.down.update((index, side) for side in sides)
        self._reshape(index)

    def _link_up(self, action: Action) -> None:
        index, sides = self._sides(action)
        self.down.difference_update((index, side) for side in sides)
        self._reshape(index)

    def _set_link(self, action: Action) -> None:
        index, sides = self._sides(action)
        for side in sides:
            if action.impairments.get("restore"):
                self.overrides.pop((index, side), None)
            else:
                self.overrides.setdefault((index, side), {}).update(action.impairments)
        self._reshape(index)

    def effective(self, index: int, side: int) -> LinkProps:
        link = self.lab.topo.links[index]
        base = link.forward if side == 0 else link.backward
        props = apply_impairments(base, self.overrides.get((index, side), {}))
        if (index, side) in self.down:
            props = props.merged(loss=1.0)
        return props

    def _reshape(self, index: int) -> None:
        self.lab.set_link(index, self.effective(index, 0), self.effective(index, 1))

    # -- partitions -----------------------------------------------------------------------------

    def _partition(self, action: Action) -> Dict[str, Any]:
        """In the lab's bridge table, on the way to each node: drop IPv4 and ARP from nodes of
        other groups. Dropped there, nothing crosses the partition onto a receiver's wire."""
        addresses: Dict[str, List[str]] = {
            name: [str(e.address.ip) for e in self.lab.topo.interfaces(name) if e.address] for name in self.lab.topo.nodes
        }
        table = self.lab.names.nft_table
        lines = [f"flush chain bridge {table} partition"]
        for group in action.groups:
            others = [a for g in action.groups if g is not group for n in g for a in addresses[n]]
            if not others:
                continue
            elements = ", ".join(others)
            for node in group:
                for end in self.lab.topo.interfaces(node):
                    port = self.lab.receiver_ports.get((node, end.interface))
                    if port is None:
                        continue
                    lines.append(f'add rule bridge {table} partition oifname "{port}" ip saddr {{ {elements} }} drop')
                    lines.append(f'add rule bridge {table} partition oifname "{port}" arp saddr ip {{ {elements} }} drop')
        nft_in_root("\n".join(lines) + "\n")
        self.partitioned = True
        return {"groups": action.groups}

    def _heal(self, action: Optional[Action]) -> None:
        nft_in_root(f"flush chain bridge {self.lab.names.nft_table} partition\n")
        self.partitioned = False
