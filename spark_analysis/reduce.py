"""Per-capture reduction: what the metrics need from one pcap, computed where the file is decoded.

Every measure of the analysis groups packets by keys that include the capturing node (a
reception is a node's; a wire send is seen only in the origin's own capture; packet counts are
per node), so each capture can be reduced on its own, in the Spark task that decodes it, with
numpy. Spark then joins and aggregates these small tables instead of shuffling one row per
packet: at 10 million packets that is the difference between minutes and seconds.

From the packet columns of one capture (spark_analysis.pcapreader.COLUMNS):
- receptions: per message (origin, seq, type) that arrived at this node, not ACKs: the time
  the last fragment's first copy arrived (`t`), the distinct fragments seen, all copies, and the
  largest fragment count the headers announce;
- sends: per message this node transmitted: its first own transmission (origin == sender, hop 0,
  not a retransmission, not an ACK; `t`, null when there is none) and the number of data
  transmissions of fragment 0 (`tx`, relays and retransmissions included: RMR counts them);
- counts: per (type, direction, second since t0): packets, bytes, header bytes (Ethernet, IPv4,
  UDP and the testbed header), retransmissions and relayed packets.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from agents.wire import Flags, MessageType

from .pcapreader import DIR_IN, DIR_OUT

#: the payload-carrying message types (the rest are control, headers and pulls)
DATA_TYPES = (MessageType.PROBE, MessageType.ABC_DATA, MessageType.GOSSIP_KNOWLEDGE, MessageType.CAUSAL_DATA)
DATA_TYPE_CODES = np.array([int(t) for t in DATA_TYPES], dtype=np.int16)
#: payload-carrying types whose application messages travel inside them as records and are logged
#: apart (a causal gossip message carries events, logged as CAUSAL_EVENT sends and deliveries): the
#: checks judge the records, never the carrier, which nobody delivers as such
CARRIER_TYPES = (MessageType.CAUSAL_DATA,)
L2_L3_L4_HEADERS = 14 + 20 + 8
ACK = int(MessageType.ACK)
RETRANSMISSION = int(Flags.RETRANSMISSION)
RELAYED = int(Flags.RELAYED)


def _run_starts(sorted_keys: List[np.ndarray]) -> np.ndarray:
    """The start of each run of equal key tuples in rows already sorted by those keys."""
    n = len(sorted_keys[0])
    change = np.zeros(n, bool)
    if n:
        change[0] = True
        for k in sorted_keys:
            change[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(change)


def _groups(keys: List[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """(order, starts): the permutation sorting rows by the keys (first key most significant)
    and the start of each group of equal keys in that order."""
    order = np.lexsort(keys[::-1]) if len(keys[0]) else np.zeros(0, np.int64)
    return order, _run_starts([k[order] for k in keys])


def receptions(c: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    mask = (c["direction"] == DIR_IN) & (c["type"] != ACK)
    origin, seq, typ = c["origin"][mask], c["seq"][mask], c["type"][mask]
    frag, ts, fc = c["frag_index"][mask], c["ts_ns"][mask], c["frag_count"][mask]
    # per fragment: first copy, copies, announced count
    order, starts = _groups([origin, seq, typ, frag])
    first = np.minimum.reduceat(ts[order], starts) if len(starts) else np.zeros(0, np.int64)
    copies = np.diff(np.append(starts, len(order)))
    fcount = np.maximum.reduceat(fc[order], starts) if len(starts) else np.zeros(0, np.int32)
    o, s, t = origin[order][starts], seq[order][starts], typ[order][starts]
    m = _run_starts([o, s, t])  # per message: the fragments are already sorted by origin, seq, type
    if not len(m):
        z = np.zeros(0, np.int64)
        return {"origin": z.astype(np.int32), "seq": z, "type": z.astype(np.int16), "t": z, "frags": z,
                "copies": z, "frag_count": z}
    return {"origin": o[m], "seq": s[m], "type": t[m], "t": np.maximum.reduceat(first, m),
            "frags": np.diff(np.append(m, len(starts))).astype(np.int64),
            "copies": np.add.reduceat(copies, m).astype(np.int64),
            "frag_count": np.maximum.reduceat(fcount, m).astype(np.int64)}


def sends(c: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    out_ = c["direction"] == DIR_OUT
    own = (out_ & (c["sender"] == c["origin"]) & (c["hops"] == 0) & ((c["flags"] & RETRANSMISSION) == 0)
           & (c["type"] != ACK))
    tx = out_ & (c["frag_index"] == 0) & np.isin(c["type"], DATA_TYPE_CODES)
    mask = own | tx
    origin, seq, typ, ts = c["origin"][mask], c["seq"][mask], c["type"][mask], c["ts_ns"][mask]
    own, tx = own[mask], tx[mask]
    order, starts = _groups([origin, seq, typ])
    if not len(starts):
        z = np.zeros(0, np.int64)
        return {"origin": z.astype(np.int32), "seq": z, "type": z.astype(np.int16), "t": z,
                "t_valid": np.zeros(0, bool), "tx": z}
    big = np.iinfo(np.int64).max
    first = np.minimum.reduceat(np.where(own[order], ts[order], big), starts)
    return {"origin": origin[order][starts], "seq": seq[order][starts], "type": typ[order][starts],
            "t": first, "t_valid": first != big,
            "tx": np.add.reduceat(tx[order].astype(np.int64), starts)}


def counts(c: Dict[str, np.ndarray], t0: int) -> Dict[str, np.ndarray]:
    second = np.floor_divide(c["ts_ns"] - t0, 1_000_000_000)
    typ, direction = c["type"], c["direction"]
    order, starts = _groups([typ, direction, second])
    if not len(starts):
        z = np.zeros(0, np.int64)
        return {"type": z.astype(np.int16), "direction": z.astype(np.int8), "second": z, "packets": z,
                "bytes": z, "header_bytes": z, "retransmissions": z, "relayed": z}

    def total(values) -> np.ndarray:
        return np.add.reduceat(np.asarray(values, np.int64)[order], starts)

    flags = c["flags"]
    return {"type": typ[order][starts], "direction": direction[order][starts], "second": second[order][starts],
            "packets": np.diff(np.append(starts, len(order))).astype(np.int64),
            "bytes": total(c["frame_len"]), "header_bytes": total(c["header_len"].astype(np.int64) + L2_L3_L4_HEADERS),
            "retransmissions": total((flags & RETRANSMISSION) != 0), "relayed": total((flags & RELAYED) != 0)}
