"""The wire header's other readers and writers held to agents/wire.py, whose HEADER table is the one
machine-readable layout (and EVENT_COUNT / EVENT_RECORD that of the event records in CAUSAL_DATA
bodies): docs/WIRE.md's tables, the Wireshark dissector collect/wireshark/testbed.lua (read as
text, and run by tshark on messages wire.encode and wire.encode_events wrote), the pcap reader on
the same messages (its events column too), and the synthetic generator's frames decoded by
wire.decode. No network, no Spark."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import xml.etree.ElementTree as ET
from typing import Dict, Iterator, List, NamedTuple, Tuple

import numpy as np
import pytest
from scapy.utils import RawPcapReader

from agents import wire
from agents.wire import (BASE_LEN, EVENT_COUNT, EVENT_RECORD, FIELDS, HEADER, MAGIC, MAX_DATAGRAM, VERSION,
                         EventRecord, Ext, Flags, Header, MessageType)
from spark_analysis.pcapreader import DIR_IN, DIR_OUT, read_bytes

from .conftest import ROOT
from .synthetic import make_run

LUA = os.path.join(ROOT, "collect", "wireshark", "testbed.lua")
WIRE_MD = os.path.join(ROOT, "docs", "WIRE.md")
PORT = 7777
UDP_PAYLOAD_AT = 14 + 20 + 8  # Ethernet, IPv4 without options, UDP: where the testbed header starts


def _flags() -> Dict[str, int]:
    """The flag bits by name, without NONE (iterating an IntFlag differs between Python versions)."""
    return {name: int(value) for name, value in Flags.__members__.items() if value}


# -- the Lua dissector, read as text ----------------------------------------------------------------

def _lua_text() -> str:
    with open(LUA) as handle:
        return handle.read()


def _lua_table(text: str, name: str) -> str:
    """The body of `local <name> = { ... }` (a table whose closing brace starts a line)."""
    match = re.search(rf"^local {name} = \{{(.*?)^\}}", text, re.M | re.S)
    assert match, f"testbed.lua has no table `local {name} = {{...}}`"
    return match.group(1)


def _lua_protofields(text: str) -> Dict[str, Tuple[str, str, str]]:
    """f.<var> = ProtoField.<kind>("<abbrev>", <rest>) as {var: (kind, abbrev, rest)}."""
    return {var: (kind, abbrev, rest) for var, kind, abbrev, rest in
            re.findall(r'^f\.(\w+) = ProtoField\.(\w+)\("([\w.]+)"(.*)\)$', text, re.M)}


def _lua_numbered(body: str) -> Dict[int, str]:
    """A table body of `[number] = "NAME"` entries as {number: name}."""
    return {int(number): name for number, name in re.findall(r'\[(\d+)\]\s*=\s*"(\w+)"', body)}


WIDTH = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}


def test_the_lua_dissectors_header_table_is_wire_layout():
    text = _lua_text()
    table = [(name, int(offset), int(size))
             for name, offset, size in re.findall(r'\{"(\w+)",\s*(\d+),\s*(\d+)\}', _lua_table(text, "header"))]
    assert table == [(f.name, f.offset, f.size) for f in HEADER]
    fields = _lua_protofields(text)
    for f in HEADER:
        assert f.name in fields, f"testbed.lua: no ProtoField f.{f.name} for the header field {f.name}"
        kind, abbrev, _ = fields[f.name]
        assert abbrev == f"testbed.{f.name}"
        if f.code.endswith("s"):
            assert kind == "string" and f.size == len(MAGIC), f.name
        else:
            assert WIDTH.get(kind) == f.size, f"testbed.lua: f.{f.name} is a {kind}, the field has {f.size} bytes"
    # the dissector reads header fields only through that table: no field's offset and length written out
    literal = re.findall(r"buffer\(\s*\d+\s*,\s*\d+\s*\)", text)
    assert not literal, f"testbed.lua reads {literal} at literal offsets instead of through its header table"


def test_the_lua_dissectors_types_flags_and_extensions_are_wire_enums():
    text = _lua_text()
    assert _lua_numbered(_lua_table(text, "types")) == {int(m): m.name for m in MessageType}
    assert _lua_numbered(_lua_table(text, "extension_types")) == {int(m): m.name for m in Ext}
    bits = {var: (abbrev, rest) for var, (kind, abbrev, rest) in _lua_protofields(text).items() if kind == "bool"}
    masks = {}
    for var, (abbrev, rest) in bits.items():
        assert abbrev.startswith("testbed.flags."), abbrev
        width, mask = re.fullmatch(r', "[^"]*", (\d+), nil, (0x[0-9a-fA-F]+)', rest).groups()
        assert int(width) == FIELDS["flags"].size * 8, var
        masks[abbrev[len("testbed.flags."):].upper()] = int(mask, 16)
    assert masks == _flags()
    added = re.search(r"^local flag_bits = \{(.*)\}$", text, re.M)
    assert added and sorted(re.findall(r"f\.(\w+)", added.group(1))) == sorted(bits), \
        "every flag bit's ProtoField is added under the flags"


def test_the_lua_dissectors_event_record_table_is_wire_layout():
    text = _lua_text()
    count = re.search(r'^local event_count = \{"(\w+)",\s*(\d+)\}$', text, re.M)
    assert count and (count.group(1), int(count.group(2))) == (EVENT_COUNT.name, EVENT_COUNT.size)
    table = [(name, int(size), repeat) for name, size, repeat in
             re.findall(r'\{"(\w+)",\s*(\d+)(?:,\s*"(\w+)")?\}', _lua_table(text, "event_record"))]
    assert table == [(f.name, f.size, f.count) for f in EVENT_RECORD]
    fields = _lua_protofields(text)
    assert fields["event_count"][:2] == (f"uint{EVENT_COUNT.size * 8}", "testbed.events")
    assert fields["event"][:2] == ("none", "testbed.event")
    for f in EVENT_RECORD:
        var = f"event_{f.name}"
        assert var in fields, f"testbed.lua: no ProtoField f.{var} for the event record field {f.name}"
        kind, abbrev, _ = fields[var]
        assert abbrev == f"testbed.event.{f.name}"
        if f.code == "s":
            assert kind == "bytes", var
        else:
            assert WIDTH.get(kind) == f.size, f"testbed.lua: f.{var} is a {kind}, one item has {f.size} bytes"


# -- known messages, written by the reference encoder -----------------------------------------------

def _known_messages() -> List[Tuple[Header, bytes]]:
    """One message of every type, with every flag bit, every extension type (and an unknown one),
    fragments, relays and 64-bit message ids among them; origin, sequence, sender, hops, fragment
    numbers and message id differ from each other and from message to message."""
    flags = list(_flags().values())
    values = {Ext.VECTOR_CLOCK: wire.vector_clock([3, 0, 7]), Ext.INFRA_ID: wire.u32(4), Ext.TARGET: wire.u32(9),
              Ext.ACKED: wire.acked(5, 17, 1), Ext.TIMESTAMP_NS: wire.u64(1_795_400_000_123_456_789)}
    kinds = list(Ext)
    out = []
    for i, mtype in enumerate(MessageType):
        if i < len(kinds):
            extensions = {kinds[i]: values[kinds[i]]}
        elif i == len(kinds):
            extensions = {**values, 200: b"later"}
        else:
            extensions = {}
        header = Header(type=mtype, origin=100 + i, sequence=70_000 + i, sender=200 + i,
                        flags=flags[i % len(flags)] | (flags[-1] if i % 3 == 0 else 0), hops=i,
                        frag_index=10 + i, frag_count=30 + i,
                        message_id=0x7FFF_FFFF_FFFF_FFF0 if i == 4 else (1 << 40) * i + i, extensions=extensions)
        out.append((header, bytes(range(i, 3 * i))))
    return out


def _pcap(datagrams: List[bytes], snaplen: int = 65535, ip_options: bytes = b"") -> bytes:
    """A classic little-endian Ethernet pcap with each datagram in an IPv4/UDP frame to port 7777,
    with `ip_options` (a multiple of 4 bytes) in every IPv4 header and every frame cut to `snaplen`
    bytes as a capture with that snap length would."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1)]
    for i, datagram in enumerate(datagrams):
        udp = struct.pack("!HHHH", PORT, PORT, 8 + len(datagram), 0) + datagram
        ip_len = 20 + len(ip_options)
        ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ip_len // 4, 0, ip_len + len(udp), i, 0x4000, 64, 17, 0,
                         socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.255")) + ip_options
        frame = b"\xff" * 6 + b"\x02\x54\x42\x00\x00\x01" + b"\x08\x00" + ip + udp
        captured = frame[:snaplen]
        out.append(struct.pack("<IIII", 1_795_400_000 + i, 0, len(captured), len(frame)) + captured)
    return b"".join(out)


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    messages = _known_messages()
    datagrams = [wire.encode(header, payload) for header, payload in messages]
    path = tmp_path_factory.mktemp("known") / "known.pcap"
    path.write_bytes(_pcap(datagrams))
    return {"messages": messages, "datagrams": datagrams, "pcap": str(path)}


