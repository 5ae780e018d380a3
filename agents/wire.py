"""The wire format every agent message uses: one fixed, versioned binary header in each UDP datagram.

docs/WIRE.md is the human contract; this module is its reference implementation and HEADER below
is the one machine-readable copy of the layout: the ordered fields of the 32-byte base header with
their offsets, struct codes and meanings. BASE, encode and decode are derived from it, and so are
the pcap reader's numpy dtype (spark_analysis/pcapreader.py) and the synthetic generator's
(tests/synthetic.py). The readers written by hand are held to it by tests/test_wire_readers.py:
docs/WIRE.md's tables, the Wireshark dissector collect/wireshark/testbed.lua (its field table,
message types, flags and extension types, and tshark decoding messages this module encoded). All
integers are big endian (network order).

After the base header come the extensions, type-length-value fields up to header_len (a 1-byte
type, a 2-byte length, the value; readers skip types they do not know), then the payload: this
fragment's part of the message body. Node ids are the 1-based positions of the nodes in the
topology's node order, recorded in the run manifest. A message is identified by (origin,
sequence); fragments of it by frag_index. Version 1 readers accept any header_len >= 32, so later
versions can append fields.

The body of a CAUSAL_DATA message (and of a CAUSAL_RECOVERY reply) is a record count followed by
one record per event; EVENT_COUNT and EVENT_RECORD are that layout's machine-readable copy, held
by the same test to docs/WIRE.md and the dissector, and encode_events / decode_events its codec.

This file is copied into the agent image: the standard library only.
"""

from __future__ import annotations

import enum
import json
import struct
from dataclasses import dataclass, field, replace
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

MAGIC = b"TB"
VERSION = 1


class Field(NamedTuple):
    """One field of the base header."""

    name: str
    offset: int     # bytes from the start of the datagram
    code: str       # its struct format code, big endian
    meaning: str

    @property
    def size(self) -> int:
        return struct.calcsize("!" + self.code)


#: The base header, field by field in wire order: the single machine-readable layout (see the
#: module doc for what is derived from it and what is checked against it).
HEADER: Tuple[Field, ...] = (
    Field("magic", 0, "2s", 'b"TB"'),
    Field("version", 2, "B", "1"),
    Field("type", 3, "B", "message type (MessageType)"),
    Field("flags", 4, "B", "Flags bits"),
    Field("hops", 5, "B", "times this copy was relayed (0 from the origin)"),
    Field("header_len", 6, "H", "bytes from the start of the datagram to the payload (>= 32)"),
    Field("origin", 8, "I", "node id of the node that created the message"),
    Field("sequence", 12, "I", "per-origin sequence number of the message (1, 2, ...)"),
    Field("sender", 16, "I", "node id of the node that transmitted this datagram"),
    Field("frag_index", 20, "H", "0-based fragment number"),
    Field("frag_count", 22, "H", "fragments in the message (1: not fragmented)"),
    Field("message_id", 24, "Q", "protocol-assigned id (an AbC sequencer's id, a knowledge version), "
                                 "0 when the protocol assigns none"),
)
FIELDS: Dict[str, Field] = {f.name: f for f in HEADER}
_NAMES = tuple(FIELDS)


def _packed_end(fields: Tuple[Field, ...]) -> int:
    """Where the header ends. The offsets are written out for whoever reads the table; each must be
    where the previous field ends, as in the packed struct."""
    end = 0
    for f in fields:
        if f.offset != end:
            raise ValueError(f"wire layout: {f.name} at {f.offset}, but the field before it ends at {end}")
        end += f.size
    return end


BASE = struct.Struct("!" + "".join(f.code for f in HEADER))
BASE_LEN = _packed_end(HEADER)  # 32
TLV = struct.Struct("!BH")
#: a UDP payload that fits one Ethernet frame with IPv4 and UDP headers: 1500 - 20 - 8
MAX_DATAGRAM = 1472


def json_body(body: Dict[str, object], size: int = 0) -> bytes:
    """A message body as compact JSON, padded with spaces to `size` bytes when shorter (JSON
    readers skip the trailing whitespace): the AbC and DEECo roles' bodies."""
    data = json.dumps(body, separators=(",", ":")).encode()
    return data + b" " * (size - len(data)) if size > len(data) else data


