"""Synthetic run directories: pcaps, logs and a manifest shaped like a real run's, at any size.

Test and benchmark support, not part of the installed packages: tests/test_analysis.py and
benchmarks/ (analysis.py, baselines.py) check the pcap reader and the analysis against its exact
ground truth.

`make_run(out_dir, packets=...)` writes `out_dir/manifest.json`, `out_dir/pcap/<node>.pcap` and
`out_dir/logs/<node>.jsonl` for a probe workload on T[3,5,5] (or another set of LANs) and returns
the ground truth: what was sent, lost, duplicated, delivered and retransmitted, and how many
packets each file holds, so that readers and analyses can be checked against exact figures. The
ground truth is also written to `out_dir/ground_truth.json`.

Workload. Components send numbered PROBE messages (type 2, `payload` zero bytes, as the probe role
sends them) at an even pace over `duration_s` (60 s by default) from the manifest's t0_ns. Most go
by broadcast to the sender's LAN (flag BROADCAST; the receivers are the other nodes of the LAN);
a `reliable_share` goes by unicast to one random peer of the LAN with ACK_REQUESTED. A receiver
answers every copy of such a datagram that it captures with an ACK (type 1, ACKED extension,
header_len 45), and the sender retransmits (flags ACK_REQUESTED|RETRANSMISSION) 50 ms (plus up to
2 ms timer slack) after an attempt whose data or ACKs were all lost, up to `max_tries` attempts;
then it logs a drop ("retries exhausted"). Servers only receive and acknowledge.

Wire. Every datagram appears once "out" in the sender's pcap and once "in" in each receiver's
pcap, 0.1-2 ms later, unless that receiver's copy is lost (probability `loss`, independently per
receiver copy, data and ACKs alike); a copy that is not lost is duplicated with probability
`duplicate` (the receiver captures it twice, 2-100 us apart, and delivers once). The frames are
what the testbed captures: Ethernet II, IPv4 (DF, TTL 64, correct header checksum, a random IP id
per datagram, the same in all its captures), UDP 7777 -> 7777 (correct checksum); broadcasts go to
ff:ff:ff:ff:ff:ff / 10.0.<lan>.255. A small share of frames (`other_share`, 0.5%) is not testbed
traffic: ARP requests and replies, IPv6 router solicitations, and IPv4 UDP datagrams from an
ephemeral port to port 9999; these are placed in single files (not mirrored between sender and
receiver). Frames longer than the 256-byte snaplen (large `payload`) are cut to 256 bytes
(incl_len < orig_len), as tcpdump -s 256 does.

Files. Classic libpcap, little-endian, microsecond timestamps, snaplen 256, linktype 1
(Ethernet), one file per node in time order. Logs are JSON lines in the agents' format, in time
order per node: "state" started, "send", "receive" (unless `receive_events` is false) and
"deliver" at the first copy of each message at each receiver, "retransmit", "drop", "state"
stopped with the agent's counters (received_datagrams counts testbed datagrams captured in).

Size. `packets` is the total number of packets written over all pcaps: the message count is
chosen from the expected packets per message so that testbed traffic takes about
1 - `other_share` of it, and the non-testbed frames fill up the remainder exactly (the total
exceeds `packets` only if the testbed traffic drawn alone does, e.g. for tiny runs that still
need one message per component).

Ground truth (also `out_dir/ground_truth.json`): messages and datagrams per type, intended
receivers (total and a histogram per message), copies lost and duplicates captured per type,
deliveries (first copies), undelivered, retransmissions, exhausted reliable sends, first-copy
latency, packets in total / testbed / by type / non-testbed by kind, log events per kind, per
file counts ("files": packets, testbed in and out, PROBE, ACK, non-testbed, bytes), per node
messages, deliveries and retransmissions ("nodes"), and the damage ("corruption").

Speed. Everything is generated with numpy: the simulation as arrays, each file's frames as
structured arrays (one per frame kind) scattered into the file's buffer through an overlapping
strided view, each log's lines laid out in fixed-width rows (event text from a per-kind template,
variable fields in fixed slots, 0 bytes as filler) from which the filler is then removed. No
per-packet or per-event Python loop; the files are written by `workers` processes (two by default).

Damage. `corrupt={"truncate": [nodes]}` cuts a node's pcap in the middle of its last record;
`corrupt={"garbage": [nodes]}` overwrites 64 bytes starting at the record header nearest the
middle of the file (a record at least 48 bytes long, so that only this one header is damaged; its
incl_len becomes implausibly large). The ground truth's "corruption" gives the byte offsets.

Command line, from the repository root: python -m tests.synthetic OUT_DIR --packets N [--seed S] [...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from agents.wire import BASE_LEN, MAX_DATAGRAM, TLV, VERSION, Ext, Flags, MessageType
from spark_analysis.pcapreader import HEADER_DTYPE, TB_MAGIC

PORT = 7777
SNAPLEN = 256
LINKTYPE_ETHERNET = 1
RETRANSMIT_NS = 50_000_000
MAX_PAYLOAD = MAX_DATAGRAM - BASE_LEN  # one datagram: the synthetic workload does not fragment
OTHER_PORT = 9999

# message types and flags (agents/wire.py)
T_ACK, T_PROBE = int(MessageType.ACK), int(MessageType.PROBE)
F_ACK_REQUESTED, F_RETRANSMISSION, F_BROADCAST = (int(Flags.ACK_REQUESTED), int(Flags.RETRANSMISSION),
                                                  int(Flags.BROADCAST))

# capture kinds
K_PROBE, K_ACK, K_ARP, K_UDP_OTHER, K_IPV6 = 0, 1, 2, 3, 4
OTHER_KINDS = {"arp": K_ARP, "udp_other_port": K_UDP_OTHER, "ipv6": K_IPV6}
OTHER_MIX = np.array([0.6, 0.25, 0.15])  # shares of ARP, UDP to another port, IPv6 among non-testbed frames

# log event kinds
E_SEND_BCAST, E_SEND_REL, E_RECV, E_RECV_RETX, E_DELIVER, E_RETRANSMIT, E_DROP = range(7)
EVENT_NAMES = ["send", "send", "receive", "receive", "deliver", "retransmit", "drop"]

# timing (ns)
BUILD_NS = 4_000_000_000      # started_ns to the agents' start
WARMUP_S = 3.0
QUIET_S = 2.0
BASE_STARTED_NS = 1_795_400_000_000_000_000  # 2026-11-22, a fixed origin: runs are reproducible

PCAP_HEADER = np.frombuffer(
    np.array([(0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)],
             dtype=[("magic", "<u4"), ("major", "<u2"), ("minor", "<u2"), ("zone", "<i4"), ("sigfigs", "<u4"),
                    ("snaplen", "<u4"), ("linktype", "<u4")]).tobytes(), dtype=np.uint8)

_PCAP = [("ts_sec", "<u4"), ("ts_usec", "<u4"), ("incl", "<u4"), ("orig", "<u4")]
_ETH = [("eth_dst", "u1", (6,)), ("eth_src", "u1", (6,)), ("eth_type", ">u2")]
_IPV4 = [("ip_vhl", "u1"), ("ip_tos", "u1"), ("ip_len", ">u2"), ("ip_id", ">u2"), ("ip_frag", ">u2"),
         ("ip_ttl", "u1"), ("ip_proto", "u1"), ("ip_sum", ">u2"), ("ip_src", ">u4"), ("ip_dst", ">u4")]
_UDP = [("sport", ">u2"), ("dport", ">u2"), ("ulen", ">u2"), ("usum", ">u2")]
# the wire header as the pcap reader reads it, from wire.HEADER (a packed header: in this list form
# each field follows the one before, at the offsets HEADER_DTYPE gives)
_TB = [(name, HEADER_DTYPE.fields[name][0]) for name in HEADER_DTYPE.names]
# an ACK's one extension: type and length (wire.TLV), then the value of wire.acked()
_ACKED = [("ext_type", "u1"), ("ext_len", ">u2"), ("acked_origin", ">u4"), ("acked_seq", ">u4"),
          ("acked_frag", ">u2")]
ACKED_LEN = np.dtype(_ACKED).itemsize - TLV.size
ACK_HEADER_LEN = BASE_LEN + TLV.size + ACKED_LEN  # 45
_ARP = [("arp_htype", ">u2"), ("arp_ptype", ">u2"), ("arp_hlen", "u1"), ("arp_plen", "u1"), ("arp_op", ">u2"),
        ("arp_sha", "u1", (6,)), ("arp_spa", ">u4"), ("arp_tha", "u1", (6,)), ("arp_tpa", ">u4")]
_IPV6_RS = [("ip6_vtf", ">u4"), ("ip6_plen", ">u2"), ("ip6_nh", "u1"), ("ip6_hlim", "u1"),
            ("ip6_src", "u1", (16,)), ("ip6_dst", "u1", (16,)), ("icmp_type", "u1"), ("icmp_code", "u1"),
            ("icmp_sum", ">u2"), ("icmp_reserved", ">u4"), ("opt_type", "u1"), ("opt_len", "u1"),
            ("opt_mac", "u1", (6,))]
OTHER_UDP_PAYLOAD = 40


def _dtype(fields: List[tuple], payload: int = 0) -> np.dtype:
    return np.dtype(fields + ([("payload", "u1", (payload,))] if payload else []))


# -- topology ---------------------------------------------------------------------------------------

class _Net:
    """Node names in id order, LANs, addresses and MACs."""

    def __init__(self, nodes: Any) -> None:
        lans = _lans(nodes)
        if len(lans) > 255:
            raise ValueError(f"{len(lans)} LANs: at most 255 (10.0.<lan>.0/24)")
        servers = [lan[0] for lan in lans]
        others = [n for lan in lans for n in lan[1:]]
        self.names: List[str] = servers + others
        if len(set(self.names)) != len(self.names):
            raise ValueError("a node name appears twice")
        index = {n: i for i, n in enumerate(self.names)}
        n = len(self.names)
        self.lans = [[index[m] for m in lan] for lan in lans]
        self.lan_of = np.empty(n, np.int64)
        self.ip = np.empty(n, np.uint32)
        self.addresses: Dict[str, Dict[str, str]] = {}
        for li, lan in enumerate(lans):
            if len(lan) < 2 or len(lan) > 253:
                raise ValueError(f"LAN {li} has {len(lan)} nodes: 2 to 253")
            for host, name in enumerate(lan, start=1):
                self.lan_of[index[name]] = li
                self.ip[index[name]] = (10 << 24) | (li << 8) | host
        for name in self.names:
            a = int(self.ip[index[name]])
            self.addresses[name] = {"eth0": f"10.0.{(a >> 8) & 255}.{a & 255}/24"}
        self.bcast = ((10 << 24) | (self.lan_of.astype(np.uint32) << 8) | 255).astype(np.uint32)
        self.components = np.array([index[m] for lan in lans for m in lan[1:]], np.int64)
        self.is_server = np.zeros(n, bool)
        self.is_server[[index[s] for s in servers]] = True
        width = max(len(lan) for lan in self.lans) - 1
        self.peers = np.full((n, width), -1, np.int64)   # the other nodes of the LAN
        self.npeers = np.zeros(n, np.int64)
        for lan in self.lans:
            for m in lan:
                others_ = [x for x in lan if x != m]
                self.peers[m, :len(others_)] = others_
                self.npeers[m] = len(others_)
        # locally administered MACs 02:54:42:00:<hi>:<lo> from the node id; row n = broadcast
        self.mac = np.zeros((n + 1, 6), np.uint8)
        ids = np.arange(1, n + 1)
        self.mac[:n, 0], self.mac[:n, 1], self.mac[:n, 2] = 0x02, 0x54, 0x42
        self.mac[:n, 4], self.mac[:n, 5] = ids >> 8, ids & 255
        self.mac[n] = 0xFF
        # IPv6 link-local addresses (EUI-64 from the MAC)
        self.ll6 = np.zeros((n, 16), np.uint8)
        self.ll6[:, 0], self.ll6[:, 1] = 0xFE, 0x80
        self.ll6[:, 8:11] = self.mac[:n, 0:3]
        self.ll6[:, 8] ^= 0x02
        self.ll6[:, 11], self.ll6[:, 12] = 0xFF, 0xFE
        self.ll6[:, 13:16] = self.mac[:n, 3:6]


def _lans(nodes: Any) -> List[List[str]]:
    """LANs as lists of names, server first. None: T[3,5,5]; an int k: k LANs of a server and five
    components (srv1..srvk, c1..c5k); a mapping {server: [components]} or a list of LANs."""
    if nodes is None:
        nodes = 31
    if isinstance(nodes, int):
        return [[f"srv{i + 1}"] + [f"c{5 * i + j}" for j in range(1, 6)] for i in range(nodes)]
    if isinstance(nodes, dict):
        return [[s] + list(cs) for s, cs in nodes.items()]
    return [list(lan) for lan in nodes]


# -- small numpy helpers ----------------------------------------------------------------------------

def _scatter(buf: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> None:
    """buf[offsets[i] : offsets[i] + W] = rows[i] for every i (rows: (n, W) or one (W,) row)."""
    width = rows.shape[-1]
    if width == 0 or len(offsets) == 0:
        return
    view = as_strided(buf, shape=(buf.shape[0] - width + 1, width), strides=(1, 1))
    view[offsets] = rows


def _exclusive_cumsum(lengths: np.ndarray, start: int = 0) -> Tuple[np.ndarray, int]:
    out = np.empty(len(lengths), np.int64)
    if len(lengths):
        np.cumsum(lengths[:-1], out=out[1:])
        out[0] = 0
    out += start
    total = int(start + lengths.sum()) if len(lengths) else start
    return out, total


def _words_sum(region: np.ndarray) -> np.ndarray:
    """Sum of the big-endian 16-bit words of each row (an even number of bytes)."""
    r = region.astype(np.uint32)
    return (r[:, 0::2] << 8).sum(axis=1, dtype=np.uint64) + r[:, 1::2].sum(axis=1, dtype=np.uint64)


def _fold(s: np.ndarray) -> np.ndarray:
    s = s.astype(np.uint64)
    for _ in range(3):
        s = (s & 0xFFFF) + (s >> 16)
    return (~s & 0xFFFF).astype(np.uint16)


def _u32_words(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.uint64)
    return (v >> 16) + (v & 0xFFFF)


_QUADS = np.array([[48 + i // 1000, 48 + i // 100 % 10, 48 + i // 10 % 10, 48 + i % 10] for i in range(10000)],
                  np.uint8).view(np.uint32).ravel()   # "0000".."9999" as one 4-byte word each
_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)


def _digits(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Decimal digits of non-negative int64s, right-aligned in (n, 20) ASCII rows, and their counts."""
    x = values.astype(np.int64)
    lengths = 1 + np.searchsorted(_POWERS, x, side="right")
    words = np.full((len(x), 5), _QUADS[0], np.uint32)
    for col in range(4, -1, -1):
        x, r = np.divmod(x, 10000)
        words[:, col] = _QUADS[r]
        if not x.any():
            break
    return words.view(np.uint8).reshape(len(x), 20), lengths