def _expected(header: Header, datagram: bytes, payload: bytes) -> Dict[str, object]:
    """Every header field's value as the encoder was asked for it."""
    values: Dict[str, object] = {f.name: getattr(header, f.name, None) for f in HEADER}
    values.update(magic=MAGIC.decode(), header_len=len(datagram) - len(payload))
    assert None not in values.values(), values
    return values


# -- tshark with the dissector ----------------------------------------------------------------------

def _tshark(pcap: str, *args: str) -> str:
    return subprocess.run(["tshark", "-n", "-X", f"lua_script:{LUA}", "-r", pcap, *args], capture_output=True,
                          text=True, check=True).stdout


def _testbed_fields(packet: ET.Element) -> Dict[str, List[ET.Element]]:
    """The dissector's fields in one PDML packet, by name, in the order it added them."""
    proto = packet.find("proto[@name='testbed']")
    assert proto is not None, "tshark did not hand the datagram to the testbed dissector"
    found: Dict[str, List[ET.Element]] = {}
    for element in proto.iter("field"):
        found.setdefault(element.get("name"), []).append(element)
    return found


@pytest.mark.skipif(shutil.which("tshark") is None,
                    reason="tshark is not installed: the dissector is only checked as text here")
def test_tshark_with_the_lua_dissector_reads_back_every_field_wire_encoded(known):
    packets = ET.fromstring(_tshark(known["pcap"], "-T", "pdml")).findall("packet")
    assert len(packets) == len(known["messages"])
    for packet, (header, payload), datagram in zip(packets, known["messages"], known["datagrams"]):
        found = _testbed_fields(packet)
        expected = _expected(header, datagram, payload)
        for f in HEADER:
            (element,) = found[f"testbed.{f.name}"]
            where = (header.type, f.name)
            assert int(element.get("pos")) - UDP_PAYLOAD_AT == f.offset, where
            assert int(element.get("size")) == f.size, where
            assert bytes.fromhex(element.get("value")) == datagram[f.offset:f.offset + f.size], where
            show = element.get("show")
            assert (show if isinstance(expected[f.name], str) else int(show, 0)) == expected[f.name], where
        (mtype,) = found["testbed.type"]
        assert mtype.get("showname").endswith(f": {MessageType(header.type).name} ({int(header.type)})")
        for name, bit in _flags().items():
            (element,) = found[f"testbed.flags.{name.lower()}"]
            assert int(element.get("pos")) - UDP_PAYLOAD_AT == FIELDS["flags"].offset
            assert bool(int(element.get("show"))) == bool(header.flags & bit), (header.type, name)
        types = [int(e.get("show")) for e in found.get("testbed.ext.type", [])]
        assert types == sorted(header.extensions)
        for element, kind in zip(found.get("testbed.ext.type", []), types):
            name = Ext(kind).name if kind in {int(m) for m in Ext} else "Unknown"
            assert element.get("showname").startswith(f"Extension: {name} ({kind})")
        assert [int(e.get("show")) for e in found.get("testbed.ext.len", [])] == \
            [len(header.extensions[t]) for t in types]
        assert [bytes.fromhex(e.get("value")) for e in found.get("testbed.ext.value", [])] == \
            [header.extensions[t] for t in types]
        payloads = [bytes.fromhex(e.get("value")) for e in found.get("testbed.payload", [])]
        assert payloads == ([payload] if payload else [])
        assert header.frag_index != 0 and not [name for name in found if name.startswith("testbed.event")]
    info = _tshark(known["pcap"], "-T", "fields", "-e", "_ws.col.Info").splitlines()
    assert info == [f"{MessageType(h.type).name} origin={h.origin} seq={h.sequence} frag={h.frag_index}/{h.frag_count}"
                    for h, _ in known["messages"]]


