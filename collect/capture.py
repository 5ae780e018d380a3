"""Packet capture of every node interface into runs/<id>/pcap/<node>.pcap.

Per-packet work in Python cannot keep up (scapy's sniff dissects about 5,000 packets/s per
core and drops bursts, scapy issues 2608, 1406, 3288), so each interface is captured by a native
tcpdump started through scapy's tcpdump-backed capture helper (`scapy.utils.tcpdump`), from
inside the node's network namespace, with a large kernel buffer and a snap length that keeps
the testbed header. It writes standard pcap (Ethernet link type) packet by packet, so a file is
complete up to the moment its capture ends, even when the node is killed. Each capture's
statistics (packets captured, and dropped by the kernel before the capture read them) go to a
file beside the pcap and into the manifest. Nodes with several interfaces get one file per
interface during the run, merged into <node>.pcap in time order at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from scapy.utils import tcpdump as scapy_tcpdump

STATS_RE = {
    "captured": re.compile(r"(\d+) packets? captured"),
    "received_by_filter": re.compile(r"(\d+) packets? received by filter"),
    "kernel_drops": re.compile(r"(\d+) packets? dropped by kernel"),
}


@dataclass
class InterfaceCapture:
    node: str
    interface: str
    pcap: str
    stats_file: str
    process: Optional[subprocess.Popen] = None
    stats: Dict[str, int] = field(default_factory=dict)


class Captures:
    """The captures of one run: start them all, stop them all, merge and report."""

    def __init__(self, pcap_dir: str, snaplen: int = 256, buffer_mib: int = 8) -> None:
        self.pcap_dir = pcap_dir
        self.snaplen = snaplen
        self.buffer_mib = buffer_mib
        self.captures: List[InterfaceCapture] = []
        os.makedirs(pcap_dir, exist_ok=True)

    def start(self, node: str, netns_pid: int, interfaces: List[str]) -> None:
        several = len(interfaces) > 1
        for intf in interfaces:
            base = f"{node}.{intf}" if several else node
            cap = InterfaceCapture(node, intf, os.path.join(self.pcap_dir, base + ".pcap"),
                                   os.path.join(self.pcap_dir, base + ".capture.log"))
            # tcpdump's own statistics go to its stderr, which the shell sends to the stats file.
            inner = (f"exec tcpdump -i {intf} -n -s {self.snaplen} -B {self.buffer_mib * 1024} -U "
                     f"-w '{cap.pcap}' 2>'{cap.stats_file}'")
            cap.process = scapy_tcpdump(prog="nsenter", args=[f"--net=/proc/{netns_pid}/ns/net", "--", "sh", "-c",
                                                              inner], getproc=True, wait=False, quiet=True)
            self.captures.append(cap)

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Return once every capture listens (tcpdump says so before the first packet)."""
        deadline = time.monotonic() + timeout_s
        pending = list(self.captures)
        while pending and time.monotonic() < deadline:
            still = []
            for cap in pending:
                if cap.process.poll() is not None:
                    raise RuntimeError(f"capture of {cap.node}:{cap.interface} exited: {_read(cap.stats_file)}")
                if "listening on" not in _read(cap.stats_file):
                    still.append(cap)
            pending = still
            if pending:
                time.sleep(0.02)
        if pending:
            names = ", ".join(f"{c.node}:{c.interface}" for c in pending[:5])
            raise RuntimeError(f"captures did not start within {timeout_s:g}s: {names}")

    def stop(self) -> None:
        """Stop every capture (SIGTERM: tcpdump flushes its file and writes its statistics)."""
        for cap in self.captures:
            if cap.process and cap.process.poll() is None:
                cap.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for cap in self.captures:
            if cap.process is None:
                continue
            try:
                cap.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                cap.process.kill()
                cap.process.wait()
            cap.stats = parse_stats(_read(cap.stats_file))

    def merge(self) -> None:
        """One <node>.pcap per node: per-interface files merged in time order (mergecap)."""
        merge_interfaces(self.pcap_dir)

    def statistics(self) -> Dict[str, Dict[str, object]]:
        """Per node: packets captured and dropped by the kernel, summed over its interfaces."""
        return summarise([(cap.node, cap.interface, cap.stats) for cap in self.captures])


def node_of_file(name: str) -> str:
    """The node of a capture file name: <node>.pcap, or <node>.<interface>.pcap while a node with
    several interfaces is captured (node names have no dot)."""
    return name.split(".", 1)[0]


def merge_interfaces(pcap_dir: str) -> List[str]:
    """Merge every node's per-interface captures (<node>.<interface>.pcap) into <node>.pcap, in
    time order, and remove them; the nodes merged. A run does this when it ends; `testbed clean`
    does it for a run whose process was killed."""
    by_node: Dict[str, List[str]] = {}
    for name in sorted(os.listdir(pcap_dir)) if os.path.isdir(pcap_dir) else []:
        if name.endswith(".pcap") and name.count(".") >= 2:
            by_node.setdefault(node_of_file(name), []).append(os.path.join(pcap_dir, name))
    for node, files in by_node.items():
        target = os.path.join(pcap_dir, f"{node}.pcap")
        if os.path.exists(target):  # a merge that was cut short: keep what it wrote as one more input
            os.replace(target, target + ".part")
            files = files + [target + ".part"]
        res = subprocess.run(["mergecap", "-F", "pcap", "-w", target] + files, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"merging the captures of {node} failed: {res.stderr.strip()}")
        for path in files:
            os.remove(path)
    return sorted(by_node)


def statistics_of(pcap_dir: str, interfaces: Dict[str, List[str]]) -> Dict[str, Dict[str, object]]:
    """The capture statistics of a run's pcap directory, from the tcpdump reports beside the
    captures (<node>[.<interface>].capture.log), for a run whose process was killed; `interfaces`
    names each node's interfaces (a node with one is captured into <node>.pcap)."""
    found = []
    for name in sorted(os.listdir(pcap_dir)) if os.path.isdir(pcap_dir) else []:
        if name.endswith(".capture.log"):
            node, _, interface = name[:-len(".capture.log")].partition(".")
            if not interface:
                interface = (interfaces.get(node) or [None])[0]
            found.append((node, interface, parse_stats(_read(os.path.join(pcap_dir, name)))))
    return summarise(found)


def summarise(captures) -> Dict[str, Dict[str, object]]:
    """(node, interface, tcpdump statistics) per capture → per node: packets captured and dropped
    by the kernel, summed over its interfaces."""
    out: Dict[str, Dict[str, object]] = {}
    for node, interface, stats in captures:
        entry = out.setdefault(node, {"captured": 0, "kernel_drops": 0, "interfaces": []})
        entry["captured"] += stats.get("captured", 0)
        entry["kernel_drops"] += stats.get("kernel_drops", 0)
        if interface is not None:
            entry["interfaces"].append(interface)
        if "captured" not in stats:
            entry["incomplete_statistics"] = True
    return out


def parse_stats(text: str) -> Dict[str, int]:
    stats = {}
    for key, pattern in STATS_RE.items():
        match = pattern.search(text)
        if match:
            stats[key] = int(match.group(1))
    return stats


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def available() -> Optional[str]:
    """None when captures can run here, else what is missing."""
    missing = [tool for tool in ("tcpdump", "nsenter", "mergecap") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)} (apt-get install tcpdump util-linux wireshark-common)" if missing else None
