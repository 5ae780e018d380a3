"""A synthetic run directory with a radio segment whose neighbour graph changes over time.

Test support beside tests/synthetic.py (whose LAN runs are large and fast): this one is small and
written frame by frame, so that every figure of the radio analysis (spark_analysis/radio.py) has an
exact ground truth. `make_radio_run(out_dir, seed=...)` writes what a run with the radio medium
leaves (docs/RUNDIR.md): manifest.json with its `radio` key, radio/positions.parquet,
radio/links.parquet, pcap/<node>.pcap (classic pcap, nanosecond timestamps, Ethernet) and
logs/<node>.jsonl, and returns (and writes to ground_truth.json) the truth.

The world. Segment "air" (range 150 m, members on wlan0, 10.0.9.0/24): a, b and c stand on a
line at x = 0, 100 and 200 m; d starts at x = 250 m and moves away at 20 m/s, so c and d are
within 100 m until t = 2.5 s and in range until t = 5 s (the tick at 5.25 s is the first without
them). Ticks every 0.5 s from t0 + 0.25 s. The loss model is a table: p = 0.95 up to 100 m, 0.7
up to the range. Node a is also a gateway: its eth1 shares 10.0.1.0/24 with w (a wired LAN).

The workload. a, b, c and d broadcast a PROBE every 100 ms from t0 + 53 ms (+11 ms per node, so
no send lies within 3 ms of a tick; the first ones precede the first tick), 100 each; w
broadcasts one every 500 ms on its LAN (20). a's broadcasts also go out on eth1, where w gets
them all. On the air, a frame S sent at tick k reaches each member R in range at k with the
link's p (copies duplicated with probability 0.05); R's capture shows it and R's agent delivers
it. Two frames the medium must not produce: none, unless `leak` (default True): c's capture shows
d's broadcast sent at about 7 s, when they are out of range (not delivered). b also sends one
message to d by name (`to: ["d"]`, unicast) at 8 s, when d is out of its range: its intended
receivers stay ["d"] and it is lost.
"""

from __future__ import annotations

import ipaddress
import json
import os
import struct
from typing import Any, Dict, List, Tuple

import numpy as np

from agents import wire

SEGMENT = "air"
RANGE_M = 150.0
TICK_S = 0.5
FIRST_TICK_S = 0.25
TICKS = 20
MEMBERS = ["a", "b", "c", "d"]
NODES = MEMBERS + ["w"]
IDS = {n: i + 1 for i, n in enumerate(NODES)}
RADIO_NET = "10.0.9.0/24"
ADDRESSES = {"a": {"wlan0": "10.0.9.1/24", "eth1": "10.0.1.1/24"}, "b": {"wlan0": "10.0.9.2/24"},
             "c": {"wlan0": "10.0.9.3/24"}, "d": {"wlan0": "10.0.9.4/24"}, "w": {"eth0": "10.0.1.2/24"}}
BASE_NS = 1_795_600_000_000_000_000
PORT = 7777
PAYLOAD = 16
DUPLICATE = 0.05


def position(node: str, t_s: float) -> Tuple[float, float, float]:
    return {"a": (0.0, 0.0, 0.0), "b": (100.0, 0.0, 0.0), "c": (200.0, 0.0, 0.0),
            "d": (250.0 + 20.0 * t_s, 0.0, 0.0)}[node]


def delivery_p(distance: float) -> float:
    return 0.95 if distance <= 100.0 else 0.7


def _ip(cidr: str) -> int:
    return int(ipaddress.ip_interface(cidr).ip)


def _bcast(cidr: str) -> int:
    return int(ipaddress.ip_interface(cidr).network.broadcast_address)


def _mac(node_id: int) -> bytes:
    return bytes([0x02, 0x54, 0x42, 0, node_id >> 8, node_id & 255])


def _frame(header: wire.Header, src: int, dst: int, src_ip: int, dst_ip: int, ip_id: int) -> bytes:
    body = wire.encode(header, bytes(PAYLOAD))
    udp = struct.pack("!HHHH", PORT, PORT, 8 + len(body), 0) + body
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), ip_id, 0x4000, 64, 17, 0, src_ip, dst_ip))
    total = sum(struct.unpack("!10H", bytes(ip)))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = struct.pack("!H", ~total & 0xFFFF)
    eth = (b"\xff" * 6 if dst < 0 else _mac(dst)) + _mac(src) + b"\x08\x00"
    return eth + bytes(ip) + udp


