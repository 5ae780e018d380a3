"""A protocol implementation that is not the testbed's agent: written only from docs/EVENTS.md.

Every node broadcasts FLOOD_COUNT numbered messages (FLOOD_RATE per second) as plain UDP
datagrams to port 9000 of its segments' broadcast addresses, and delivers each message it
receives once. It finds who it is and where to log in the environment the testbed gives every
node (TESTBED_NODE, TESTBED_CONFIG, TESTBED_LOG), and logs a `send` per message it sends and a
`deliver` per message it takes, with CLOCK_REALTIME nanoseconds; the testbed's property checks
then judge its deliveries like the built-in agents'. Its datagrams carry no testbed header, so
the analysis counts them as other traffic on the wire.

Run in a lab: build the image
(`testbed images build --context examples/byo --tag example/flood:latest`), then give nodes
`image: example/flood` (topologies/byo-flood.yaml does; scenarios/byo-flood.yaml runs it).
"""

import json
import os
import socket
import time

PORT = 9000


def main() -> None:
    me = os.environ["TESTBED_NODE"]
    with open(os.environ["TESTBED_CONFIG"]) as handle:
        config = json.load(handle)
    log = open(os.environ["TESTBED_LOG"], "a", buffering=1)  # a line is in the file once written

    def event(kind, **fields):
        log.write(json.dumps({"t": time.time_ns(), "node": me, "event": kind, **fields}) + "\n")

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    sock.bind(("", PORT))  # at once: what arrives while we wait below waits in the socket
    sock.settimeout(0.01)
    # The container starts before the lab gives it an address: wait until the address exists.
    address = config["nodes"][me]["address"]
    while True:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.bind((address, 0))
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(float(os.environ.get("FLOOD_DELAY", "2")))  # the others come up within it
    count, rate = int(os.environ.get("FLOOD_COUNT", "20")), float(os.environ.get("FLOOD_RATE", "20"))
    seen = set()
    sent, start = 0, time.monotonic()
    while True:
        if sent < count and time.monotonic() >= start + sent / rate:
            sent += 1
            event("send", type="FLOOD", origin=me, seq=sent, to="broadcast")
            for target in config["broadcast"]:
                sock.sendto(f"{me} {sent}".encode(), (target, PORT))
        try:
            data, _ = sock.recvfrom(2048)
        except socket.timeout:
            continue
        origin, _, seq = data.decode(errors="replace").partition(" ")
        if origin == me or not seq.isdigit() or (origin, seq) in seen:
            continue  # our own broadcast, looped back; or a copy already delivered
        seen.add((origin, seq))
        event("deliver", type="FLOOD", origin=origin, seq=int(seq))


if __name__ == "__main__":
    main()
