"""Link shaping behind one interface, with a backend chosen from what the kernel can do.

Every cable of a lab passes through a bridge port in the machine's namespace (a node-to-node
cable through an internal two-port bridge, see network.Lab), and each direction of a cable is a
`Direction`: its sending end, and how the lab's bridge table matches its frames.

- `netem`: tc's netem on the sending end emulates all seven impairments (bandwidth with its
  `rate`).
- `kernel` (no netem): loss is a random drop in the bridge's forward hook, duplication an
  nftables `dup` on the sending end's egress, bandwidth a tbf on the sending end. Delay, jitter,
  corruption and reordering have no kernel path without netem: a topology that asks for them is
  refused, naming the missing feature, unless it accepts them as not emulated.

Loss happens where a lossy wire loses a frame: after the sender's capture and before the
receiver's, and silently (a drop on the sender's output path would return EPERM to the sending
application; this kernel ignores verdicts, marks and priorities set in the netdev egress hook).
Each apply rebuilds the direction's rules from the given values and replaces them in one
transaction, so a value can return to zero and changes do not stack up.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional

from ..capabilities import Capabilities
from ..errors import CapabilityError, TestbedError
from ..model import LinkProps, Topology
from ..names import netdev_chain

#: packets duplicated by the nftables backend carry this mark so that they are not duplicated again
DUP_MARK = "0x7e57"


@dataclass(frozen=True)
class Port:
    """An interface egress to shape: its device name and the namespace it lives in (`run` runs a
    command there, for shaping and for any other setting of the interface)."""

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
            where = "on the machine" if self.netns_pid is None else f"in the namespace of pid {self.netns_pid}"
            raise TestbedError(f"{self.device} ({where}): '{' '.join(args)}' failed: {res.stderr.strip()}")
        return res


@dataclass(frozen=True)
class Direction:
    """One direction of a cable."""

    egress: Port  # the sending end: netem, tbf and duplication act on its egress
    match: str    # how the lab's bridge table matches this direction's frames, e.g. iifname "tbab12s1p3"
    chain: str    # the bridge-table chain that holds this direction's loss rule


def bridge_table_script(table: str) -> str:
    """The lab's bridge table: partitions first, then the cables' loss."""
    return (f"table bridge {table} {{\n"
            "  chain partition { }\n"
            "  chain cables { type filter hook forward priority 0; policy accept; jump partition; }\n"
            "}\n")


def _chance(per_million: int) -> str:
    """An nftables expression true for `per_million` packets in a million ('' for all of them)."""
    return "" if per_million >= 1_000_000 else f"numgen random mod 1000000 < {per_million} "


def _pct(value: float) -> str:
    return f"{value * 100:.6g}%"


class Shaper:
    """Applies LinkProps to cable directions; `emulates` says which impairments it can give."""

    name = "base"
    emulates: FrozenSet[str] = frozenset()

    def __init__(self) -> None:
        self.table = ""

    def setup(self, table: str) -> None:
        """Create the lab's bridge table (the machine's namespace); once per lab."""
        self.table = table
        nft_in_root(bridge_table_script(table))

    def apply(self, direction: Direction, props: LinkProps, dilation: float = 1.0) -> None:
        """Replace the shaping of one cable direction with `props`, in a world `dilation` times
        slower than the wall clock (rates divided, delays multiplied: LinkProps.dilated)."""
        raise NotImplementedError


class NetemShaper(Shaper):
    name = "netem"
    emulates = frozenset(("delay", "jitter", "loss", "bandwidth", "corruption", "duplication", "reordering"))

    def apply(self, direction: Direction, props: LinkProps, dilation: float = 1.0) -> None:
        port = direction.egress
        props = props.dilated(dilation)
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
        super().__init__()
        emulates = set()
        if capabilities.has("nftables"):
            emulates.add("loss")
        if capabilities.has("nftables dup"):
            emulates.add("duplication")
        if capabilities.has("tc tbf"):
            emulates.add("bandwidth")
        self.emulates = frozenset(emulates)
        self._chains: set = set()

    def apply(self, direction: Direction, props: LinkProps, dilation: float = 1.0) -> None:
        self._apply_loss(direction, props.loss)
        threshold = int(round(props.duplication * 1_000_000))
        port = direction.egress
        self._netdev_chain(port, "egress", threshold and [
            f"meta mark {DUP_MARK} accept",
            f"{_chance(threshold)}meta mark set {DUP_MARK} dup to \"{port.device}\""])
        self._apply_bandwidth(port, props.bandwidth_mbit, dilation)

    def _apply_loss(self, direction: Direction, loss: float) -> None:
        threshold = int(round(loss * 1_000_000))
        if not threshold and direction.chain not in self._chains:
            return
        lines = []
        if direction.chain not in self._chains:
            lines += [f"add chain bridge {self.table} {direction.chain}",
                      f"add rule bridge {self.table} cables {direction.match} jump {direction.chain}"]
        lines.append(f"flush chain bridge {self.table} {direction.chain}")
        if threshold:
            lines.append(f"add rule bridge {self.table} {direction.chain} {_chance(threshold)}counter drop")
        nft_in_root("\n".join(lines) + "\n")
        self._chains.add(direction.chain)

    def _netdev_chain(self, port: Port, hook: str, rules) -> None:
        """Replace the rules of the port's netdev base chain for `hook` (none: no chain at all)."""
        chain = netdev_chain(hook, port.device)
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
    def _apply_bandwidth(port: Port, mbit: Optional[float], dilation: float = 1.0) -> None:
        if mbit is None:
            port.run(["tc", "qdisc", "del", "dev", port.device, "root"], check=False)
            return
        rate_bytes = mbit * 1e6 / 8
        burst = max(int(rate_bytes / 100), 15140)  # 10 ms of traffic, at least ten full frames
        # in a world k times slower: the rate divided by k, the queue (100 ms at the rate) k times
        # longer, and the same bytes of burst and of queue as the undilated link
        port.run(["tc", "qdisc", "replace", "dev", port.device, "root", "tbf", "rate",
                  f"{mbit * 1000 / dilation:g}kbit", "burst", str(burst), "latency", f"{100 * dilation:g}ms"])


def queue_counters(port: Port) -> Dict[str, int]:
    """What the root qdisc on a port's egress (a shaped link's tbf or netem, a radio member's
    airtime queue) passed and dropped since it was set: `frames`, `bytes`, `dropped` (the queue was
    full) and `overlimits` (a frame had to wait for tokens); {} when there is none or tc failed."""
    res = port.run(["tc", "-s", "-j", "qdisc", "show", "dev", port.device], check=False)
    if res.returncode != 0:
        return {}
    try:
        qdiscs = json.loads(res.stdout or "[]")
    except ValueError:
        return {}
    root = next((q for q in qdiscs if q.get("root")), qdiscs[0] if qdiscs else {})
    if not root or root.get("kind") in ("noqueue", "noop"):
        return {}
    return {"frames": int(root.get("packets", 0)), "bytes": int(root.get("bytes", 0)),
            "dropped": int(root.get("drops", 0)), "overlimits": int(root.get("overlimits", 0))}


def nft_in_root(script: str) -> None:
    """Apply an nftables script in the machine's namespace (the lab's bridge table lives there)."""
    res = subprocess.run(["nft", "-f", "-"], input=script, capture_output=True, text=True)
    if res.returncode != 0:
        raise TestbedError(f"nft failed: {res.stderr.strip()}")


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