# -- the simulation ---------------------------------------------------------------------------------

class _Tables:
    """Columns of a table, added in parts (arrays or constants) and concatenated at the end."""

    def __init__(self, **dtypes: Any) -> None:
        self.dtypes = dtypes
        self.parts: Dict[str, List[np.ndarray]] = {n: [] for n in dtypes}

    def add(self, **columns: Any) -> None:
        n = max(len(v) for v in columns.values() if isinstance(v, np.ndarray))
        for name, dtype in self.dtypes.items():
            value = columns[name]
            self.parts[name].append(value.astype(dtype, copy=False) if isinstance(value, np.ndarray)
                                    else np.full(n, value, dtype))

    def done(self) -> Dict[str, np.ndarray]:
        return {n: (np.concatenate(v) if v else np.zeros(0, self.dtypes[n])) for n, v in self.parts.items()}


def _order(group: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Indices that sort by group, then time."""
    if not len(t):
        return np.zeros(0, np.int64)
    low = int(t.min())
    span = int(t.max()) - low + 1
    return np.argsort(group.astype(np.int64) * span + (t - low), kind="stable")


def _uniform_ns(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    return rng.integers(int(low), int(high), size=n, endpoint=True).astype(np.int64)


def _expected_packets(net: _Net, loss: float, duplicate: float, reliable_share: float, max_tries: int) -> float:
    q = (1 - loss) * (1 + duplicate)             # copies captured in per copy sent, per receiver
    receivers = net.npeers[net.components].mean()
    broadcast = 1 + receivers * q
    success = (1 - loss) * ((1 - duplicate) * (1 - loss) + duplicate * (1 - loss ** 2))
    attempts = sum((1 - success) ** k for k in range(max_tries))
    reliable = (1 + 2 * q + q * q) * attempts   # data out, data in, an ACK out per data in, ACK in
    return (1 - reliable_share) * broadcast + reliable_share * reliable


def make_run(out_dir: str, packets: int = 1_000_000, nodes: Any = None, seed: int = 1, loss: float = 0.05,
             duplicate: float = 0.01, reliable_share: float = 0.2, payload: int = 64, receive_events: bool = True,
             rate_per_node: Optional[float] = None, corrupt: Optional[Dict[str, Iterable[str]]] = None,
             duration_s: float = 60.0, other_share: float = 0.005, max_tries: int = 20,
             workers: Optional[int] = None) -> Dict[str, Any]:
    """Write a synthetic run directory into `out_dir`; returns the ground truth (see the module doc).

    nodes: None (T[3,5,5]: srv1..srv31 and c1..c155), an int k (k LANs of a server and 5
    components), {server: [components]} or a list of LANs [server, component, ...]; node ids are
    the servers in order, then the components. rate_per_node: PROBE messages per second per
    component; when given, the run lasts as long as `packets` needs at that rate, otherwise
    `duration_s`. corrupt: {"truncate": [node, ...], "garbage": [node, ...]}. workers: processes
    that write the files (default: min(2, CPUs)); the output does not depend on it.
    """
    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    started = time.monotonic()
    if not 0 <= loss < 1 or not 0 <= duplicate <= 1 or not 0 <= reliable_share <= 1:
        raise ValueError("loss must be in [0, 1), duplicate and reliable_share in [0, 1]")
    if not 0 <= payload <= MAX_PAYLOAD:
        raise ValueError(f"payload must be 0..{MAX_PAYLOAD} bytes (one datagram)")
    if max_tries < 1:
        raise ValueError("max_tries must be at least 1")
    corrupt = {k: list(v) for k, v in (corrupt or {}).items()}
    unknown = set(corrupt) - {"truncate", "garbage"}
    if unknown:
        raise ValueError(f"unknown corruption {sorted(unknown)}: truncate, garbage")
    _prepare_dir(out_dir)
    net = _Net(nodes)
    for node in corrupt.get("truncate", []) + corrupt.get("garbage", []):
        if node not in net.names:
            raise ValueError(f"corrupt: no node {node!r}")
    rng = np.random.default_rng(seed)
    n_nodes = len(net.names)
    comps = net.components
    n_comp = len(comps)

    # -- how many messages, over how long
    per_message = _expected_packets(net, loss, duplicate, reliable_share, max_tries)
    n_msg = max(n_comp, int(round(packets * (1 - other_share) / per_message)))
    counts = np.full(n_comp, n_msg // n_comp, np.int64)
    counts[:n_msg % n_comp] += 1                       # messages per component
    if rate_per_node:
        duration_s = float(counts.max()) / float(rate_per_node)
    rate = n_msg / n_comp / duration_s
    started_ns = BASE_STARTED_NS + int(seed % 1000) * 1_000_000_000_000
    agents_ns = started_ns + BUILD_NS
    t0_ns = agents_ns + int(WARMUP_S * 1e9)
    workload_end_ns = t0_ns + int(duration_s * 1e9)

    # -- messages: per component seq 1..count, evenly paced over the duration, in time order per origin
    origin = np.repeat(comps, counts)
    first_msg, _ = _exclusive_cumsum(counts)
    seq = np.arange(n_msg, dtype=np.int64) - np.repeat(first_msg, counts) + 1
    period_ns = np.repeat(duration_s * 1e9 / counts, counts)
    phase = np.repeat(rng.random(n_comp), counts)
    t_log = (t0_ns + (phase + seq - 1 + rng.random(n_msg) * 0.25) * period_ns).astype(np.int64)
    t_send = t_log + _uniform_ns(rng, n_msg, 5_000, 40_000)   # the send event precedes the datagram
    reliable = rng.random(n_msg) < reliable_share
    target = np.full(n_msg, -1, np.int64)
    rel = np.flatnonzero(reliable)
    pick = (rng.random(len(rel)) * net.npeers[origin[rel]]).astype(np.int64)
    target[rel] = net.peers[origin[rel], pick]

    i16, i32, i64 = np.int16, np.int32, np.int64
    dg = _Tables(kind=np.int8, src=i16, dst=i16, flags=np.int8, origin=i16, seq=i32, ack_origin=i16, ack_seq=i32,
                 t=i64)                    # datagrams: src -> dst (-1: broadcast)
    cap = _Tables(dg=i64, file=i16, t=i64)  # captures of testbed datagrams, out and in
    ev = _Tables(node=i16, t=i64, kind=np.int8, x1=i16, i1=i32, x2=i16, i2=i32)  # log events

    # -- broadcast messages
    bc = np.flatnonzero(~reliable)
    nb = len(bc)
    dg.add(kind=K_PROBE, src=origin[bc], dst=np.full(nb, -1, np.int64), flags=F_BROADCAST, origin=origin[bc],
           seq=seq[bc], ack_origin=0, ack_seq=0, t=t_send[bc])
    bc_dg = np.arange(nb, dtype=np.int64)
    fan = net.npeers[origin[bc]]
    slot_msg = np.repeat(np.arange(nb), fan)
    first_slot, n_slots = _exclusive_cumsum(fan)
    slot_j = np.arange(n_slots) - np.repeat(first_slot, fan)
    slot_recv = net.peers[origin[bc][slot_msg], slot_j]
    lost = rng.random(n_slots) < loss
    dup = ~lost & (rng.random(n_slots) < duplicate)
    t_in1 = t_send[bc][slot_msg] + _uniform_ns(rng, n_slots, 100_000, 2_000_000)
    t_in2 = t_in1 + _uniform_ns(rng, n_slots, 2_000, 100_000)
    got = np.flatnonzero(~lost)
    dups = np.flatnonzero(dup)
    cap.add(dg=bc_dg, file=origin[bc], t=t_send[bc])
    cap.add(dg=bc_dg[slot_msg[got]], file=slot_recv[got], t=t_in1[got])
    cap.add(dg=bc_dg[slot_msg[dups]], file=slot_recv[dups], t=t_in2[dups])
    ev.add(node=origin[bc], t=t_log[bc], kind=E_SEND_BCAST, x1=origin[bc], i1=seq[bc], x2=-1, i2=-1)
    t_recv = t_in1[got] + _uniform_ns(rng, len(got), 10_000, 60_000)
    t_deliv = t_recv + _uniform_ns(rng, len(got), 5_000, 40_000)
    o_got, s_got, r_got = origin[bc][slot_msg[got]], seq[bc][slot_msg[got]], slot_recv[got]
    if receive_events:
        ev.add(node=r_got, t=t_recv, kind=E_RECV, x1=o_got, i1=s_got, x2=o_got, i2=-1)
    ev.add(node=r_got, t=t_deliv, kind=E_DELIVER, x1=o_got, i1=s_got, x2=o_got, i2=-1)
    bc_lost, bc_dups, bc_deliveries, bc_intended = int(lost.sum()), len(dups), len(got), int(n_slots)

    # -- reliable unicast messages: attempts until an ACK comes back, at most max_tries
    nr = len(rel)
    shape = (nr, max_tries)
    d_arr = rng.random(shape) >= loss
    d_dup = d_arr & (rng.random(shape) < duplicate)
    a_arr = rng.random((2,) + shape) >= loss            # the ACK of the first and of the duplicate copy
    a_dup = a_arr & (rng.random((2,) + shape) < duplicate)
    a_arr[1] &= d_dup
    a_dup[1] &= d_dup
    a_arr[0] &= d_arr
    a_dup[0] &= d_arr
    success = a_arr[0] | a_arr[1]
    acked = success.any(axis=1)
    n_att = np.where(acked, success.argmax(axis=1) + 1, max_tries)
    made = np.arange(max_tries)[None, :] < n_att[:, None]
    slack = _uniform_ns(rng, nr * max_tries, 0, 2_000_000).reshape(shape)
    slack[:, 0] = 0
    t_att = (t_send[rel][:, None] + np.arange(max_tries)[None, :] * RETRANSMIT_NS + np.cumsum(slack, axis=1))
    am, ak = np.nonzero(made)                            # attempts made: message row, attempt number
    n_attempts = len(am)
    r_origin, r_target, r_seq = origin[rel], target[rel], seq[rel]
    data_ids = nb + np.arange(n_attempts)
    dg.add(kind=K_PROBE, src=r_origin[am], dst=r_target[am],
           flags=F_ACK_REQUESTED | np.where(ak > 0, F_RETRANSMISSION, 0), origin=r_origin[am], seq=r_seq[am],
           ack_origin=0, ack_seq=0, t=t_att[am, ak])
    cap.add(dg=data_ids, file=r_origin[am], t=t_att[am, ak])
    lat = _uniform_ns(rng, n_attempts, 100_000, 2_000_000)
    td1 = t_att[am, ak] + lat
    td2 = td1 + _uniform_ns(rng, n_attempts, 2_000, 100_000)
    arrived, duplicated = d_arr[am, ak], d_dup[am, ak]
    cap.add(dg=data_ids[arrived], file=r_target[am][arrived], t=td1[arrived])
    cap.add(dg=data_ids[duplicated], file=r_target[am][duplicated], t=td2[duplicated])
    # ACKs: one per data copy captured in, from the target back to the origin
    ack_parts = []
    for copy, td in ((0, td1), (1, td2)):
        sent = d_arr[am, ak] if copy == 0 else d_dup[am, ak]
        rows = np.flatnonzero(sent)
        t_ack = td[rows] + _uniform_ns(rng, len(rows), 40_000, 200_000)
        ack_parts.append((rows, t_ack, a_arr[copy][am[rows], ak[rows]], a_dup[copy][am[rows], ak[rows]]))
    ack_rows = np.concatenate([p[0] for p in ack_parts])
    ack_t = np.concatenate([p[1] for p in ack_parts])
    ack_in = np.concatenate([p[2] for p in ack_parts])
    ack_in_dup = np.concatenate([p[3] for p in ack_parts])
    n_ack = len(ack_rows)
    ack_ids = nb + n_attempts + np.arange(n_ack)
    dg.add(kind=K_ACK, src=r_target[am[ack_rows]], dst=r_origin[am[ack_rows]], flags=0,
           origin=r_target[am[ack_rows]], seq=0, ack_origin=r_origin[am[ack_rows]], ack_seq=r_seq[am[ack_rows]],
           t=ack_t)
    cap.add(dg=ack_ids, file=r_target[am[ack_rows]], t=ack_t)
    ta1 = ack_t + _uniform_ns(rng, n_ack, 100_000, 2_000_000)
    ta2 = ta1 + _uniform_ns(rng, n_ack, 2_000, 100_000)
    cap.add(dg=ack_ids[ack_in], file=r_origin[am[ack_rows]][ack_in], t=ta1[ack_in])
    cap.add(dg=ack_ids[ack_in_dup], file=r_origin[am[ack_rows]][ack_in_dup], t=ta2[ack_in_dup])
    # events: send, retransmit, drop at the origin; receive and deliver at the first copy in
    ev.add(node=r_origin, t=t_log[rel], kind=E_SEND_REL, x1=r_origin, i1=r_seq, x2=r_target, i2=-1)
    retx = np.flatnonzero(ak > 0)
    ev.add(node=r_origin[am[retx]], t=t_att[am[retx], ak[retx]] + _uniform_ns(rng, len(retx), 2_000, 20_000),
           kind=E_RETRANSMIT, x1=r_origin[am[retx]], i1=r_seq[am[retx]], x2=r_target[am[retx]], i2=ak[retx] + 1)
    exhausted = np.flatnonzero(~acked)
    t_drop = t_att[exhausted, max_tries - 1] + RETRANSMIT_NS + _uniform_ns(rng, len(exhausted), 0, 2_000_000)
    ev.add(node=r_origin[exhausted], t=t_drop, kind=E_DROP, x1=r_origin[exhausted], i1=r_seq[exhausted],
           x2=r_target[exhausted], i2=max_tries)
    arrived_made = d_arr & made
    delivered = np.flatnonzero(arrived_made.any(axis=1))
    first = arrived_made[delivered].argmax(axis=1)
    att_index = np.full(shape, -1, np.int64)
    att_index[am, ak] = np.arange(n_attempts)
    t_first = td1[att_index[delivered, first]]
    t_recv = t_first + _uniform_ns(rng, len(delivered), 10_000, 60_000)
    t_deliv = t_recv + _uniform_ns(rng, len(delivered), 5_000, 40_000)
    if receive_events:
        ev.add(node=r_target[delivered], t=t_recv, kind=np.where(first > 0, E_RECV_RETX, E_RECV),
               x1=r_origin[delivered], i1=r_seq[delivered], x2=r_origin[delivered], i2=-1)
    ev.add(node=r_target[delivered], t=t_deliv, kind=E_DELIVER, x1=r_origin[delivered], i1=r_seq[delivered],
           x2=r_origin[delivered], i2=-1)

    dgs = dg.done()
    caps = cap.done()
    n_dg = len(dgs["kind"])
    ip_id = rng.integers(0, 65536, n_dg).astype(np.uint16)
    testbed_packets = len(caps["dg"])

    # -- non-testbed frames fill up to `packets`
    n_other = max(0, packets - testbed_packets)
    other_kind = np.array([K_ARP, K_UDP_OTHER, K_IPV6])[rng.choice(3, n_other, p=OTHER_MIX / OTHER_MIX.sum())]
    other_file = rng.integers(0, n_nodes, n_other)
    other_peer = net.peers[other_file, (rng.random(n_other) * net.npeers[other_file]).astype(np.int64)]
    outgoing = rng.random(n_other) < 0.5
    other = {
        "kind": other_kind,
        "src": np.where(outgoing, other_file, other_peer),
        "dst": np.where(outgoing, other_peer, other_file),
        "arp_op": np.where(rng.random(n_other) < 0.55, 1, 2),
        "ip_id": rng.integers(0, 65536, n_other),
        "sport": rng.integers(32768, 61000, n_other),
        "payload": rng.integers(0, 256, (n_other, OTHER_UDP_PAYLOAD), dtype=np.uint8),
    }
    other["payload"][:, :8] = np.frombuffer(b"NOISE/1 ", np.uint8)
    capture_start = agents_ns - 500_000_000
    capture_end = workload_end_ns + int(QUIET_S * 1e9)
    other_t = rng.integers(capture_start, capture_end, n_other).astype(np.int64)

    # -- all captures, sorted by file and time
    all_file = np.concatenate([caps["file"], other_file]).astype(np.int64)
    all_t = np.concatenate([caps["t"], other_t]).astype(np.int64)
    all_ref = np.concatenate([caps["dg"], np.arange(n_other)]).astype(np.int64)
    all_kind = np.concatenate([dgs["kind"][caps["dg"]], other_kind]).astype(np.int8)
    order = _order(all_file, all_t)
    all_file, all_t, all_ref, all_kind = all_file[order], all_t[order], all_ref[order], all_kind[order]
    del order
    bounds = np.searchsorted(all_file, np.arange(n_nodes + 1))

    # -- events in time order per node, and each log's first and last line
    events = ev.done()
    order = _order(events["node"], events["t"])
    for column in events:
        events[column] = events[column][order]
    del order
    ebounds = np.searchsorted(events["node"], np.arange(n_nodes + 1))
    is_out = caps["file"] == dgs["src"][caps["dg"]]
    out_total = np.bincount(caps["file"][is_out], minlength=n_nodes)
    in_total = np.bincount(caps["file"][~is_out], minlength=n_nodes)
    del is_out
    retx_per_node = np.bincount(r_origin[am[retx]], minlength=n_nodes)
    pids = rng.integers(6, 9, n_nodes)
    t_started = agents_ns + _uniform_ns(rng, n_nodes, 0, 300_000_000)
    t_stopped = capture_end + _uniform_ns(rng, n_nodes, 100_000_000, 400_000_000)
    heads, tails = [], []
    for f, name in enumerate(net.names):
        heads.append(json.dumps({"t": int(t_started[f]), "node": name, "event": "state", "state": "started",
                                 "role": "probe", "pid": int(pids[f]), "node_id": f + 1}, separators=(",", ":")))
        tails.append(json.dumps({"t": int(t_stopped[f]), "node": name, "event": "state", "state": "stopped",
                                 "sent_datagrams": int(out_total[f]), "received_datagrams": int(in_total[f]),
                                 "retransmissions": int(retx_per_node[f]), "pending_reliable": 0},
                                separators=(",", ":")))
    simulated = time.monotonic()

    # -- one pcap and one log per node, in `workers` processes
    global _JOB
    _JOB = {"out_dir": out_dir, "names": net.names, "builder": _FrameBuilder(net, dgs, ip_id, other, payload),
            "src": dgs["src"], "bounds": bounds, "kind": all_kind, "ref": all_ref, "t": all_t,
            "ebounds": ebounds, "events": events, "heads": heads, "tails": tails,
            "templates": _event_templates(payload),
            "damaged": set(corrupt.get("truncate", []) + corrupt.get("garbage", []))}
    workers = max(1, min(int(workers or 1), n_nodes))
    try:
        if workers > 1:
            import multiprocessing
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                results = pool.map(_node_job, range(n_nodes), chunksize=1)
        else:
            results = [_node_job(f) for f in range(n_nodes)]
    finally:
        _JOB = {}
    files = {net.names[r["f"]]: r["file"] for r in results}
    log_events = {net.names[r["f"]]: r["log_events"] for r in results}
    record_offsets = {net.names[r["f"]]: r["offsets"] for r in results if r["offsets"] is not None}
    record_testbed = {net.names[r["f"]]: r["testbed"] for r in results if r["testbed"] is not None}
    job_seconds = {"pcaps": round(sum(r["seconds"][0] for r in results), 3),
                   "logs": round(sum(r["seconds"][1] for r in results), 3)}
    written = time.monotonic()
    pcap_dir = os.path.join(out_dir, "pcap")

    # -- damage
    corruption: Dict[str, Any] = {}
    for name in corrupt.get("garbage", []):
        damage = _garbage(os.path.join(pcap_dir, f"{name}.pcap"), record_offsets[name], rng)
        if damage:
            k, testbed = damage["record_index"], record_testbed[name]
            damage.update(testbed_before=int(testbed[:k].sum()), testbed_after=int(testbed[k + 1:].sum()),
                          damaged_record_is_testbed=bool(testbed[k]))
        corruption.setdefault("garbage", {})[name] = damage
    for name in corrupt.get("truncate", []):
        offsets = record_offsets[name]
        size = files[name]["bytes"]
        if len(offsets) < 2:
            continue
        last_len = int(size - offsets[-1])
        cut = int(offsets[-1] + last_len // 2)
        with open(os.path.join(pcap_dir, f"{name}.pcap"), "r+b") as handle:
            handle.truncate(cut)
        corruption.setdefault("truncate", {})[name] = {
            "original_size": size, "size": cut, "last_record_offset": int(offsets[-1]),
            "last_record_length": last_len, "complete_records": int(len(offsets) - 1),
            "testbed_in_complete_records": int(record_testbed[name][:-1].sum()),
            "last_record_is_testbed": bool(record_testbed[name][-1])}

    # -- ground truth and manifest
    latency_ns = np.concatenate([t_in1[got] - t_send[bc][slot_msg[got]], t_first - t_send[rel][delivered]])
    deliver_rows = events["kind"] == E_DELIVER
    per_node = {"messages": np.bincount(origin, minlength=n_nodes),
                "deliveries": np.bincount(events["node"][deliver_rows], minlength=n_nodes),
                "retransmissions": retx_per_node}
    by_event = np.bincount(events["kind"], minlength=7) if len(events["kind"]) else np.zeros(7, int)
    kinds_all = np.bincount(all_kind, minlength=5)
    probe_dgs = int((dgs["kind"] == K_PROBE).sum())
    ack_caps_in = int(ack_in.sum() + ack_in_dup.sum())
    truth = {
        "messages": {"PROBE": int(n_msg), "PROBE_broadcast": int(nb), "PROBE_reliable": int(nr),
                     "ACK": int(n_ack)},
        "datagrams": {"PROBE": probe_dgs, "ACK": int(n_ack), "total": int(n_dg)},
        "messages_per_component": [int(counts.min()), int(counts.max())],
        "rate_per_component": rate,
        "intended_receivers": {
            "total": int(bc_intended + nr),
            "per_message": {str(k): int(v) for k, v in
                            zip(*np.unique(np.concatenate([fan, np.ones(nr, np.int64)]), return_counts=True))}},
        "copies_lost": {"PROBE": int(bc_lost + (made & ~d_arr).sum()), "ACK": int(n_ack - ack_in.sum())},
        "deliveries": int(bc_deliveries + len(delivered)),
        "deliveries_broadcast": int(bc_deliveries), "deliveries_reliable": int(len(delivered)),
        "undelivered": int(bc_intended + nr - bc_deliveries - len(delivered)),
        "duplicates_captured": {"PROBE": int(bc_dups + (d_dup & made).sum()), "ACK": int(ack_in_dup.sum())},
        "retransmissions": int(len(retx)),
        "reliable_exhausted": int(len(exhausted)),
        "first_copy_latency_ms": _stats_ms(latency_ns),
        "packets_total": int(len(all_kind)),
        "testbed_packets": int(testbed_packets),
        "testbed_packets_by_type": {"PROBE": int(kinds_all[K_PROBE]), "ACK": int(kinds_all[K_ACK])},
        "testbed_packets_in": {"PROBE": int(kinds_all[K_PROBE] - probe_dgs), "ACK": ack_caps_in},
        "non_testbed_frames": int(n_other),
        "non_testbed_by_kind": {k: int(kinds_all[v]) for k, v in OTHER_KINDS.items()},
        "log_events": {"total": int(sum(log_events.values())),
                       "state": 2 * n_nodes, "send": int(by_event[E_SEND_BCAST] + by_event[E_SEND_REL]),
                       "receive": int(by_event[E_RECV] + by_event[E_RECV_RETX]),
                       "deliver": int(by_event[E_DELIVER]), "retransmit": int(by_event[E_RETRANSMIT]),
                       "drop": int(by_event[E_DROP])},
        "files": files,
        "nodes": {name: {k: int(v[f]) for k, v in per_node.items()} for f, name in enumerate(net.names)},
        "corruption": corruption,
        "t0_ns": int(t0_ns), "workload_end_ns": int(workload_end_ns),
    }
    parameters = {"packets": int(packets), "nodes": len(net.names), "lans": len(net.lans), "seed": seed,
                  "loss": loss, "duplicate": duplicate, "reliable_share": reliable_share, "payload": payload,
                  "receive_events": receive_events, "rate_per_node": rate_per_node, "duration_s": duration_s,
                  "other_share": other_share, "max_tries": max_tries, "retransmit_ms": RETRANSMIT_NS / 1e6,
                  "corrupt": corrupt}
    _write_manifest(out_dir, net, parameters, started_ns, t0_ns, workload_end_ns, duration_s, seed, files,
                    log_events, t_stopped, payload, rate, reliable_share)
    finished = time.monotonic()
    truth["seconds"] = {"simulate": round(simulated - started, 3), "write": round(written - simulated, 3),
                        "total": round(finished - started, 3), "workers": workers,
                        "cpu_in_jobs": job_seconds}
    with open(os.path.join(out_dir, "ground_truth.json"), "w") as handle:
        json.dump(truth, handle, indent=1)
    return truth


def _stats_ms(values_ns: np.ndarray) -> Dict[str, float]:
    """From a message's first transmission to its first copy captured at a receiver (deliveries)."""
    if not len(values_ns):
        return {}
    ms = values_ns / 1e6
    return {"mean": round(float(ms.mean()), 4), "p50": round(float(np.percentile(ms, 50)), 4),
            "p99": round(float(np.percentile(ms, 99)), 4), "max": round(float(ms.max()), 4)}


def _prepare_dir(out_dir: str) -> None:
    manifest = os.path.join(out_dir, "manifest.json")
    if os.path.exists(manifest):
        try:
            with open(manifest) as handle:
                synthetic = "synthetic" in json.load(handle)
        except (OSError, ValueError):
            synthetic = False
        if not synthetic:
            raise FileExistsError(f"{out_dir} holds a run that is not synthetic; not overwriting it")
        for sub, ext in (("pcap", ".pcap"), ("logs", ".jsonl")):
            folder = os.path.join(out_dir, sub)
            if os.path.isdir(folder):
                for entry in os.listdir(folder):
                    if entry.endswith(ext):
                        os.unlink(os.path.join(folder, entry))
    os.makedirs(os.path.join(out_dir, "pcap"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)


def _garbage(path: str, offsets: np.ndarray, rng: np.random.Generator) -> Dict[str, int]:
    """Overwrite 64 bytes from the header of a record near the middle of the file."""
    with open(path, "r+b") as handle:
        size = handle.seek(0, 2)
        lengths = np.diff(np.append(offsets, size))
        candidates = np.flatnonzero(lengths >= 64)      # 16-byte header + at least 48 captured bytes
        if not len(candidates):
            return {}
        k = int(candidates[np.argmin(np.abs(offsets[candidates] - size // 2))])
        junk = bytearray(rng.integers(0, 256, 64, dtype=np.uint8).tobytes())
        junk[11] = 0x80 | (junk[11] & 0x7F)              # incl_len >= 2**31: no reader can take it
        handle.seek(int(offsets[k]))
        handle.write(bytes(junk))
    return {"offset": int(offsets[k]), "length": 64, "record_index": k, "records_before": k,
            "next_record_offset": int(offsets[k] + lengths[k]), "records_after": int(len(offsets) - k - 1)}


# -- per node files --------------------------------------------------------------------------------

_JOB: Dict[str, Any] = {}   # what the writers need; set before the worker processes fork


def _node_job(f: int) -> Dict[str, Any]:
    job = _JOB
    name = job["names"][f]
    t_start = time.process_time()
    a, b = job["bounds"][f], job["bounds"][f + 1]
    kinds, refs = job["kind"][a:b], job["ref"][a:b]
    buf, offsets, _ = job["builder"].file(kinds, refs, job["t"][a:b])
    with open(os.path.join(job["out_dir"], "pcap", f"{name}.pcap"), "wb") as handle:
        handle.write(memoryview(buf))
    per_kind = np.bincount(kinds, minlength=5)
    testbed = int(per_kind[K_PROBE] + per_kind[K_ACK])
    outs = int((job["src"][refs[kinds <= K_ACK]] == f).sum())
    entry = {"packets": int(b - a), "testbed": testbed, "testbed_out": outs, "testbed_in": testbed - outs,
             "probe": int(per_kind[K_PROBE]), "ack": int(per_kind[K_ACK]),
             "non_testbed": int(per_kind[K_ARP] + per_kind[K_UDP_OTHER] + per_kind[K_IPV6]), "bytes": int(len(buf))}
    del buf
    t_pcap = time.process_time()
    a, b = job["ebounds"][f], job["ebounds"][f + 1]
    body = _log_lines(name, job["names"], job["templates"], {k: v[a:b] for k, v in job["events"].items()})
    with open(os.path.join(job["out_dir"], "logs", f"{name}.jsonl"), "wb") as handle:
        handle.write((job["heads"][f] + "\n").encode())
        handle.write(memoryview(body))
        handle.write((job["tails"][f] + "\n").encode())
    t_logs = time.process_time()
    return {"f": f, "file": entry, "log_events": int(b - a) + 2,
            "offsets": offsets if name in job["damaged"] else None,
            "testbed": kinds <= K_ACK if name in job["damaged"] else None,
            "seconds": (t_pcap - t_start, t_logs - t_pcap)}


# -- frames -----------------------------------------------------------------------------------------

class _FrameBuilder:
    def __init__(self, net: _Net, dgs: Dict[str, np.ndarray], ip_id: np.ndarray, other: Dict[str, np.ndarray],
                 payload: int) -> None:
        self.net, self.dgs, self.ip_id, self.other = net, dgs, ip_id, other
        self.dtypes = {
            K_PROBE: _dtype(_PCAP + _ETH + _IPV4 + _UDP + _TB, payload),
            K_ACK: _dtype(_PCAP + _ETH + _IPV4 + _UDP + _TB + _ACKED),
            K_ARP: _dtype(_PCAP + _ETH + _ARP),
            K_UDP_OTHER: _dtype(_PCAP + _ETH + _IPV4 + _UDP, OTHER_UDP_PAYLOAD),
            K_IPV6: _dtype(_PCAP + _ETH + _IPV6_RS),
        }
        self.frame_len = {k: d.itemsize - 16 for k, d in self.dtypes.items()}
        self.record_len = np.array([16 + min(SNAPLEN, self.frame_len[k]) for k in range(5)], np.int64)

    def file(self, kinds: np.ndarray, refs: np.ndarray, t_ns: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        lengths = self.record_len[kinds]
        offsets, total = _exclusive_cumsum(lengths, start=24)
        buf = np.empty(total, np.uint8)
        buf[:24] = PCAP_HEADER
        for kind in np.flatnonzero(np.bincount(kinds, minlength=5)):
            rows = np.flatnonzero(kinds == kind)
            records = self._records(int(kind), refs[rows], t_ns[rows])
            _scatter(buf, offsets[rows], records[:, :self.record_len[kind]])
        return buf, offsets, lengths

    def _records(self, kind: int, refs: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
        n = len(refs)
        rec = np.zeros(n, self.dtypes[kind])
        us = t_ns // 1000
        rec["ts_sec"] = us // 1_000_000
        rec["ts_usec"] = us % 1_000_000
        rec["incl"] = min(SNAPLEN, self.frame_len[kind])
        rec["orig"] = self.frame_len[kind]
        net = self.net
        if kind in (K_PROBE, K_ACK):
            d = self.dgs
            src, dst = d["src"][refs], d["dst"][refs]
            rec["eth_dst"] = net.mac[np.where(dst < 0, len(net.names), dst)]
            rec["eth_src"] = net.mac[src]
            ip_dst = np.where(dst < 0, net.bcast[src], net.ip[np.maximum(dst, 0)])
            self._ipv4_udp(rec, self.ip_id[refs], net.ip[src], ip_dst, PORT, PORT)
            rec["magic"] = TB_MAGIC
            rec["version"] = VERSION
            rec["type"] = T_PROBE if kind == K_PROBE else T_ACK
            rec["flags"] = d["flags"][refs]
            rec["origin"] = d["origin"][refs] + 1
            rec["sequence"] = d["seq"][refs]
            rec["sender"] = src + 1
            rec["frag_count"] = 1
            if kind == K_ACK:
                rec["header_len"] = ACK_HEADER_LEN
                rec["ext_type"] = Ext.ACKED
                rec["ext_len"] = ACKED_LEN
                rec["acked_origin"] = d["ack_origin"][refs] + 1
                rec["acked_seq"] = d["ack_seq"][refs]
            else:
                rec["header_len"] = BASE_LEN
            self._udp_checksum(rec, zero_payload=True)
        elif kind == K_ARP:
            o = self.other
            src, dst, op = o["src"][refs], o["dst"][refs], o["arp_op"][refs]
            request = op == 1
            rec["eth_dst"] = np.where(request[:, None], net.mac[len(net.names)], net.mac[dst])
            rec["eth_src"] = net.mac[src]
            rec["eth_type"] = 0x0806
            rec["arp_htype"], rec["arp_ptype"], rec["arp_hlen"], rec["arp_plen"] = 1, 0x0800, 6, 4
            rec["arp_op"] = op
            rec["arp_sha"] = net.mac[src]
            rec["arp_spa"] = net.ip[src]
            rec["arp_tha"] = np.where(request[:, None], 0, net.mac[dst])
            rec["arp_tpa"] = net.ip[dst]
        elif kind == K_UDP_OTHER:
            o = self.other
            src = o["src"][refs]
            rec["eth_dst"] = net.mac[len(net.names)]
            rec["eth_src"] = net.mac[src]
            rec["payload"] = o["payload"][refs]
            self._ipv4_udp(rec, o["ip_id"][refs], net.ip[src], net.bcast[src], o["sport"][refs], OTHER_PORT)
            self._udp_checksum(rec, zero_payload=False)
        else:  # IPv6 router solicitation, like the ones in real captures
            src = self.other["src"][refs]
            rec["eth_dst"] = np.array([0x33, 0x33, 0, 0, 0, 2], np.uint8)
            rec["eth_src"] = net.mac[src]
            rec["eth_type"] = 0x86DD
            rec["ip6_vtf"] = 0x60000000
            rec["ip6_plen"] = 16
            rec["ip6_nh"] = 58
            rec["ip6_hlim"] = 255
            rec["ip6_src"] = net.ll6[src]
            rec["ip6_dst"] = np.array([0xFF, 2] + [0] * 13 + [2], np.uint8)
            rec["icmp_type"] = 133
            rec["opt_type"], rec["opt_len"] = 1, 1
            rec["opt_mac"] = net.mac[src]
            raw = rec.view(np.uint8).reshape(n, -1)
            start = 16 + 14 + 8   # the IPv6 source address
            pseudo = _words_sum(raw[:, start:start + 32]) + 16 + 58
            rec["icmp_sum"] = _fold(pseudo + _words_sum(raw[:, start + 32:start + 48]))
        return rec.view(np.uint8).reshape(n, -1)

    @staticmethod
    def _ipv4_udp(rec: np.ndarray, ip_id: np.ndarray, src: np.ndarray, dst: np.ndarray, sport: Any, dport: Any) -> None:
        frame = rec.dtype.itemsize - 16
        rec["eth_type"] = 0x0800
        rec["ip_vhl"] = 0x45
        rec["ip_len"] = frame - 14
        rec["ip_id"] = ip_id
        rec["ip_frag"] = 0x4000
        rec["ip_ttl"] = 64
        rec["ip_proto"] = 17
        rec["ip_src"] = src
        rec["ip_dst"] = dst
        rec["sport"] = sport
        rec["dport"] = dport
        rec["ulen"] = frame - 34
        raw = rec.view(np.uint8).reshape(len(rec), -1)
        rec["ip_sum"] = _fold(_words_sum(raw[:, 30:50]))

    @staticmethod
    def _udp_checksum(rec: np.ndarray, zero_payload: bool) -> None:
        """UDP checksum over the pseudo header and the datagram; a zero payload adds nothing."""
        raw = rec.view(np.uint8).reshape(len(rec), -1)
        ulen = rec.dtype.itemsize - 16 - 34
        end = 50 + ulen
        if zero_payload and "payload" in rec.dtype.names:
            end -= rec.dtype["payload"].shape[0]
        region = raw[:, 50:end]
        if region.shape[1] % 2:
            region = np.concatenate([region, np.zeros((len(rec), 1), np.uint8)], axis=1)
        total = (_u32_words(rec["ip_src"]) + _u32_words(rec["ip_dst"]) + 17 + ulen + _words_sum(region))
        value = _fold(total)
        rec["usum"] = np.where(value == 0, 0xFFFF, value)


# -- log lines --------------------------------------------------------------------------------------

def _event_templates(payload: int) -> List[Tuple[str, str, str, str]]:
    """Per event kind: the text before x1, between x1 and i1, between i1 and x2, between x2 and i2."""
    o = '","type":"PROBE","origin":"'
    return [
        ("send" + o, '","seq":', "", f',"to":"broadcast","bytes":{payload},"frags":1,"reliable":false,'
                                     f'"message_id":0,"hops":0'),
        ("send" + o, '","seq":', ',"to":["', f'"],"bytes":{payload},"frags":1,"reliable":true,"message_id":0,"hops":0'),
        ("receive" + o, '","seq":', ',"sender":"',
         f'","hops":0,"bytes":{payload},"message_id":0,"retransmission":false'),
        ("receive" + o, '","seq":', ',"sender":"',
         f'","hops":0,"bytes":{payload},"message_id":0,"retransmission":true'),
        ("deliver" + o, '","seq":', ',"message_id":0,"sender":"', '"'),
        ('retransmit","origin":"', '","seq":', ',"frag":0,"to":"', '","attempt":'),
        ('drop","reason":"retries exhausted","origin":"', '","seq":', ',"frag":0,"to":"', '","tries":'),
    ]


def _digit_block(values: np.ndarray, present: Optional[np.ndarray] = None) -> np.ndarray:
    """Decimal digits right-aligned in the narrowest block that holds them, 0 bytes before them
    (and in rows where `present` is false)."""
    digits, lengths = _digits(np.maximum(values, 0))
    if present is not None:
        lengths = np.where(present, lengths, 0)
    width = max(1, int(lengths.max())) if len(lengths) else 1
    block = digits[:, 20 - width:]
    block[np.arange(width)[None, :] < (width - lengths)[:, None]] = 0
    return block


def _log_lines(node: str, names: List[str], templates: List[Tuple[str, str, str, str]],
               e: Dict[str, np.ndarray]) -> np.ndarray:
    """The events' JSON lines. Every line is first laid out in one fixed-width row: the text of its
    event kind in fixed slots, the variable fields (time, names, numbers) right-aligned in theirs,
    0 bytes as filler; removing the 0 bytes leaves the lines."""
    n = len(e["t"])
    if n == 0:
        return np.zeros(0, np.uint8)
    name_width = max(len(x) for x in names)
    name_table = np.zeros((len(names) + 1, name_width), np.uint8)   # last row: no name
    for i, x in enumerate(names):
        name_table[i, name_width - len(x):] = np.frombuffer(x.encode(), np.uint8)

    def name_block(index: np.ndarray) -> np.ndarray:
        return name_table[np.where(index < 0, len(names), index)]

    slots: List[Any] = [
        ['{"t":'] * len(templates), _digit_block(e["t"]),
        [f',"node":"{node}","event":"' + t[0] for t in templates], name_block(e["x1"]),
        [t[1] for t in templates], _digit_block(e["i1"], e["i1"] >= 0),
        [t[2] for t in templates], name_block(e["x2"]),
        [t[3] for t in templates], _digit_block(e["i2"], e["i2"] >= 0),
        ["}\n"] * len(templates),
    ]
    present = np.bincount(e["kind"].astype(np.intp), minlength=len(templates)) > 0
    widths = [max(len(x) for x, p in zip(slot, present) if p) if isinstance(slot, list) else slot.shape[1]
              for slot in slots]
    table = np.zeros((len(templates), sum(widths)), np.uint8)
    position = 0
    for slot, width in zip(slots, widths):
        if isinstance(slot, list):
            for k, text in enumerate(slot):
                if present[k]:
                    table[k, position:position + len(text)] = np.frombuffer(text.encode(), np.uint8)
        position += width
    rows = table[e["kind"].astype(np.intp)]
    position = 0
    for slot, width in zip(slots, widths):
        if not isinstance(slot, list):
            rows[:, position:position + width] = slot
        position += width
    flat = rows.reshape(-1)
    return flat[flat != 0]


# -- manifest ---------------------------------------------------------------------------------------

def _write_manifest(out_dir: str, net: _Net, parameters: Dict[str, Any], started_ns: int, t0_ns: int,
                    workload_end_ns: int, duration_s: float, seed: int, files: Dict[str, Dict[str, int]],
                    log_events: Dict[str, int], t_stopped: np.ndarray, payload: int, rate: float,
                    reliable_share: float) -> None:
    def iso(ns: int) -> str:
        return datetime.datetime.fromtimestamp(ns / 1e9, datetime.timezone.utc).isoformat()

    ended_ns = int(t_stopped.max()) + 1_500_000_000
    manifest = {
        "manifest_version": 1,
        "run_id": os.path.basename(os.path.normpath(out_dir)),
        "status": "completed",
        "started_at": iso(started_ns),
        "started_ns": started_ns,
        "clock": "CLOCK_REALTIME nanoseconds, shared by all nodes and the captures",
        "seed": seed,
        "scenario": {
            "name": "synthetic",
            "description": "Synthetic probe traffic (tests.synthetic): LAN broadcasts and reliable "
                           "unicasts with loss and duplication.",
            "seed": seed, "duration_s": duration_s, "warmup_s": WARMUP_S, "quiet_s": QUIET_S,
            "capture": {"enabled": True, "snaplen": SNAPLEN},
            "workload": {"defaults": {"role": "probe", "params": {
                "rate": round(rate, 3), "size": payload, "to": "broadcast",
                "reliable_share": reliable_share}}},
            "timeline": [], "schedule": [],
        },
        "topology": {"name": "tree-3-5-5" if len(net.names) == 186 and len(net.lans) == 31 else "synthetic",
                     "lans": [[net.names[i] for i in lan] for lan in net.lans]},
        "node_ids": {name: i + 1 for i, name in enumerate(net.names)},
        "addresses": net.addresses,
        "command": ["python", "-m", "tests.synthetic"],
        "t0_ns": t0_ns,
        "workload_end_ns": workload_end_ns,
        "capture": {name: {"captured": files[name]["packets"], "kernel_drops": 0, "interfaces": ["eth0"]}
                    for name in net.names},
        "log_events": log_events,
        "timeline": [{"action": "heal_all", "planned_s": duration_s, "t_s": duration_s,
                      "t_ns": workload_end_ns + 1_000_000, "ok": True, "details": {}, "from": "end of scenario"}],
        "ended_at": iso(ended_ns),
        "synthetic": parameters,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as handle:
        json.dump(manifest, handle, indent=2)


# -- command line -----------------------------------------------------------------------------------

def summary(truth: Dict[str, Any]) -> str:
    m, gt = truth["messages"], truth
    lines = [
        f"packets written      {gt['packets_total']:>12,} ({gt['testbed_packets']:,} testbed, "
        f"{gt['non_testbed_frames']:,} other) in {len(gt['files'])} files",
        f"PROBE messages       {m['PROBE']:>12,} ({m['PROBE_broadcast']:,} broadcast, "
        f"{m['PROBE_reliable']:,} reliable),"
        f" {'-'.join(map(str, sorted(set(gt['messages_per_component']))))} per component, "
        f"{gt['rate_per_component']:.2f}/s",
        f"ACK datagrams        {m['ACK']:>12,}",
        f"intended receivers   {gt['intended_receivers']['total']:>12,}  per message: "
        f"{gt['intended_receivers']['per_message']}",
        f"deliveries           {gt['deliveries']:>12,} (undelivered {gt['undelivered']:,})",
        f"copies lost          {gt['copies_lost']['PROBE']:>12,} PROBE, {gt['copies_lost']['ACK']:,} ACK",
        f"duplicates captured  {gt['duplicates_captured']['PROBE']:>12,} PROBE, "
        f"{gt['duplicates_captured']['ACK']:,} ACK",
        f"retransmissions      {gt['retransmissions']:>12,} (exhausted {gt['reliable_exhausted']:,})",
        f"log events           {gt['log_events']['total']:>12,} "
        + ", ".join(f"{k} {v:,}" for k, v in gt["log_events"].items() if k != "total"),
        "seconds              " + ", ".join(f"{k} {v}" for k, v in gt["seconds"].items()),
    ]
    if gt["corruption"]:
        lines.append(f"corruption           {json.dumps(gt['corruption'])}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.synthetic", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="the run directory to write (runs/<id>)")
    parser.add_argument("--packets", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--loss", type=float, default=0.05)
    parser.add_argument("--duplicate", type=float, default=0.01)
    parser.add_argument("--reliable-share", type=float, default=0.2)
    parser.add_argument("--payload", type=int, default=64)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of workload")
    parser.add_argument("--rate-per-node", type=float, default=None)
    parser.add_argument("--lans", type=int, default=None, help="LANs of a server and 5 components (default: T[3,5,5])")
    parser.add_argument("--no-receive-events", action="store_true")
    parser.add_argument("--truncate", action="append", default=[], metavar="NODE")
    parser.add_argument("--garbage", action="append", default=[], metavar="NODE")
    parser.add_argument("--workers", type=int, default=None, help="processes writing the files (default 2)")
    parser.add_argument("--json", action="store_true", help="print the whole ground truth as JSON")
    args = parser.parse_args(argv)
    corrupt = {k: v for k, v in (("truncate", args.truncate), ("garbage", args.garbage)) if v}
    truth = make_run(args.out_dir, packets=args.packets, nodes=args.lans, seed=args.seed, loss=args.loss,
                     duplicate=args.duplicate, reliable_share=args.reliable_share, payload=args.payload,
                     receive_events=not args.no_receive_events, rate_per_node=args.rate_per_node,
                     corrupt=corrupt or None, duration_s=args.duration, workers=args.workers)
    print(json.dumps(truth, indent=1) if args.json else summary(truth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
