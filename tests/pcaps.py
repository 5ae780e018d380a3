"""Reading testbed messages out of a run's pcaps (scapy's raw reader, no dissection)."""

from __future__ import annotations

import os
import socket
from typing import Iterator, NamedTuple

from scapy.utils import RawPcapReader

from agents import wire


class Packet(NamedTuple):
    t_ns: int
    src: str
    dst: str
    header: wire.Header


def messages(path: str) -> Iterator[Packet]:
    """Every testbed message in an Ethernet pcap; other traffic is skipped."""
    if not os.path.exists(path):
        return
    for data, meta in RawPcapReader(path):
        if len(data) < 42 or data[12:14] != b"\x08\x00" or data[23] != 17:
            continue
        ihl = (data[14] & 0x0F) * 4
        payload = data[14 + ihl + 8:]
        try:
            header, _ = wire.decode(payload)
        except wire.WireError:
            continue
        yield Packet(meta.sec * 1_000_000_000 + meta.usec * 1000, socket.inet_ntoa(data[26:30]),
                     socket.inet_ntoa(data[30:34]), header)


def frames(path: str, mac: str) -> tuple:
    """(frames with this source MAC, frames with another) in an Ethernet pcap: what the node sent
    and what it received on an interface that has that address."""
    own = bytes.fromhex(mac.replace(":", ""))
    sent = received = 0
    for data, _ in RawPcapReader(path):
        if data[6:12] == own:
            sent += 1
        else:
            received += 1
    return sent, received