# -- the pcap reader on the same messages -----------------------------------------------------------

def test_the_pcap_reader_reads_back_every_field_wire_encoded(known):
    with open(known["pcap"], "rb") as handle:
        data = read_bytes(handle.read(), node_id=known["messages"][0][0].sender)
    assert data.damage == [] and data.other == 0 and data.packets == len(known["messages"])
    expected = [_expected(h, d, p) for (h, p), d in zip(known["messages"], known["datagrams"])]
    columns = {"seq": "sequence"}  # the reader's column names that are not the wire field's
    for name in ("type", "flags", "hops", "origin", "seq", "sender", "frag_index", "frag_count", "message_id",
                 "header_len"):
        assert data.columns[name].tolist() == [int(e[columns.get(name, name)]) for e in expected], name
    assert data.columns["payload_len"].tolist() == [len(p) for _, p in known["messages"]]
    assert data.columns["events"].tolist() == [0] * len(expected)  # no causal message's fragment 0 among them
    assert data.columns["direction"].tolist() == [DIR_OUT] + [DIR_IN] * (len(expected) - 1)  # by sender


# -- event records of CAUSAL_DATA bodies, written by wire.encode_events -----------------------------

def _event_records() -> List[EventRecord]:
    """Three records whose fields differ from each other: vector lengths, ages, empty and full bodies."""
    def record(index: int, ts: Tuple[int, ...], origin: int, created_ns: int, age: int, body: bytes) -> EventRecord:
        return EventRecord(index, ts[index], origin, created_ns, age, ts, body)

    return [record(2, (4, 0, 0xFFFF_FFF0, 1), 0xFFFF_FFFE, 1_795_400_000_123_456_789, 3, b"event one"),
            record(9, tuple(range(100, 112)), 7, 1, 0, b""),
            record(0, (70_000, 2, 3, 4, 5), 12, 0x7FFF_FFFF_FFFF_FFF0, 255, bytes(range(20)))]


