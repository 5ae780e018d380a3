"""From Spark's event tables to the checks' History, and the measures computed on it.

The history of a run is its application-level sends (with intended receivers, and the order,
priority, vector-timestamp and dependency fields a protocol logs) and deliveries; nodes that
crashed come from the manifest's timeline as executed (each action's effect on liveness from the
action registry, testbed/actions: kill and stop take a node down, start brings it back), and what the
run's protocol promises beyond the logs (contiguous sequencer numbers) from its `promises`.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from testbed.actions import liveness

from .checks import History, Prepared, prepare
from .checks.arrays import lookup, member, unique
from .reduce import CARRIER_TYPES, DATA_TYPES

#: the promise under which a run's sequencer numbers must be contiguous (no number skipped): the
#: total-order-sequencer check then counts holes
CONTIGUOUS_ORDER = "contiguous-order"


def _json_tuple(text) -> Optional[tuple]:
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return None
    value = json.loads(text) if isinstance(text, str) else text
    if isinstance(value, dict):  # a vector clock keyed by node position
        value = [value[k] for k in sorted(value, key=lambda k: int(k))]
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def down_intervals(manifest: dict, effect=None) -> Dict[str, List[Tuple[int, Optional[int]]]]:
    """node → the intervals [start, end) during which it did not take part (end None: until the
    end of the run), from the actions that succeeded; a node whose agent waited for the timeline
    (`start: timeline`) is down from time zero until its start. `effect(action name)` says what an
    action does: "down", "up" or None (default: its liveness, testbed.actions.liveness; the
    fidelity analysis asks for its timers instead, spark_analysis.fidelity.held_intervals)."""
    effect = effect or liveness
    down: Dict[str, List[list]] = {}
    t0 = manifest.get("t0_ns")
    nodes = (manifest.get("topology") or {}).get("nodes")
    for node, info in (nodes.items() if isinstance(nodes, dict) else ()):
        if isinstance(info, dict) and info.get("start") == "timeline" and t0 is not None:
            down[node] = [[int(t0), None]]
    for action in sorted(manifest.get("timeline", []), key=lambda a: a.get("t_ns") or 0):
        if not action.get("ok", True) or action.get("t_ns") is None:
            continue
        nodes = action.get("nodes") or ([action["node"]] if action.get("node") else [])
        for node in nodes:
            spans = down.setdefault(node, [])
            does = effect(action.get("action", ""))
            if does == "down" and not (spans and spans[-1][1] is None):
                spans.append([int(action["t_ns"]), None])
            elif does == "up" and spans and spans[-1][1] is None:
                spans[-1][1] = int(action["t_ns"])
    return {n: [tuple(s) for s in spans] for n, spans in down.items() if spans}


def promises_contiguous_order(manifest: dict) -> bool:
    """Whether the run promises contiguous sequencer numbers: the manifest's top-level list
    `promises` names CONTIGUOUS_ORDER. No list (a run recorded before manifests carried promises,
    a protocol that promises nothing) is no promise; anything but a list of strings is an error,
    not a silent "no", since the hole rule would then quietly go unjudged."""
    promises = manifest.get("promises")
    if promises is None:
        return False
    if not isinstance(promises, list) or not all(isinstance(x, str) for x in promises):
        raise ValueError(f"the manifest's promises must be a list of strings, not {promises!r}")
    return CONTIGUOUS_ORDER in promises


def end_of_run(manifest: dict, deliveries: pd.DataFrame) -> int:
    scen = manifest.get("scenario") or {}
    t0 = manifest.get("t0_ns")
    if t0 and scen.get("duration_s") is not None:
        return int(t0 + (float(scen.get("duration_s", 0)) + float(scen.get("quiet_s", 0) or 0)) * 1e9)
    return int(deliveries["t"].max()) if len(deliveries) else int(t0 or 0)


def gossip_measures(history: Union[History, Prepared], manifest: dict, wire: dict) -> Dict[str, object]:
    """Reliability, atomicity, bimodality (from the history), RMR and control overhead (from the
    wire), and convergence time after the last fault. Pass the checks' Prepared history to
    encode it once."""
    p = prepare(history)
    # E(m) as the checks define it, restricted to correct nodes; a pair is a hit when that node
    # delivered m (its first delivery; duplicates and phantoms do not count)
    keep = p.correct[p.E_node] if len(p.E_node) else np.zeros(0, bool)
    e_msg, e_key = p.E_msg[keep], p.E_key[keep]
    hit = member(e_key, np.sort(p.f_msg * p.NN + p.f_node))
    count = np.bincount(e_msg, minlength=p.M)
    hits = np.bincount(e_msg, weights=hit, minlength=p.M)
    has = count > 0
    rel = hits[has] / count[has]
    out: Dict[str, object] = {
        "messages": int(len(rel)),
        "reliability_mean": float(rel.mean()) if len(rel) else None,
        "atomicity": float((rel >= 1.0).mean()) if len(rel) else None,
        "bimodality": float(((rel > 0.1) & (rel < 0.9)).mean()) if len(rel) else None,
    }
    out.update({k: wire.get(k) for k in ("rmr", "rmr_messages", "control_overhead", "payload_packets",
                                         "control_packets")})
    # convergence: after the last fault ends, the time until the last delivery of a message sent before it
    ends = [a["t_ns"] for a in manifest.get("timeline", []) if a.get("t_ns") and a.get("ok", True)]
    if ends and p.D:
        last = max(ends)
        sent = p.d_msg < p.M
        late = sent.copy()
        late[sent] = p.t[p.d_msg[sent]] <= last
        late &= p.d_t > last
        out["last_fault_end_ns"] = int(last)
        out["convergence_s"] = float((p.d_t[late].max() - last) / 1e9) if late.any() else 0.0
    else:
        out["convergence_s"] = None
    return out


class _Lazy:
    """A sequence computed per index on access (msg ids, eligible lists): only counterexamples
    and dependency lookups read it, so millions of rows are not turned into strings up front."""

    def __init__(self, n: int, item) -> None:
        self.n, self.item = n, item
        self._all = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            return self.item(int(i))
        if self._all is None:
            self._all = np.array([self.item(k) for k in range(self.n)] + [None], dtype=object)[:-1]
        return self._all[i]


def prepared_history(d, manifest: dict) -> Prepared:
    """The checks' Prepared history of one run straight from the analysis's integer codes
    (codes.RunData), without a string per row. Messages are named origin:seq:type.

    Only application messages are judged: sends of the data types (reduce.DATA_TYPES) and of any
    type some node delivers. A protocol's control messages (an AbC request, a gossip pull) are
    never delivered to an application, so they are not "lost"; nor are carriers
    (reduce.CARRIER_TYPES), whose records are the application's messages. Sequencer numbers must be
    contiguous when the manifest promises it (promises_contiguous_order)."""
    judged_codes = ({int(t) for t in DATA_TYPES} - {int(t) for t in CARRIER_TYPES}) | \
        {int(t) for t in unique(d.d_type) if t >= 0}
    keep = np.flatnonzero(np.isin(d.s_type, sorted(judged_codes))) if d.S else np.zeros(0, np.int64)
    # messages numbered by (origin, type, seq), phantoms by name: the same codes, and so the same
    # counterexamples, whatever order the rows arrived in
    keep = keep[np.argsort(d.s_key[keep], kind="stable")]
    M = len(keep)
    sk = d.s_key[keep]  # sorted
    if M > 1 and (sk[1:] == sk[:-1]).any():
        dup = sk[1:][sk[1:] == sk[:-1]][:5]
        names = [_msg_name(d, int(keep[np.searchsorted(sk, k)])) for k in dup]
        raise ValueError(f"sends has duplicate msg ids: {names}")
    d_msg = lookup(sk, d.d_key)  # message code, -1 for none
    # phantoms: deliveries of messages no judged send names, numbered after the sends
    ph = d_msg < 0
    phantom_ids: List[str] = []
    if ph.any():
        ph_rows = np.flatnonzero(ph)
        labels = [_delivery_name(d, int(i)) for i in ph_rows]
        codes, uniq = pd.factorize(pd.Series(labels, dtype=object), sort=True)
        d_msg[ph_rows] = M + codes
        phantom_ids = [str(u) for u in uniq]

    down = down_intervals(manifest)
    names = list(d.nodes.names[:d.NN - 1])  # the first step's: the receptions join may add more meanwhile
    known = set(names)
    for n in down:
        if n not in known:
            names.append(n)
            known.add(n)
    e_sel = np.isin(d.e_send, keep) if len(d.e_send) else np.zeros(0, bool)
    where = np.full(max(d.S, 1), -1, np.int64)
    where[keep] = np.arange(M)
    e_msg, e_node = where[d.e_send[e_sel]], d.e_node[e_sel]
    e_start = np.searchsorted(d.e_send, keep) if len(d.e_send) else np.zeros(M, np.int64)
    e_end = np.searchsorted(d.e_send, keep, side="right") if len(d.e_send) else np.zeros(M, np.int64)

    frame = _optional_columns(d, keep)
    nodes = sorted(manifest.get("node_ids", {}), key=lambda n: manifest["node_ids"][n])
    ends = pd.DataFrame({"t": d.d_t})
    h = History(sends=None, deliveries=None, nodes=nodes, down=down, end_ns=end_of_run(manifest, ends),
                contiguous_order=promises_contiguous_order(manifest))
    return Prepared.from_codes(
        h, sends=frame, node_names=names, n_vc=len(nodes), origin=d.s_origin[keep], seq=d.s_seq[keep],
        t=d.s_t[keep], e_msg=e_msg, e_node=e_node, d_msg=d_msg, d_node=d.d_node, d_t=d.d_t,
        msg_ids=_Lazy(M, lambda m: _msg_name(d, int(keep[m]))), phantom_ids=np.array(phantom_ids, dtype=object),
        eligible=_Lazy(M, lambda m: tuple(names[c] for c in d.e_node[e_start[m]:e_end[m]])))


def _msg_name(d, s: int) -> str:
    return f"{d.nodes.names[d.s_origin[s]]}:{int(d.s_seq[s])}:{d.type_label(d.s_type[s])}"


def _delivery_name(d, i: int) -> str:
    origin = d.node_label(d.d_origin[i])
    seq = int(d.d_seq[i]) if d.d_seq_valid[i] else None
    return f"{origin}:{seq}:{d.type_label(d.d_type[i]) if d.d_type[i] >= 0 else None}"


def _optional_columns(d, keep: np.ndarray) -> pd.DataFrame:
    """order, priority, sequencer, vc and deps of the judged sends, where any send has them."""
    out = pd.DataFrame(index=pd.RangeIndex(len(keep)))
    extra = d.s_extra
    for col in ("order", "priority"):
        if col in extra.column_names and extra.column(col).null_count < len(extra):
            out[col] = extra.column(col).to_pandas().iloc[keep].reset_index(drop=True).astype("Int64")
    if "sequencer" in extra.column_names and extra.column("sequencer").null_count < len(extra):
        out["sequencer"] = extra.column("sequencer").to_pandas().iloc[keep].reset_index(drop=True)
    for col in ("vc", "deps"):
        if col in extra.column_names and extra.column(col).null_count < len(extra):
            out[col] = [_json_tuple(v) for v in extra.column(col).to_pandas().iloc[keep]]
    if "deps" in out:  # deps name messages as origin:seq; the history's ids carry the type too
        types = {f"{d.nodes.names[d.s_origin[s]]}:{int(d.s_seq[s])}": _msg_name(d, int(s)) for s in keep}
        out["deps"] = [tuple(types.get(x, x) for x in v) if v else None for v in out["deps"]]
    return out
