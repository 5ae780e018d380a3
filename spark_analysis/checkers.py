"""Delivery-property checkers over a recorded history of application sends and deliveries.

In the spirit of Jepsen's checkers, each check reads a finished history and returns a verdict, the
anomalies it counted and a few counterexamples, but without their blind spots: a duplicate fails
at-most-once and exactly-once, a message nobody was expected to receive is not "lost", a message
a crashed node never got is not held against it, and "valid" is never the answer for a history
that gives the check nothing to judge. The properties are the delivery semantics and orderings of
the publish/subscribe literature (Mahambre et al. 2007, as modelled by Loulou et al.): at-most-once,
at-least-once, exactly-once, best effort, pair-wise FIFO, total order (per sequencer and global),
priority order, plus causal order and agreement. Redundant receptions on the network are not this
module's concern: only deliveries to the application are.

Input contract
--------------
`History(sends, deliveries, nodes, down={}, end_ns=None, fifo_contiguous=False)`:

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
- `fifo_contiguous`: require contiguity of sequencer numbers (the total-order-sequencer "hole"
  anomaly); the name is the contract's.

Derived: a node is *correct* when it has no down interval. E(m), the nodes expected to deliver m,
is eligible(m) restricted to the nodes with no down interval overlapping [t_send(m), end_ns]. The
sender is in E(m) only if it lists itself; delivering its own message is never misrouted. A node
that was down before the send but restarted by then is up for the whole [t_send, end_ns], so it is
expected to deliver (a recovered node takes part again); a node down at any point after the send
is not expected, and if it delivers anyway that is fine (it was eligible).

Output
------
Every check returns `{"check": name, "verdict": "valid" | "invalid" | "unknown",
"anomalies": {type: count}, "counterexamples": {type: [at most 5 dicts]}, "stats": {...}}`.
A check is invalid as soon as it counts an anomaly; otherwise unknown when it had nothing to judge
(stats["reason"] says why: no send, no expected (message, node) pair, no delivery of a sent
message, or an optional column absent), and valid only then. Anomalies are all counted; the
counterexamples name message ids, nodes and times and are plain JSON-able values.

Checks (`check_all` runs them in this order):

- "at-most-once" (duplicate: a (msg, node) pair delivered more than once, phantoms included),
  "at-least-once" (lost: a node of E(m) never delivered m), "exactly-once" (both),
  "best-effort" (phantom and misrouted; stats["violated"] names which), "no-phantom",
  "no-misrouted" (delivery to a node outside eligible(m), other than m's sender). Counts are of
  (msg, node) pairs; stats["delivery_counts"] is the distribution of deliveries per (sent msg,
  node) pair over the pairs expected or delivered.
- "fifo": per (origin, receiver), in receiver order, seq must increase. inversion: a delivery
  that comes after one of a higher seq from the same origin; gap: a (message, node) pair of E
  never delivered while the node delivered a later message of the same origin (the skipped
  message is named). stats["origins_with_irregular_seq"] names origins whose seq is not 1, 2, ...
- "total-order-sequencer": per sequencer: reuse (one number, two messages), out-of-order (a node
  delivers a number lower than one it delivered before; counted per delivery), hole (with
  fifo_contiguous; counted per (node, number): a number between the sequencer's first number and
  the highest one the node delivered that the node never delivered, while it was either assigned
  to no message or to one whose E contains the node). Numbers are per sequencer.
- "total-order-global": the union over nodes of the edges a -> b, b delivered right after a at
  some node, must be acyclic (there is then one total order that every node's order follows; the
  relative order of messages two nodes share agrees as a consequence). cycle counts the strongly
  connected components with a cycle; the counterexamples are the shortest cycles found by BFS,
  shortest first, each edge with the node and times that witness it (stats["smallest_cycle_exact"]
  is False if the search budget ran out first).
- "priority-order": a node delivers m2 while a message m1 of higher priority, sent before m2's
  delivery there, is delivered at that node later (counted per delivery of m2; not delivering m1
  at all is a loss, not an inversion). Messages without priority are left out. Cost: one
  vectorised pass per distinct priority level.
- "causal-order": m1 -> m2 when (a) same origin and seq1 < seq2, (b) m2's sender delivered m1
  before sending m2, (c) vc1 < vc2, (d) m1 in deps(m2), and transitively. A node delivering m2
  must have delivered each predecessor before: late-predecessor (delivered after m2),
  missing-predecessor (never delivered although the node is in E(m1)). The transitive closure is
  computed (as one vector of per-origin prefixes per message) so that a chain through messages the
  node never receives is no blind spot; counterexamples say which direct rules link the named
  predecessor to the message, or "transitive". Counted per delivery of m2. Without vc and deps
  only rules a and b apply (stats["rules"]).
- "agreement": if a correct node delivers m, every correct node in E(m) delivers it (counted per
  (msg, node) pair; unknown when no correct node delivered anything).

Ordering checks judge the first delivery of each (msg, node): later copies are duplicates, which
are at-most-once's business, and phantoms are left out of them. "Before" between times is strict:
a delivery at the very nanosecond of a send did not happen before it (rules b of causal order and
the "sent before" of priority order).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

__all__ = [
    "CHECKS",
    "MAX_COUNTEREXAMPLES",
    "History",
    "Prepared",
    "check_agreement",
    "check_all",
    "check_causal_order",
    "check_delivery",
    "check_fifo",
    "check_priority_order",
    "check_total_order_global",
    "check_total_order_sequencer",
    "expected_pairs",
    "prepare",
]

MAX_COUNTEREXAMPLES = 5
#: edges examined, in all, by the BFS searches for the shortest cycle before settling for the best
#: found (stats["smallest_cycle_exact"] is then False)
CYCLE_SEARCH_BUDGET = 2_000_000
#: vectorised passes of the causal closure before finishing it sequentially
CLOSURE_PASSES = 6
CHECKS = ("at-most-once", "at-least-once", "exactly-once", "best-effort", "no-phantom", "no-misrouted",
          "fifo", "total-order-sequencer", "total-order-global", "priority-order", "causal-order",
          "agreement")
SEND_REQUIRED = ("msg", "origin", "seq", "t", "eligible")
SEND_OPTIONAL = ("order", "sequencer", "priority", "vc", "deps")
DELIVERY_REQUIRED = ("msg", "node", "t")
_I64 = np.int64
_BIG = np.iinfo(np.int64).max


@dataclass
class History:
    """A recorded run: see the module docstring for the contract."""

    sends: pd.DataFrame
    deliveries: pd.DataFrame
    nodes: List[str]
    down: Dict[str, List[Tuple[int, Optional[int]]]] = field(default_factory=dict)
    end_ns: Optional[int] = None
    fifo_contiguous: bool = False


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
        return np.zeros(n, _I64), np.zeros(n, bool)
    s = df[col]
    if s.dtype == object:
        s = s.map(lambda v: None if _is_null(v) else v)
    s = pd.to_numeric(s, errors="coerce")
    mask = s.notna().to_numpy()
    vals = np.zeros(n, _I64)
    if mask.any():
        vals[mask] = s[mask].to_numpy().astype(_I64)
    return vals, mask


def _starts(keys: np.ndarray) -> np.ndarray:
    """True where a run of equal keys (in a sorted array) starts."""
    st = np.ones(len(keys), bool)
    if len(keys) > 1:
        st[1:] = keys[1:] != keys[:-1]
    return st


def _unique(a, return_inverse: bool = False, return_counts: bool = False):
    """np.unique by sorting (numpy's hash-based unique of integers is many times slower at
    millions of rows); the same results."""
    a = np.asarray(a)
    if return_inverse:
        order = np.argsort(a)  # ties in any order: the inverse and the counts do not depend on it
        s = a[order]
    else:
        s = np.sort(a)  # a plain sort is many times faster than an argsort (vectorised where the CPU can)
    st = _starts(s)
    out = [s[st]]
    if return_inverse:
        inv = np.empty(len(a), _I64)
        inv[order] = np.cumsum(st) - 1
        out.append(inv)
    if return_counts:
        out.append(np.diff(np.append(np.flatnonzero(st), len(s))))
    return out[0] if len(out) == 1 else tuple(out)


def _order_by(*keys: np.ndarray) -> np.ndarray:
    """The permutation ordering rows by the integer keys (the most significant first), ties in row
    order, as np.lexsort(keys[::-1]) gives it, in a fraction of its time: neighbouring keys whose
    ranges fit in one int64 are combined into one, and each combined key takes one stable sort
    (least significant first); one that spans fewer than 65,536 values takes a radix sort. A
    history already in order per node is nearly sorted, which the stable sort also profits from."""
    if not len(keys[0]):
        return np.zeros(0, _I64)
    groups: List[List[Tuple[np.ndarray, int, int]]] = []  # (key, min, span) combined per group
    for k in keys:
        lo = int(k.min())
        span = int(k.max()) - lo + 1
        if groups and math.prod(g[2] for g in groups[-1]) * span < (1 << 62):
            groups[-1].append((k, lo, span))
        else:
            groups.append([(k, lo, span)])
    order = None
    for group in reversed(groups):
        if len(group) == 1 and group[0][2] >= (1 << 16):
            key, span = group[0][0], group[0][2]  # alone and wide: sorted as it is
        else:
            key, span = np.zeros(len(keys[0]), _I64), 1
            for k, lo, width in group:
                key = key * width + (k.astype(_I64) - lo)
                span *= width
            if span < (1 << 16):
                key = key.astype(np.uint16)
        key = key if order is None else key[order]
        step = np.argsort(key, kind="stable")
        order = step if order is None else order[step]
    return order


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of each key in sorted_keys, -1 when absent."""
    if not len(sorted_keys):
        return np.full(len(keys), -1, _I64)
    i = np.searchsorted(sorted_keys, keys)
    i[i == len(sorted_keys)] = 0
    return np.where(sorted_keys[i] == keys, i, -1)