class Item(NamedTuple):
    """One item of an encoded event record: a field that occurs once, one entry of a repeated
    field, or the bytes of the body."""

    name: str
    at: int         # bytes from the start of the payload
    size: int
    value: object


def _record_items(record: EventRecord, at: int) -> List[Item]:
    """The items of `record` encoded at `at` in the payload, in wire order, laid out by EVENT_RECORD;
    an empty body is no item."""
    values: Dict[str, object] = {**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)},
                                 "n": len(record.ts), "body_len": len(record.body)}
    items = []
    for f in EVENT_RECORD:
        if not f.count:
            items.append(Item(f.name, at, f.size, values[f.name]))
            at += f.size
        elif f.code == "s":
            if values[f.count]:
                items.append(Item(f.name, at, values[f.count], values[f.name]))
            at += values[f.count]
        else:
            for entry in values[f.name]:
                items.append(Item(f.name, at, f.size, entry))
                at += f.size
    return items


def _body_items(records: List[EventRecord]) -> List[List[Item]]:
    """The items of every record of encode_events(records), each record from where it starts."""
    at, out = EVENT_COUNT.size, []
    for record in records:
        items = _record_items(record, at)
        out.append(items)
        at = items[-1].at + items[-1].size
    assert at == len(wire.encode_events(records))
    return out


@pytest.fixture(scope="module")
def causal(tmp_path_factory):
    """CAUSAL_DATA and CAUSAL_RECOVERY messages with event bodies, whole and fragmented so that
    fragment 0 ends inside the second record's vector, and a PROBE whose payload happens to be an
    event body."""
    records = _event_records()
    body = wire.encode_events(records)
    items = _body_items(records)
    cut = items[1][8].at + 2  # the payload bytes of fragment 0: into the second record's third ts entry
    assert [i.name for i in items[1][:9]] == ["index", "sequence", "origin", "created_ns", "age", "n", "ts", "ts", "ts"]
    data = Header(type=MessageType.CAUSAL_DATA, origin=3, sequence=1, sender=3, hops=1)
    recovery = Header(type=MessageType.CAUSAL_RECOVERY, origin=4, sequence=2, sender=4,
                      extensions={Ext.VECTOR_CLOCK: wire.vector_clock([1, 2, 3])})
    messages = [(wire.encode(data, body), records),
                *[(d, records) for d in wire.fragment(data, body, data.encoded_len() + cut)],
                (wire.encode(recovery, wire.encode_events(records[:2])), records[:2]),
                (wire.encode(Header(type=MessageType.PROBE, origin=5, sequence=3), body), None)]
    path = tmp_path_factory.mktemp("causal") / "causal.pcap"
    path.write_bytes(_pcap([d for d, _ in messages]))
    return {"messages": messages, "pcap": str(path)}


