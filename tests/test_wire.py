"""The wire contract (docs/WIRE.md): encoding, decoding, extensions, fragmentation, and the event
records of CAUSAL_DATA bodies."""

from __future__ import annotations

import dataclasses
import random
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import wire
from agents.wire import EVENT_RECORD, EventRecord, Ext, Flags, Header, MessageType, Reassembler, WireError


def test_the_base_header_layout_is_the_documented_one():
    data = wire.encode(Header(type=MessageType.PROBE, origin=3, sequence=7, sender=5, flags=Flags.BROADCAST, hops=2,
                              message_id=99), b"hello")
    assert data[:2] == b"TB" and data[2] == 1 and data[3] == 2 and data[4] == 0x04 and data[5] == 2
    assert struct.unpack("!H", data[6:8])[0] == 32
    assert struct.unpack("!IIIHHQ", data[8:32]) == (3, 7, 5, 0, 1, 99)
    assert data[32:] == b"hello"


def test_extensions_round_trip_and_unknown_ones_are_skipped():
    header = Header(type=MessageType.CAUSAL_DATA, origin=1, sequence=2,
                    extensions={Ext.VECTOR_CLOCK: wire.vector_clock([1, 0, 4]), 200: b"future"})
    decoded, payload = wire.decode(wire.encode(header, b"body"))
    assert wire.read_vector_clock(decoded.extensions[Ext.VECTOR_CLOCK]) == [1, 0, 4]
    assert decoded.extensions[200] == b"future" and payload == b"body"


def test_a_longer_header_of_a_later_version_still_decodes():
    data = bytearray(wire.encode(Header(type=MessageType.PROBE, origin=1, sequence=1), b"p"))
    data[2] = 2
    data[6:8] = struct.pack("!H", 36)
    data[32:32] = b"\0\0\0\0"  # padding a version-2 writer might add as an empty extension
    header, payload = wire.decode(bytes(data))
    assert header.version == 2 and payload == b"p"


@pytest.mark.parametrize("datagram, reason", [
    (b"TB\x01", "shorter"),
    (b"XX" + bytes(40), "magic"),
    (b"TB\x01\x02\x00\x00\x00\x10" + bytes(24), "header_len"),
    (wire.encode(Header(type=2, origin=1, sequence=1, frag_index=3, frag_count=2)), "fragment"),
])
def test_malformed_datagrams_are_refused(datagram, reason):
    with pytest.raises(WireError, match=reason):
        wire.decode(datagram)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=20000), max_datagram=st.integers(min_value=60, max_value=1472),
       seed=st.integers(0, 2**32))
def test_fragments_reassemble_in_any_order_with_duplicates(body, max_datagram, seed):
    header = Header(type=MessageType.GOSSIP_KNOWLEDGE, origin=4, sequence=9, message_id=5)
    datagrams = wire.fragment(header, body, max_datagram)
    assert all(len(d) <= max_datagram for d in datagrams)
    rng = random.Random(seed)
    shuffled = datagrams + rng.sample(datagrams, k=min(2, len(datagrams)))
    rng.shuffle(shuffled)
    reassembler = Reassembler()
    results = [r for r in (reassembler.add(*wire.decode(d), now=0.0) for d in shuffled) if r]
    first, whole = results[0]
    assert whole == body and first.frag_index == 0 and first.message_id == 5
    assert len(results) <= 1 + (len(shuffled) - len(datagrams))  # late duplicates may start anew


def test_incomplete_messages_expire():
    datagrams = wire.fragment(Header(type=MessageType.PROBE, origin=1, sequence=1), b"x" * 3000, 1000)
    reassembler = Reassembler(timeout_s=1.0)
    assert reassembler.add(*wire.decode(datagrams[0]), now=0.0) is None
    assert reassembler.expire(now=0.5) == []
    assert reassembler.expire(now=2.0) == [((1, 1), 1, len(datagrams))]


def test_extension_values_round_trip():
    header = Header(type=MessageType.ABC_DATA, origin=2, sequence=3, message_id=41,
                    extensions={Ext.INFRA_ID: wire.u32(7), Ext.TARGET: wire.u32(9),
                                Ext.TIMESTAMP_NS: wire.u64(1_795_000_000_000_000_000),
                                Ext.ACKED: wire.acked(2, 3, 1)})
    decoded, _ = wire.decode(wire.encode(header))
    assert wire.read_u32(decoded.extensions[Ext.INFRA_ID]) == 7
    assert wire.read_u32(decoded.extensions[Ext.TARGET]) == 9
    assert wire.read_u64(decoded.extensions[Ext.TIMESTAMP_NS]) == 1_795_000_000_000_000_000
    assert wire.read_acked(decoded.extensions[Ext.ACKED]) == (2, 3, 1)


