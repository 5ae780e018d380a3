"""The radio medium in the analysis: its records, who a radio member's broadcasts are meant for,
the delivery per pair of nodes against the loss model (its report section: radio_report).

A radio segment (testbed/, the medium) delivers a frame from S to R only while R is within S's
range, with the probability p its loss model gives for that distance. The run directory records
it (docs/RUNDIR.md): the manifest's `radio` key (per segment its range, loss model, tick,
members), `radio/positions.parquet` (every member's position at every tick) and
`radio/links.parquet` (every ordered in-range pair at every tick, with its distance and p; a
tick's rows hold from its t_ns until the next tick of the segment). `read` loads them once per
run, beside its manifest (job.analyze sets RunInfo.radio), into a `Radio` of numpy arrays per
segment; a run without the `radio` key has none and nothing here changes its analysis.

The rule both engines apply (`receivers`): the intended receivers of a send that names none (a
broadcast) are the sender's peers on its wired segments (the nodes sharing a subnet with it, as
for every run) and, on each radio segment it is a member of, the `dst` of the links rows whose
`src` is the sender at the segment's tick in force at the send event's time `t`: the last tick
at or before it, the first tick for a send before any. The result is a schedule per node, its
receivers over time as intervals [from_ns, until_ns) (None: unbounded), computed once in the
driver; the local engine looks each send's interval up with numpy (local.intended_receivers),
the general path joins the sends with it in Spark (metrics.intended_receivers). A segment whose
tables are missing counts all its members as in range (the rule of a wired segment).

The per-pair table (`measures`), from the captures (packets.parquet, whichever engine wrote it):
- a frame on the air is a testbed packet a member's capture shows leaving it (direction sent)
  with a source address in the segment's subnet; it is addressed to another member R when its
  destination is one of R's addresses the reader counts as local (pcapreader.local_addresses:
  R's own, the subnet's broadcast, 255.255.255.255), as R's capture would show it received;
- the tick in force for a frame is the one at its capture time at the sender; the pair (S, R)
  is in range at that tick when links has the row (S, R), whose p is then the frame's delivery
  probability;
- R received the frame when R's capture shows a packet received from S (the header's sender,
  a source address in the subnet) with the same header (sender, origin, seq, type, fragment,
  flags, hops, message id): matched to S's latest transmission of that header at or before the
  reception; copies of one frame count once;
- per pair: frames S sent to R in range (n), of them received by R (k), the measured ratio k/n,
  the expected ratio (mean p over those frames), the 99.9% interval of a binomial(n, mean p)
  count (conservative: frames with different p vary less than that) and the z-score
  (k - sum p) / sqrt(sum p(1-p)); a pair whose k lies outside the interval is flagged. Frames R
  received from S while out of range (at the tick of S's transmission; of a reception whose
  transmission S's capture lacks, at the reception's tick) are counted: a medium that works
  never delivers them. A tick's rules change at one instant between its from_ns and t_ns (the
  nftables transaction): a frame S sent in that window, out of range at the old tick and in
  range at the new one, may have passed under either and is counted apart (at a tick change).
- neighbours: per member and tick, how many members are in its range (its links rows).
"""

from __future__ import annotations

import bisect
import ipaddress
import os
import posixpath
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Optional, Tuple

import numpy as np

from testbed.radio.record import DIRECTORY as RECORDS_DIR, TABLES as RECORDS

from .checks.arrays import group_cummax, lookup, order_by, starts, unique

RADIO_DIR = RECORDS_DIR
POSITIONS = "positions.parquet"
LINKS = "links.parquet"
#: read when present: when each tick's transaction began (the rules changed between it and t_ns)
OPTIONAL_COLUMNS = {"from_ns": RECORDS["positions"]["from_ns"]}
#: the tables' columns and their Arrow types (testbed.radio.record, docs/RUNDIR.md), those required
POSITION_COLUMNS = {c: t for c, t in RECORDS["positions"].items() if c not in OPTIONAL_COLUMNS}
LINK_COLUMNS = {c: t for c, t in RECORDS["links"].items() if c not in OPTIONAL_COLUMNS}
#: the confidence of each pair's interval
CONFIDENCE = 0.999
#: the packet columns the per-pair table reads from packets.parquet
FRAME_COLUMNS = ["node", "ts_ns", "direction", "src_ip", "dst_ip", "sender", "origin", "seq", "type", "frag_index",
                 "flags", "hops", "message_id"]
