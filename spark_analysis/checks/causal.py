"""Causal order: a node delivers a message only after the messages of its causal past.

- "causal-order": m1 -> m2 when (a) same origin and seq1 < seq2, (b) m2's sender delivered m1
  before sending m2, (c) vc1 < vc2, (d) m1 in deps(m2), and transitively. A node delivering m2
  must have delivered each predecessor before: late-predecessor (delivered after m2),
  missing-predecessor (never delivered although the node is in E(m1)). The transitive closure is
  computed (as one vector of per-origin prefixes per message) so that a chain through messages the
  node never receives is no blind spot; counterexamples say which direct rules link the named
  predecessor to the message, or "transitive". Counted per delivery of m2. Without vc and deps
  only rules a and b apply (stats["rules"]).
- "optimistic-causal-order": the same relation, but only late-predecessor counts: a node never
  delivers a message after one it causally precedes, while a predecessor never delivered is
  allowed (the optimistic causal order of Gidenstam et al.: an event that became obsolete is
  skipped, and loss is a measure of such a protocol, not a violation). Both come from one
  computation of the closure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple, Union

import numpy as np

from .arrays import I64, group_cummax, member, order_by, shift, starts, unique
from .history import History, Prepared, prepare
from .verdict import MAX_COUNTEREXAMPLES, NO_DELIVERY, NO_SEND, result, unknown

__all__ = ["CLOSURE_PASSES", "SKIPPED", "check_causal_order", "check_causal_order_unless_skipped",
           "check_causal_orders", "check_optimistic_causal_order"]
OPTIMISTIC = "optimistic-causal-order"

#: vectorised passes of the causal closure before finishing it sequentially
CLOSURE_PASSES = 6
#: the reason of the "unknown" result when check_all is told not to judge causal order
SKIPPED = ("skipped: the messages carry no vector clocks or dependencies and the history is large; derive "
           "causality from sends and deliveries with --causal derive")


def _vc_prefixes(p: Prepared) -> np.ndarray:
    """Per message and origin j, the highest pos of j's messages whose vc is below the message's
    (rule c): their column-wise running maximum makes them a chain, so a prefix."""
    M, NN = p.M, p.NN
    C = np.zeros((M, NN), I64)
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
    fold_end = np.zeros(M, I64)
    for s in unique(p.origin):
        mine = np.flatnonzero(p.origin == s)
        a, b = p.f_start[s], p.f_start[s + 1]
        fold_end[mine] = a + np.searchsorted(p.f_t[a:b], p.t[mine], side="left")
    has_fold = fold_end > p.f_start[p.origin]
    dep_m = np.array([m for m, ds in enumerate(deps) for _ in ds], dtype=I64)
    dep_d = np.array([d for ds in deps for d in ds], dtype=I64)
    if not has_fold.any() and not len(dep_m):
        return C0
    folded, fold_rows = np.flatnonzero(has_fold), fold_end[has_fold] - 1
    f_starts = starts(p.f_node)
    bo = p.by_origin
    bo_starts = starts(p.origin[bo])

    def step(D: np.ndarray) -> np.ndarray:
        C = C0.copy()
        for c in range(NN):
            col = D[:, c]
            if len(folded):
                C[folded, c] = np.maximum(C[folded, c], group_cummax(col[p.f_msg], f_starts)[fold_rows])
            own_prev = shift(group_cummax(col[bo], bo_starts), bo_starts, 0)  # earlier sends, same origin
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
    K = np.zeros((NN, NN), I64)
    ptr = p.f_start[:-1].tolist()
    fe = fold_end.tolist()
    orig = p.origin.tolist()
    posl = p.pos.tolist()
    for m in order_by(p.t).tolist():
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


def check_causal_orders(history: Union[History, Prepared]) -> List[Dict[str, Any]]:
    """["causal-order", "optimistic-causal-order"] from one computation of the closure."""
    full = check_causal_order(history)
    late = "late-predecessor"
    if full["verdict"] == "unknown" and not full["stats"].get("checked"):
        opt = unknown(OPTIMISTIC, (late,), full["stats"].get("reason", NO_SEND))
    else:
        stats = {k: v for k, v in full["stats"].items() if k != "checked"}
        opt = result(OPTIMISTIC, {late: full["anomalies"][late]}, {late: full["counterexamples"][late]}, stats,
                     full["stats"]["checked"], NO_DELIVERY)
    return [full, opt]


def check_optimistic_causal_order(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"optimistic-causal-order": deliveries of messages after one they causally precede."""
    return check_causal_orders(history)[1]


def check_causal_order(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"causal-order": deliveries whose causal predecessors came later or never."""
    p = prepare(history)
    name, types = "causal-order", ("late-predecessor", "missing-predecessor")
    if not p.M:
        return unknown(name, types, NO_SEND)
    M, NN = p.M, p.NN
    rules = ["a", "b"] + (["c"] if p.vc[1].any() else []) + (["d"] if any(p.deps[0]) else [])
    stats: Dict[str, Any] = {"rules": rules, "unknown_deps": p.deps[1]}
    if not len(p.f_msg):
        return result(name, {t: 0 for t in types}, {t: [] for t in types}, stats, 0, NO_DELIVERY)
    C = _causal_past(p)
    seg_len = p.origin_count + 1
    off2 = np.concatenate(([0], np.cumsum(seg_len)[:-1])).astype(I64)
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
        delpos = np.full(M, -1, I64)
        delpos[mr] = np.arange(k)
        req = np.zeros(M, bool)
        req[p.E_msg[E_order[E_start[r]:E_start[r + 1]]]] = True
        late_flat = np.full(len(seg_starts), -1, I64)
        late_flat[slot] = delpos[bo]
        late_flat = group_cummax(late_flat, seg_starts)
        miss_flat = np.zeros(len(seg_starts), I64)
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
                    hit = seg[(delpos[seg] < 0) & member(seg, np.sort(Er))]
                cands.extend(hit[::-1][:50].tolist())
            scored = [(_direct_rules(p, m1, m2), m1) for m1 in cands]
            scored.sort(key=lambda x: (x[0] == ["transitive"], -p.t[x[1]]))
            rl, m1 = scored[0]
            cex[t].append({"node": p.nname(r), "msg": p.mid(m2), "delivered_at": p.first_delivery(m2, r),
                           "predecessor": p.mid(m1), "predecessor_delivered_at": p.first_delivery(m1, r),
                           "rules": rl})
    return result(name, {"late-predecessor": n_late, "missing-predecessor": n_miss}, cex, stats, len(p.f_msg),
                  NO_DELIVERY)


def check_causal_order_unless_skipped(history: Union[History, Prepared], causal: bool = True) -> List[Dict[str, Any]]:
    """check_causal_orders, or with causal=False "unknown" results whose reason says they were
    skipped (the closure is the costly part on large histories whose protocol declares no causality)."""
    if causal:
        return check_causal_orders(history)
    return [unknown("causal-order", ("violation",), SKIPPED), unknown(OPTIMISTIC, ("violation",), SKIPPED)]