def _children(element: ET.Element) -> List[Tuple[str, int, int, str, str]]:
    """(name, position in the frame, size, show, value) of the fields right under a PDML element."""
    return [(c.get("name"), int(c.get("pos")), int(c.get("size")), c.get("show"), c.get("value"))
            for c in element.findall("field")]


@pytest.mark.skipif(shutil.which("tshark") is None,
                    reason="tshark is not installed: the dissector is only checked as text here")
def test_tshark_with_the_lua_dissector_shows_the_event_records_wire_encoded(causal):
    packets = ET.fromstring(_tshark(causal["pcap"], "-T", "pdml")).findall("packet")
    assert len(packets) == len(causal["messages"])
    shown = []
    for packet, (datagram, records) in zip(packets, causal["messages"]):
        header, payload = wire.decode(datagram)
        proto = packet.find("proto[@name='testbed']")
        counts = [e for e in proto.iter("field") if e.get("name") == "testbed.events"]
        if records is None or header.frag_index:
            assert counts == [] and not [e for e in proto.iter("field") if e.get("name").startswith("testbed.event")]
            shown.append(None)
            continue
        payload_at = UDP_PAYLOAD_AT + len(datagram) - len(payload)
        (count,) = counts
        assert (int(count.get("show")), int(count.get("pos")), int(count.get("size"))) == \
            (len(records), payload_at, EVENT_COUNT.size)
        events = count.findall("field")
        assert all(e.get("name") == "testbed.event" for e in events)
        for number, (event, items) in enumerate(zip(events, _body_items(records)), 1):
            present = [i for i in items if i.at + i.size <= len(payload)]
            whole = present == items
            label = f"Event {number} of {len(records)}" + (
                f": index {records[number - 1].index}, sequence {records[number - 1].sequence}" if whole
                else " (continues in the next fragment)")
            assert event.get("showname") == label
            assert int(event.get("pos")) == payload_at + items[0].at
            assert int(event.get("size")) == (items[-1].at + items[-1].size if whole else len(payload)) - items[0].at
            got = _children(event)
            assert [(name, pos - payload_at, size) for name, pos, size, _, _ in got] == \
                [(f"testbed.event.{i.name}", i.at, i.size) for i in present]
            for (name, _, _, show, value), item in zip(got, present):
                assert (bytes.fromhex(value) if item.name == "body" else int(show)) == item.value, (number, name)
        shown.append([len(_children(e)) for e in events])
    # items per record shown: all of them, except in fragment 0 of the fragmented message (the
    # fixed part and two ts entries of its second record) and in its later fragments (none)
    whole = [len(items) for items in _body_items(_event_records())]
    fragments = len(causal["messages"]) - 3
    assert fragments > 1 and shown == [whole, [whole[0], 8]] + [None] * (fragments - 1) + [whole[:2], None]


# -- the pcap reader's events column ----------------------------------------------------------------