def make_radio_run(out_dir: str, seed: int = 1, leak: bool = True) -> Dict[str, Any]:
    """Write the run directory (module docstring); returns the ground truth."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    for sub in ("pcap", "logs", "radio"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    started_ns = BASE_NS + seed * 1_000_000_000_000
    t0 = started_ns + 5_000_000_000

    # -- the medium's records
    ticks = [t0 + int(round((FIRST_TICK_S + k * TICK_S) * 1e9)) for k in range(TICKS)]
    positions, links = [], []
    in_range: Dict[Tuple[int, str, str], float] = {}   # (tick, src, dst) -> p
    for k, t_ns in enumerate(ticks):
        t_s = (t_ns - t0) / 1e9
        where = {n: position(n, t_s) for n in MEMBERS}
        for n in MEMBERS:
            positions.append({"t_ns": t_ns, "t_s": t_s, "segment": SEGMENT, "node": n, "x": where[n][0],
                              "y": where[n][1], "z": where[n][2]})
        for s in MEMBERS:
            for r in MEMBERS:
                distance = float(np.linalg.norm(np.subtract(where[s], where[r])))
                if s != r and distance <= RANGE_M:
                    p = delivery_p(distance)
                    in_range[(k, s, r)] = p
                    links.append({"t_ns": t_ns, "t_s": t_s, "segment": SEGMENT, "src": s, "dst": r,
                                  "distance_m": distance, "p": p})
    pq.write_table(pa.Table.from_pylist(positions), os.path.join(out_dir, "radio", "positions.parquet"))
    pq.write_table(pa.Table.from_pylist(links), os.path.join(out_dir, "radio", "links.parquet"))

    def tick_at(t_ns: int) -> int:
        return max(0, sum(1 for t in ticks if t <= t_ns) - 1)

    # -- the workload
    captures: Dict[str, List[Tuple[int, bytes]]] = {n: [] for n in NODES}
    events: Dict[str, List[dict]] = {n: [] for n in NODES}
    truth_sends: List[dict] = []
    pairs: Dict[Tuple[str, str], Dict[str, Any]] = {}

    def pair(s: str, r: str) -> Dict[str, Any]:
        return pairs.setdefault((s, r), {"sent_in_range": 0, "received": 0, "sum_p": 0.0,
                                         "received_out_of_range": 0, "sent_out_of_range": 0})

    def send(node: str, seq: int, t_log: int, to: Any, intended: List[str]) -> None:
        events[node].append({"t": t_log, "node": node, "event": "send", "type": "PROBE", "origin": node, "seq": seq,
                             "to": to, "bytes": PAYLOAD, "frags": 1, "reliable": False, "message_id": 0, "hops": 0})
        truth_sends.append({"origin": node, "seq": seq, "t": t_log, "intended": sorted(intended)})

    def deliver(node: str, origin: str, seq: int, t: int) -> None:
        events[node].append({"t": t, "node": node, "event": "deliver", "type": "PROBE", "origin": origin, "seq": seq,
                             "message_id": 0, "sender": origin})

    def header(origin: str, seq: int, broadcast: bool) -> wire.Header:
        return wire.Header(type=wire.MessageType.PROBE, origin=IDS[origin], sequence=seq, sender=IDS[origin],
                           flags=int(wire.Flags.BROADCAST) if broadcast else 0)

    received_total = 0
    for i, s in enumerate(MEMBERS):
        for j in range(100):
            seq = j + 1
            t_log = t0 + 53_000_000 + j * 100_000_000 + i * 11_000_000
            t_wire = t_log + 20_000
            k = tick_at(t_log)
            hearers = [r for r in MEMBERS if (k, s, r) in in_range]
            intended = hearers + (["w"] if s == "a" else [])
            send(s, seq, t_log, "broadcast", intended)
            src = _ip(ADDRESSES[s]["wlan0"])
            frame = _frame(header(s, seq, True), IDS[s], -1, src, _bcast(RADIO_NET), int(rng.integers(65536)))
            captures[s].append((t_wire, frame))
            for r in MEMBERS:
                if r == s:
                    continue
                entry = pair(s, r)
                if (k, s, r) not in in_range:
                    entry["sent_out_of_range"] += 1
                    if leak and s == "d" and r == "c" and seq == 70:   # the medium's one mistake
                        captures[r].append((t_wire + 300_000, frame))
                        entry["received_out_of_range"] += 1
                    continue
                p = in_range[(k, s, r)]
                entry["sent_in_range"] += 1
                entry["sum_p"] += p
                if rng.random() < p:
                    entry["received"] += 1
                    received_total += 1
                    captures[r].append((t_wire + 300_000, frame))
                    if rng.random() < DUPLICATE:
                        captures[r].append((t_wire + 350_000, frame))
                    deliver(r, s, seq, t_wire + 400_000)
            if s == "a":   # the gateway's copy on its wired LAN
                wired = _frame(header(s, seq, True), IDS[s], -1, _ip(ADDRESSES["a"]["eth1"]),
                               _bcast(ADDRESSES["a"]["eth1"]), int(rng.integers(65536)))
                captures["a"].append((t_wire + 5_000, wired))
                captures["w"].append((t_wire + 205_000, wired))
                deliver("w", s, seq, t_wire + 300_000)
    for j in range(20):
        seq, t_log = j + 1, t0 + 120_000_000 + j * 500_000_000
        send("w", seq, t_log, "broadcast", ["a"])
        frame = _frame(header("w", seq, True), IDS["w"], -1, _ip(ADDRESSES["w"]["eth0"]),
                       _bcast(ADDRESSES["w"]["eth0"]), int(rng.integers(65536)))
        captures["w"].append((t_log + 20_000, frame))
        captures["a"].append((t_log + 220_000, frame))
        deliver("a", "w", seq, t_log + 300_000)
    # b names d at 8 s, when d is out of its range: intended as named, lost
    t_log = t0 + 8_005_000_000
    send("b", 101, t_log, ["d"], ["d"])
    captures["b"].append((t_log + 20_000, _frame(header("b", 101, False), IDS["b"], IDS["d"],
                                                 _ip(ADDRESSES["b"]["wlan0"]), _ip(ADDRESSES["d"]["wlan0"]), 7)))
    pair("b", "d")["sent_out_of_range"] += 1

    # -- files
    for n in NODES:
        records = sorted(captures[n], key=lambda c: c[0])
        with open(os.path.join(out_dir, "pcap", f"{n}.pcap"), "wb") as fh:
            fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
            for t, frame in records:
                fh.write(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(frame), len(frame)) + frame)
        lines = [{"t": started_ns + 4_000_000_000, "node": n, "event": "state", "state": "started", "role": "probe",
                  "node_id": IDS[n]}] + sorted(events[n], key=lambda e: e["t"])
        with open(os.path.join(out_dir, "logs", f"{n}.jsonl"), "w") as fh:
            fh.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in lines)
    end_ns = t0 + 12_000_000_000
    manifest = {
        "manifest_version": 1, "run_id": os.path.basename(os.path.normpath(out_dir)), "status": "completed",
        "seed": seed, "started_ns": started_ns, "t0_ns": t0, "workload_end_ns": t0 + 10_000_000_000,
        "ended_ns": end_ns, "clock": "CLOCK_REALTIME nanoseconds, shared by all nodes and the captures",
        "scenario": {"name": "synthetic-radio", "duration_s": 10.0, "timeline": [], "schedule": []},
        "topology": {"name": "synthetic-radio", "nodes": NODES},
        "node_ids": IDS, "addresses": ADDRESSES,
        "radio": {SEGMENT: {"range_m": RANGE_M, "loss": {"model": "table", "table": [[100.0, 0.95], [RANGE_M, 0.7]]},
                            "bitrate_kbit": None, "queue_frames": 50, "tick_s": TICK_S,
                            "members": {n: "wlan0" for n in MEMBERS},
                            "mobility": {**{n: {"model": "static"} for n in ("a", "b", "c")},
                                         "d": {"model": "linear", "velocity": [20.0, 0.0, 0.0]}}}},
        "capture": {n: {"captured": len(captures[n]), "kernel_drops": 0, "interfaces": list(ADDRESSES[n])}
                    for n in NODES},
        "log_events": {n: len(events[n]) + 1 for n in NODES},
        "timeline": [], "synthetic": {"seed": seed, "leak": leak},
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)

    degree = {n: [sum(1 for r in MEMBERS if (k, n, r) in in_range) for k in range(TICKS)] for n in MEMBERS}
    truth = {
        "t0_ns": t0, "ticks": ticks,
        "sends": truth_sends,
        "intended_receivers": sum(len(s["intended"]) for s in truth_sends),
        "pairs": {f"{s}>{r}": {**v, "expected": v["sum_p"] / v["sent_in_range"] if v["sent_in_range"] else None}
                  for (s, r), v in sorted(pairs.items())},
        "receptions_out_of_range": sum(v["received_out_of_range"] for v in pairs.values()),
        "radio_receptions": received_total,
        "neighbours": degree,
    }
    with open(os.path.join(out_dir, "ground_truth.json"), "w") as fh:
        json.dump(truth, fh, indent=1)
    return truth