#: what every capture of one transmission shows alike: a frame's identity on the air
FRAME_KEY = ["sender", "origin", "seq", "type", "frag_index", "flags", "hops", "message_id"]

Schedule = Dict[str, List[Tuple[Optional[int], Optional[int], List[str]]]]


@dataclass
class Segment:
    """One radio segment's records as numpy arrays, its members coded 0..M-1 (the manifest's
    members in node-id order, then any node only the tables name)."""

    name: str
    config: dict
    members: List[str]
    interfaces: Dict[str, str]     # member -> its interface on the segment (the manifest's)
    ticks: np.ndarray              # the tick times (t_ns), sorted, distinct
    starts: np.ndarray             # per tick, when its rules began to change (from_ns; t_ns if unknown)
    p_tick: np.ndarray             # positions: tick index, member code, x, y, z; by tick, member
    p_node: np.ndarray
    xyz: np.ndarray
    l_key: np.ndarray              # links: (tick * M + src) * M + dst, sorted; distance and p
    l_distance: np.ndarray
    l_p: np.ndarray
    has_links: bool                # False: links.parquet is missing (nothing known about ranges)

    @property
    def M(self) -> int:
        return len(self.members)

    @cached_property
    def index(self) -> Dict[str, int]:
        return {n: i for i, n in enumerate(self.members)}

    @cached_property
    def l_tick(self) -> np.ndarray:
        return self.l_key // (self.M * self.M)

    @cached_property
    def l_src(self) -> np.ndarray:
        return self.l_key // self.M % self.M

    @cached_property
    def l_dst(self) -> np.ndarray:
        return self.l_key % self.M

    def tick_at(self, t_ns: np.ndarray) -> np.ndarray:
        """The tick in force at each time: the last at or before it, the first before any."""
        return np.maximum(np.searchsorted(self.ticks, t_ns, side="right") - 1, 0)

    def link(self, tick: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The links row of each (tick, src, dst), -1 when the pair is out of range then."""
        M = np.int64(self.M)
        return lookup(self.l_key, (tick.astype(np.int64) * M + src) * M + dst)

    @cached_property
    def degree(self) -> np.ndarray:
        """(ticks, members): how many members each member has in range at each tick."""
        T, M = len(self.ticks), self.M
        return np.bincount(self.l_key // M, minlength=T * M).reshape(T, M) if T else np.zeros((0, M), np.int64)

    def neighbours(self, node: str) -> List[Tuple[Optional[int], List[str]]]:
        """The node's in-range members over time: (from t_ns, names) at the first tick (from None)
        and at every tick where they change. Without a links table: every other member."""
        if not self.has_links or not len(self.ticks):
            return [(None, [m for m in self.members if m != node])]
        s, M = self.index[node], np.int64(self.M)
        rows = np.flatnonzero(self.l_src == s)
        tick, dst = self.l_tick[rows], self.l_dst[rows]
        # a tick where the set changes: a row without its partner at the tick before, or after
        before = lookup(self.l_key, ((tick - 1) * M + s) * M + dst) < 0
        after = lookup(self.l_key, ((tick + 1) * M + s) * M + dst) < 0
        changed = np.union1d(tick[before & (tick > 0)], tick[after & (tick + 1 < len(self.ticks))] + 1)
        out = []
        for k in np.concatenate([[0], changed[changed > 0]]).astype(np.int64):
            a, b = np.searchsorted(self.l_key, [(k * M + s) * M, (k * M + s + 1) * M])
            out.append((None if k == 0 else int(self.ticks[k]), [self.members[d] for d in self.l_key[a:b] % M]))
        return out

    def networks(self, addresses: dict) -> List[ipaddress.IPv4Network]:
        nets = []
        for node, intf in self.interfaces.items():
            cidr = (addresses.get(node) or {}).get(intf)
            if cidr:
                net = ipaddress.ip_interface(cidr).network
                if net not in nets:
                    nets.append(net)
        return nets


@dataclass
class Radio:
    """A run's radio records: its segments, and the tables the manifest promised but the run
    directory lacks."""

    segments: Dict[str, Segment]
    missing: List[str]

    def interfaces(self) -> set:
        """(node, interface) of every member's radio interface."""
        return {(n, i) for s in self.segments.values() for n, i in s.interfaces.items()}


# -- reading ---------------------------------------------------------------------------------------

def read(spark, run) -> Optional[Radio]:
    """The run's radio records, or None for a run without the manifest's `radio` key."""
    from .inputs import AnalysisError

    config = run.manifest.get("radio")
    if not config:
        return None
    if not isinstance(config, dict) or not all(isinstance(v, dict) for v in config.values()):
        raise AnalysisError(f"{run.uri}/manifest.json: radio: an object of segments, each an object "
                            f"(docs/RUNDIR.md)")
    tables, missing = {}, []
    for name, columns in ((POSITIONS, POSITION_COLUMNS), (LINKS, LINK_COLUMNS)):
        tables[name] = _virtual(_read_table(spark, posixpath.join(run.uri, RADIO_DIR, name), columns), run)
        if tables[name] is None:
            missing.append(f"{RADIO_DIR}/{name}")
    ids = run.node_ids
    segments = {seg: _segment(seg, cfg, tables[POSITIONS], tables[LINKS], ids) for seg, cfg in sorted(config.items())}
    return Radio(segments, missing)


def _virtual(table, run):
    """A radio table with its ticks' wall-clock stamps (t_ns, from_ns) in the run's virtual time."""
    import pyarrow as pa

    from .inputs import virtual_ns

    if table is None or run.dilation == 1.0:
        return table
    for name in ("t_ns", "from_ns"):
        if name in table.column_names:
            values = np.asarray(table.column(name).to_numpy(zero_copy_only=False), np.int64)
            table = table.set_column(table.schema.get_field_index(name), name,
                                     pa.array(virtual_ns(values, run.origin, run.dilation), pa.int64()))
    return table


def _read_table(spark, uri: str, columns: Dict[str, str]):
    """A radio table as Arrow with its contract's columns and types, None when it is missing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .inputs import AnalysisError, local_path

    local = local_path(uri)
    if local is not None:
        if not os.path.exists(local):
            return None
        table = pq.read_table(local)
    else:
        try:
            table = spark.read.parquet(uri).toArrow()
        except Exception:  # Spark raises AnalysisException for a missing path
            return None
    lacking = [c for c in columns if c not in table.column_names]
    if lacking:
        raise AnalysisError(f"{uri}: column(s) {', '.join(lacking)} missing (docs/RUNDIR.md)")
    columns = {**columns, **{c: t for c, t in OPTIONAL_COLUMNS.items() if c in table.column_names}}
    try:
        return pa.table({c: table.column(c).cast(pa.type_for_alias(t)) for c, t in columns.items()})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise AnalysisError(f"{uri}: {exc} (docs/RUNDIR.md gives the columns' types)") from None


def _segment(name: str, config: dict, positions, links, ids: Dict[str, int]) -> Segment:
    import pyarrow.compute as pc

    interfaces = {str(n): str(i) for n, i in (config.get("members") or {}).items()}
    members = sorted(interfaces, key=lambda n: (ids.get(n, len(ids) + 1), n))

    def mine(table):
        if table is None:
            return None
        return table.filter(pc.equal(table.column("segment"), name))

    positions, links = mine(positions), mine(links)
    for named, cols in ((positions, ("node",)), (links, ("src", "dst"))):
        for col in cols if named is not None else ():
            members += sorted(set(named.column(col).to_pylist()) - set(members) - {None})
    index = {n: i for i, n in enumerate(members)}

    def codes(col) -> np.ndarray:
        return np.array([index.get(n, -1) for n in col.to_pylist()], np.int64)

    times = [np.asarray(t.column("t_ns").to_numpy(), np.int64) for t in (positions, links) if t is not None]
    ticks = unique(np.concatenate(times)) if times else np.zeros(0, np.int64)
    tick_starts = ticks.copy()
    for records in (positions, links):
        if records is not None and "from_ns" in records.column_names and records.num_rows:
            at = np.searchsorted(ticks, records.column("t_ns").to_numpy())
            np.minimum.at(tick_starts, at, np.asarray(records.column("from_ns").to_numpy(), np.int64))
    M = np.int64(len(members))
    if positions is not None and positions.num_rows:
        tick, node = np.searchsorted(ticks, positions.column("t_ns").to_numpy()), codes(positions.column("node"))
        xyz = np.stack([np.asarray(positions.column(c).to_numpy(), np.float64) for c in "xyz"], axis=1)
        order = order_by(tick, node)
        order = order[node[order] >= 0]
        p_tick, p_node, xyz = tick[order], node[order], xyz[order]
    else:
        p_tick, p_node, xyz = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3))
    if links is not None and links.num_rows:
        tick = np.searchsorted(ticks, links.column("t_ns").to_numpy()).astype(np.int64)
        src, dst = codes(links.column("src")), codes(links.column("dst"))
        key = (tick * M + src) * M + dst
        order = np.argsort(key, kind="stable")
        order = order[(src[order] >= 0) & (dst[order] >= 0) & (src[order] != dst[order])]  # named pairs
        order = order[starts(key[order])]  # a pair listed twice at a tick: its first row
        l_key = key[order]
        l_distance = np.asarray(links.column("distance_m").to_numpy(zero_copy_only=False), np.float64)[order]
        l_p = np.asarray(links.column("p").to_numpy(zero_copy_only=False), np.float64)[order]
    else:
        l_key, l_distance, l_p = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    return Segment(name, config, members, interfaces, ticks, tick_starts, p_tick, p_node, xyz, l_key, l_distance,
                   l_p, links is not None)


# -- the intended-receiver rule --------------------------------------------------------------------

def receivers(run) -> Schedule:
    """Each node's broadcast receivers over time: [(from_ns, until_ns, names)], intervals in time
    order (None: unbounded), one (None, None, peers) for a node on wired segments only. The
    module's rule: wired peers (RunInfo.segment_peers without the radio interfaces) and, per radio
    segment of the node, its in-range members at the tick in force."""
    radio = getattr(run, "radio", None)
    wired = run.segment_peers(skip=radio.interfaces() if radio else ())
    out: Schedule = {}
    for node in run.node_ids:
        base = set(wired.get(node, []))
        timelines = [s.neighbours(node) for s in radio.segments.values() if node in s.index] if radio else []
        if not timelines:
            out[node] = [(None, None, sorted(base))]
            continue
        bounds = sorted({t for tl in timelines for t, _ in tl if t is not None})
        intervals: List[list] = []
        for start in [None] + bounds:
            peers = set(base)
            for tl in timelines:
                at = 0 if start is None else bisect.bisect_right([t for t, _ in tl[1:]], start)
                peers.update(tl[at][1])
            names = sorted(peers - {node})
            if intervals and intervals[-1][2] == names:
                continue
            intervals.append([start, None, names])
        for a, b in zip(intervals, intervals[1:]):
            a[1] = b[0]
        out[node] = [tuple(i) for i in intervals]
    return out


def interval_of(schedule: List[tuple], t: np.ndarray, t_valid: np.ndarray) -> np.ndarray:
    """The index of the interval of a node's schedule in force at each time (-1 for a null time
    when the node's receivers change over time)."""
    if len(schedule) == 1:
        return np.zeros(len(t), np.int64)
    bounds = np.array([s[0] for s in schedule[1:]], np.int64)
    return np.where(t_valid, np.searchsorted(bounds, t, side="right"), -1)


# -- the per-pair table ----------------------------------------------------------------------------

def read_frames(spark, run, packets_uri: str):
    """The radio members' captured packets (FRAME_COLUMNS) from the packets table either engine
    wrote (a local directory read with pyarrow, else through Spark)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from .inputs import local_path

    nodes = sorted({m for s in run.radio.segments.values() for m in s.members})
    local = local_path(packets_uri)
    if local is not None:
        table = ds.dataset(local, format="parquet").to_table(columns=FRAME_COLUMNS)
        node = table.column("node")
        if pa.types.is_dictionary(node.type):
            table = table.set_column(0, "node", node.cast(pa.string()))
        table = table.filter(pc.is_in(table.column("node"), value_set=pa.array(nodes, pa.string())))
    else:
        from pyspark.sql import functions as F
        table = spark.read.parquet(packets_uri).filter(F.col("node").isin(nodes)).select(*FRAME_COLUMNS).toArrow()
    return table


def _match(tx: Dict[str, np.ndarray], rx: Dict[str, np.ndarray]) -> np.ndarray:
    """For each reception, the latest transmission with the same header at or before it (an index
    into tx), -1 when there is none."""
    n_tx, n_rx = len(tx["ts_ns"]), len(rx["ts_ns"])
    if not n_tx or not n_rx:
        return np.full(n_rx, -1, np.int64)
    keys = [np.concatenate([tx[c], rx[c]]).astype(np.int64) for c in FRAME_KEY]
    side = np.concatenate([np.zeros(n_tx, np.int64), np.ones(n_rx, np.int64)])  # at one time: sent first
    order = order_by(*keys, np.concatenate([tx["ts_ns"], rx["ts_ns"]]), side)
    head = np.zeros(len(order), bool)  # where a header's rows start
    head[0] = True
    for k in keys:
        s = k[order]
        head[1:] |= s[1:] != s[:-1]
    pos = np.where(side[order] == 0, np.arange(len(order)), -1)
    last = group_cummax(pos, head)
    found = np.where(last >= 0, order[np.maximum(last, 0)], -1)
    out = np.empty(n_rx, np.int64)
    rx_rows = side[order] == 1
    out[order[rx_rows] - n_tx] = found[rx_rows]
    return out


def _columns(frames) -> Dict[str, object]:
    """The frames' columns as int64 numpy arrays; `node` as codes into `node_names`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: Dict[str, object] = {}
    for c in FRAME_COLUMNS:
        col = frames.column(c)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if c == "node":
            col = pc.dictionary_encode(col) if not pa.types.is_dictionary(col.type) else col
            out["node_names"] = col.dictionary.to_pylist()
            out[c] = np.asarray(pc.fill_null(col.indices, -1).to_numpy(), np.int64) if len(col) \
                else np.zeros(0, np.int64)
        else:
            out[c] = np.asarray(pc.fill_null(col, 0).to_numpy(), np.int64) if len(col) else np.zeros(0, np.int64)
    return out


def _binomial_interval(n: np.ndarray, p: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    from scipy.stats import binom

    alpha = 1 - CONFIDENCE
    p = np.clip(p, 0.0, 1.0)
    return binom.ppf(alpha / 2, n, p), binom.ppf(1 - alpha / 2, n, p)


def segment_pairs(seg: Segment, f: Dict[str, np.ndarray], run) -> Tuple[List[dict], int, int]:
    """(rows of the per-pair table, receptions without a transmission, frames sent) of one segment."""
    from .pcapreader import DIR_IN, DIR_OUT, local_addresses

    M = np.int64(seg.M)
    addresses = run.manifest.get("addresses", {})
    ids = run.node_ids
    member_id = np.array(sorted((ids[m], i) for i, m in enumerate(seg.members) if m in ids), np.int64).reshape(-1, 2)
    lut = np.array([seg.index.get(n, -1) for n in f["node_names"]] + [-1], np.int64)
    code = lut[f["node"]]
    nets = seg.networks(addresses)
    in_net = np.zeros(len(code), bool)
    for net in nets:
        in_net |= (f["src_ip"] & int(net.netmask)) == int(net.network_address)
    sender = lookup(member_id[:, 0], f["sender"])
    sender = np.where(sender >= 0, member_id[np.maximum(sender, 0), 1], -1) if len(sender) else sender
    tx_rows = np.flatnonzero((code >= 0) & (f["direction"] == DIR_OUT) & in_net)
    rx_rows = np.flatnonzero((code >= 0) & (f["direction"] == DIR_IN) & in_net & (sender >= 0) & (sender != code))
    tx = {c: f[c][tx_rows] for c in FRAME_COLUMNS if c != "node"}
    rx = {c: f[c][rx_rows] for c in FRAME_COLUMNS if c != "node"}
    tx_src, rx_dst, rx_src = code[tx_rows], code[rx_rows], sender[rx_rows]
    if not seg.has_links or not len(seg.ticks):  # nothing known about ranges: nothing to judge
        return [], 0, int(len(tx_rows))
    tx_tick = seg.tick_at(tx["ts_ns"])
    T = len(seg.ticks)

    # whom each frame is addressed to: every other member (the subnet's broadcast, 255.255.255.255),
    # else the members whose local addresses hold its destination
    common = {0xFFFFFFFF} | {int(net.broadcast_address) for net in nets}
    own = sorted((int(a), i) for i, m in enumerate(seg.members)
                 for a in local_addresses((addresses.get(m) or {}).values()) if int(a) not in common)
    own_ip = np.array([a for a, _ in own], np.int64)
    own_code = np.array([i for _, i in own], np.int64)
    everyone = np.isin(tx["dst_ip"], np.array(sorted(common), np.int64))
    # broadcasts: counted per (tick, src), every link row of that src at that tick is a frame in range
    bc = np.bincount(tx_tick[everyone] * M + tx_src[everyone], minlength=T * seg.M).astype(np.int64)
    bc_total = np.bincount(tx_src[everyone], minlength=seg.M).astype(np.int64)
    # a killed member's radio is down from its kill on (testbed.network.Lab.kill_node): the frames
    # sent to it from then on are neither expected nor counted as sent to it
    deaf = _deaf_since(run, seg)
    bc_deaf = {d: np.bincount(tx_tick[everyone & (tx["ts_ns"] >= k)] * M + tx_src[everyone & (tx["ts_ns"] >= k)],
                              minlength=T * seg.M).astype(np.int64) for d, k in deaf.items()}
    # other frames: one (frame, addressee) per member holding the address
    rest = np.flatnonzero(~everyone)
    lo = np.searchsorted(own_ip, tx["dst_ip"][rest], side="left")
    hi = np.searchsorted(own_ip, tx["dst_ip"][rest], side="right")
    fan = hi - lo
    u_frame = np.repeat(rest, fan)
    u_dst = own_code[np.repeat(lo, fan) + (np.arange(fan.sum()) - np.repeat(np.cumsum(fan) - fan, fan))] \
        if fan.sum() else np.zeros(0, np.int64)
    keep = u_dst != tx_src[u_frame]
    if deaf:
        since = np.full(seg.M, np.iinfo(np.int64).max, np.int64)
        for d, k in deaf.items():
            since[d] = k
        keep &= tx["ts_ns"][u_frame] < since[u_dst]
    u_frame, u_dst = u_frame[keep], u_dst[keep]
    u_link = seg.link(tx_tick[u_frame], tx_src[u_frame], u_dst)
    u_total = np.bincount(tx_src[u_frame] * M + u_dst, minlength=seg.M * seg.M)

    # in range: per links row, the frames its src sent to its dst at its tick
    L = len(seg.l_key)
    n_link = bc[seg.l_key // M] + np.bincount(u_link[u_link >= 0], minlength=L)[:L]
    for d, counts in bc_deaf.items():
        rows_to_d = seg.l_dst == d
        n_link[rows_to_d] -= counts[seg.l_key[rows_to_d] // M]
    pair_of_link = seg.l_src * M + seg.l_dst
    n = np.bincount(pair_of_link, weights=n_link, minlength=seg.M * seg.M)
    sum_p = np.bincount(pair_of_link, weights=n_link * seg.l_p, minlength=seg.M * seg.M)
    var_p = np.bincount(pair_of_link, weights=n_link * seg.l_p * (1 - seg.l_p), minlength=seg.M * seg.M)

    # receptions: each matched to its transmission, copies of one frame at one receiver once
    hit = _match(tx, rx)
    matched = hit >= 0
    frame_at = unique(hit[matched] * M + rx_dst[matched])
    f_tx, f_dst = frame_at // M, frame_at % M
    if deaf:  # what a node got while its kill was taking effect is left out like what was sent to it
        alive = np.ones(len(f_tx), bool)
        for d, k in deaf.items():
            alive &= ~((f_dst == d) & (tx["ts_ns"][f_tx] >= k))
        f_tx, f_dst = f_tx[alive], f_dst[alive]
    f_link = seg.link(tx_tick[f_tx], tx_src[f_tx], f_dst) if len(frame_at) else np.zeros(0, np.int64)
    pair = tx_src[f_tx] * M + f_dst
    received = np.bincount(pair[f_link >= 0], minlength=seg.M * seg.M)
    # out of range at the sender's tick, but sent while the next tick's rules were being applied
    # and in range at that tick: it may have passed under either, so it is no violation
    changing = np.zeros(len(frame_at), bool)
    if len(frame_at):
        nxt = tx_tick[f_tx] + 1
        ok = (f_link < 0) & (nxt < T)
        nxt_c = np.minimum(nxt, T - 1)
        ok &= tx["ts_ns"][f_tx] >= seg.starts[nxt_c]
        changing = ok & (seg.link(nxt_c, tx_src[f_tx], f_dst) >= 0)
    at_change = np.bincount(pair[changing], minlength=seg.M * seg.M)
    out_of_range = np.bincount(pair[(f_link < 0) & ~changing], minlength=seg.M * seg.M)
    # a reception whose transmission the sender's capture lacks: judged at its own tick
    lone = np.flatnonzero(~matched)
    if len(lone):
        keys = [rx[c][lone] for c in FRAME_KEY] + [rx_dst[lone]]
        order = order_by(*keys, rx["ts_ns"][lone])  # its copies once: the first
        first = np.zeros(len(lone), bool)
        first[0] = True
        for k in keys:
            first[1:] |= k[order][1:] != k[order][:-1]
        lone = lone[order[first]]
        r_tick = seg.tick_at(rx["ts_ns"][lone])
        lone_out = seg.link(r_tick, rx_src[lone], rx_dst[lone]) < 0
        out_of_range += np.bincount(rx_src[lone][lone_out] * M + rx_dst[lone][lone_out], minlength=seg.M * seg.M)

    src_of, dst_of = np.divmod(np.arange(seg.M * seg.M), M)
    sent = bc_total[src_of] * (src_of != dst_of) + u_total
    for d, counts in bc_deaf.items():
        sent[dst_of == d] -= counts.reshape(T, seg.M).sum(axis=0)[src_of[dst_of == d]]
    rows = []
    lo_n, hi_n = _binomial_interval(n, np.divide(sum_p, n, out=np.zeros_like(sum_p), where=n > 0))
    for pc_ in np.flatnonzero((n > 0) | (received > 0) | (out_of_range > 0) | (at_change > 0)):  # pairs ever in range
        s, d = divmod(int(pc_), seg.M)
        k, nn = int(received[pc_]), int(n[pc_])
        row = {"segment": seg.name, "src": seg.members[s], "dst": seg.members[d], "sent_in_range": nn,
               "received": k, "ratio": k / nn if nn else None, "expected": float(sum_p[pc_] / nn) if nn else None,
               "interval": [float(lo_n[pc_] / nn), float(hi_n[pc_] / nn)] if nn else None,
               "z": float((k - sum_p[pc_]) / np.sqrt(var_p[pc_])) if nn and var_p[pc_] > 0 else None,
               "outside": bool(nn and not lo_n[pc_] <= k <= hi_n[pc_]),
               "received_out_of_range": int(out_of_range[pc_]),
               "received_at_tick_change": int(at_change[pc_]),
               "sent_out_of_range": int(sent[pc_] - nn)}
        rows.append(row)
    return rows, int(len(lone)), int(len(tx_rows))


def _deaf_since(run, seg: Segment) -> Dict[int, int]:
    """member code → when it was killed (ns), for the members of the segment killed in the run."""
    out: Dict[int, int] = {}
    for action in run.manifest.get("timeline", []) or []:
        if action.get("action") == "kill" and action.get("ok", True) and action.get("t_ns") is not None:
            code = seg.index.get(action.get("node"))
            if code is not None:
                out[code] = min(out.get(code, action["t_ns"]), int(action["t_ns"]))
    return out


def neighbour_summary(seg: Segment, t0: int) -> dict:
    """Neighbours in range per member over the ticks: mean, min, max in all, per node, per second."""
    deg = seg.degree
    if not seg.has_links or not deg.size:
        return {"mean": None, "min": None, "max": None, "per_node": {}, "series": []}
    sec = (seg.ticks - t0) // 1_000_000_000
    u, inv = unique(sec, return_inverse=True)
    series = []
    for i, s in enumerate(u):
        d = deg[inv == i]
        series.append({"second": int(s), "mean": float(d.mean()), "min": int(d.min()), "max": int(d.max())})
    return {"mean": float(deg.mean()), "min": int(deg.min()), "max": int(deg.max()),
            "per_node": {m: {"mean": float(deg[:, i].mean()), "min": int(deg[:, i].min()),
                             "max": int(deg[:, i].max())} for i, m in enumerate(seg.members)},
            "series": series}


WIFI_COUNTS = ("frames_from_host", "frames_to_host", "partition_dropped", "phy_tx", "phy_rx_ok", "phy_rx_error",
               "mac_tx_drop", "mac_retries", "mac_final_failed")


def wifi_summary(cfg: dict) -> dict:
    """A wifi segment's channel statistics (the manifest's, per member) as totals: frames from and
    to the members' kernels, PHY transmissions and receptions, receptions lost after their
    preamble (interference, noise) and not received by reason, MAC drops and retries; the largest
    member's queueing delay p99; the simulator's lag."""
    stats = [s for s in (cfg.get("wifi_statistics") or {}).values() if isinstance(s, dict)]
    out: dict = {key: sum(int(s.get(key) or 0) for s in stats) for key in WIFI_COUNTS}
    for key in ("phy_rx_drop", "mac_drop"):
        totals: dict = {}
        for s in stats:
            for reason, count in (s.get(key) or {}).items():
                totals[reason] = totals.get(reason, 0) + int(count)
        out[key] = dict(sorted(totals.items()))
    delays = [float(s["queue_delay_ms_p99"]) for s in stats if (s.get("queue_delay_ms_p99") or -1) >= 0]
    out["queue_delay_ms_p99_max"] = max(delays) if delays else None
    out["realtime_lag_ms"] = cfg.get("realtime_lag_ms")
    return out


def measures(run, frames) -> dict:
    """results.json's `radio` section (module docstring): per segment its settings and neighbours,
    the per-pair table, and the frames received out of range."""
    f = _columns(frames)
    t0 = run.t0
    section: dict = {"segments": {}, "pairs": []}
    unmatched = 0
    for seg in run.radio.segments.values():
        cfg = seg.config
        rows, lone, sent = segment_pairs(seg, f, run)
        section["pairs"] += rows
        unmatched += lone
        section["segments"][seg.name] = {
            "members": seg.members, "range_m": cfg.get("range_m"), "loss": cfg.get("loss"),
            "bitrate_kbit": cfg.get("bitrate_kbit"), "queue_frames": cfg.get("queue_frames"),
            "tick_s": cfg.get("tick_s"),
            "mobility": {n: (m or {}).get("model") for n, m in sorted((cfg.get("mobility") or {}).items())},
            "ticks": int(len(seg.ticks)),
            "first_tick_s": (int(seg.ticks[0]) - t0) / 1e9 if len(seg.ticks) else None,
            "last_tick_s": (int(seg.ticks[-1]) - t0) / 1e9 if len(seg.ticks) else None,
            "frames_sent": sent,
            "neighbours": neighbour_summary(seg, t0)}
        if cfg.get("channel") == "wifi":  # the 802.11 channel's own counts, summed over its members
            section["segments"][seg.name]["channel"] = "wifi"
            section["segments"][seg.name]["wifi"] = wifi_summary(cfg)
    section["receptions_out_of_range"] = sum(r["received_out_of_range"] for r in section["pairs"])
    section["receptions_at_tick_change"] = sum(r["received_at_tick_change"] for r in section["pairs"])
    section["unmatched_receptions"] = unmatched
    section["pairs_outside_interval"] = sum(r["outside"] for r in section["pairs"])
    section["confidence"] = CONFIDENCE
    section["missing"] = list(run.radio.missing)
    return section
