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

import asyncio
import time

from ..runtime import Role
from ..wire import Header, MessageType
from . import number_at_least, whole_at_least

NAME = "probe"
PARAMS = {
    "rate": (number_at_least(0), "messages per second, a number of at least 0"),
    "size": (whole_at_least(0), "body bytes, a whole number of at least 0"),
    "to": (lambda v: v in ("broadcast", "all") or (isinstance(v, list) and all(isinstance(n, str) for n in v)),
           "broadcast, all, or a list of node names"),
    "count": (whole_at_least(1), "a whole number of at least 1"),
    "reliable": (lambda v: isinstance(v, bool), "true or false"),
    "start_delay": (number_at_least(0), "seconds, a number of at least 0"),
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
        await asyncio.sleep(float(self.params.get("start_delay", 0)))
        body = bytes(size)
        start = time.monotonic()
        sent = 0
        while count is None or sent < int(count):
            # paced against the start time, so that a slow iteration does not lower the rate
            delay = start + sent / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.agent.send(MessageType.PROBE, body, to=to, reliable=reliable)
            sent += 1

    def on_message(self, header: Header, body: bytes, sender: str) -> None:
        if header.type == MessageType.PROBE:
            self.agent.deliver(header, sender=sender)


ROLE = ProbeRole