# -- event records: the body of CAUSAL_DATA (docs/WIRE.md) ---------------------------------------------

def _event(index: int, ts, origin: int = 3, created_ns: int = 1_795_400_000_123_456_789, age: int = 0,
           body: bytes = b"") -> EventRecord:
    """A record whose creator numbered it as its ticket's count (a creator that kept one ticket)."""
    return EventRecord(index, ts[index], origin, created_ns, age, tuple(ts), body)


def test_an_event_record_is_laid_out_as_documented():
    record = EventRecord(1, 5, 3, 10, 2, (0, 5, 1), b"xy")
    assert wire.encode_events([record]) == (struct.pack("!H", 1) + struct.pack("!HIIQBH", 1, 5, 3, 10, 2, 3)
                                            + struct.pack("!3I", 0, 5, 1) + struct.pack("!I", 2) + b"xy")
    assert wire.encode_events([]) == b"\x00\x00" and wire.decode_events(b"\x00\x00") == []


def test_the_record_table_and_the_record_class_name_the_same_fields():
    """EventRecord is EVENT_RECORD without the lengths, which the encoder derives (n from ts,
    body_len from body); every length precedes the field it counts."""
    names = [f.name for f in EVENT_RECORD]
    lengths = {f.count for f in EVENT_RECORD if f.count}
    assert lengths == {"n", "body_len"}
    assert all(names.index(f.count) < names.index(f.name) for f in EVENT_RECORD if f.count)
    assert [n for n in names if n not in lengths] == [f.name for f in dataclasses.fields(EventRecord)]


def test_event_records_round_trip():
    vector = tuple(range(1_000, 1_125))  # 125 tickets
    records = [
        _event(0, (1,)),                                                    # one ticket, empty body
        _event(124, vector, origin=0xFFFF_FFFF, created_ns=2**64 - 1, age=255, body=b"\x00payload\xff"),
        _event(7, (0,) * 7 + (2**32 - 1,) + (0,) * 117, origin=1, created_ns=0, body=bytes(range(256))),
        EventRecord(0, 4, 9, 5, 1, [4, 0], bytearray(b"list and bytearray")),  # kept as tuple and bytes
        EventRecord(1, 57, 9, 6, 0, (4, 2), b""),   # the creator's 57th event, its second under ticket 1
    ]
    decoded = wire.decode_events(wire.encode_events(records))
    assert decoded == records and decoded[3].ts == (4, 0) and decoded[3].body == b"list and bytearray"
    assert all(isinstance(r.ts, tuple) and isinstance(r.body, bytes) for r in decoded)
    assert wire.count_events(wire.encode_events(records)) == 5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=130), st.integers(0, 10**6),
                          st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 255),
                          st.binary(max_size=300)), max_size=12))
def test_any_event_records_round_trip(drawn):
    records = [_event(pick % len(ts), ts, origin, created, age, body) for ts, pick, origin, created, age, body in drawn]
    body = wire.encode_events(records)
    assert wire.decode_events(body) == records and wire.count_events(body) == len(records)


def test_an_event_body_larger_than_a_datagram_is_counted_from_its_first_fragment():
    records = [_event(i, tuple(range(i, i + 125)), origin=i + 1, age=i % 5, body=bytes([i]) * 100) for i in range(20)]
    body = wire.encode_events(records)
    assert len(body) > 5 * wire.MAX_DATAGRAM
    datagrams = wire.fragment(Header(type=MessageType.CAUSAL_DATA, origin=2, sequence=8), body)
    assert len(datagrams) > 5
    first, payload = wire.decode(datagrams[0])
    assert first.frag_index == 0 and wire.count_events(payload) == 20
    reassembler = Reassembler()
    done = [r for r in (reassembler.add(*wire.decode(d), now=0.0) for d in reversed(datagrams)) if r]
    assert len(done) == 1 and wire.decode_events(done[0][1]) == records
    with pytest.raises(WireError, match="run past the end of the 1440-byte body"):
        wire.decode_events(payload)  # one fragment alone is not a whole body


def _raw_record(index: int, sequence: int, ts, body: bytes = b"") -> bytes:
    """A record written by hand, with no checks: to make malformed bodies."""
    return (struct.pack("!HIIQBH", index, sequence, 3, 10, 0, len(ts)) + struct.pack(f"!{len(ts)}I", *ts)
            + struct.pack("!I", len(body)) + body)


