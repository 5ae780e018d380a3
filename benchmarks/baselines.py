#!/usr/bin/env python3
"""Baselines for the pcap reader: how fast other readers get the testbed messages out of a run's pcaps.

Each function reads a list of pcap files the way that library is normally used, takes every UDP
datagram to or from port 7777, extracts the wire header's origin and sequence (agents/wire.py,
docs/WIRE.md) and returns the wall-clock rate and what it decoded, so that the readers can be
shown to have done the same work:

    {"reader", "packets" (records read), "seconds" (wall), "pps", "decoded" (port-7777 datagrams
     with a testbed header), "counts" {file name: decoded}, "digest" {file name: sum of
     (origin << 32 | sequence) mod 2**64}, "complete" (all packets of all files read), ...}

scapy_pps(files, limit)  scapy.utils.RawPcapReader and full dissection with Ether(), on the first
                         `limit` packets; "pps" is that rate, "extrapolated_seconds" the time the
                         whole input would take at it
dpkt_pps(files)          dpkt.pcap.Reader and dpkt.ethernet.Ethernet, the header fields with struct
tshark_pps(files)        tshark -T fields (time, addresses, ports, udp.payload) with the display
                         filter udp.port==7777, at most `processes` (2) tshark processes at once;
                         "startup_seconds" is tshark's fixed cost per file (an empty capture)

Usage: benchmarks/baselines.py [--packets 1000000] [--run DIR] [--scapy-limit 100000] [--json OUT]
Without --run, a synthetic run (tests/synthetic.py) of --packets packets is generated in a
temporary directory and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from agents import wire  # noqa: E402

PORT = 7777
MAGIC = wire.MAGIC
# the header's fields from the magic to the sequence (the first 16 bytes), from wire.HEADER; the
# digest takes the origin and sequence out of them
_NAMES = [f.name for f in wire.HEADER]
ORIGIN, SEQUENCE = _NAMES.index("origin"), _NAMES.index("sequence")
HEAD = struct.Struct("!" + "".join(f.code for f in wire.HEADER[:max(ORIGIN, SEQUENCE) + 1]))
MASK64 = (1 << 64) - 1
PCAP_RECORD = struct.Struct("<IIII")


def _name(path: str) -> str:
    return os.path.basename(path)


def _result(reader: str, files: List[str], packets: int, seconds: float, counts: Dict[str, int],
            digest: Dict[str, int], complete: bool, files_read: Optional[List[str]] = None,
            **extra: Any) -> Dict[str, Any]:
    return {"reader": reader, "files": len(files), "packets": packets, "seconds": round(seconds, 3),
            "pps": round(packets / seconds) if seconds > 0 else None, "decoded": sum(counts.values()),
            "counts": counts, "digest": digest, "complete": complete,
            "files_read": files_read if files_read is not None else [_name(f) for f in files], **extra}


def count_packets(files: Iterable[str]) -> int:
    """Records in classic little-endian pcaps, from their record headers (stops at damage)."""
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        offset = 24
        while offset + 16 <= len(data):
            incl = PCAP_RECORD.unpack_from(data, offset)[2]
            if offset + 16 + incl > len(data) or incl > 262144:
                break
            offset += 16 + incl
            total += 1
    return total


# -- scapy ------------------------------------------------------------------------------------------

def scapy_pps(files: List[str], limit: int = 100_000, total_packets: Optional[int] = None) -> Dict[str, Any]:
    """scapy's raw pcap reader with each frame dissected by Ether(): the first `limit` packets.

    `total_packets` (default: counted from the files' record headers) gives extrapolated_seconds."""
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import RawPcapReader

    counts: Dict[str, int] = {}
    digest: Dict[str, int] = {}
    packets = 0
    complete = True
    started = time.perf_counter()
    read: List[str] = []
    for path in files:
        if packets >= limit:
            complete = False
            break
        name = _name(path)
        counts[name] = digest[name] = 0
        reader = RawPcapReader(path)
        whole = True
        try:
            for data, _meta in reader:
                packets += 1
                frame = Ether(data)
                udp = frame.getlayer(UDP)
                if udp is not None and (udp.dport == PORT or udp.sport == PORT):
                    payload = bytes(udp.payload)
                    if len(payload) >= HEAD.size and payload[:2] == MAGIC:
                        head = HEAD.unpack_from(payload)
                        origin, sequence = head[ORIGIN], head[SEQUENCE]
                        counts[name] += 1
                        digest[name] = (digest[name] + (origin << 32 | sequence)) & MASK64
                if packets >= limit:
                    whole = False
                    break
        finally:
            reader.close()
        if whole:
            read.append(name)
        else:
            complete = False
    seconds = time.perf_counter() - started
    total = total_packets if total_packets is not None else count_packets(files)
    pps = packets / seconds if seconds > 0 else 0.0
    return _result("scapy (RawPcapReader + Ether)", files, packets, seconds, counts, digest, complete,
                   files_read=read, limit=limit, total_packets=total,
                   extrapolated_seconds=round(total / pps, 1) if pps else None)


# -- dpkt -------------------------------------------------------------------------------------------

def dpkt_pps(files: List[str]) -> Dict[str, Any]:
    """dpkt's pcap reader and Ethernet/IP/UDP classes; the testbed header with struct."""
    import dpkt

    counts: Dict[str, int] = {}
    digest: Dict[str, int] = {}
    packets = 0
    errors = 0
    started = time.perf_counter()
    for path in files:
        name = _name(path)
        count = total = 0
        with open(path, "rb") as handle:
            for _ts, buf in dpkt.pcap.Reader(handle):
                packets += 1
                try:
                    ip = dpkt.ethernet.Ethernet(buf).data
                except (dpkt.UnpackError, dpkt.NeedData):
                    errors += 1
                    continue
                if not isinstance(ip, dpkt.ip.IP) or ip.p != dpkt.ip.IP_PROTO_UDP:
                    continue
                udp = ip.data
                if not isinstance(udp, dpkt.udp.UDP) or (udp.dport != PORT and udp.sport != PORT):
                    continue
                payload = udp.data
                if len(payload) >= HEAD.size and payload[:2] == MAGIC:
                    head = HEAD.unpack_from(payload)
                    origin, sequence = head[ORIGIN], head[SEQUENCE]
                    count += 1
                    total += origin << 32 | sequence
        counts[name] = count
        digest[name] = total & MASK64
    seconds = time.perf_counter() - started
    return _result("dpkt (pcap.Reader + Ethernet)", files, packets, seconds, counts, digest, True,
                   dissection_errors=errors)


# -- tshark -----------------------------------------------------------------------------------------

TSHARK_FIELDS = ["frame.time_epoch", "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "udp.payload"]


def _tshark_argv(path: str) -> List[str]:
    argv = ["tshark", "-n", "-r", path, "-Y", f"udp.port=={PORT}", "-T", "fields"]
    for field in TSHARK_FIELDS:
        argv += ["-e", field]
    return argv


def _tshark_file(path: str) -> Tuple[str, int, int, int, float]:
    """(name, lines, decoded, digest, seconds) for one file."""
    started = time.perf_counter()
    proc = subprocess.Popen(_tshark_argv(path), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = count = total = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        lines += 1
        fields = line.rstrip(b"\n").split(b"\t")
        if len(fields) < 6:
            continue
        _time, _src, _dst, _sport, _dport, payload = fields[:6]
        head = bytes.fromhex(payload[:2 * HEAD.size].decode())
        if len(head) == HEAD.size and head[:2] == MAGIC:
            values = HEAD.unpack(head)
            origin, sequence = values[ORIGIN], values[SEQUENCE]
            count += 1
            total += origin << 32 | sequence
    proc.wait()
    return _name(path), lines, count, total & MASK64, time.perf_counter() - started


def tshark_startup_seconds() -> float:
    """tshark's fixed cost per file: the same command on a capture without packets."""
    with tempfile.NamedTemporaryFile(suffix=".pcap") as empty:
        empty.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 256, 1))
        empty.flush()
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run(_tshark_argv(empty.name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs.append(time.perf_counter() - started)
    return min(runs)


def tshark_pps(files: List[str], processes: int = 2, total_packets: Optional[int] = None) -> Dict[str, Any]:
    """tshark per file, at most `processes` at once; the packet rate counts every record read."""
    if shutil.which("tshark") is None:
        raise RuntimeError("tshark is not installed")
    startup = tshark_startup_seconds()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=processes) as pool:
        results = list(pool.map(_tshark_file, files))
    seconds = time.perf_counter() - started
    counts = {name: count for name, _lines, count, _digest, _s in results}
    digest = {name: d for name, _lines, _count, d, _s in results}
    total = total_packets if total_packets is not None else count_packets(files)
    return _result(f"tshark -T fields ({processes} processes)", files, total, seconds, counts, digest, True,
                   processes=processes, startup_seconds=round(startup, 3),
                   startup_share=round(startup * len(files) / processes / seconds, 3) if seconds else None)


# -- main -------------------------------------------------------------------------------------------

def _pcaps(run_dir: str) -> List[str]:
    folder = os.path.join(run_dir, "pcap")
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".pcap"))


