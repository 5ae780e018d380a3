"""The least a node agent can do per message, in Python: the floor under benchmarks/agent_cost.py's
figures. The same work as floor.c (one datagram with the testbed's 32-byte wire header and a
64-byte body to its peer at a steady rate, paced against deadlines; a send, a receive and a
deliver event per message in the event log's JSON lines, one write() per wake-up), waiting in
select() for a datagram or its next send: no event loop, no objects per message, nothing else.
What the agent costs above this is its runtime's doing; what this costs above floor.c is Python's.

    python3 floor.py NODE_ID PEER_NAME PEER_ADDRESS RATE   (TESTBED_NODE and TESTBED_LOG from the testbed)
"""

import os
import select
import socket
import struct
import sys
import time

PORT = 7777
BODY = 64


def main() -> int:
    node_id, peer, address, rate = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    me, path = os.environ["TESTBED_NODE"], os.environ["TESTBED_LOG"]
    log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", PORT))
    sock.setblocking(False)
    # magic, version, type PROBE, flags, hops, header_len, origin, sequence, sender, frag 0 of 1, id
    header = struct.Struct("!2sBBBBHIIIHHQ")
    body = bytes(BODY)
    there = (address, PORT)
    receive = ('{"t":%d,"node":"' + me + '","event":"receive","type":"PROBE","origin":%d,"seq":%d,"bytes":%d}\n'
               '{"t":%d,"node":"' + me + '","event":"deliver","type":"PROBE","origin":%d,"seq":%d}\n')
    send = '{"t":%d,"node":"' + me + '","event":"send","type":"PROBE","origin":' + str(node_id) + \
           ',"seq":%d,"to":"' + peer + '","bytes":' + str(BODY) + '}\n'
    period, seq = 1.0 / rate, 0
    following = time.monotonic() + period
    lines = []
    while True:
        ready, _, _ = select.select([sock], [], [], max(following - time.monotonic(), 0.0))
        if ready:
            while True:
                try:
                    data = sock.recv(2048)
                except BlockingIOError:
                    break
                if len(data) < 32 or data[:2] != b"TB":
                    continue
                origin, sequence = struct.unpack_from("!II", data, 8)
                t = time.time_ns()
                lines.append(receive % (t, origin, sequence, len(data) - 32, t, origin, sequence))
        if time.monotonic() >= following:
            seq += 1
            lines.append(send % (time.time_ns(), seq))
            os.write(log, "".join(lines).encode())  # the send event before its datagram
            lines.clear()
            try:
                sock.sendto(header.pack(b"TB", 1, 2, 0, 0, 32, node_id, seq, node_id, 0, 1, 0) + body, there)
            except OSError:
                pass  # before the lab gave this node its address
            following += period
        if lines:
            os.write(log, "".join(lines).encode())
            lines.clear()


if __name__ == "__main__":
    sys.exit(main())
