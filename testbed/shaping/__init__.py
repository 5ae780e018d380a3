"""Link shaping behind one interface, with a backend chosen from what the kernel can do.

- `netem`: tc's netem emulates all seven impairments (bandwidth with its `rate`).
- `kernel` (no netem): nftables random drop for loss, nftables `dup` for duplication, tc tbf
  for bandwidth. Delay, jitter, corruption and reordering have no kernel path without netem:
  a topology that asks for them is refused, naming the missing feature, unless it accepts them
  as not emulated.

A direction a→b of a link is shaped where netem would shape it, on a's interface egress, except
for loss in the kernel backend: it is dropped at b's interface ingress (netdev hook), because a
drop on a's output path returns EPERM to the sending application, while real loss is silent
(and the netdev egress hook does not drop on veth in this kernel). Ingress drop also catches
ARP, as netem does. Each apply rebuilds the direction's rules from the given values and
replaces them in one transaction, so a value can return to zero and changes do not stack up.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional

from ..capabilities import Capabilities
from ..errors import CapabilityError, TestbedError
from ..model import LinkProps, Topology

#: packets duplicated by the nftables backend carry this mark so that they are not duplicated again
DUP_MARK = "0x7e57"


@dataclass(frozen=True)
class Port:
    """An interface egress to shape: its device name and the namespace it lives in."""

    device: str
    netns_pid: Optional[int]  # None: the machine's own namespace (a switch port)
    table: str  # nftables table name this port's rules live in

    @property
    def on_switch(self) -> bool:
        return self.netns_pid is None

    def run(self, args: List[str], stdin: Optional[str] = None, check: bool = True) -> subprocess.CompletedProcess:
        prefix = [] if self.netns_pid is None else ["nsenter", "-t", str(self.netns_pid), "-n", "--"]
        res = subprocess.run(prefix + args, input=stdin, capture_output=True, text=True)
        if check and res.returncode != 0:
            raise TestbedError(f"shaping {self.device}: '{' '.join(args)}' failed: {res.stderr.strip()}")
        return res


def _pct(value: float) -> str:
    return f"{value * 100:.6g}%"


def _chain(hook: str, device: str) -> str:
    return f"{hook[0]}_" + re.sub(r"[^A-Za-z0-9_]", "_", device)


class Shaper:
    """Applies LinkProps to ports; `emulates` says which impairments it can give."""

    name = "base"
    emulates: FrozenSet[str] = frozenset()

    def apply(self, sender: Port, receiver: Port, props: LinkProps) -> None:
        """Shape the direction from `sender`'s interface to `receiver`'s with `props`."""
        raise NotImplementedError


class NetemShaper(Shaper):
    name = "netem"
    emulates = frozenset(("delay", "jitter", "loss", "bandwidth", "corruption", "duplication", "reordering"))

    def apply(self, sender: Port, receiver: Port, props: LinkProps) -> None:
        port = sender
        if not props.active():
            port.run(["tc", "qdisc", "del", "dev", port.device, "root"], check=False)
            return
        args = ["tc", "qdisc", "replace", "dev", port.device, "root", "netem", "limit", "100000"]
        if props.delay_ms:
            args += ["delay", f"{props.delay_ms:g}ms"]
            if props.jitter_ms:
                args += [f"{props.jitter_ms:g}ms"]
        if props.loss:
            args += ["loss", _pct(props.loss)]
        if props.duplication:
            args += ["duplicate", _pct(props.duplication)]
        if props.corruption:
            args += ["corrupt", _pct(props.corruption)]
        if props.reordering:
            args += ["reorder", _pct(props.reordering)]
        if props.bandwidth_mbit is not None:
            args += ["rate", f"{props.bandwidth_mbit * 1000:g}kbit"]
        port.run(args)


class KernelShaper(Shaper):
    """nftables and tbf, for kernels without netem."""

    name = "kernel"

    def __init__(self, capabilities: Capabilities) -> None:
        emulates = set()
        if capabilities.has("nftables"):
            emulates.add("loss")
        if capabilities.has("nftables dup"):
            emulates.add("duplication")
        if capabilities.has("tc tbf"):
            emulates.add("bandwidth")
        self.emulates = frozenset(emulates)

    def apply(self, sender: Port, receiver: Port, props: LinkProps) -> None:
        self._netdev_chain(receiver, "ingress", props.loss and [
            f"numgen random mod 1000000 < {int(round(props.loss * 1_000_000))} counter drop"])
        threshold = int(round(props.duplication * 1_000_000))
        self._netdev_chain(sender, "egress", threshold and [
            f"meta mark {DUP_MARK} accept",
            f"numgen random mod 1000000 < {threshold} meta mark set {DUP_MARK} dup to \"{sender.device}\""])
        self._apply_bandwidth(sender, props.bandwidth_mbit)

    def _netdev_chain(self, port: Port, hook: str, rules) -> None:
        """Replace the rules of the port's netdev base chain for `hook` (none: no chain at all)."""
        chain = _chain(hook, port.device)
        if not rules:
            if self._has_chain(port, chain):
                port.run(["nft", "delete", "chain", "netdev", port.table, chain])
            return
        lines = [
            f"table netdev {port.table} {{",
            f"  chain {chain} {{ type filter hook {hook} device \"{port.device}\" priority 0; policy accept; }}",
            "}",
            f"flush chain netdev {port.table} {chain}",
        ] + [f"add rule netdev {port.table} {chain} {rule}" for rule in rules]
        port.run(["nft", "-f", "-"], stdin="\n".join(lines) + "\n")

    @staticmethod
    def _has_chain(port: Port, chain: str) -> bool:
        return port.run(["nft", "list", "chain", "netdev", port.table, chain], check=False).returncode == 0

    @staticmethod
    def _apply_bandwidth(port: Port, mbit: Optional[float]) -> None:
        if mbit is None:
            port.run(["tc", "qdisc", "del", "dev", port.device, "root"], check=False)
            return
        rate_bytes = mbit * 1e6 / 8
        burst = max(int(rate_bytes / 100), 15140)  # 10 ms of traffic, at least ten full frames
        port.run(["tc", "qdisc", "replace", "dev", port.device, "root", "tbf", "rate", f"{mbit * 1000:g}kbit",
                  "burst", str(burst), "latency", "100ms"])


