"""A role that raises, for tests/test_contracts.py: in its loop once it has sent one probe, and in
its handler for every message; the agent must log each as an error event and go on."""

from agents.runtime import Role
from agents.wire import MessageType


class FailingRole(Role):
    async def run(self) -> None:
        self.agent.send(MessageType.PROBE, b"x", to="broadcast")
        raise RuntimeError("the loop broke")

    def on_message(self, header, body, sender) -> None:
        self.agent.deliver(header, sender=sender)
        raise ZeroDivisionError("the handler broke")


ROLE = FailingRole
