"""The history the property checks read: its input contract (`History`) and its encoding into
integer codes, sorted first deliveries and expected pairs (`Prepared`), done once and shared by
every check.

Input contract
--------------
`History(sends, deliveries, nodes, down={}, end_ns=None, contiguous_order=False)`:

- `sends`: pandas DataFrame, one row per application-level send:
    - `msg` (str): unique id, conventionally "<origin>:<seq>";
    - `origin` (str): the sending node; `seq` (int): per-origin 1, 2, ... in sending order;
    - `t` (int64 ns): send time;
    - `eligible` (tuple of node names): the nodes that should receive the message at send time
      (by predicate or group); may be empty. None counts as empty, a bare string as one name;
    - `order` (nullable int): the number a sequencer gave the message;
    - `sequencer` (nullable str): which sequencer numbered it; null = the one global sequencer;
    - `priority` (nullable int): larger = more urgent;
    - `vc` (None or tuple of ints): vector timestamp at send, index i = node i of `nodes`;
    - `deps` (None or tuple of msg ids): messages the sender declares the message depends on.
  Any of order / sequencer / priority / vc / deps may be missing: treated as all null.
- `deliveries`: DataFrame, one row per delivery to the application: `msg` (str), `node` (str),
  `t` (int64 ns). A delivered msg absent from `sends` is a phantom. Deliveries at one node are
  ordered by `t`, ties by their row order in the frame.
- `nodes`: all nodes of the run, in the order `vc` uses. Names met elsewhere (origins, eligible,
  deliveries, down) are added after them.
- `down`: node -> list of (start_ns, end_ns or None) intervals when the node was crashed or
  stopped, half-open [start, end); None = until the end of the run.
- `end_ns`: end of the run (after the quiet period); None = the latest time in the history.
- `contiguous_order`: require contiguity of sequencer numbers (the total-order-sequencer "hole"
  anomaly). A real run requires it when its manifest promises "contiguous-order"
  (spark_analysis.history.prepared_history).

Derived: a node is *correct* when it has no down interval. E(m), the nodes expected to deliver m,
is eligible(m) restricted to the nodes with no down interval overlapping [t_send(m), end_ns]. The
sender is in E(m) only if it lists itself; delivering its own message is never misrouted. A node
that was down before the send but restarted by then is up for the whole [t_send, end_ns], so it is
expected to deliver (a recovered node takes part again); a node down at any point after the send
is not expected, and if it delivers anyway that is fine (it was eligible).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from .arrays import I64, INT64_MAX, member, order_by, unique

__all__ = ["DELIVERY_REQUIRED", "SEND_OPTIONAL", "SEND_REQUIRED", "History", "Prepared", "expected_pairs", "prepare"]

SEND_REQUIRED = ("msg", "origin", "seq", "t", "eligible")
SEND_OPTIONAL = ("order", "sequencer", "priority", "vc", "deps")
DELIVERY_REQUIRED = ("msg", "node", "t")


@dataclass
class History:
    """A recorded run: see the module docstring for the contract."""

    sends: pd.DataFrame
    deliveries: pd.DataFrame
    nodes: List[str]
    down: Dict[str, List[Tuple[int, Optional[int]]]] = field(default_factory=dict)
    end_ns: Optional[int] = None
    contiguous_order: bool = False


# ----------------------------------------------------------------------------------------------
# preparation: integer codes, sorted first deliveries, expected pairs


def _names(v: Any) -> Tuple[Any, ...]:
    if v is None:
        return ()
    if isinstance(v, float) and math.isnan(v):
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


def _is_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return v is pd.NA or v is pd.NaT


def _nullable_int(df: pd.DataFrame, col: str) -> Tuple[np.ndarray, np.ndarray]:
    n = len(df)
    if col not in df.columns:
        return np.zeros(n, I64), np.zeros(n, bool)
    s = df[col]
    if s.dtype == object:
        s = s.map(lambda v: None if _is_null(v) else v)
    s = pd.to_numeric(s, errors="coerce")
    mask = s.notna().to_numpy()
    vals = np.zeros(n, I64)
    if mask.any():
        vals[mask] = s[mask].to_numpy().astype(I64)
    return vals, mask


class Prepared:
    """A history turned into integer codes once, shared by the checks (see `prepare`)."""

    def __init__(self, h: History):
        self.h = h
        sends = h.sends if h.sends is not None else pd.DataFrame()
        dels = h.deliveries if h.deliveries is not None else pd.DataFrame()
        if len(sends) == 0:
            sends = pd.DataFrame({c: pd.Series([], dtype=object) for c in SEND_REQUIRED})
        if len(dels) == 0:
            dels = pd.DataFrame({c: pd.Series([], dtype=object) for c in DELIVERY_REQUIRED})
        for c in SEND_REQUIRED:
            if c not in sends.columns:
                raise ValueError(f"sends lacks the column {c!r}")
        for c in DELIVERY_REQUIRED:
            if c not in dels.columns:
                raise ValueError(f"deliveries lacks the column {c!r}")
        M, D = len(sends), len(dels)
        # one factorization of all ids: the sent ones get codes 0..M-1 (when unique), phantoms
        # the next ones
        smsg = sends["msg"].astype(str)
        codes, uniq = pd.factorize(pd.concat([smsg, dels["msg"].astype(str)], ignore_index=True))
        if M and not np.array_equal(codes[:M], np.arange(M)):
            dup = smsg[smsg.duplicated()].unique()[:5]
            raise ValueError(f"sends has duplicate msg ids: {list(dup)}")
        dmsg = codes[M:].astype(I64)
        base_nodes = [str(n) for n in h.nodes]
        if len(set(base_nodes)) != len(base_nodes):
            raise ValueError("History.nodes has duplicate names")

        o_codes, o_names = pd.factorize(sends["origin"].astype(str))
        n_codes, n_names = pd.factorize(dels["node"].astype(str))
        # most sends share a few receiver lists (a segment, a group): each distinct list is
        # encoded once, then gathered per send
        elig = [_names(v) for v in sends["eligible"]]
        l_codes, l_uniq = pd.factorize(pd.Series(elig, dtype=object)) if M else (np.zeros(0, I64), [])
        u_len = np.fromiter((len(e) for e in l_uniq), I64, count=len(l_uniq))
        u_codes, flat_names = pd.factorize(np.array(list(chain.from_iterable(l_uniq)) or [], dtype=object))
        flat_names = [str(x) for x in flat_names]
        lengths = u_len[l_codes] if M else np.zeros(0, I64)
        u_off = np.concatenate(([0], np.cumsum(u_len)[:-1])).astype(I64)
        within = np.arange(int(lengths.sum()), dtype=I64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        flat_codes = u_codes[np.repeat(u_off[l_codes], lengths) + within] if len(within) else np.zeros(0, I64)
        known = set(base_nodes)
        extra = (set(o_names) | set(n_names) | set(flat_names)) - known
        extra.update(str(n) for n in (h.down or {}) if str(n) not in known)
        node_names = base_nodes + sorted(extra)
        nidx = pd.Index(node_names)
        origin = nidx.get_indexer(o_names).astype(I64)[o_codes] if M else np.zeros(0, I64)
        e_msg = np.repeat(np.arange(M, dtype=I64), lengths)
        e_node = nidx.get_indexer(flat_names).astype(I64)[flat_codes] if len(flat_codes) else np.zeros(0, I64)
        dnode = nidx.get_indexer(n_names).astype(I64)[n_codes] if D else np.zeros(0, I64)
        self._build(sends=sends.reset_index(drop=True), node_names=node_names, n_vc=len(base_nodes), origin=origin,
                    seq=pd.to_numeric(sends["seq"]).to_numpy().astype(I64) if M else np.zeros(0, I64),
                    t=pd.to_numeric(sends["t"]).to_numpy().astype(I64) if M else np.zeros(0, I64),
                    e_msg=e_msg, e_node=e_node, d_msg=dmsg, d_node=dnode,
                    d_t=pd.to_numeric(dels["t"]).to_numpy().astype(I64) if D else np.zeros(0, I64),
                    msg_ids=smsg.to_numpy(object), phantom_ids=np.asarray(uniq[M:], dtype=object),
                    eligible=elig)

    @classmethod
    def from_codes(cls, h: History, *, sends: pd.DataFrame, node_names: List[str], n_vc: int, origin: np.ndarray,
                   seq: np.ndarray, t: np.ndarray, e_msg: np.ndarray, e_node: np.ndarray, d_msg: np.ndarray,
                   d_node: np.ndarray, d_t: np.ndarray, msg_ids, phantom_ids, eligible) -> "Prepared":
        """A history already in integer codes (the analysis job's path, no strings per row):
        h gives down, end_ns and contiguous_order (its sends and deliveries are not read);
        sends holds the optional columns (order, priority, sequencer, vc, deps) per message;
        node codes index node_names (the first n_vc are the vc order); d_msg >= M names a
        phantom, phantom_ids[d_msg - M]; msg_ids and eligible are indexed by message code
        (sequences, possibly computed on access: only counterexamples and deps read them)."""
        p = cls.__new__(cls)
        p.h = h
        p._build(sends=sends, node_names=list(node_names), n_vc=n_vc, origin=np.asarray(origin, I64),
                 seq=np.asarray(seq, I64), t=np.asarray(t, I64), e_msg=np.asarray(e_msg, I64),
                 e_node=np.asarray(e_node, I64), d_msg=np.asarray(d_msg, I64), d_node=np.asarray(d_node, I64),
                 d_t=np.asarray(d_t, I64), msg_ids=msg_ids, phantom_ids=phantom_ids, eligible=eligible)
        return p

    def _build(self, *, sends, node_names, n_vc, origin, seq, t, e_msg, e_node, d_msg, d_node, d_t, msg_ids,
               phantom_ids, eligible) -> None:
        h = self.h
        self.sends = sends
        self.present = {c: c in sends.columns for c in SEND_OPTIONAL}
        M = self.M = len(origin)
        D = self.D = len(d_msg)
        self.msg_ids = msg_ids
        self.phantom_ids = phantom_ids
        self.n_vc = n_vc
        self.node_names = node_names
        NN = self.NN = len(node_names)
        self.origin, self.seq, self.t = origin, seq, t
        # per-origin rank by (seq, t): pos 1..n_origin; by_origin lists messages by (origin, pos)
        bo = order_by(self.origin, self.seq, self.t)
        self.by_origin = bo
        cnt = np.bincount(self.origin, minlength=NN).astype(I64) if M else np.zeros(NN, I64)
        self.origin_count = cnt
        self.origin_off = np.concatenate(([0], np.cumsum(cnt)[:-1])).astype(I64) if NN else np.zeros(0, I64)
        self.pos = np.zeros(M, I64)
        if M:
            self.pos[bo] = np.arange(M) - self.origin_off[self.origin[bo]] + 1

        # eligible pairs (deduplicated), then E
        if len(e_msg):
            k = unique(e_msg * NN + e_node)
            e_msg, e_node = k // NN, k % NN
        self.elig_key = e_msg * NN + e_node  # sorted
        self.eligible = eligible

        times = [self.t, d_t]
        nidx = {n: i for i, n in enumerate(node_names)}
        self.down = {}
        for n, ivs in (h.down or {}).items():
            self.down[nidx[str(n)]] = [(I64(s) if s is not None else I64(-INT64_MAX),
                                        None if e is None else I64(e)) for s, e in ivs]
        bounds = [x for ivs in self.down.values() for iv in ivs for x in iv if x is not None and x > -INT64_MAX]
        if h.end_ns is not None:
            self.end_ns = int(h.end_ns)
        else:
            cands = [int(a.max()) for a in times if len(a)] + [int(b) for b in bounds]
            self.end_ns = max(cands) if cands else 0
        up = np.ones(len(e_msg), bool)
        for n, ivs in self.down.items():
            sel = np.flatnonzero(e_node == n)
            if not len(sel) or not ivs:
                continue
            ts = self.t[e_msg[sel]]
            for s, e in ivs:
                if s > self.end_ns:
                    continue
                up[sel if e is None else sel[ts < e]] = False
        self.E_msg, self.E_node = e_msg[up], e_node[up]
        self.E_key = self.E_msg * NN + self.E_node  # sorted
        self.correct = np.ones(NN, bool)
        for n, ivs in self.down.items():
            if ivs:
                self.correct[n] = False

        # deliveries sorted by (node, t, row); phantoms have codes >= M
        srt = order_by(d_node, d_t)
        self.d_msg, self.d_node, self.d_t = d_msg[srt], d_node[srt], d_t[srt]
        self.d_key = self.d_msg * NN + self.d_node
        # the first delivery of each (message, node): only keys delivered more than once (few, in
        # most runs none) need a look at the order
        first = np.ones(D, bool)
        keys, counts = self.pair_counts
        if len(counts) and counts.max() > 1:
            again = np.flatnonzero(member(self.d_key, keys[counts > 1]))
            first[again] = ~pd.Series(self.d_key[again]).duplicated().to_numpy()
        fmask = first & (self.d_msg < M)
        # first deliveries of sent messages, still sorted by (node, t, row)
        self.f_msg, self.f_node, self.f_t = self.d_msg[fmask], self.d_node[fmask], self.d_t[fmask]
        self.f_start = np.searchsorted(self.f_node, np.arange(NN + 1)).astype(I64)

    # -- helpers ------------------------------------------------------------------------------

    def mid(self, m: int) -> str:
        m = int(m)
        return str(self.msg_ids[m]) if m < self.M else str(self.phantom_ids[m - self.M])

    def nname(self, n: int) -> str:
        return self.node_names[int(n)]

    def first_delivery(self, m: int, n: int) -> Optional[int]:
        a, b = self.f_start[n], self.f_start[n + 1]
        hit = np.flatnonzero(self.f_msg[a:b] == m)
        return int(self.f_t[a + hit[0]]) if len(hit) else None

    def msg_at(self, origin: int, pos: int) -> int:
        return int(self.by_origin[self.origin_off[origin] + pos - 1])

    # -- shared derived data ------------------------------------------------------------------

    @cached_property
    def pair_counts(self) -> Tuple[np.ndarray, np.ndarray]:
        """Unique delivered (msg, node) keys and their delivery counts."""
        if not self.D:
            return np.zeros(0, I64), np.zeros(0, I64)
        return unique(self.d_key, return_counts=True)

    @cached_property
    def lost(self) -> Tuple[np.ndarray, np.ndarray]:
        """(msg, node) pairs of E never delivered."""
        keys, _ = self.pair_counts
        miss = ~member(self.E_key, keys)
        return self.E_msg[miss], self.E_node[miss]

    @cached_property
    def order(self) -> Tuple[np.ndarray, np.ndarray]:
        return _nullable_int(self.sends, "order")

    @cached_property
    def priority(self) -> Tuple[np.ndarray, np.ndarray]:
        return _nullable_int(self.sends, "priority")

    @cached_property
    def sequencer(self) -> Tuple[np.ndarray, List[Optional[str]]]:
        """Sequencer code per message and the names (None = the global one)."""
        if not self.present["sequencer"] or not self.M:
            return np.zeros(self.M, I64), [None]
        s = self.sends["sequencer"].map(lambda v: None if _is_null(v) else str(v))
        codes, uniq = pd.factorize(s)
        codes = codes.astype(I64)
        names: List[Optional[str]] = [str(u) for u in uniq]
        if (codes < 0).any():
            codes[codes < 0] = len(names)
            names.append(None)
        return codes, names

    @cached_property
    def vc(self) -> Tuple[np.ndarray, np.ndarray]:
        """(M x len(nodes)) vector timestamps and the mask of messages that have one."""
        M, k = self.M, self.n_vc
        arr = np.zeros((M, k), I64)
        mask = np.zeros(M, bool)
        if not self.present["vc"]:
            return arr, mask
        col = self.sends["vc"].to_numpy(object)
        mask = np.fromiter((not _is_null(v) for v in col), bool, count=M)
        if not mask.any():
            return arr, mask
        rows = [tuple(v) for v in col[mask]]
        for i, v in zip(np.flatnonzero(mask), rows):
            if len(v) != k:
                raise ValueError(f"vc of {self.msg_ids[i]} has {len(v)} entries, nodes has {k}")
        arr[mask] = np.array(rows, dtype=I64).reshape(len(rows), k)
        return arr, mask

    @cached_property
    def deps(self) -> Tuple[List[Tuple[int, ...]], int]:
        """Per message the codes of its declared dependencies, and how many named no send."""
        out: List[Tuple[int, ...]] = [()] * self.M
        unknown = 0
        if not self.present["deps"]:
            return out, 0
        idx = pd.Index(np.asarray(self.msg_ids[:self.M] if self.M else [], dtype=object))
        for i, v in enumerate(self.sends["deps"]):
            if _is_null(v):
                continue
            names = [str(x) for x in _names(v)]
            if not names:
                continue
            codes = idx.get_indexer(names)
            unknown += int((codes < 0).sum())
            out[i] = tuple(int(c) for c in codes if c >= 0 and c != i)
        return out, unknown


def prepare(history: Union[History, Prepared]) -> Prepared:
    """Encode a history once; every check accepts the result in place of the History."""
    return history if isinstance(history, Prepared) else Prepared(history)


def expected_pairs(history: Union[History, Prepared]) -> pd.DataFrame:
    """The (msg, node) pairs of E: eligible nodes up from the send to the end of the run."""
    p = prepare(history)
    return pd.DataFrame({"msg": p.msg_ids[p.E_msg] if len(p.E_msg) else np.zeros(0, object),
                         "node": np.array(p.node_names, dtype=object)[p.E_node] if len(p.E_node) else np.zeros(0, object)})