def test_the_pcap_reader_counts_the_events_of_fragment_0_of_causal_messages(tmp_path):
    records = _event_records()
    body = wire.encode_events(records)
    fragments = wire.fragment(Header(type=MessageType.CAUSAL_DATA, origin=3, sequence=1, sender=3), body, 80)
    assert len(fragments) > 2
    others = [
        (wire.encode(Header(type=MessageType.CAUSAL_RECOVERY, origin=4, sequence=2, sender=4,
                            extensions={Ext.VECTOR_CLOCK: wire.vector_clock([1, 2, 3])}),
                     wire.encode_events(records[:2])), 2),
        (wire.encode(Header(type=MessageType.CAUSAL_DATA, origin=5, sequence=3), wire.encode_events([])), 0),
        (wire.encode(Header(type=MessageType.CAUSAL_DATA, origin=5, sequence=4), b"\x07"), 0),  # 1 byte: too short
        (wire.encode(Header(type=MessageType.CAUSAL_DATA, origin=5, sequence=5)), 0),           # no payload
        (wire.encode(Header(type=MessageType.CAUSAL_RECOVERY, origin=5, sequence=6, frag_index=1, frag_count=2),
                     body), 0),                                                                  # not fragment 0
        (wire.encode(Header(type=MessageType.PROBE, origin=5, sequence=7), body), 0),            # not causal
    ]
    datagrams = fragments + [d for d, _ in others]
    expected = [len(records)] + [0] * (len(fragments) - 1) + [n for _, n in others]
    for options in (b"", b"\x01\x01\x01\x00"):  # IPv4 without and with options (NOP, NOP, NOP, end)
        data = read_bytes(_pcap(datagrams, ip_options=options), node_id=3)
        assert data.damage == [] and data.other == 0 and data.packets == len(datagrams)
        assert data.columns["events"].tolist() == expected, options
        assert data.columns["events"].dtype == np.int32
    # a capture cut short (snap length): the count is read only where both of its bytes were captured
    payload_at = 14 + 20 + 8 + BASE_LEN
    for snaplen, events in ((payload_at, 0), (payload_at + 1, 0), (payload_at + 2, len(records))):
        data = read_bytes(_pcap(fragments[:1], snaplen=snaplen), node_id=3)
        assert data.damage == [] and data.packets == 1, snaplen
        assert data.columns["events"].tolist() == [events], snaplen
        assert data.columns["payload_len"].tolist() == [len(wire.decode(fragments[0])[1])]


# -- docs/WIRE.md -----------------------------------------------------------------------------------

def _markdown_tables(path: str) -> Dict[str, List[List[str]]]:
    """The rows (lists of cells) of each table of a markdown file, by the heading above it; the
    table's own header row and rule are left out."""
    tables: Dict[str, List[List[str]]] = {}
    heading = ""
    with open(path) as handle:
        for line in handle:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            elif line.startswith("|"):
                tables.setdefault(heading, []).append([c.strip() for c in line.strip().strip("|").split("|")])
    return {name: rows[2:] for name, rows in tables.items()}


def _record_rows() -> List[Tuple[str, str, str]]:
    """EVENT_RECORD as the documented table's offset, size and field columns: offsets and sizes
    after a repeated field are written with its count, as "21 + 4n" and "4 × n"."""
    fixed, terms, rows = 0, [], []
    for f in EVENT_RECORD:
        offset = " + ".join(([str(fixed)] if fixed or not terms else []) + terms)
        if f.count:
            rows.append((offset, f"{f.size} × {f.count}" if f.size > 1 else f.count, f.name))
            terms.append(f"{f.size}{f.count}" if f.size > 1 else f.count)
        else:
            rows.append((offset, str(f.size), f.name))
            fixed += f.size
    return rows


def test_docs_wire_md_tables_are_wire_py():
    tables = _markdown_tables(WIRE_MD)
    header = tables["Wire format (version 1)"]
    assert [row[2] for row in header] == [f.name for f in HEADER] + ["extensions", "payload"]
    assert [(int(row[0]), int(row[1]), row[2]) for row in header[:len(HEADER)]] == \
        [(f.offset, f.size, f.name) for f in HEADER]
    rows = {row[2]: row for row in header}
    assert rows["extensions"][0] == str(BASE_LEN) and rows["payload"][0] == "header_len"
    assert f"`{MAGIC.decode()}`" in rows["magic"][3] and rows["version"][3] == str(VERSION)
    assert f"at least {BASE_LEN}" in rows["header_len"][3]
    assert [(int(row[0]), row[1]) for row in tables["Message types"]] == [(int(m), m.name) for m in MessageType]
    assert [(int(row[0], 16), row[1]) for row in tables["Flags"]] == [(v, n) for n, v in _flags().items()]
    assert [(int(row[0]), row[1]) for row in tables["Extensions"]] == [(int(m), m.name) for m in Ext]
    records = tables["Event records (CAUSAL_DATA body)"]
    assert [tuple(row[:3]) for row in records] == _record_rows()
    assert _record_rows()[-2:] == [("21 + 4n", "4", "body_len"), ("25 + 4n", "body_len", "body")]  # as it reads
    with open(WIRE_MD) as handle:
        text = handle.read()
    assert f"{MAX_DATAGRAM} bytes of UDP payload" in text and f"`header_len` of {BASE_LEN} or more" in text
    assert f"uint{EVENT_COUNT.size * 8} record count" in text and "`EVENT_COUNT`, `EVENT_RECORD`" in text


