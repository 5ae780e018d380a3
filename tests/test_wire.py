"""The wire contract (docs/WIRE.md): encoding, decoding, extensions, fragmentation."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import wire
from agents.wire import Ext, Flags, Header, MessageType, Reassembler, WireError


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
