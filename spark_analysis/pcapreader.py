"""A vectorised reader of classic pcap files that decodes the testbed's wire header.

No per-packet Python: the record chain is found with numpy over the file's bytes and every field
is read through one structured view of a gathered byte matrix, so a file of a million packets
costs a handful of array operations.

Finding the records. A pcap file is a chain: each 16-byte record header says how long its packet
is, so record k+1 starts where record k ends. Instead of walking the chain packet by packet, the
reader marks every 4-byte position whose value could be the seconds of a record header (within a
window around the first record's time), keeps the candidates whose lengths are plausible
(captured <= original <= 256 KiB, sub-second part in range) and checks in one comparison that
each candidate's end is the next candidate. Where that check fails, a candidate that lies inside
a packet (a payload that happens to look like a header) is skipped by jumping to the end the
previous record names; where the named end is not a plausible header, the file is damaged
there and the readable prefix is what is returned, with the damage's offset and reason.

Decoding. For every record the first bytes of the frame (up to the end of the testbed header)
are gathered into a row of a byte matrix and viewed through a numpy structured dtype: link
layer (Ethernet, Linux cooked v1/v2 or raw IP), IPv4, UDP and the 32-byte header of
agents/wire.py, whose fields, offsets and sizes come from its layout table, wire.HEADER
(HEADER_DTYPE). Rows whose IPv4 header has options are gathered again at their own offset. A
packet is testbed traffic when it is IPv4/UDP, not a later IP fragment, captured far enough to
hold the header, and carries the magic "TB" with a known version; everything else is counted as
other traffic. pcapng files are reported (convert with `editcap -F pcap`), not read.

Events. The body of a CAUSAL_DATA message (and of a CAUSAL_RECOVERY reply) starts with the number
of event records it holds (wire.EVENT_COUNT, docs/WIRE.md), so fragment 0 alone tells how many
events the message carries: the `events` column, read with one more gather of those two bytes
for the rows that have them. It is 0 for every other packet, and for a fragment 0 whose payload
(as sent, or as captured) is shorter than the count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from agents.wire import BASE_LEN, EVENT_COUNT, HEADER, MAGIC, VERSION, MessageType

GLOBAL_HEADER = 24
RECORD_HEADER = 16
MAX_RECORD = 262144
PCAPNG_MAGIC = 0x0A0D0D0A
# magic as read little-endian -> (byte order of the file, nanoseconds per sub-second unit)
MAGICS = {0xA1B2C3D4: ("<", 1000), 0xD4C3B2A1: (">", 1000), 0xA1B23C4D: ("<", 1), 0x4D3CB2A1: (">", 1)}
# link type -> (link header length, offset of the ethertype in it, or None for raw IP)
LINK_TYPES = {1: (14, 12), 113: (16, 14), 276: (20, 0), 101: (0, None), 228: (0, None), 12: (0, None)}
TB_MAGIC = int.from_bytes(MAGIC, "big")  # the magic as HEADER_DTYPE reads it
IPV4 = 0x0800
UDP = 17
#: the message types whose body starts with an event record count (the `events` column)
EVENT_TYPES = (int(MessageType.CAUSAL_DATA), int(MessageType.CAUSAL_RECOVERY))

#: the base header of agents/wire.py as numpy reads it, derived from its layout table: every field a
#: big-endian unsigned integer of its size, the 2-byte magic too (compared with TB_MAGIC)
HEADER_DTYPE = np.dtype({"names": [f.name for f in HEADER], "formats": [f">u{f.size}" for f in HEADER],
                         "offsets": [f.offset for f in HEADER], "itemsize": BASE_LEN})

#: the packet columns, in order, with their numpy dtypes (the Spark schema in spark_analysis.schema)
COLUMNS = [
    ("ts_ns", np.int64), ("direction", np.int8), ("src_ip", np.int64), ("dst_ip", np.int64),
    ("sport", np.int32), ("dport", np.int32), ("type", np.int16), ("flags", np.int16), ("hops", np.int16),
    ("origin", np.int32), ("seq", np.int64), ("sender", np.int32), ("frag_index", np.int32),
    ("frag_count", np.int32), ("message_id", np.int64), ("frame_len", np.int32), ("header_len", np.int32),
    ("payload_len", np.int32), ("events", np.int32),
]


#: direction codes: a packet the capturing node received, sent, or forwarded as a router
DIR_IN, DIR_OUT, DIR_FORWARDED = 0, 1, 2


@dataclass
class PcapData:
    """The testbed packets of one file as numpy columns, and what else the file held."""

    columns: Dict[str, np.ndarray]
    records: int = 0          # pcap records read (testbed or not)
    other: int = 0            # records that are not testbed messages
    link_type: int = 0
    damage: List[Dict[str, object]] = field(default_factory=list)  # {"offset", "reason"}
    bytes_read: int = 0

    @property
    def packets(self) -> int:
        return len(self.columns["ts_ns"])


def _empty(records: int = 0, other: int = 0, link_type: int = 0, damage=None, size: int = 0) -> PcapData:
    return PcapData({name: np.zeros(0, dtype) for name, dtype in COLUMNS}, records, other, link_type,
                    list(damage or []), size)


def read_file(path: str, node_id: int = 0, local=None) -> PcapData:
    with open(path, "rb") as fh:
        data = fh.read()
    return read_bytes(data, node_id, local)


def local_addresses(cidrs) -> np.ndarray:
    """The IPv4 addresses (as integers) a node receives on: its own, its subnets' broadcast
    addresses and 255.255.255.255; cidrs like ["10.0.0.2/24", ...]."""
    import ipaddress
    out = {0xFFFFFFFF}
    for cidr in cidrs:
        intf = ipaddress.ip_interface(cidr)
        out.add(int(intf.ip))
        out.add(int(intf.network.broadcast_address))
    return np.array(sorted(out), dtype=np.int64)


def read_bytes(data, node_id: int = 0, local=None) -> PcapData:
    """Decode a whole pcap file held in memory (bytes, memoryview or a uint8 array).

    node_id is the capturing node's id: packets whose header names it as the sender are outbound
    (DIR_OUT). Of the others, those addressed to one of `local` (local_addresses()) are inbound and
    the rest were forwarded by the node as a router (DIR_FORWARDED); without `local` all are
    inbound."""
    buf = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    n = len(buf)
    if n < GLOBAL_HEADER:
        return _empty(damage=[{"offset": 0, "reason": f"file of {n} bytes is shorter than the pcap header"}],
                      size=n)
    magic = int(buf[:4].view("<u4")[0])
    if magic == PCAPNG_MAGIC:
        return _empty(damage=[{"offset": 0, "reason": "pcapng is not read: convert it with editcap -F pcap"}],
                      size=n)
    if magic not in MAGICS:
        return _empty(damage=[{"offset": 0, "reason": f"not a pcap file (magic 0x{magic:08x})"}], size=n)
    order, frac_ns = MAGICS[magic]
    u4 = np.dtype(order + "u4")
    link_type = int(buf[20:24].view(u4)[0]) & 0x0FFFFFFF
    if link_type not in LINK_TYPES:
        return _empty(damage=[{"offset": 20, "reason": f"link type {link_type} is not read "
                                                       f"(Ethernet, Linux cooked and raw IP are)"}],
                      link_type=link_type, size=n)
    offsets, damage = record_offsets(buf, order, frac_ns)
    return decode_records(buf, offsets, order, frac_ns, link_type, node_id, damage, local)


def record_offsets(buf: np.ndarray, order: str, frac_ns: int):
    """The offsets of the records of the readable prefix, and the damage found (a list)."""
    n = len(buf)
    u4 = np.dtype(order + "u4")
    damage: List[Dict[str, object]] = []
    if n == GLOBAL_HEADER:
        return np.zeros(0, np.int64), damage
    if n < GLOBAL_HEADER + RECORD_HEADER:
        return np.zeros(0, np.int64), [{"offset": GLOBAL_HEADER, "reason": "truncated record header"}]
    first = int(buf[GLOBAL_HEADER:GLOBAL_HEADER + 4].view(u4)[0])
    lo = max(first - 86400, 0)
    hi = min(first + (1 << 22), 0xFFFFFFFF)  # about 48 days after the first record
    last_start = n - RECORD_HEADER  # a header must fit
    # The seconds' most significant byte hardly changes within a capture: one byte comparison over
    # the file finds the few positions worth reading as a whole header field.
    top_at = 3 if order == "<" else 0
    top = buf[GLOBAL_HEADER + top_at:last_start + 1 + top_at]
    top_lo, top_hi = lo >> 24, hi >> 24
    if top_lo == top_hi:
        hit = np.flatnonzero(top == top_lo)
    else:
        hit = np.flatnonzero((top - np.uint8(top_lo)) <= np.uint8(top_hi - top_lo))
    cand = hit.astype(np.int64) + GLOBAL_HEADER
    # each candidate's would-be record header, as four integers: seconds, sub-second, captured, original
    secs, frac, incl, orig = _gather(buf, cand, RECORD_HEADER).view(u4).reshape(-1, 4).T.astype(np.int64)
    plausible = ((secs >= lo) & (secs <= hi) & (frac < (1_000_000_000 // frac_ns)) & (incl <= orig)
                 & (orig <= MAX_RECORD))
    cand = cand[plausible]
    incl = incl[plausible]
    if not len(cand) or cand[0] != GLOBAL_HEADER:
        return np.zeros(0, np.int64), [{"offset": GLOBAL_HEADER, "reason": "first record header is not plausible"}]
    ends = cand + RECORD_HEADER + incl.astype(np.int64)
    keep = []
    i = 0
    stop_at = None
    while True:
        mismatch = np.flatnonzero(ends[i:-1] != cand[i + 1:])
        if not len(mismatch):
            keep.append(np.arange(i, len(cand)))
            break
        k = i + int(mismatch[0])
        keep.append(np.arange(i, k + 1))
        expected = int(ends[k])
        j = int(np.searchsorted(cand, expected))
        if j < len(cand) and cand[j] == expected:
            i = j  # the candidates in between lay inside record k: not headers
            continue
        stop_at = expected
        break
    idx = np.concatenate(keep)
    offsets = cand[idx]
    last_end = int(ends[idx[-1]])
    if stop_at is not None and stop_at < n:
        if n - stop_at < RECORD_HEADER:
            damage.append({"offset": stop_at, "reason": f"truncated record header ({n - stop_at} bytes)"})
        else:
            damage.append({"offset": stop_at, "reason": "record header is not plausible (corrupt file); "
                                                        "the records before it are read"})
    elif last_end > n:
        offsets = offsets[:-1]
        damage.append({"offset": int(cand[idx[-1]]),
                       "reason": f"truncated record: {last_end - int(cand[idx[-1]])} bytes announced, "
                                 f"{n - int(cand[idx[-1]])} present"})
    elif last_end < n:
        reason = (f"truncated record header ({n - last_end} bytes)" if n - last_end < RECORD_HEADER
                  else "record header is not plausible (corrupt file); the records before it are read")
        damage.append({"offset": last_end, "reason": reason})
    return offsets.astype(np.int64), damage


def _layout(order: str, l2_len: int, ethertype_at: Optional[int]) -> np.dtype:
    """A structured dtype over the bytes from a record's start to the end of the testbed header."""
    names, formats, offsets = [], [], []

    def add(name, fmt, off):
        names.append(name)
        formats.append(fmt)
        offsets.append(off)

    add("ts_sec", order + "u4", 0)
    add("ts_frac", order + "u4", 4)
    add("incl", order + "u4", 8)
    add("orig", order + "u4", 12)
    frame = RECORD_HEADER
    if ethertype_at is not None:
        add("ethertype", ">u2", frame + ethertype_at)
    ip = frame + l2_len
    add("vihl", "u1", ip)
    add("fragoff", ">u2", ip + 6)
    add("proto", "u1", ip + 9)
    add("src", ">u4", ip + 12)
    add("dst", ">u4", ip + 16)
    _udp_tb_fields(add, ip + 20)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ip + 20 + 8 + BASE_LEN})