def _member(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """a in b, for b sorted."""
    return _lookup(sorted_b, a) >= 0


def _runs(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, start, end) of each run of equal keys in a sorted array."""
    st = np.flatnonzero(_starts(keys)) if len(keys) else np.zeros(0, _I64)
    return keys[st], st, np.append(st[1:], len(keys))


def _group_cummax(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running maximum of `values` (ints) restarting at each run start."""
    if len(values) == 0:
        return values.astype(_I64)
    gid = np.cumsum(starts) - 1
    lo = int(values.min())
    span = int(values.max()) - lo + 1
    shifted = (values.astype(_I64) - lo) + gid * span
    return np.maximum.accumulate(shifted) - gid * span + lo


def _shift(values: np.ndarray, starts: np.ndarray, fill: int) -> np.ndarray:
    """The previous element within the run, `fill` at each run start."""
    out = np.empty_like(values)
    if len(values):
        out[0] = fill
        out[1:] = values[:-1]
        out[starts] = fill
    return out


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
        dmsg = codes[M:].astype(_I64)
        base_nodes = [str(n) for n in h.nodes]
        if len(set(base_nodes)) != len(base_nodes):
            raise ValueError("History.nodes has duplicate names")

        o_codes, o_names = pd.factorize(sends["origin"].astype(str))
        n_codes, n_names = pd.factorize(dels["node"].astype(str))
        # most sends share a few receiver lists (a segment, a group): each distinct list is
        # encoded once, then gathered per send
        elig = [_names(v) for v in sends["eligible"]]
        l_codes, l_uniq = pd.factorize(pd.Series(elig, dtype=object)) if M else (np.zeros(0, _I64), [])
        u_len = np.fromiter((len(e) for e in l_uniq), _I64, count=len(l_uniq))
        u_codes, flat_names = pd.factorize(np.array(list(chain.from_iterable(l_uniq)) or [], dtype=object))
        flat_names = [str(x) for x in flat_names]
        lengths = u_len[l_codes] if M else np.zeros(0, _I64)
        u_off = np.concatenate(([0], np.cumsum(u_len)[:-1])).astype(_I64)
        within = np.arange(int(lengths.sum()), dtype=_I64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        flat_codes = u_codes[np.repeat(u_off[l_codes], lengths) + within] if len(within) else np.zeros(0, _I64)
        known = set(base_nodes)
        extra = (set(o_names) | set(n_names) | set(flat_names)) - known
        extra.update(str(n) for n in (h.down or {}) if str(n) not in known)
        node_names = base_nodes + sorted(extra)
        nidx = pd.Index(node_names)
        origin = nidx.get_indexer(o_names).astype(_I64)[o_codes] if M else np.zeros(0, _I64)
        e_msg = np.repeat(np.arange(M, dtype=_I64), lengths)
        e_node = nidx.get_indexer(flat_names).astype(_I64)[flat_codes] if len(flat_codes) else np.zeros(0, _I64)
        dnode = nidx.get_indexer(n_names).astype(_I64)[n_codes] if D else np.zeros(0, _I64)
        self._build(sends=sends.reset_index(drop=True), node_names=node_names, n_vc=len(base_nodes), origin=origin,
                    seq=pd.to_numeric(sends["seq"]).to_numpy().astype(_I64) if M else np.zeros(0, _I64),
                    t=pd.to_numeric(sends["t"]).to_numpy().astype(_I64) if M else np.zeros(0, _I64),
                    e_msg=e_msg, e_node=e_node, d_msg=dmsg, d_node=dnode,
                    d_t=pd.to_numeric(dels["t"]).to_numpy().astype(_I64) if D else np.zeros(0, _I64),
                    msg_ids=smsg.to_numpy(object), phantom_ids=np.asarray(uniq[M:], dtype=object),
                    eligible=elig)

    @classmethod
    def from_codes(cls, h: History, *, sends: pd.DataFrame, node_names: List[str], n_vc: int, origin: np.ndarray,
                   seq: np.ndarray, t: np.ndarray, e_msg: np.ndarray, e_node: np.ndarray, d_msg: np.ndarray,
                   d_node: np.ndarray, d_t: np.ndarray, msg_ids, phantom_ids, eligible) -> "Prepared":
        """A history already in integer codes (the analysis job's path, no strings per row):
        h gives down, end_ns and fifo_contiguous (its sends and deliveries are not read);
        sends holds the optional columns (order, priority, sequencer, vc, deps) per message;
        node codes index node_names (the first n_vc are the vc order); d_msg >= M names a
        phantom, phantom_ids[d_msg - M]; msg_ids and eligible are indexed by message code
        (sequences, possibly computed on access: only counterexamples and deps read them)."""
        p = cls.__new__(cls)
        p.h = h
        p._build(sends=sends, node_names=list(node_names), n_vc=n_vc, origin=np.asarray(origin, _I64),
                 seq=np.asarray(seq, _I64), t=np.asarray(t, _I64), e_msg=np.asarray(e_msg, _I64),
                 e_node=np.asarray(e_node, _I64), d_msg=np.asarray(d_msg, _I64), d_node=np.asarray(d_node, _I64),
                 d_t=np.asarray(d_t, _I64), msg_ids=msg_ids, phantom_ids=phantom_ids, eligible=eligible)
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
        bo = _order_by(self.origin, self.seq, self.t)
        self.by_origin = bo
        cnt = np.bincount(self.origin, minlength=NN).astype(_I64) if M else np.zeros(NN, _I64)
        self.origin_count = cnt
        self.origin_off = np.concatenate(([0], np.cumsum(cnt)[:-1])).astype(_I64) if NN else np.zeros(0, _I64)
        self.pos = np.zeros(M, _I64)
        if M:
            self.pos[bo] = np.arange(M) - self.origin_off[self.origin[bo]] + 1

        # eligible pairs (deduplicated), then E
        if len(e_msg):
            k = _unique(e_msg * NN + e_node)
            e_msg, e_node = k // NN, k % NN
        self.elig_key = e_msg * NN + e_node  # sorted
        self.eligible = eligible

        times = [self.t, d_t]
        nidx = {n: i for i, n in enumerate(node_names)}
        self.down = {}
        for n, ivs in (h.down or {}).items():
            self.down[nidx[str(n)]] = [(_I64(s) if s is not None else _I64(-_BIG),
                                        None if e is None else _I64(e)) for s, e in ivs]
        bounds = [x for ivs in self.down.values() for iv in ivs for x in iv if x is not None and x > -_BIG]
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
        srt = _order_by(d_node, d_t)
        self.d_msg, self.d_node, self.d_t = d_msg[srt], d_node[srt], d_t[srt]
        self.d_key = self.d_msg * NN + self.d_node
        # the first delivery of each (message, node): only keys delivered more than once (few, in
        # most runs none) need a look at the order
        first = np.ones(D, bool)
        keys, counts = self.pair_counts
        if len(counts) and counts.max() > 1:
            again = np.flatnonzero(_member(self.d_key, keys[counts > 1]))
            first[again] = ~pd.Series(self.d_key[again]).duplicated().to_numpy()
        fmask = first & (self.d_msg < M)
        # first deliveries of sent messages, still sorted by (node, t, row)
        self.f_msg, self.f_node, self.f_t = self.d_msg[fmask], self.d_node[fmask], self.d_t[fmask]
        self.f_start = np.searchsorted(self.f_node, np.arange(NN + 1)).astype(_I64)

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
            return np.zeros(0, _I64), np.zeros(0, _I64)
        return _unique(self.d_key, return_counts=True)

    @cached_property
    def lost(self) -> Tuple[np.ndarray, np.ndarray]:
        """(msg, node) pairs of E never delivered."""
        keys, _ = self.pair_counts
        miss = ~_member(self.E_key, keys)
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
            return np.zeros(self.M, _I64), [None]
        s = self.sends["sequencer"].map(lambda v: None if _is_null(v) else str(v))
        codes, uniq = pd.factorize(s)
        codes = codes.astype(_I64)
        names: List[Optional[str]] = [str(u) for u in uniq]
        if (codes < 0).any():
            codes[codes < 0] = len(names)
            names.append(None)
        return codes, names

    @cached_property
    def vc(self) -> Tuple[np.ndarray, np.ndarray]:
        """(M x len(nodes)) vector timestamps and the mask of messages that have one."""
        M, k = self.M, self.n_vc
        arr = np.zeros((M, k), _I64)
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
        arr[mask] = np.array(rows, dtype=_I64).reshape(len(rows), k)
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


def _result(name: str, anomalies: Dict[str, int], cex: Dict[str, list], stats: Dict[str, Any],
            checked: int, reason: str) -> Dict[str, Any]:
    anomalies = {k: int(v) for k, v in anomalies.items()}
    if any(anomalies.values()):
        verdict = "invalid"
    elif checked <= 0:
        verdict = "unknown"
        stats = dict(stats, reason=reason)
    else:
        verdict = "valid"
    stats = dict(stats, checked=int(checked))
    return {"check": name, "verdict": verdict, "anomalies": anomalies,
            "counterexamples": {k: v[:MAX_COUNTEREXAMPLES] for k, v in cex.items()}, "stats": stats}


def _unknown(name: str, anomaly_types: Sequence[str], reason: str, **stats) -> Dict[str, Any]:
    return {"check": name, "verdict": "unknown", "anomalies": {a: 0 for a in anomaly_types},
            "counterexamples": {a: [] for a in anomaly_types}, "stats": dict(stats, reason=reason, checked=0)}


def _first_rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)[:MAX_COUNTEREXAMPLES]


_NO_SEND = "no send"
_NO_EXPECTED = "no (message, node) pair is expected: every E(m) is empty"
_NO_DELIVERY = "no delivery of a sent message"


# ----------------------------------------------------------------------------------------------
# 1. delivery semantics


def check_delivery(history: Union[History, Prepared]) -> List[Dict[str, Any]]:
    """at-most-once, at-least-once, exactly-once, best-effort, no-phantom, no-misrouted."""
    p = prepare(history)
    M, NN = p.M, p.NN
    keys, counts = p.pair_counts
    kmsg, knode = keys // NN if NN else keys, keys % NN if NN else keys
    known = kmsg < M
    lost_m, lost_n = p.lost

    dup = counts > 1
    phantom = ~known
    mis = np.zeros(len(keys), bool)
    if known.any():
        kk = keys[known]
        in_elig = _member(kk, p.elig_key)
        own = p.origin[kmsg[known]] == knode[known]
        mis[np.flatnonzero(known)[~in_elig & ~own]] = True

    def times(k: int) -> List[int]:
        return [int(x) for x in p.d_t[p.d_key == k][:10]]

    cex_dup = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "count": int(counts[i]), "times": times(keys[i])}
               for i in _first_rows(dup)]
    cex_lost = [{"msg": p.mid(m), "node": p.nname(n), "sent_at": int(p.t[m])}
                for m, n in zip(lost_m[:MAX_COUNTEREXAMPLES], lost_n[:MAX_COUNTEREXAMPLES])]
    cex_ph = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "times": times(keys[i])} for i in _first_rows(phantom)]
    cex_mis = [{"msg": p.mid(kmsg[i]), "node": p.nname(knode[i]), "times": times(keys[i]),
                "eligible": [str(x) for x in p.eligible[kmsg[i]]]} for i in _first_rows(mis)]

    dist_vals, dist_n = np.unique(counts[known], return_counts=True) if known.any() else ([], [])
    dist = {int(v): int(n) for v, n in zip(dist_vals, dist_n)}
    if len(lost_m):
        dist = {0: len(lost_m), **dist}
    base = {"sends": M, "deliveries": p.D, "expected_pairs": len(p.E_key), "delivery_counts": dist}
    n_dup, n_lost, n_ph, n_mis = int(dup.sum()), len(lost_m), int(phantom.sum()), int(mis.sum())
    n_del_known = int(known.sum())
    no_del = _NO_SEND if not M else _NO_DELIVERY
    no_exp = _NO_SEND if not M else _NO_EXPECTED
    out = [
        _result("at-most-once", {"duplicate": n_dup}, {"duplicate": cex_dup},
                dict(base, extra_deliveries=int((counts[dup] - 1).sum())), n_del_known, no_del),
        _result("at-least-once", {"lost": n_lost}, {"lost": cex_lost}, base, len(p.E_key), no_exp),
        _result("exactly-once", {"duplicate": n_dup, "lost": n_lost}, {"duplicate": cex_dup, "lost": cex_lost},
                base, len(p.E_key), no_exp),
    ]
    violated = [name for name, n in (("phantom", n_ph), ("misrouted", n_mis)) if n]
    out.append(_result("best-effort", {"phantom": n_ph, "misrouted": n_mis}, {"phantom": cex_ph, "misrouted": cex_mis},
                       dict(base, violated=violated), n_del_known, no_del))
    out.append(_result("no-phantom", {"phantom": n_ph}, {"phantom": cex_ph}, base, n_del_known, no_del))
    out.append(_result("no-misrouted", {"misrouted": n_mis}, {"misrouted": cex_mis}, base, n_del_known, no_del))
    return out


