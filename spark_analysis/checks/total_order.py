"""Total order, per sequencer (the numbers each sequencer gave are delivered in order) and global
(one order of all messages that every node's deliveries follow):

- "total-order-sequencer": per sequencer: reuse (one number, two messages), out-of-order (a node
  delivers a number lower than one it delivered before; counted per delivery), hole (with
  contiguous_order; counted per (node, number): a number between the sequencer's first number and
  the highest one the node delivered that the node never delivered, while it was either assigned
  to no message or to one whose E contains the node). Numbers are per sequencer.
- "total-order-global": the union over nodes of the edges a -> b, b delivered right after a at
  some node, must be acyclic (there is then one total order that every node's order follows; the
  relative order of messages two nodes share agrees as a consequence). cycle counts the strongly
  connected components with a cycle; the counterexamples are the shortest cycles found by BFS,
  shortest first, each edge with the node and times that witness it (stats["smallest_cycle_exact"]
  is False if the search budget ran out first).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from .arrays import I64, INT64_MAX, group_cummax, member, order_by, runs, shift, starts, unique
from .history import History, Prepared, prepare
from .verdict import MAX_COUNTEREXAMPLES, NO_DELIVERY, NO_SEND, first_rows, result, unknown

__all__ = ["CYCLE_SEARCH_BUDGET", "check_total_order_global", "check_total_order_sequencer"]

#: edges examined, in all, by the BFS searches for the shortest cycle before settling for the best
#: found (stats["smallest_cycle_exact"] is then False)
CYCLE_SEARCH_BUDGET = 2_000_000


def check_total_order_sequencer(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"total-order-sequencer": reuse, out-of-order and (when the history requires contiguity) hole."""
    p = prepare(history)
    name, types = "total-order-sequencer", ("reuse", "out-of-order", "hole")
    if not p.M:
        return unknown(name, types, NO_SEND)
    ov, om = p.order
    if not om.any():
        return unknown(name, types, "no order column" if not p.present["order"] else "no message has an order number")
    scode, snames = p.sequencer
    S = len(snames)
    # reuse: one (sequencer, number) held by two messages
    numbered = np.flatnonzero(om)
    rk = pd.DataFrame({"s": scode[numbered], "o": ov[numbered], "m": numbered})
    reused = rk[rk.duplicated(["s", "o"], keep=False)].groupby(["s", "o"], sort=True)["m"].agg(list)
    cex_reuse = [{"sequencer": snames[s], "order": int(o), "msgs": [p.mid(m) for m in ms[:10]]}
                 for (s, o), ms in reused.head(MAX_COUNTEREXAMPLES).items()]
    # out-of-order at a node, per sequencer
    dense = np.zeros(p.M, I64)
    _, inv_o = np.unique(ov[numbered], return_inverse=True)
    dense[numbered] = inv_o + 1
    sel = om[p.f_msg]
    fm, fn, ft = p.f_msg[sel], p.f_node[sel], p.f_t[sel]
    g = fn * S + scode[fm]
    srt = order_by(g)
    gs, rs = g[srt], dense[fm[srt]]
    st = starts(gs)
    cm = group_cummax(rs, st)
    prev = shift(cm, st, 0)
    ooo = rs < prev
    cex_ooo = []
    for i in first_rows(ooo):
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
    if p.h.contiguous_order and len(gs):
        # per (node, sequencer) group: the numbers delivered, expected (E) and assigned
        E_sel = om[p.E_msg]
        Em = p.E_msg[E_sel]
        ek = p.E_node[E_sel] * S + scode[Em]
        eo = order_by(ek, Em)
        ek, Em = ek[eo], Em[eo]
        assigned_by = {}
        so = order_by(scode[numbered], ov[numbered])
        ss = scode[numbered][so]
        for s0, a0, b0 in zip(*runs(ss)):
            assigned_by[int(s0)] = unique(ov[numbered[so[a0:b0]]])
        for g0, a0, b0 in zip(*runs(gs)):
            n, sq = divmod(int(g0), S)
            assigned = assigned_by[sq]
            lo = int(assigned[0])
            delivered = unique(ov[fm[srt[a0:b0]]])
            hi = int(delivered[-1])
            a_in = assigned[(assigned >= lo) & (assigned <= hi)]
            unassigned = (hi - lo + 1) - len(a_in)
            ea, eb = np.searchsorted(ek, [g0, g0 + 1])
            expected = unique(ov[Em[ea:eb]])
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
                named = in_s[member(ov[in_s], np.array(sorted(missing), dtype=I64))]
                cex_hole.append({"sequencer": snames[sq], "node": p.nname(n), "missing": missing,
                                 "missing_msgs": {str(int(ov[m])): p.mid(m) for m in named},
                                 "count": int(k), "first": lo, "highest_delivered": hi})
    stats = {"sequencers": [s for s in snames], "numbered_messages": len(numbered),
             "contiguity_required": bool(p.h.contiguous_order)}
    return result(name, {"reuse": len(reused), "out-of-order": int(ooo.sum()), "hole": int(n_holes)},
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
# global total order: the consecutive-delivery graph must be acyclic


def check_total_order_global(history: Union[History, Prepared]) -> Dict[str, Any]:
    """"total-order-global": the cycles of the graph of consecutive deliveries, shortest named."""
    p = prepare(history)
    name, types = "total-order-global", ("cycle",)
    if not p.M:
        return unknown(name, types, NO_SEND)
    M = p.M
    fm, fn = p.f_msg, p.f_node
    if len(fm) > 1:
        same = fn[1:] == fn[:-1]
        rows = np.flatnonzero(same)
        ek = fm[rows] * M + fm[rows + 1]
        uk, ui = np.unique(ek, return_index=True)
        ea, eb, ew = uk // M, uk % M, rows[ui]
    else:
        ea = eb = ew = uk = np.zeros(0, I64)
    stats: Dict[str, Any] = {"edges": len(ea), "messages": len(unique(fm))}
    proof = _acyclic_by_key(p, ea, eb)
    if proof:
        stats["acyclic_by"] = proof
        return result(name, {"cycle": 0}, {"cycle": []}, stats, len(fm), NO_DELIVERY)
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
    return result(name, {"cycle": len(comps)}, {"cycle": cex}, stats, len(fm), NO_DELIVERY)


def _acyclic_by_key(p: Prepared, ea: np.ndarray, eb: np.ndarray) -> Optional[str]:
    """Cheap proofs of acyclicity: a ranking of messages under which every edge goes forward."""
    if not len(ea):
        return "no edge"
    M = p.M
    cands = [("send time", order_by(p.t))]
    ov, om = p.order
    if om.all():
        cands.insert(0, ("order", order_by(ov)))
    first = np.full(M, INT64_MAX, I64)
    np.minimum.at(first, p.f_msg, p.f_t)
    cands.append(("first delivery", order_by(first)))
    for label, order in cands:
        rank = np.empty(M, I64)
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
    empty = _Components(np.zeros(0, I64), np.zeros(0, I64))
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
    order = order_by(sizes[lab], lab, members)  # by component size, component, vertex
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