def _udp_tb_fields(add, udp: int) -> None:
    add("sport", ">u2", udp)
    add("dport", ">u2", udp + 2)
    add("ulen", ">u2", udp + 4)
    for name in HEADER_DTYPE.names:
        fmt, offset = HEADER_DTYPE.fields[name][:2]
        add(name, fmt, udp + 8 + offset)


_UDP_TB = None


def _udp_tb_layout() -> np.dtype:
    global _UDP_TB
    if _UDP_TB is None:
        names, formats, offsets = [], [], []
        _udp_tb_fields(lambda a, b, c: (names.append(a), formats.append(b), offsets.append(c)), 0)
        _UDP_TB = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": 8 + BASE_LEN})
    return _UDP_TB


def _gather(buf: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """Rows of `width` bytes from each start (a copy); bytes past the file's end read as zero."""
    n = len(buf)
    rows = np.zeros((len(starts), width), dtype=np.uint8)
    inside = starts <= n - width
    if n >= width:
        windows = np.lib.stride_tricks.sliding_window_view(buf, width)
        if inside.all():
            return windows[starts]
        rows[inside] = windows[starts[inside]]
    tail_start = max(n - width, 0)
    tail = np.zeros(2 * width, dtype=np.uint8)
    tail[:n - tail_start] = buf[tail_start:]
    tail_windows = np.lib.stride_tricks.sliding_window_view(tail, width)
    rows[~inside] = tail_windows[starts[~inside] - tail_start]
    return rows


def decode_records(buf: np.ndarray, offsets: np.ndarray, order: str, frac_ns: int, link_type: int,
                   node_id: int, damage, local=None) -> PcapData:
    records = len(offsets)
    if not records:
        return _empty(0, 0, link_type, damage, len(buf))
    l2_len, ethertype_at = LINK_TYPES[link_type]
    layout = _layout(order, l2_len, ethertype_at)
    rows = _gather(buf, offsets, layout.itemsize)
    rec = rows.view(layout).ravel()
    incl = rec["incl"].astype(np.int64)
    vihl = rec["vihl"]
    ihl = (vihl & 0x0F).astype(np.int64) * 4
    is_ip = (vihl >> 4) == 4
    if ethertype_at is not None:
        is_ip &= rec["ethertype"] == IPV4
    ok = is_ip & (rec["proto"] == UDP) & ((rec["fragoff"] & 0x1FFF) == 0) & (ihl >= 20)
    udp_tb = {name: rec[name] for name in _udp_tb_layout().names}
    options = ok & (ihl > 20)
    if options.any():
        # IPv4 with options: the UDP and testbed headers start later; gather those rows again
        where = np.flatnonzero(options)
        again = _gather(buf, offsets[where] + RECORD_HEADER + l2_len + ihl[where], _udp_tb_layout().itemsize)
        fixed = again.view(_udp_tb_layout()).ravel()
        udp_tb = {name: col.copy() for name, col in udp_tb.items()}
        for name in udp_tb:
            udp_tb[name][where] = fixed[name]
    need = l2_len + ihl + 8 + BASE_LEN
    ok &= (incl >= need) & (udp_tb["magic"] == TB_MAGIC) & (udp_tb["version"] == VERSION)
    ok &= udp_tb["header_len"] >= BASE_LEN
    sel = np.flatnonzero(ok)
    if len(sel) == records:
        sel = slice(None)
    sender = udp_tb["sender"][sel].astype(np.int32)
    dst = rec["dst"][sel].astype(np.int64)
    direction = np.where(sender == node_id, DIR_OUT, DIR_IN).astype(np.int8)
    if local is not None and len(local):
        direction[(direction == DIR_IN) & ~np.isin(dst, local)] = DIR_FORWARDED
    payload = udp_tb["ulen"][sel].astype(np.int32) - 8 - udp_tb["header_len"][sel].astype(np.int32)
    mtype = udp_tb["type"][sel].astype(np.int16)
    frag_index = udp_tb["frag_index"][sel].astype(np.int32)
    events = _event_counts(buf, offsets[sel], l2_len + ihl[sel] + 8 + udp_tb["header_len"][sel].astype(np.int64),
                           incl[sel], payload, mtype, frag_index)
    columns = {
        "ts_ns": rec["ts_sec"][sel].astype(np.int64) * 1_000_000_000 + rec["ts_frac"][sel].astype(np.int64) * frac_ns,
        "direction": direction,
        "src_ip": rec["src"][sel].astype(np.int64),
        "dst_ip": dst,
        "sport": udp_tb["sport"][sel].astype(np.int32),
        "dport": udp_tb["dport"][sel].astype(np.int32),
        "type": mtype,
        "flags": udp_tb["flags"][sel].astype(np.int16),
        "hops": udp_tb["hops"][sel].astype(np.int16),
        "origin": udp_tb["origin"][sel].astype(np.int32),
        "seq": udp_tb["sequence"][sel].astype(np.int64),
        "sender": sender,
        "frag_index": frag_index,
        "frag_count": udp_tb["frag_count"][sel].astype(np.int32),
        "message_id": udp_tb["message_id"][sel].astype(np.int64),
        "frame_len": rec["orig"][sel].astype(np.int32),
        "header_len": udp_tb["header_len"][sel].astype(np.int32),
        "payload_len": np.maximum(payload, 0),
        "events": events,
    }
    kept = records if isinstance(sel, slice) else len(sel)
    return PcapData(columns, records, records - kept, link_type, list(damage), len(buf))


def _event_counts(buf: np.ndarray, offsets: np.ndarray, payload_at: np.ndarray, incl: np.ndarray,
                  payload: np.ndarray, mtype: np.ndarray, frag_index: np.ndarray) -> np.ndarray:
    """The event record count of every CAUSAL_DATA or CAUSAL_RECOVERY fragment 0 (its payload's first
    bytes, wire.EVENT_COUNT), 0 for the other packets. payload_at is where the payload starts in the
    frame; a payload shorter than the count, as sent (payload) or as captured (incl), gives 0."""
    counts = np.zeros(len(offsets), np.int32)
    width = EVENT_COUNT.size
    has = np.isin(mtype, EVENT_TYPES) & (frag_index == 0) & (payload >= width) & (incl >= payload_at + width)
    where = np.flatnonzero(has)
    if len(where):
        rows = _gather(buf, offsets[where] + RECORD_HEADER + payload_at[where], width)
        counts[where] = rows.view(f">u{width}").ravel()
    return counts


def node_of(path: str) -> str:
    """The node a run directory's pcap belongs to: pcap/<node>.pcap, or pcap/<node>.<interface>.pcap
    while a node with several interfaces is captured (node names have no dot)."""
    name = os.path.basename(path.rstrip("/"))
    return (name[:-5] if name.endswith(".pcap") else name).split(".", 1)[0]