def read_json_body(payload: bytes) -> Dict[str, object]:
    """The JSON object a body holds; {} for anything else (not UTF-8, not JSON, not an object)."""
    try:
        body = json.loads(payload.decode() or "{}")
    except (UnicodeDecodeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


class MessageType(enum.IntEnum):
    """Message types of every protocol, in one registry so that captures decode without agents."""

    ACK = 1             # reliable channel: acknowledges (origin, sequence, frag_index) of the sender
    PROBE = 2           # the probe role's numbered message
    ABC_REQUEST = 10    # AbC: a component (or server) asks for a fresh message id
    ABC_REPLY = 11      # AbC: the sequencer's answer, message_id = the fresh id
    ABC_DATA = 12       # AbC: a data message with its id in message_id
    ABC_TAKE = 13       # AbC cluster: a server takes the next message from the cluster's shared queue
    GOSSIP_KNOWLEDGE = 20  # gossip: a node's knowledge (push), relayed with hops > 0
    GOSSIP_HEADERS = 21    # gossip: the header buffer (ids of received messages); never relayed
    GOSSIP_PULL = 22       # gossip: a pull request for missing messages; never relayed
    GOSSIP_GROUPS = 23     # gossip: a grouper's member table of one group (DEECo groupers); never relayed
    CAUSAL_DATA = 30       # causal group communication: gossip of events (encode_events: a record each)
    CAUSAL_RECOVERY = 31   # causal: a reply with missing events (encode_events), to a CAUSAL_RECOVER
    MEMBERSHIP = 32        # causal: cluster management (ticket, join, leave, alive, update)
    CAUSAL_EVENT = 33      # causal: an event as the application sends and delivers it: in logs only,
                           # on the wire events are records of CAUSAL_DATA and CAUSAL_RECOVERY bodies
    CAUSAL_RECOVER = 34    # causal: a request for one missing event (JSON body {"want": [index, sequence]})


class Flags(enum.IntFlag):
    NONE = 0
    ACK_REQUESTED = 0x01   # the reliable channel wants an ACK for this datagram
    RETRANSMISSION = 0x02  # a repeat of a datagram sent before (reliable channel or pull answer)
    BROADCAST = 0x04       # sent to the segment's broadcast address
    RELAYED = 0x08         # a rebroadcast or forward, not the origin's own transmission
    PULLED = 0x10          # sent in answer to a pull request


class Ext(enum.IntEnum):
    """Extension field types."""

    VECTOR_CLOCK = 1    # n x uint32: the causal protocol's vector timestamp
    INFRA_ID = 2        # uint32: the AbC infrastructure node that handled the message
    TARGET = 3          # uint32: the node a unicast message is meant for
    ACKED = 4           # uint32 origin, uint32 sequence, uint16 frag_index: what an ACK acknowledges
    TIMESTAMP_NS = 5    # uint64: when the message (knowledge) was produced, shared host clock


class WireError(ValueError):
    """A datagram that is not a testbed message, or a malformed one."""


@dataclass
class Header:
    type: int
    origin: int
    sequence: int
    sender: int = 0
    flags: int = 0
    hops: int = 0
    frag_index: int = 0
    frag_count: int = 1
    message_id: int = 0
    extensions: Dict[int, bytes] = field(default_factory=dict)
    version: int = VERSION

    @property
    def key(self) -> Tuple[int, int]:
        return (self.origin, self.sequence)

    def encoded_len(self) -> int:
        return BASE_LEN + sum(TLV.size + len(v) for v in self.extensions.values())


def _codec():
    """The base header's packing and unpacking, written out from HEADER once at import (as
    namedtuple and dataclasses write their methods), so that encode and decode, which every
    datagram goes through, touch each field once: no dictionary of names per datagram."""
    given = {"magic": "MAGIC", "header_len": "header_len", "sender": "h.sender or h.origin"}
    source = (f"def pack(h, header_len):\n"
              f"    return BASE.pack({', '.join(given.get(n, f'h.{n}') for n in _NAMES)})\n"
              f"def unpack(datagram):\n"
              f"    {', '.join(_NAMES)}, = BASE.unpack_from(datagram)\n"
              f"    return magic, header_len, Header("
              f"{', '.join(f'{n}={n}' for n in _NAMES if n not in given or n == 'sender')}, extensions={{}})\n")
    scope = {"BASE": BASE, "MAGIC": MAGIC, "Header": Header}
    exec(source, scope)
    return scope["pack"], scope["unpack"]


_pack, _unpack = _codec()


def _extensions(extensions: Dict[int, bytes]) -> bytes:
    """The extensions as they follow the base header: type-length-value, by type."""
    return b"".join(TLV.pack(t, len(v)) + v for t, v in sorted(extensions.items())) if extensions else b""


def encode(header: Header, payload: bytes = b"") -> bytes:
    ext = _extensions(header.extensions)
    header_len = BASE_LEN + len(ext)
    if header_len > 0xFFFF:
        raise WireError("extensions too long")
    return _pack(header, header_len) + ext + payload


def decode(datagram: bytes) -> Tuple[Header, bytes]:
    """Split a datagram into header and payload; WireError if it is not a testbed message."""
    size = len(datagram)
    if size < BASE_LEN:
        raise WireError(f"{size} bytes: shorter than the {BASE_LEN}-byte header")
    magic, header_len, header = _unpack(datagram)
    if magic != MAGIC:
        raise WireError(f"bad magic {magic!r}")
    if header.version < 1:
        raise WireError(f"bad version {header.version}")
    if header_len < BASE_LEN or header_len > size:
        raise WireError(f"header_len {header_len} outside [{BASE_LEN}, {size}]")
    if header.frag_count < 1 or header.frag_index >= header.frag_count:
        raise WireError(f"fragment {header.frag_index} of {header.frag_count}")
    if header_len == BASE_LEN:
        return header, bytes(datagram[BASE_LEN:])
    extensions = header.extensions
    offset = BASE_LEN
    while offset + TLV.size <= header_len:
        ext_type, length = TLV.unpack_from(datagram, offset)
        offset += TLV.size
        if offset + length > header_len:
            raise WireError(f"extension {ext_type} overruns the header")
        extensions[ext_type] = bytes(datagram[offset:offset + length])
        offset += length
    return header, bytes(datagram[header_len:])


# -- extension values ------------------------------------------------------------------------------

def vector_clock(values: List[int]) -> bytes:
    return struct.pack(f"!{len(values)}I", *values)


def read_vector_clock(value: bytes) -> List[int]:
    if len(value) % 4:
        raise WireError("vector clock length is not a multiple of 4")
    return list(struct.unpack(f"!{len(value) // 4}I", value))


def u32(value: int) -> bytes:
    return struct.pack("!I", value)


def read_u32(value: bytes) -> int:
    return struct.unpack("!I", value)[0]


def u64(value: int) -> bytes:
    return struct.pack("!Q", value)


def read_u64(value: bytes) -> int:
    return struct.unpack("!Q", value)[0]


def acked(origin: int, sequence: int, frag_index: int) -> bytes:
    return struct.pack("!IIH", origin, sequence, frag_index)


def read_acked(value: bytes) -> Tuple[int, int, int]:
    return struct.unpack("!IIH", value)


# -- event records: the body of CAUSAL_DATA (and of CAUSAL_RECOVERY replies) -----------------------

class RecordField(NamedTuple):
    """One field of an event record. Records differ in length, so the table has no offsets: a field
    whose `count` names an earlier field repeats its item that many times (ts: n entries, body:
    body_len bytes); a field whose count is "" occurs once."""

    name: str
    code: str       # the struct format code of one item, big endian
    count: str      # "" (once), or the earlier field that holds the number of items
    meaning: str

    @property
    def size(self) -> int:
        """Bytes of one item."""
        return struct.calcsize("!" + self.code)

    @property
    def limit(self) -> int:
        """The largest item: every integer field is unsigned."""
        return (1 << (8 * self.size)) - 1


#: What the body starts with: the number of records that follow. It comes first so that the
#: payload of a fragmented message's fragment 0 is enough to count its events (count_events).
EVENT_COUNT = RecordField("count", "H", "", "event records in the body")

#: An event record, field by field in wire order: the single machine-readable layout of the
#: records, which follow the count and each other without padding (docs/WIRE.md's table and the
#: dissector's are checked against it).
EVENT_RECORD: Tuple[RecordField, ...] = (
    RecordField("index", "H", "", "the creator's ticket: its entry in ts"),
    RecordField("sequence", "I", "", "the creator's own number for the event (1, 2, ... over its life, restarts "
                                     "included): the event's seq in the logs"),
    RecordField("origin", "I", "", "node id of the creator (numbered as the header's origin)"),
    RecordField("created_ns", "Q", "", "when the event was created, ns on the shared clock"),
    RecordField("age", "B", "", "hops the event has travelled"),
    RecordField("n", "H", "", "entries in ts"),
    RecordField("ts", "I", "n", "the vector timestamp, one entry per ticket"),
    RecordField("body_len", "I", "", "bytes in body"),
    RecordField("body", "s", "body_len", "the application payload (may be empty)"),
)
EVENT_FIELDS: Dict[str, RecordField] = {f.name: f for f in EVENT_RECORD}

_COUNT = struct.Struct("!" + EVENT_COUNT.code)
_FIXED = tuple(f.name for f in EVENT_RECORD[:EVENT_RECORD.index(EVENT_FIELDS["ts"])])  # index .. n
_EVENT_HEAD = struct.Struct("!" + "".join(EVENT_FIELDS[name].code for name in _FIXED))
_TS = EVENT_FIELDS["ts"]
_BODY_LEN = struct.Struct("!" + EVENT_FIELDS["body_len"].code)


@dataclass(frozen=True)
class EventRecord:
    """One event as a CAUSAL_DATA body carries it: EVENT_RECORD's fields without the two lengths
    (n, body_len), which the encoder takes from ts and body. ts is kept as a tuple and body as
    bytes, so that records compare and hash by value whatever sequence they were made from."""

    index: int                  # the creator's ticket: its entry in ts
    sequence: int               # the creator's own number for the event (the logs' seq)
    origin: int                 # node id of the creator
    created_ns: int             # creation time, ns on the shared clock
    age: int                    # hops travelled, 0..255
    ts: Tuple[int, ...]         # the vector timestamp, one entry per ticket
    body: bytes                 # the application payload, may be empty

    def __post_init__(self) -> None:
        if not isinstance(self.ts, tuple):
            object.__setattr__(self, "ts", tuple(self.ts))
        if isinstance(self.body, (bytearray, memoryview)):
            object.__setattr__(self, "body", bytes(self.body))


def _check_range(what: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{what} = {value!r}: must be an integer in [{low}, {high}]")


def _check_event(position: int, record: EventRecord) -> None:
    """ValueError naming the field and its allowed range for anything encode_events could not write
    or decode_events would refuse."""
    where = f"event record {position}"
    n = len(record.ts)
    _check_range(f"{where}: n (entries in ts)", n, 1, EVENT_FIELDS["n"].limit)
    for i, entry in enumerate(record.ts):
        _check_range(f"{where}: ts[{i}]", entry, 0, _TS.limit)
    _check_range(f"{where}: index (an entry of its {n}-entry ts)", record.index, 0, n - 1)
    for name in ("sequence", "origin", "created_ns", "age"):
        _check_range(f"{where}: {name}", getattr(record, name), 0, EVENT_FIELDS[name].limit)
    if not isinstance(record.body, bytes):
        raise ValueError(f"{where}: body is a {type(record.body).__name__}: must be bytes")
    _check_range(f"{where}: body_len", len(record.body), 0, EVENT_FIELDS["body_len"].limit)


def encode_events(records: Sequence[EventRecord]) -> bytes:
    """The body of a CAUSAL_DATA message (or of a CAUSAL_RECOVERY reply) carrying `records`, one
    record per event after the record count; ValueError for a field out of its range."""
    _check_range("record count", len(records), 0, EVENT_COUNT.limit)
    parts = [_COUNT.pack(len(records))]
    for position, record in enumerate(records):
        _check_event(position, record)
        values = {**{name: getattr(record, name) for name in _FIXED if name != "n"}, "n": len(record.ts)}
        parts += [_EVENT_HEAD.pack(*[values[name] for name in _FIXED]),
                  struct.pack(f"!{len(record.ts)}{_TS.code}", *record.ts), _BODY_LEN.pack(len(record.body)),
                  record.body]
    return b"".join(parts)


def decode_events(body: bytes) -> List[EventRecord]:
    """The records of a whole (reassembled) event body; WireError if it is truncated, has bytes
    after its last record, or holds a record that contradicts itself (index not an entry of its
    vector)."""
    size = len(body)
    if size < _COUNT.size:
        raise WireError(f"event body of {size} bytes: shorter than its {_COUNT.size}-byte record count")
    (count,) = _COUNT.unpack_from(body)
    offset = _COUNT.size
    records = []
    for position in range(count):
        where = f"event record {position} (of {count}) at byte {offset}"
        if offset == size:
            raise WireError(f"the record count says {count} records, but the {size}-byte body ends after {position}")
        if offset + _EVENT_HEAD.size > size:
            raise WireError(f"{where}: its {_EVENT_HEAD.size}-byte fixed part runs past the end of the "
                            f"{size}-byte body")
        fixed = dict(zip(_FIXED, _EVENT_HEAD.unpack_from(body, offset)))
        offset += _EVENT_HEAD.size
        n = fixed.pop("n")
        if offset + n * _TS.size + _BODY_LEN.size > size:
            raise WireError(f"{where}: its {n}-entry ts and body_len run past the end of the {size}-byte body")
        ts = struct.unpack_from(f"!{n}{_TS.code}", body, offset)
        offset += n * _TS.size
        (length,) = _BODY_LEN.unpack_from(body, offset)
        offset += _BODY_LEN.size
        if offset + length > size:
            raise WireError(f"{where}: its {length}-byte body runs past the end of the {size}-byte body")
        payload = bytes(body[offset:offset + length])
        offset += length
        if fixed["index"] >= n:
            raise WireError(f"{where}: index {fixed['index']} is not an entry of its {n}-entry ts")
        records.append(EventRecord(ts=ts, body=payload, **fixed))
    if offset != size:
        raise WireError(f"{size - offset} bytes after the last of the {count} records of the {size}-byte event body")
    return records


def count_events(first_fragment_payload: bytes) -> int:
    """How many events a CAUSAL_DATA message (or CAUSAL_RECOVERY reply) carries, read from the
    payload of its fragment 0 alone (the count comes first); WireError if that is too short."""
    if len(first_fragment_payload) < _COUNT.size:
        raise WireError(f"payload of {len(first_fragment_payload)} bytes: shorter than the "
                        f"{_COUNT.size}-byte record count")
    return _COUNT.unpack_from(first_fragment_payload)[0]


# -- fragmentation (the DEECo paper's layer 1) -----------------------------------------------------

def fragment(header: Header, body: bytes, max_datagram: int = MAX_DATAGRAM) -> List[bytes]:
    """Encode a message as one or more datagrams, each at most `max_datagram` bytes."""
    ext = _extensions(header.extensions)
    header_len = BASE_LEN + len(ext)
    if header_len > 0xFFFF:
        raise WireError("extensions too long")
    room = max_datagram - header_len
    if room <= 0:
        raise WireError(f"a {header_len}-byte header leaves no room in {max_datagram}-byte datagrams")
    count = max(1, -(-len(body) // room))
    if count > 0xFFFF:
        raise WireError(f"a {len(body)}-byte message needs more than 65535 fragments")
    if count == 1 and header.frag_index == 0 and header.frag_count == 1:
        return [_pack(header, header_len) + ext + body]
    return [_pack(replace(header, frag_index=index, frag_count=count), header_len) + ext
            + body[index * room:(index + 1) * room] for index in range(count)]


class Reassembler:
    """Collects fragments into messages (the DEECo paper's layer 2): a message is delivered only
    when all its fragments have arrived; duplicates are ignored; incomplete messages expire."""

    def __init__(self, timeout_s: float = 10.0) -> None:
        self.timeout_s = timeout_s
        self._parts: Dict[Tuple[int, int], Dict[int, bytes]] = {}
        self._first_seen: Dict[Tuple[int, int], float] = {}
        self._headers: Dict[Tuple[int, int], Header] = {}

    @property
    def pending(self) -> int:
        """Messages with some fragments but not all."""
        return len(self._parts)

    def add(self, header: Header, payload: bytes, now: float) -> Optional[Tuple[Header, bytes]]:
        """Returns (header of fragment 0, whole body) once the message is complete."""
        if header.frag_count == 1:
            return header, payload
        key = header.key
        parts = self._parts.setdefault(key, {})
        self._first_seen.setdefault(key, now)
        parts.setdefault(header.frag_index, payload)
        if header.frag_index == 0 or key not in self._headers:
            self._headers[key] = header
        if len(parts) < header.frag_count:
            return None
        body = b"".join(parts[i] for i in range(header.frag_count))
        first = self._headers.pop(key)
        del self._parts[key], self._first_seen[key]
        return first, body

    def expire(self, now: float) -> List[Tuple[Tuple[int, int], int, int]]:
        """Drop incomplete messages older than the timeout; return (key, got, expected) of each."""
        dropped = []
        for key, since in list(self._first_seen.items()):
            if now - since > self.timeout_s:
                expected = self._headers[key].frag_count
                dropped.append((key, len(self._parts[key]), expected))
                del self._parts[key], self._first_seen[key], self._headers[key]
        return dropped