# -- the synthetic generator ------------------------------------------------------------------------

def _udp_to_port(path: str, port: int) -> Iterator[Tuple[str, str, bytes]]:
    """(source address, destination address, UDP payload) of every IPv4/UDP frame to `port` in an
    Ethernet pcap."""
    for data, _meta in RawPcapReader(path):
        if data[12:14] != b"\x08\x00" or data[23] != 17:
            continue
        udp = 14 + (data[14] & 0x0F) * 4
        if struct.unpack_from("!H", data, udp + 2)[0] == port:
            yield socket.inet_ntoa(data[26:30]), socket.inet_ntoa(data[30:34]), bytes(data[udp + 8:])


def test_the_synthetic_generators_headers_decode_to_what_it_meant(tmp_path):
    run = str(tmp_path / "run")
    payload = 16
    truth = make_run(run, packets=3000, nodes=2, seed=5, loss=0.1, duplicate=0.05, reliable_share=0.5,
                     payload=payload, workers=1)
    with open(os.path.join(run, "manifest.json")) as handle:
        manifest = json.load(handle)
    ids = manifest["node_ids"]
    name_of = {nid: name for name, nid in ids.items()}
    address = {name: a["eth0"].split("/")[0] for name, a in manifest["addresses"].items()}
    broadcast = {name: a.rsplit(".", 1)[0] + ".255" for name, a in address.items()}
    sent: Dict[str, set] = {"broadcast": set(), "reliable": set()}
    acked, retransmissions, acks_sent = [], {}, 0
    for name, expected in truth["files"].items():
        counts = {"testbed": 0, "testbed_out": 0, "probe": 0, "ack": 0}
        for src, dst, datagram in _udp_to_port(os.path.join(run, "pcap", f"{name}.pcap"), PORT):
            header, body = wire.decode(datagram)  # a WireError fails the test: every frame must decode
            assert (header.version, header.hops, header.frag_index, header.frag_count, header.message_id) == \
                (VERSION, 0, 0, 1, 0)
            assert src == address[name_of[header.sender]]
            out = header.sender == ids[name]
            counts["testbed"] += 1
            counts["testbed_out"] += out
            if header.type == MessageType.PROBE:
                counts["probe"] += 1
                assert header.extensions == {} and len(datagram) - len(body) == BASE_LEN and len(body) == payload
                assert header.sender == header.origin
                if header.flags == Flags.BROADCAST:
                    assert dst == broadcast[name_of[header.origin]]
                    sent["broadcast"].add(header.key)
                else:
                    assert header.flags & ~Flags.RETRANSMISSION == Flags.ACK_REQUESTED, header.flags
                    sent["reliable"].add(header.key)
                    if out and header.flags & Flags.RETRANSMISSION:
                        origin = name_of[header.origin]
                        retransmissions[origin] = retransmissions.get(origin, 0) + 1
            else:
                assert header.type == MessageType.ACK and header.flags == 0 and body == b""
                assert list(header.extensions) == [Ext.ACKED]
                assert len(datagram) == BASE_LEN + wire.TLV.size + len(header.extensions[Ext.ACKED])
                origin, sequence, frag = wire.read_acked(header.extensions[Ext.ACKED])
                assert frag == 0 and dst == address[name_of[origin]]
                acked.append((origin, sequence))
                counts["ack"] += 1
                acks_sent += out
        assert counts == {k: expected[k] for k in counts}, name
    assert len(sent["broadcast"]) == truth["messages"]["PROBE_broadcast"]
    assert len(sent["reliable"]) == truth["messages"]["PROBE_reliable"]
    assert set(acked) <= sent["reliable"] and acks_sent == truth["messages"]["ACK"]
    assert retransmissions == {n: e["retransmissions"] for n, e in truth["nodes"].items() if e["retransmissions"]}
