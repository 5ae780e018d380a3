"""Traffic probes the network tests run inside node namespaces (with the machine's python3).

  netprobe.py udp-recv PORT IDLE_S [FIRST_S]  count datagrams until IDLE_S without one (FIRST_S,
                                          default 30, before the first); print JSON
  netprobe.py udp-send ADDR PORT COUNT PPS [SEED]  send COUNT numbered datagrams at PPS (with a
                                          SEED: at exponential intervals, a Poisson stream)
  netprobe.py tcp-recv PORT               receive one TCP stream; print JSON with the goodput
  netprobe.py tcp-send ADDR PORT SECONDS  send as fast as the network allows for SECONDS
  netprobe.py udp-rtt ADDR PORT COUNT     (with udp-echo) median round trip in ms
  netprobe.py udp-blast ADDR PORT SECONDS MBIT   offer a UDP stream of MBIT (in frame bytes)
  netprobe.py udp-rate PORT IDLE_S         the received rate in Mbit/s of Ethernet frames
  netprobe.py udp-echo PORT               echo datagrams back
Each receiver prints 'ready' once listening.
"""

import json
import socket
import statistics
import struct
import sys
import time


def udp_recv(port, idle, first=30.0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("0.0.0.0", port))
    print("ready", flush=True)
    sock.settimeout(first)
    seen = {}
    try:
        while True:
            data = sock.recv(2048)
            seq = struct.unpack("!I", data[:4])[0]
            seen[seq] = seen.get(seq, 0) + 1
            sock.settimeout(idle)
    except socket.timeout:
        pass
    total = sum(seen.values())
    print(json.dumps({"received": total, "unique": len(seen), "duplicates": total - len(seen)}), flush=True)


def udp_send(addr, port, count, pps, seed=None):
    import random

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)  # ADDR may be a subnet's broadcast
    draw = random.Random(seed)
    start = time.monotonic()
    offset = 0.0
    for seq in range(count):
        offset = offset + draw.expovariate(pps) if seed is not None else seq / pps
        target = start + offset
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sock.sendto(struct.pack("!I", seq) + b"x" * 60, (addr, port))


def tcp_recv(port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(1)
    print("ready", flush=True)
    conn, _ = server.accept()
    total, first, last = 0, None, None
    while True:
        data = conn.recv(65536)
        if not data:
            break
        now = time.monotonic()
        if first is None:
            first = now
        else:
            total += len(data)  # bytes after the first read, over the time since it
        last = now
    mbit = total * 8 / (last - first) / 1e6 if last and first and last > first else 0.0
    print(json.dumps({"bytes": total, "seconds": (last or 0) - (first or 0), "mbit": mbit}), flush=True)


def tcp_send(addr, port, seconds):
    sock = socket.create_connection((addr, port))
    chunk = b"x" * 65536
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.sendall(chunk)
    sock.close()


def udp_echo(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    print("ready", flush=True)
    sock.settimeout(30)
    try:
        while True:
            data, peer = sock.recvfrom(2048)
            sock.sendto(data, peer)
    except socket.timeout:
        pass


def udp_rtt(addr, port, count):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)
    samples = []
    for seq in range(count):
        start = time.monotonic()
        sock.sendto(struct.pack("!I", seq), (addr, port))
        try:
            sock.recv(2048)
            samples.append((time.monotonic() - start) * 1000)
        except socket.timeout:
            pass
        time.sleep(0.01)
    print(json.dumps({"median_ms": statistics.median(samples) if samples else None, "replies": len(samples)}),
          flush=True)


FRAME_OVERHEAD = 14 + 20 + 8  # Ethernet, IPv4 and UDP headers around each datagram


def udp_blast(addr, port, seconds, mbit, size=1400):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    pps = mbit * 1e6 / 8 / (size + FRAME_OVERHEAD)
    payload = b"x" * size
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        target = start + sent / pps
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        try:
            sock.sendto(payload, (addr, port))
        except OSError:
            pass  # a full queue may refuse a datagram; that is the shaping at work
        sent += 1


def udp_rate(port, idle, warmup=0.5):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("0.0.0.0", port))
    print("ready", flush=True)
    sock.settimeout(30)
    first = None
    window_bytes, window_start, last = 0, None, None
    try:
        while True:
            data = sock.recv(65535)
            now = time.monotonic()
            sock.settimeout(idle)
            if first is None:
                first = now
            if now - first < warmup:
                continue
            if window_start is None:
                window_start = now
            else:
                window_bytes += len(data) + FRAME_OVERHEAD
            last = now
    except socket.timeout:
        pass
    seconds = (last - window_start) if last and window_start else 0
    print(json.dumps({"seconds": seconds, "wire_mbit": window_bytes * 8 / seconds / 1e6 if seconds else 0}),
          flush=True)


if __name__ == "__main__":
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "udp-recv":
        udp_recv(int(args[0]), float(args[1]), *(float(a) for a in args[2:3]))
    elif verb == "udp-send":
        udp_send(args[0], int(args[1]), int(args[2]), float(args[3]), *(int(a) for a in args[4:5]))
    elif verb == "tcp-recv":
        tcp_recv(int(args[0]))
    elif verb == "tcp-send":
        tcp_send(args[0], int(args[1]), float(args[2]))
    elif verb == "udp-echo":
        udp_echo(int(args[0]))
    elif verb == "udp-blast":
        udp_blast(args[0], int(args[1]), float(args[2]), float(args[3]))
    elif verb == "udp-rate":
        udp_rate(int(args[0]), float(args[1]))
    elif verb == "udp-rtt":
        udp_rtt(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit(f"unknown verb {verb}")