def choose(capabilities: Capabilities) -> Shaper:
    return NetemShaper() if capabilities.has("netem") else KernelShaper(capabilities)


def check_topology(topo: Topology, shaper: Shaper, capabilities: Capabilities,
                   extra_accepted: Iterable[str] = ()) -> FrozenSet[str]:
    """Refuse impairments this machine cannot emulate unless accepted; return those accepted."""
    accepted = set(topo.accept_unemulated) | set(extra_accepted)
    missing: Dict[str, List[str]] = {}
    for link in topo.links:
        for props in (link.forward, link.backward):
            for impairment in props.active() - shaper.emulates:
                missing.setdefault(impairment, [])
                if link.name not in missing[impairment]:
                    missing[impairment].append(link.name)
    refused = {imp: links for imp, links in missing.items() if imp not in accepted}
    if refused:
        lines = []
        for impairment, links in sorted(refused.items()):
            shown = ", ".join(links[:3]) + (f" and {len(links) - 3} more" if len(links) > 3 else "")
            lines.append(f"  {impairment} on {shown}: needs {capabilities.missing_feature(impairment)}")
        raise CapabilityError(
            f"{topo.source}: this machine cannot emulate:\n" + "\n".join(lines) +
            "\nRun on a kernel with sch_netem (e.g. the Vagrant VM), or accept them as not emulated with "
            f"'accept_unemulated: [{', '.join(sorted(refused))}]' in the topology or "
            f"--accept-unemulated {','.join(sorted(refused))} on the command line.")
    return frozenset(missing)


def emulated_part(props: LinkProps, shaper: Shaper) -> LinkProps:
    """The props with what the shaper cannot emulate switched off (only used once accepted)."""
    off: Dict[str, object] = {}
    for impairment in props.active() - shaper.emulates:
        field_name = {"delay": "delay_ms", "jitter": "jitter_ms", "bandwidth": "bandwidth_mbit"}.get(impairment, impairment)
        off[field_name] = None if impairment == "bandwidth" else 0.0
    return props.merged(**off) if off else props