# ----------------------------------------------------------------------------------------------
# 2. pair-wise FIFO


def check_fifo(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "fifo", ("inversion", "gap")
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    NN = p.NN
    fo = p.origin[p.f_msg]
    g = p.f_node * NN + fo
    srt = _order_by(g)  # by (receiver, origin), then delivery order
    gs = g[srt]
    ps = p.pos[p.f_msg[srt]]
    st = _starts(gs)
    cm = _group_cummax(ps, st)
    prev = _shift(cm, st, 0)
    inv = ps < prev
    cex_inv = []
    for i in _first_rows(inv):
        m, n, o = int(p.f_msg[srt[i]]), int(p.f_node[srt[i]]), int(fo[srt[i]])
        before = p.msg_at(o, int(prev[i]))
        cex_inv.append({"origin": p.nname(o), "node": p.nname(n), "msg": p.mid(m), "seq": int(p.seq[m]),
                        "t": int(p.f_t[srt[i]]), "after_msg": p.mid(before), "after_seq": int(p.seq[before]),
                        "after_t": p.first_delivery(before, n)})
    # gaps: lost pairs below the highest position the receiver delivered from that origin
    maxpos = np.zeros(NN * NN, _I64)
    if len(gs):
        ends = np.append(np.flatnonzero(st)[1:] - 1, len(gs) - 1)
        maxpos[gs[ends]] = cm[ends]
    lm, ln = p.lost
    gap = p.pos[lm] < maxpos[ln * NN + p.origin[lm]] if len(lm) else np.zeros(0, bool)
    cex_gap = []
    for i in _first_rows(gap):
        m, n = int(lm[i]), int(ln[i])
        o = int(p.origin[m])
        a, b = p.f_start[n], p.f_start[n + 1]
        fm = p.f_msg[a:b]
        later = fm[(p.origin[fm] == o) & (p.pos[fm] > p.pos[m])]
        nxt = int(later[np.argmin(p.pos[later])])
        cex_gap.append({"origin": p.nname(o), "node": p.nname(n), "skipped_msg": p.mid(m), "skipped_seq": int(p.seq[m]),
                        "delivered_later_msg": p.mid(nxt), "delivered_later_seq": int(p.seq[nxt]),
                        "delivered_later_t": p.first_delivery(nxt, n)})
    # the paper's stamps start at 1 and go up by one per origin: not a delivery anomaly, but said
    irregular = np.flatnonzero(np.bincount(p.origin, weights=(p.seq != p.pos), minlength=NN) > 0)
    stats = {"pairs": int(st.sum()), "deliveries": len(gs),
             "origins_with_irregular_seq": [p.nname(o) for o in irregular[:MAX_COUNTEREXAMPLES]]}
    return _result(name, {"inversion": int(inv.sum()), "gap": int(gap.sum())},
                   {"inversion": cex_inv, "gap": cex_gap}, stats, len(gs), _NO_DELIVERY)


# ----------------------------------------------------------------------------------------------
# 3. total order by sequencer


def check_total_order_sequencer(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "total-order-sequencer", ("reuse", "out-of-order", "hole")
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    ov, om = p.order
    if not om.any():
        return _unknown(name, types, "no order column" if not p.present["order"] else "no message has an order number")
    scode, snames = p.sequencer
    S = len(snames)
    # reuse: one (sequencer, number) held by two messages
    numbered = np.flatnonzero(om)
    rk = pd.DataFrame({"s": scode[numbered], "o": ov[numbered], "m": numbered})
    reused = rk[rk.duplicated(["s", "o"], keep=False)].groupby(["s", "o"], sort=True)["m"].agg(list)
    cex_reuse = [{"sequencer": snames[s], "order": int(o), "msgs": [p.mid(m) for m in ms[:10]]}
                 for (s, o), ms in reused.head(MAX_COUNTEREXAMPLES).items()]
    # out-of-order at a node, per sequencer
    dense = np.zeros(p.M, _I64)
    _, inv_o = np.unique(ov[numbered], return_inverse=True)
    dense[numbered] = inv_o + 1
    sel = om[p.f_msg]
    fm, fn, ft = p.f_msg[sel], p.f_node[sel], p.f_t[sel]
    g = fn * S + scode[fm]
    srt = _order_by(g)
    gs, rs = g[srt], dense[fm[srt]]
    st = _starts(gs)
    cm = _group_cummax(rs, st)
    prev = _shift(cm, st, 0)
    ooo = rs < prev
    cex_ooo = []
    for i in _first_rows(ooo):
        m, n = int(fm[srt[i]]), int(fn[srt[i]])
        j = i - 1
        while rs[j] != prev[i]:
            j -= 1
        before = int(fm[srt[j]])
        cex_ooo.append({"sequencer": snames[int(scode[m])], "node": p.nname(n), "msg": p.mid(m), "order": int(ov[m]),
                        "t": int(ft[srt[i]]), "after_msg": p.mid(before), "after_order": int(ov[before]),
                        "after_t": int(ft[srt[j]])})
    # holes
    n_holes, cex_hole = 0, []
    if p.h.fifo_contiguous and len(gs):
        # per (node, sequencer) group: the numbers delivered, expected (E) and assigned
        E_sel = om[p.E_msg]
        Em = p.E_msg[E_sel]
        ek = p.E_node[E_sel] * S + scode[Em]
        eo = _order_by(ek, Em)
        ek, Em = ek[eo], Em[eo]
        assigned_by = {}
        so = _order_by(scode[numbered], ov[numbered])
        ss = scode[numbered][so]
        for s0, a0, b0 in zip(*_runs(ss)):
            assigned_by[int(s0)] = _unique(ov[numbered[so[a0:b0]]])
        for g0, a0, b0 in zip(*_runs(gs)):
            n, sq = divmod(int(g0), S)
            assigned = assigned_by[sq]
            lo = int(assigned[0])
            delivered = _unique(ov[fm[srt[a0:b0]]])
            hi = int(delivered[-1])
            a_in = assigned[(assigned >= lo) & (assigned <= hi)]
            unassigned = (hi - lo + 1) - len(a_in)
            ea, eb = np.searchsorted(ek, [g0, g0 + 1])
            expected = _unique(ov[Em[ea:eb]])
            expected = expected[(expected >= lo) & (expected <= hi)]
            missing_assigned = np.setdiff1d(expected, delivered, assume_unique=True)
            k = unassigned + len(missing_assigned)
            if not k:
                continue
            n_holes += k
            if len(cex_hole) < MAX_COUNTEREXAMPLES:
                missing = missing_assigned[:10].tolist()
                if unassigned:
                    missing = sorted(missing + _unassigned(a_in, lo, hi, 10))[:10]
                in_s = numbered[scode[numbered] == sq]
                named = in_s[_member(ov[in_s], np.array(sorted(missing), dtype=_I64))]
                cex_hole.append({"sequencer": snames[sq], "node": p.nname(n), "missing": missing,
                                 "missing_msgs": {str(int(ov[m])): p.mid(m) for m in named},
                                 "count": int(k), "first": lo, "highest_delivered": hi})
    stats = {"sequencers": [s for s in snames], "numbered_messages": len(numbered),
             "contiguity_required": bool(p.h.fifo_contiguous)}
    return _result(name, {"reuse": len(reused), "out-of-order": int(ooo.sum()), "hole": int(n_holes)},
                   {"reuse": cex_reuse, "out-of-order": cex_ooo, "hole": cex_hole}, stats, len(gs),
                   "no delivery of a numbered message")


def _unassigned(a_in: np.ndarray, lo: int, hi: int, limit: int) -> List[int]:
    out: List[int] = []
    prev = lo - 1
    for a in list(a_in.tolist()) + [hi + 1]:
        x = prev + 1
        while x < a and len(out) < limit:
            out.append(x)
            x += 1
        if len(out) >= limit:
            break
        prev = a
    return out


# ----------------------------------------------------------------------------------------------
# 4. global total order: the consecutive-delivery graph must be acyclic


def check_total_order_global(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "total-order-global", ("cycle",)
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    M = p.M
    fm, fn = p.f_msg, p.f_node
    if len(fm) > 1:
        same = fn[1:] == fn[:-1]
        rows = np.flatnonzero(same)
        ek = fm[rows] * M + fm[rows + 1]
        uk, ui = np.unique(ek, return_index=True)
        ea, eb, ew = uk // M, uk % M, rows[ui]
    else:
        ea = eb = ew = uk = np.zeros(0, _I64)
    stats: Dict[str, Any] = {"edges": len(ea), "messages": len(_unique(fm))}
    proof = _acyclic_by_key(p, ea, eb)
    if proof:
        stats["acyclic_by"] = proof
        return _result(name, {"cycle": 0}, {"cycle": []}, stats, len(fm), _NO_DELIVERY)
    comps = _cyclic_components(M, ea, eb)
    stats["acyclic_by"] = None if comps else "strongly connected components"
    cex: List[Dict[str, Any]] = []
    exact = True
    if comps:
        budget = [CYCLE_SEARCH_BUDGET]
        found: List[List[int]] = []
        succ = _Adjacency(M, ea, eb)
        two_cycles = 0
        for comp in comps:  # smallest first
            if two_cycles >= MAX_COUNTEREXAMPLES:
                break  # as many 2-cycles as are reported: no cycle is shorter
            if found and budget[0] <= 0:
                exact = False
                break
            cyc, ex = _shortest_cycle(comp, succ, budget)
            exact &= ex
            if cyc:
                found.append(cyc)
                two_cycles += len(cyc) == 2
        found.sort(key=len)
        for cyc in found[:MAX_COUNTEREXAMPLES]:
            edges = []
            for a, b in zip(cyc, cyc[1:] + cyc[:1]):
                r = int(ew[np.searchsorted(uk, a * M + b)])
                edges.append({"from": p.mid(a), "to": p.mid(b), "node": p.nname(fn[r]),
                              "t_from": int(p.f_t[r]), "t_to": int(p.f_t[r + 1])})
            cex.append({"cycle": [p.mid(m) for m in cyc], "length": len(cyc), "edges": edges})
        stats.update(vertices_in_cycles=comps.vertices,
                     smallest_cycle=len(found[0]) if found else None, smallest_cycle_exact=bool(exact))
    return _result(name, {"cycle": len(comps)}, {"cycle": cex}, stats, len(fm), _NO_DELIVERY)


def _acyclic_by_key(p: Prepared, ea: np.ndarray, eb: np.ndarray) -> Optional[str]:
    """Cheap proofs of acyclicity: a ranking of messages under which every edge goes forward."""
    if not len(ea):
        return "no edge"
    M = p.M
    cands = [("send time", _order_by(p.t))]
    ov, om = p.order
    if om.all():
        cands.insert(0, ("order", _order_by(ov)))
    first = np.full(M, _BIG, _I64)
    np.minimum.at(first, p.f_msg, p.f_t)
    cands.append(("first delivery", _order_by(first)))
    for label, order in cands:
        rank = np.empty(M, _I64)
        rank[order] = np.arange(M)
        if (rank[ea] < rank[eb]).all():
            return label
    return None


class _Components:
    """Strongly connected components, smallest first, each as its sorted vertices; made into
    lists only as they are read (a large run can have hundreds of thousands, and the search for
    the shortest cycle reads a few)."""

    def __init__(self, members: np.ndarray, cuts: np.ndarray) -> None:
        self.members, self.cuts = members, cuts
        self.vertices = int(len(members))

    def __len__(self) -> int:
        return len(self.cuts) + 1 if self.vertices else 0

    def __iter__(self):
        bounds = [0] + self.cuts.tolist() + [self.vertices]
        for a, b in zip(bounds[:-1], bounds[1:]):
            yield self.members[a:b].tolist()


def _cyclic_components(M: int, ea: np.ndarray, eb: np.ndarray) -> _Components:
    """The strongly connected components with more than one vertex (each holds a cycle; the
    graph has no self-loops). scipy's SCC runs in C: the graphs of large runs have millions of edges."""
    empty = _Components(np.zeros(0, _I64), np.zeros(0, _I64))
    if not len(ea):
        return empty
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    graph = csr_matrix((np.ones(len(ea), np.int8), (ea, eb)), shape=(M, M))
    _, labels = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(labels)
    members = np.flatnonzero(sizes[labels] > 1)
    if not len(members):
        return empty
    lab = labels[members]
    order = _order_by(sizes[lab], lab, members)  # by component size, component, vertex
    members, lab = members[order], lab[order]
    return _Components(members, np.flatnonzero(lab[1:] != lab[:-1]) + 1)


class _Adjacency:
    """Successor lists of a directed graph given as edge arrays (CSR, built once)."""

    def __init__(self, M: int, ea: np.ndarray, eb: np.ndarray) -> None:
        order = np.argsort(ea, kind="stable")
        self.tgt = eb[order]
        self.ptr = np.searchsorted(ea[order], np.arange(M + 1))

    def get(self, v: int, default=()) -> List[int]:
        return self.tgt[self.ptr[v]:self.ptr[v + 1]].tolist()


def _shortest_cycle(comp: List[int], succ: "_Adjacency", budget: List[int]) -> Tuple[List[int], bool]:
    """Shortest cycle of a strongly connected component by BFS from each vertex (within budget)."""
    members = set(comp)
    best: List[int] = []
    for s in comp:
        if best and budget[0] <= 0:
            return best, False
        limit = len(best) if best else len(comp) + 1
        parent = {s: None}
        dist = {s: 0}
        q = deque([s])
        found = None
        while q and found is None:
            v = q.popleft()
            if dist[v] + 1 >= limit:
                break
            for w in succ.get(v, ()):
                budget[0] -= 1
                if w not in members:
                    continue
                if w == s:
                    found = v
                    break
                if w not in dist:
                    dist[w] = dist[v] + 1
                    parent[w] = v
                    q.append(w)
        if found is not None:
            path = []
            v = found
            while v is not None:
                path.append(v)
                v = parent[v]
            best = path[::-1]
            if len(best) == 2:
                break
    return best, True


# ----------------------------------------------------------------------------------------------
# 5. priority order


def check_priority_order(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "priority-order", ("inversion",)
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    pv, pm = p.priority
    if not pm.any():
        return _unknown(name, types, "no priority column" if not p.present["priority"] else "no message has a priority")
    sel = pm[p.f_msg]
    fm, fn, ft = p.f_msg[sel], p.f_node[sel], p.f_t[sel]  # sorted by (node, delivery order)
    pr, ts = pv[fm], p.t[fm]
    n = len(fm)
    bad = np.zeros(n, bool)
    if n:
        rev = slice(None, None, -1)
        gid_rev = pd.Series(fn[rev])
        for level in _unique(pr)[:-1]:
            val = np.where(pr > level, ts, _BIG)
            # minimum send time of the strictly later deliveries of higher priority (self is _BIG)
            later_min = pd.Series(val[rev]).groupby(gid_rev.to_numpy()).cummin().to_numpy()[rev]
            here = pr == level
            bad |= here & (later_min < ft)
    cex = []
    for i in _first_rows(bad):
        node = fn[i]
        j = i + 1
        while not (fn[j] == node and pr[j] > pr[i] and ts[j] < ft[i]):
            j += 1
        cex.append({"node": p.nname(node), "msg": p.mid(fm[i]), "priority": int(pr[i]), "delivered_at": int(ft[i]),
                    "overtaken_msg": p.mid(fm[j]), "overtaken_priority": int(pr[j]),
                    "overtaken_sent_at": int(ts[j]), "overtaken_delivered_at": int(ft[j])})
    stats = {"levels": len(_unique(pr)) if n else 0, "prioritised_messages": int(pm.sum())}
    return _result(name, {"inversion": int(bad.sum())}, {"inversion": cex}, stats, n,
                   "no delivery of a message with a priority")


# ----------------------------------------------------------------------------------------------
# 6. causal order


def _vc_prefixes(p: Prepared) -> np.ndarray:
    """Per message and origin j, the highest pos of j's messages whose vc is below the message's
    (rule c): their column-wise running maximum makes them a chain, so a prefix."""
    M, NN = p.M, p.NN
    C = np.zeros((M, NN), _I64)
    vc, has = p.vc
    if not has.any():
        return C
    q = np.flatnonzero(has)
    Q = vc[q]
    for j in range(NN):
        seg = p.by_origin[p.origin_off[j]:p.origin_off[j] + p.origin_count[j]]
        rows = seg[has[seg]]
        if not len(rows):
            continue
        V = np.maximum.accumulate(vc[rows], axis=0)
        if j < p.n_vc:
            K = np.searchsorted(V[:, j], Q[:, j], side="right")
        else:
            K = np.full(len(q), len(rows))
        okrow = K > 0
        good = np.zeros(len(q), bool)
        good[okrow] = (V[K[okrow] - 1] <= Q[okrow]).all(axis=1)
        fix = okrow & ~good
        if fix.any():
            ks = [np.searchsorted(V[:, c], Q[fix, c], side="right") for c in range(p.n_vc)]
            K[fix] = np.minimum.reduce(ks)
        val = np.where(K > 0, p.pos[rows][np.maximum(K, 1) - 1], 0)
        own = p.origin[q] == j
        val[own] = np.minimum(val[own], p.pos[q[own]] - 1)
        C[q, j] = val
    return C


def _causal_past(p: Prepared) -> np.ndarray:
    """C[m, j] = highest pos of origin j's messages in m's causal past (rules a-d, transitively).

    The past of a message is closed under rule (a), so it is one prefix per origin. The closure is
    the least fixpoint of "a message's past includes the past and the message itself of every
    direct predecessor"; a few vectorised passes reach it on ordinary histories (one when the
    vector timestamps already say everything), a sequential pass in send order finishes the rest.
    """
    M, NN = p.M, p.NN
    ar = np.arange(M)
    C0 = _vc_prefixes(p)
    C0[ar, p.origin] = np.maximum(C0[ar, p.origin], p.pos - 1)  # rule (a)
    deps, _ = p.deps
    # rule (b): the deliveries at the sender before the send: rows [f_start[s], fold_end[m]) of f
    fold_end = np.zeros(M, _I64)
    for s in _unique(p.origin):
        mine = np.flatnonzero(p.origin == s)
        a, b = p.f_start[s], p.f_start[s + 1]
        fold_end[mine] = a + np.searchsorted(p.f_t[a:b], p.t[mine], side="left")
    has_fold = fold_end > p.f_start[p.origin]
    dep_m = np.array([m for m, ds in enumerate(deps) for _ in ds], dtype=_I64)
    dep_d = np.array([d for ds in deps for d in ds], dtype=_I64)
    if not has_fold.any() and not len(dep_m):
        return C0
    folded, fold_rows = np.flatnonzero(has_fold), fold_end[has_fold] - 1
    f_starts = _starts(p.f_node)
    bo = p.by_origin
    bo_starts = _starts(p.origin[bo])

    def step(D: np.ndarray) -> np.ndarray:
        C = C0.copy()
        for c in range(NN):
            col = D[:, c]
            if len(folded):
                C[folded, c] = np.maximum(C[folded, c], _group_cummax(col[p.f_msg], f_starts)[fold_rows])
            own_prev = _shift(_group_cummax(col[bo], bo_starts), bo_starts, 0)  # earlier sends, same origin
            C[bo, c] = np.maximum(C[bo, c], own_prev)
        if len(dep_m):
            np.maximum.at(C, dep_m, D[dep_d])
        C[ar, p.origin] = np.minimum(C[ar, p.origin], p.pos - 1)
        return C

    def with_own(C: np.ndarray) -> np.ndarray:
        D = C.copy()
        D[ar, p.origin] = p.pos
        return D

    D = with_own(C0)
    for _ in range(CLOSURE_PASSES):
        C = step(D)
        Dn = with_own(C)
        if np.array_equal(Dn, D):
            return C
        D = Dn
    # a long chain of hops: one pass in send order gets (nearly) all of it; then passes again
    # until nothing changes, for the histories whose times have deliveries before their sends
    C = _causal_past_sequential(p, step(D), D, fold_end, deps)
    D = with_own(C)
    while True:
        C = step(D)
        Dn = with_own(C)
        if np.array_equal(Dn, D):
            return C
        D = Dn


def _causal_past_sequential(p: Prepared, C: np.ndarray, Dv: np.ndarray, fold_end: np.ndarray,
                            deps: List[Tuple[int, ...]]) -> np.ndarray:
    """The same closure in one pass over the sends in time order (each node's knowledge grows
    with its deliveries and sends); C and Dv may already be partly closed."""
    NN = p.NN
    K = np.zeros((NN, NN), _I64)
    ptr = p.f_start[:-1].tolist()
    fe = fold_end.tolist()
    orig = p.origin.tolist()
    posl = p.pos.tolist()
    for m in _order_by(p.t).tolist():
        s = orig[m]
        ks = K[s]
        if fe[m] > ptr[s]:
            blk = p.f_msg[ptr[s]:fe[m]]
            np.maximum(ks, Dv[blk].max(axis=0), out=ks)
            ptr[s] = fe[m]
        row = np.maximum(C[m], ks)
        for d in deps[m]:
            np.maximum(row, Dv[d], out=row)
        row[s] = min(row[s], posl[m] - 1)
        C[m] = row
        row[s] = posl[m]
        Dv[m] = row
        np.maximum(ks, row, out=ks)
    return C


def _direct_rules(p: Prepared, m1: int, m2: int) -> List[str]:
    rules = []
    if p.origin[m1] == p.origin[m2] and p.pos[m1] < p.pos[m2]:
        rules.append("a")
    d = p.first_delivery(m1, int(p.origin[m2]))
    if d is not None and d < p.t[m2]:
        rules.append("b")
    vc, has = p.vc
    if has[m1] and has[m2] and (vc[m1] <= vc[m2]).all() and (vc[m1] < vc[m2]).any():
        rules.append("c")
    if m1 in p.deps[0][m2]:
        rules.append("d")
    return rules or ["transitive"]


def check_causal_order(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "causal-order", ("late-predecessor", "missing-predecessor")
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    M, NN = p.M, p.NN
    rules = ["a", "b"] + (["c"] if p.vc[1].any() else []) + (["d"] if any(p.deps[0]) else [])
    stats: Dict[str, Any] = {"rules": rules, "unknown_deps": p.deps[1]}
    if not len(p.f_msg):
        return _result(name, {t: 0 for t in types}, {t: [] for t in types}, stats, 0, _NO_DELIVERY)
    C = _causal_past(p)
    seg_len = p.origin_count + 1
    off2 = np.concatenate(([0], np.cumsum(seg_len)[:-1])).astype(_I64)
    seg_starts = np.zeros(int(seg_len.sum()), bool)
    seg_starts[off2] = True
    bo = p.by_origin
    slot = off2[p.origin[bo]] + p.pos[bo]
    E_order = np.argsort(p.E_node, kind="stable")
    E_start = np.searchsorted(p.E_node[E_order], np.arange(NN + 1))
    n_late = n_miss = 0
    found: Dict[str, List[Tuple[int, int, int, np.ndarray, np.ndarray]]] = {t: [] for t in types}
    for r in range(NN):
        a, b = p.f_start[r], p.f_start[r + 1]
        if a == b:
            continue
        mr = p.f_msg[a:b]
        k = len(mr)
        delpos = np.full(M, -1, _I64)
        delpos[mr] = np.arange(k)
        req = np.zeros(M, bool)
        req[p.E_msg[E_order[E_start[r]:E_start[r + 1]]]] = True
        late_flat = np.full(len(seg_starts), -1, _I64)
        late_flat[slot] = delpos[bo]
        late_flat = _group_cummax(late_flat, seg_starts)
        miss_flat = np.zeros(len(seg_starts), _I64)
        miss_flat[slot] = (req & (delpos < 0))[bo]
        cs = np.cumsum(miss_flat)
        miss_flat = cs - cs[np.repeat(off2, seg_len)]
        for c0 in range(0, k, 200_000):
            c1 = min(k, c0 + 200_000)
            idx = off2[None, :] + C[mr[c0:c1]]
            late = late_flat[idx] > np.arange(c0, c1)[:, None]
            miss = miss_flat[idx] > 0
            lrow, mrow = late.any(axis=1), miss.any(axis=1)
            n_late += int(lrow.sum())
            n_miss += int(mrow.sum())
            for t, rowmask, mat in (("late-predecessor", lrow, late), ("missing-predecessor", mrow, miss)):
                for i in np.flatnonzero(rowmask)[:MAX_COUNTEREXAMPLES - len(found[t])]:
                    found[t].append((r, int(mr[c0 + i]), c0 + int(i), np.flatnonzero(mat[i]), delpos))
    cex: Dict[str, list] = {t: [] for t in types}
    for t in types:
        for r, m2, p2, origins, delpos in found[t]:
            cands = []
            for j in origins:
                seg = bo[p.origin_off[j]:p.origin_off[j] + C[m2, j]]
                if t == "late-predecessor":
                    hit = seg[delpos[seg] > p2]
                else:
                    Er = p.E_msg[p.E_node == r]
                    hit = seg[(delpos[seg] < 0) & _member(seg, np.sort(Er))]
                cands.extend(hit[::-1][:50].tolist())
            scored = [(_direct_rules(p, m1, m2), m1) for m1 in cands]
            scored.sort(key=lambda x: (x[0] == ["transitive"], -p.t[x[1]]))
            rl, m1 = scored[0]
            cex[t].append({"node": p.nname(r), "msg": p.mid(m2), "delivered_at": p.first_delivery(m2, r),
                           "predecessor": p.mid(m1), "predecessor_delivered_at": p.first_delivery(m1, r),
                           "rules": rl})
    return _result(name, {"late-predecessor": n_late, "missing-predecessor": n_miss}, cex, stats, len(p.f_msg),
                   _NO_DELIVERY)


# ----------------------------------------------------------------------------------------------
# 7. agreement


def check_agreement(history: Union[History, Prepared]) -> Dict[str, Any]:
    p = prepare(history)
    name, types = "agreement", ("disagreement",)
    if not p.M:
        return _unknown(name, types, _NO_SEND)
    by_correct = np.zeros(p.M, bool)
    ok = p.correct[p.f_node]
    by_correct[p.f_msg[ok]] = True
    lm, ln = p.lost
    bad = p.correct[ln] & by_correct[lm] if len(lm) else np.zeros(0, bool)
    cex = []
    for i in _first_rows(bad):
        m = lm[i]
        who = np.unique(p.f_node[(p.f_msg == m) & ok])[:3]
        cex.append({"msg": p.mid(m), "node": p.nname(ln[i]), "sent_at": int(p.t[m]),
                    "delivered_by": [p.nname(x) for x in who]})
    stats = {"correct_nodes": [n for n, c in zip(p.node_names, p.correct) if c],
             "messages_delivered_by_a_correct_node": int(by_correct.sum())}
    return _result(name, {"disagreement": int(bad.sum())}, {"disagreement": cex}, stats, int(by_correct.sum()),
                   "no correct node delivered a sent message")


# ----------------------------------------------------------------------------------------------


def check_all(history: Union[History, Prepared], causal: bool = True) -> List[Dict[str, Any]]:
    """Every check, in the order of CHECKS; the ones whose inputs are absent are "unknown" with
    stats["reason"]. causal=False skips causal order (its closure is the costly part on large
    histories whose protocol declares no causality); it is then "unknown" with the reason."""
    p = prepare(history)
    causal_result = check_causal_order(p) if causal else _unknown(
        "causal-order", ("violation",), "skipped: the messages carry no vector clocks or dependencies and the "
        "history is large; derive causality from sends and deliveries with --causal derive")
    return check_delivery(p) + [check_fifo(p), check_total_order_sequencer(p), check_total_order_global(p),
                                check_priority_order(p), causal_result, check_agreement(p)]