def _agree(results: List[Dict[str, Any]], expected: Optional[Dict[str, int]]) -> List[str]:
    """On every file that both read whole, readers agree with each other (counts and the digest of
    the origin and sequence fields) and with the ground truth's testbed packets per file."""
    problems = []
    for r in results:
        for name in r["files_read"]:
            if expected is not None and expected.get(name) != r["counts"][name]:
                problems.append(f"{r['reader']}: {name} decoded {r['counts'][name]}, expected {expected.get(name)}")
    for i, a in enumerate(results):
        for b in results[i + 1:]:
            for name in set(a["files_read"]) & set(b["files_read"]):
                if (a["counts"][name], a["digest"][name]) != (b["counts"][name], b["digest"][name]):
                    problems.append(f"{a['reader']} and {b['reader']} differ on {name}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=lambda s: int(float(s)), default=1_000_000,
                        help="packets of the synthetic run to generate (without --run)")
    parser.add_argument("--run", help="an existing run directory instead of a generated one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scapy-limit", type=lambda s: int(float(s)), default=100_000)
    parser.add_argument("--processes", type=int, default=2, help="tshark processes at once")
    parser.add_argument("--skip", action="append", default=[], choices=["scapy", "dpkt", "tshark"])
    parser.add_argument("--json", help="write the figures (without per-file maps) to this file")
    args = parser.parse_args()

    tmp = None
    expected = None
    try:
        if args.run:
            run = args.run
        else:
            from tests.synthetic import make_run

            tmp = tempfile.mkdtemp(prefix="baselines-")
            run = os.path.join(tmp, "synthetic")
            started = time.perf_counter()
            truth = make_run(run, packets=args.packets, seed=args.seed)
            print(f"generated {truth['packets_total']:,} packets ({truth['testbed_packets']:,} testbed) in "
                  f"{time.perf_counter() - started:.1f} s: {run}", flush=True)
        truth_path = os.path.join(run, "ground_truth.json")
        if os.path.exists(truth_path):
            with open(truth_path) as handle:
                truth = json.load(handle)
            expected = {f"{name}.pcap": entry["testbed"] for name, entry in truth["files"].items()}
        files = _pcaps(run)
        total = count_packets(files)
        print(f"{len(files)} files, {total:,} packets, {sum(os.path.getsize(f) for f in files) / 1e6:.0f} MB",
              flush=True)
        results = []
        for reader, call in (("scapy", lambda: scapy_pps(files, args.scapy_limit, total)),
                             ("dpkt", lambda: dpkt_pps(files)),
                             ("tshark", lambda: tshark_pps(files, args.processes, total))):
            if reader in args.skip:
                continue
            result = call()
            results.append(result)
            extra = ""
            if not result["complete"]:
                extra = (f" (first {result['packets']:,} packets; all {result['total_packets']:,} would take "
                         f"{result['extrapolated_seconds']} s)")
            if "startup_seconds" in result:
                extra += (f" (tshark start-up {result['startup_seconds']} s per file, "
                          f"{100 * result['startup_share']:.0f}% of the time)")
            print(f"{result['reader']:<36} {result['pps']:>10,} packets/s  {result['seconds']:>8.1f} s  "
                  f"decoded {result['decoded']:>10,}{extra}", flush=True)
        problems = _agree(results, expected)
        print("decoded counts and fields agree" + (" with the ground truth" if expected else "")
              if not problems else "DISAGREEMENT:\n  " + "\n  ".join(problems[:20]))
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"run": run, "packets": total, "machine": {"cores": os.cpu_count()},
                           "results": [{k: v for k, v in r.items() if k not in ("counts", "digest", "files_read")}
                                       for r in results], "agree": not problems}, handle, indent=2)
        return 1 if problems else 0
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
