"""A run's collected rows in integer codes: nodes and message types numbered once, each message
(origin, type, seq) one int64 key, so the measures, the checks' history and the Parquet tables
work with numpy on exact int64 nanoseconds, no Python object per row (RunData; the measures on
them are spark_analysis.metrics.Collected's)."""

from __future__ import annotations

from functools import cached_property
from typing import Dict, List, Optional, Tuple

import numpy as np

from agents.wire import MessageType

from .checks.arrays import lookup, unique
from .sent import sent_frame


def type_name(code) -> str:
    """The MessageType name of a type code, TYPE_<code> for a code no MessageType has."""
    try:
        return MessageType(int(code)).name
    except (ValueError, TypeError):
        return f"TYPE_{code}"


_SEQ_BITS, _TYPE_BITS = 31, 12
#: type codes of names that are not MessageType names (never equal to a wire type)
FOREIGN_TYPE = 1 << 11


def _np(col, fill=0, dtype=np.int64) -> np.ndarray:
    """A numeric Arrow column as numpy (nulls as `fill`)."""
    import pyarrow.compute as pc
    if col.null_count:
        col = pc.fill_null(col, fill)
    return np.asarray(col.to_numpy(), dtype=dtype)


def _valid(col) -> np.ndarray:
    if not col.null_count:
        return np.ones(len(col), bool)
    return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)


class Names:
    """A code table of names (nodes or message types); new names get the next codes."""

    def __init__(self, names=(), codes=None) -> None:
        self.names: List[str] = []
        self.code: Dict[str, int] = {}
        for i, n in enumerate(names):
            self.add(n, None if codes is None else codes[i])

    def add(self, name: str, code: Optional[int] = None) -> int:
        if name not in self.code:
            self.code[name] = len(self.names) if code is None else code
            self.names.append(name)
        return self.code[name]

    def encode(self, col) -> np.ndarray:
        """Codes of a string Arrow column (-1 for null), one dictionary lookup per distinct name
        and chunk; a dictionary column (the local engine's tasks encode their names) is not
        hashed again."""
        import pyarrow as pa
        import pyarrow.compute as pc
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        out = []
        for chunk in chunks:
            if not pa.types.is_dictionary(chunk.type):
                chunk = pc.dictionary_encode(chunk)
            lut = np.array([-1 if n is None else self.add(n) for n in chunk.dictionary.to_pylist()] + [-1], np.int64)
            out.append(lut[_np(chunk.indices, fill=len(lut) - 1)])
        return np.concatenate(out) if len(out) > 1 else (out[0] if out else np.zeros(0, np.int64))


def _type_codes(col, extra: Dict[int, str]) -> np.ndarray:
    """Type names -> MessageType values; other names -> codes from FOREIGN_TYPE up (named in extra)."""
    known = {t.name: int(t) for t in MessageType}
    names = Names()
    codes = names.encode(col)
    lut = np.empty(len(names.names) + 1, np.int64)
    for i, n in enumerate(names.names):
        if n in known:
            lut[i] = known[n]
        else:
            code = next((c for c, name in extra.items() if name == n), None)
            if code is None:
                code = FOREIGN_TYPE + len(extra)
                extra[code] = n
            lut[i] = code
    lut[-1] = -1
    return lut[codes]