_GOOD = struct.pack("!H", 2) + _raw_record(1, 5, (0, 5, 1), b"xyz") + _raw_record(0, 7, (7,))


@pytest.mark.parametrize("body, reason", [
    (b"", "event body of 0 bytes: shorter than its 2-byte record count"),
    (b"\x00", "event body of 1 bytes: shorter than its 2-byte record count"),
    (struct.pack("!H", 3) + _GOOD[2:], f"the record count says 3 records, but the {len(_GOOD)}-byte body ends after 2"),
    (struct.pack("!H", 1), "the record count says 1 records, but the 2-byte body ends after 0"),
    (_GOOD[:2 + 10], "event record 0 (of 2) at byte 2: its 21-byte fixed part runs past the end of the 12-byte body"),
    (_GOOD[:2 + 21 + 8], "event record 0 (of 2) at byte 2: its 3-entry ts and body_len run past the end"),
    (_GOOD[:2 + 21 + 12 + 4 + 2], "event record 0 (of 2) at byte 2: its 3-byte body runs past the end"),
    (_GOOD[:-1], "event record 1 (of 2) at byte 42: its 1-entry ts and body_len run past the end"),
    (_GOOD + b"\x00", f"1 bytes after the last of the 2 records of the {len(_GOOD) + 1}-byte event body"),
    (struct.pack("!H", 0) + b"junk", "4 bytes after the last of the 0 records"),
    (struct.pack("!H", 1) + _raw_record(3, 0, (0, 0, 0)), "event record 0 (of 1) at byte 2: index 3 is not an entry "
                                                          "of its 3-entry ts"),
    (struct.pack("!H", 1) + _raw_record(0, 0, ()), "index 0 is not an entry of its 0-entry ts"),
])
def test_malformed_event_bodies_are_refused(body, reason):
    with pytest.raises(WireError, match=re.escape(reason)):
        wire.decode_events(body)


def test_count_events_reads_only_the_count():
    assert wire.count_events(_GOOD) == 2
    assert wire.count_events(_GOOD[:2]) == 2 and wire.count_events(b"\xff\xfe junk") == 0xFFFE
    for short in (b"", b"\x00"):
        with pytest.raises(WireError, match=f"payload of {len(short)} bytes: shorter than the 2-byte record count"):
            wire.count_events(short)


def _with(**changes) -> EventRecord:
    return dataclasses.replace(EventRecord(1, 5, 3, 10, 2, (0, 5, 1), b"xy"), **changes)


@pytest.mark.parametrize("records, message", [
    ([_with(index=3)], "event record 0: index (an entry of its 3-entry ts) = 3: must be an integer in [0, 2]"),
    ([_with(index=-1)], "index (an entry of its 3-entry ts) = -1: must be an integer in [0, 2]"),
    ([_with(sequence=2**32, ts=(0, 2**32, 0))], "event record 0: ts[1] = 4294967296: must be an integer in "
                                                 "[0, 4294967295]"),
    ([_with(sequence=-5)], "event record 0: sequence = -5: must be an integer in [0, 4294967295]"),
    ([_with(origin=2**32)], "origin = 4294967296: must be an integer in [0, 4294967295]"),
    ([_with(origin=-1)], "origin = -1: must be an integer in [0, 4294967295]"),
    ([_with(created_ns=2**64)], "created_ns = 18446744073709551616: must be an integer in [0, 18446744073709551615]"),
    ([_with(created_ns=-1)], "created_ns = -1: must be an integer in [0, 18446744073709551615]"),
    ([_with(age=256)], "age = 256: must be an integer in [0, 255]"),
    ([_with(age=-1)], "age = -1: must be an integer in [0, 255]"),
    ([_with(age=1.0)], "age = 1.0: must be an integer in [0, 255]"),
    ([_with(index=0, sequence=0, ts=())], "event record 0: n (entries in ts) = 0: must be an integer in [1, 65535]"),
    ([_with(index=0, sequence=0, ts=(0,) * 65536)], "n (entries in ts) = 65536: must be an integer in [1, 65535]"),
    ([_with(), _with(ts=(0, 5, -1))], "event record 1: ts[2] = -1: must be an integer in [0, 4294967295]"),
    ([_with(body="text")], "event record 0: body is a str: must be bytes"),
    ([_with()] * 65536, "record count = 65536: must be an integer in [0, 65535]"),
])
def test_encode_events_refuses_fields_out_of_range(records, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        wire.encode_events(records)
