"""The `probe` role: numbered messages at a configured rate, to unicast peers or by broadcast.

Parameters:
  rate      messages per second (default 10; 0 sends nothing and only listens)
  size      body bytes per message (default 64; above one datagram it is fragmented)
  to        "broadcast" (default), "all" (unicast to every other node) or a list of node names
  count     stop after this many messages (default: until stopped)
  reliable  use the reliable channel (acknowledgements and retransmissions; default false)
  start_delay  seconds to wait before the first message (default 0)

Every message received is delivered to the application at once (and logged).
"""

from __future__ import annotations

from ..runtime import Role
from ..wire import Header, MessageType
from . import MAX_BODY_BYTES, MAX_COUNT, MAX_SECONDS, number_at_least, whole_at_least

NAME = "probe"
#: Messages per second. The pacing loop below awaits only while it is ahead of its schedule: at
#: .inf it never does, and the agent spins. 10000 is far above the scenarios' 5 to 100; a node that
#: cannot keep up with the rate still runs behind its schedule without yielding until it catches up.
MAX_RATE = 10_000
PARAMS = {
    "rate": (number_at_least(0, MAX_RATE), f"messages per second, a number from 0 to {MAX_RATE}"),
    "size": (whole_at_least(0, MAX_BODY_BYTES), f"body bytes, a whole number from 0 to {MAX_BODY_BYTES} (64 MiB)"),
    "to": (lambda v: v in ("broadcast", "all") or (isinstance(v, list) and all(isinstance(n, str) for n in v)),
           "broadcast, all, or a list of node names"),
    "count": (whole_at_least(1, MAX_COUNT), f"a whole number from 1 to {MAX_COUNT}"),
    "reliable": (lambda v: isinstance(v, bool), "true or false"),
    "start_delay": (number_at_least(0, MAX_SECONDS), f"seconds, a number from 0 to {MAX_SECONDS} (365 days)"),
}


class ProbeRole(Role):
    async def run(self) -> None:
        rate = float(self.params.get("rate", 10))
        if rate <= 0:
            return
        size = int(self.params.get("size", 64))
        count = self.params.get("count")
        reliable = bool(self.params.get("reliable", False))
        to = self.params.get("to", "broadcast")
        if to == "all":
            to = sorted(n for n in self.agent.config.nodes if n != self.agent.name)
        clock = self.agent.clock
        await clock.sleep(float(self.params.get("start_delay", 0)))
        body = bytes(size)
        start = clock.time()
        sent = 0
        while count is None or sent < int(count):
            # paced against the start time, so that a slow iteration does not lower the rate
            await clock.sleep_until(start + sent / rate, period=1 / rate)
            self.agent.send(MessageType.PROBE, body, to=to, reliable=reliable)
            sent += 1

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.PROBE:
            self.agent.deliver(header, sender=sender)


ROLE = ProbeRole