def _message_keys(origin: np.ndarray, typ: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """One int64 per (origin, type, seq); keys of rows that do not fit are made unique negatives
    (such a message matches nothing, which only a corrupt log produces)."""
    fits = (seq >= 0) & (seq < (1 << _SEQ_BITS)) & (typ >= 0) & (typ < (1 << _TYPE_BITS)) & (origin >= 0) & (
        origin < (1 << 20))
    key = (origin.astype(np.int64) << (_SEQ_BITS + _TYPE_BITS)) | (typ.astype(np.int64) << _SEQ_BITS) | seq.astype(
        np.int64)
    if not fits.all():
        key = np.where(fits, key, -1 - np.arange(len(key), dtype=np.int64))
    return key


def group_stats(gid: np.ndarray, n_groups: int, values: np.ndarray, valid: np.ndarray):
    """Per group: count, sum of valid values, count of valid, max of valid (nan when none)."""
    cnt = np.bincount(gid, minlength=n_groups)
    nv = np.bincount(gid[valid], minlength=n_groups)
    total = np.bincount(gid[valid], weights=values[valid].astype(np.float64), minlength=n_groups)
    mx = np.full(n_groups, -np.inf)
    np.maximum.at(mx, gid[valid], values[valid].astype(np.float64)) if valid.any() else None
    mx[nv == 0] = np.nan
    return cnt, total, nv, mx


class RunData:
    """One run's collected rows in integer codes.

    Nodes: codes index `nodes.names` (the manifest's nodes by id first). Messages: the distinct
    (origin, type, seq) of the application sends are numbered 0..U-1 (`s_msg` per send).

    Built in two steps: the constructor codes the sends, deliveries and the wire's own
    transmissions (all the property checks need), `join_receptions` then pairs each send's
    intended receivers with the receptions (what the message-level measures need), so the checks
    can start before that join. Codes the join adds (a capture's node or a wire origin no log
    names) come after every code of the first step."""

    def __init__(self, run, sends, deliveries, wire, packets, t0: int, sent=None) -> None:
        """sent: the run's sent counts (pandas, SENT_COLUMNS; `run` may be left out), none when None."""
        import pyarrow as pa

        self.run_id = run.run_id
        #: every send event of the run, relays included, per (node, type, relayed): messages,
        #: transmissions, datagrams, bytes (pandas)
        self.sent = sent_frame(None if sent is None else sent.assign(run=run.run_id)).drop(columns=["run"])
        self.t0 = t0
        ids = run.node_ids
        self.nodes = Names(sorted(ids, key=lambda n: ids[n]))
        self._by_wire_id = {int(v): self.nodes.code[k] for k, v in ids.items()}
        self.extra_types: Dict[int, str] = {}

        # application sends
        self.s_origin = self.nodes.encode(sends.column("origin"))
        self.s_type = _type_codes(sends.column("type"), self.extra_types)
        self.s_seq = _np(sends.column("seq"))
        self.s_t = _np(sends.column("t"))
        self.s_key = _message_keys(self.s_origin, self.s_type, self.s_seq)
        self.m_key, self.s_msg = unique(self.s_key, return_inverse=True)
        self.S = len(self.s_key)
        # intended receivers: one (send, node) pair per entry of each send's list
        intended = sends.column("intended")
        intended = intended.combine_chunks() if isinstance(intended, pa.ChunkedArray) and intended.num_chunks \
            else (pa.array([], pa.list_(pa.string())) if isinstance(intended, pa.ChunkedArray) else intended)
        import pyarrow.compute as pc
        self.e_send = _np(pc.list_parent_indices(intended)) if len(intended) else np.zeros(0, np.int64)
        self.e_node = self.nodes.encode(pc.list_flatten(intended)) if len(intended) else np.zeros(0, np.int64)
        named = self.e_node >= 0
        self.e_send, self.e_node = self.e_send[named], self.e_node[named]
        self.s_extra = sends.drop_columns(["run", "origin", "seq", "type", "t", "intended"])

        # deliveries
        self.d_node = self.nodes.encode(deliveries.column("node"))
        self.d_origin = self.nodes.encode(deliveries.column("origin"))
        self.d_type = _type_codes(deliveries.column("type"), self.extra_types)
        self.d_seq = _np(deliveries.column("seq"))
        self.d_seq_valid = _valid(deliveries.column("seq"))
        self.d_t = _np(deliveries.column("t"))
        self.d_key = _message_keys(self.d_origin, self.d_type, np.where(self.d_seq_valid, self.d_seq, -1))
        self.d_msg = lookup(self.m_key, self.d_key)
        self.d_produced = _np(deliveries.column("produced_ns"))
        self.d_produced_valid = _valid(deliveries.column("produced_ns"))
        self.d_hops = _np(deliveries.column("hops"))
        self.d_hops_valid = _valid(deliveries.column("hops"))
        self.d_accepted = deliveries.column("accepted")
        #: pair keys of (message, node) codes of this step: message * NN + node
        self.NN = len(self.nodes.names) + 1

        # the wire's own transmissions
        w_origin = self._wire_origin(wire.column("origin"))
        w_type = _np(wire.column("type"))
        self.w_key = _message_keys(w_origin, w_type, _np(wire.column("seq")))
        self.w_t = _np(wire.column("t"))
        self.w_t_valid = _valid(wire.column("t"))
        self.w_tx = _np(wire.column("tx"))
        self.packets = packets

        # wire send time per message: the first own transmission any capture shows, else the log's
        U = len(self.m_key)
        w_msg = lookup(self.m_key, self.w_key)
        first = np.full(U, np.iinfo(np.int64).max)
        ok = self.w_t_valid & (w_msg >= 0)
        np.minimum.at(first, w_msg[ok], self.w_t[ok])
        has = first != np.iinfo(np.int64).max
        self.send_t = np.where(has[self.s_msg], first[self.s_msg], self.s_t) if self.S else np.zeros(0, np.int64)

    def _wire_origin(self, col) -> np.ndarray:
        """Node codes of wire node ids (an id no manifest names becomes node "#id")."""
        raw = _np(col, fill=-1)
        uniq, inv = unique(raw, return_inverse=True)
        lut = np.array([self._by_wire_id[int(u)] if int(u) in self._by_wire_id else self.nodes.add(f"#{int(u)}")
                        for u in uniq], np.int64)
        return lut[inv] if len(raw) else np.zeros(0, np.int64)

    def join_receptions(self, receptions) -> None:
        """The receptions at each capture, and each (send, intended receiver) pair's first complete
        copy at that receiver (p_*)."""
        self.r_node = self.nodes.encode(receptions.column("node"))
        self.r_type = _np(receptions.column("type"))
        self.r_msg = lookup(self.m_key, _message_keys(self._wire_origin(receptions.column("origin")), self.r_type,
                                                      _np(receptions.column("seq"))))
        self.r_t = _np(receptions.column("t"))
        self.r_complete = _np(receptions.column("frags")) >= _np(receptions.column("frag_count"))
        self.r_dups = _np(receptions.column("copies")) - _np(receptions.column("frags"))

        # pairs: (send, intended receiver) -> the first complete copy at that receiver; the
        # receptions may name nodes the first step did not, so these keys take their own width
        NR = len(self.nodes.names) + 1
        r_ok = self.r_msg >= 0
        r_pair = self.r_msg[r_ok] * NR + self.r_node[r_ok]
        order = np.argsort(r_pair, kind="stable")
        r_pair = r_pair[order]
        keep = np.ones(len(r_pair), bool)
        keep[1:] = r_pair[1:] != r_pair[:-1]
        r_pair = r_pair[keep]
        r_t = self.r_t[r_ok][order][keep]
        r_complete = self.r_complete[r_ok][order][keep]
        hit = lookup(r_pair, self.s_msg[self.e_send] * NR + self.e_node) if len(self.e_send) else np.zeros(0, int)
        self.p_send = self.e_send
        self.p_node = self.e_node
        self.p_reached = hit >= 0
        self.p_reached[self.p_reached] = r_complete[hit[self.p_reached]]
        # (a run whose captures hold no testbed message, a protocol without the wire header: none reached)
        self.p_recv_t = np.where(self.p_reached, r_t[np.maximum(hit, 0)], 0) if len(hit) and len(r_t) \
            else np.zeros(len(hit), np.int64)
        self.p_latency = (self.p_recv_t - self.send_t[self.p_send]) if len(hit) else np.zeros(0, np.int64)
        self.p_type = self.s_type[self.p_send] if len(hit) else np.zeros(0, np.int64)
        self.p_msg = self.s_msg[self.p_send] if len(hit) else np.zeros(0, np.int64)

    @cached_property
    def first_send(self) -> np.ndarray:
        """Per message code, the row of its first send event (a key that repeats: the first)."""
        first = np.full(len(self.m_key), -1, np.int64)
        if self.S:
            order = np.argsort(self.s_msg, kind="stable")
            starts = np.ones(self.S, bool)
            starts[1:] = self.s_msg[order][1:] != self.s_msg[order][:-1]
            first[self.s_msg[order][starts]] = order[starts]
        return first

    @cached_property
    def delivered_messages(self) -> Tuple[np.ndarray, np.ndarray]:
        """(keys, code per delivery): every delivered message (sent or not) numbered, for
        distinct (message, node) counts; computed once, by whichever measure asks first."""
        return unique(self.d_key, return_inverse=True)

    @property
    def dm_key(self) -> np.ndarray:
        return self.delivered_messages[0]

    @property
    def d_any(self) -> np.ndarray:
        return self.delivered_messages[1]

    # -- names ---------------------------------------------------------------------------------

    def type_label(self, code: int) -> str:
        return self.extra_types.get(int(code)) or type_name(code)

    def node_label(self, code: int) -> Optional[str]:
        return self.nodes.names[int(code)] if 0 <= code < len(self.nodes.names) else None

    def frames(self, types=None):
        """(sends, deliveries) as pandas frames with names, of the given type codes (all when
        None): for measures written on frames (the protocol analyses), on the few rows they need.
        sends: the application sends (hop 0, the origin's own) with their columns and `intended`;
        deliveries: node, origin, seq, type, t, produced_ns, hops, accepted (seq, produced_ns and
        hops nullable Int64)."""
        import pandas as pd
        names = np.array(self.nodes.names + [None], dtype=object)
        ss = np.ones(self.S, bool) if types is None else np.isin(self.s_type, list(types))
        ds = np.ones(len(self.d_t), bool) if types is None else np.isin(self.d_type, list(types))
        si, di = np.flatnonzero(ss), np.flatnonzero(ds)
        label = np.vectorize(lambda c: self.type_label(c) if c >= 0 else None, otypes=[object])
        sends = self.s_extra.take(si).to_pandas()
        sends.insert(0, "origin", names[self.s_origin[si]])
        sends.insert(1, "seq", self.s_seq[si])
        sends.insert(2, "type", label(self.s_type[si]) if len(si) else np.zeros(0, object))
        sends.insert(3, "t", self.s_t[si])
        starts = np.searchsorted(self.e_send, si)
        ends = np.searchsorted(self.e_send, si, side="right")
        sends["intended"] = [list(names[self.e_node[a:b]]) for a, b in zip(starts, ends)]
        deliveries = pd.DataFrame({
            "node": names[self.d_node[di]], "origin": names[self.d_origin[di]],
            "seq": pd.array(np.where(self.d_seq_valid[di], self.d_seq[di], 0), "Int64"),
            "type": label(self.d_type[di]) if len(di) else np.zeros(0, object), "t": self.d_t[di],
            "produced_ns": pd.arrays.IntegerArray(self.d_produced[di], ~self.d_produced_valid[di]),
            "hops": pd.arrays.IntegerArray(self.d_hops[di], ~self.d_hops_valid[di]),
            "accepted": self.d_accepted.take(di).to_pandas() if len(di) else pd.Series([], dtype=object)})
        deliveries.loc[~self.d_seq_valid[di], "seq"] = pd.NA
        return sends, deliveries
