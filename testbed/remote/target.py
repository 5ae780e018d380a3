"""`USER@HOST[:PORT]`: the machine a remote verb talks to, checked before any connection."""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass

from ..errors import UsageError

ALLOWED = "USER@HOST or USER@HOST:PORT, e.g. root@lab1, root@10.0.0.5:2222, root@[fe80::1]:22"
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$")
_HOST_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")
_IPV6_RE = re.compile(r"^[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?$")


@dataclass(frozen=True)
class Target:
    user: str
    host: str
    port: int = 22

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}" + ("" if self.port == 22 else f":{self.port}")

    @property
    def address(self) -> str:
        """HOST or HOST:PORT, as messages name the machine."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == 22 else f"{host}:{self.port}"


def parse_target(text: str) -> Target:
    """USER@HOST[:PORT]; USER defaults to the local user name, as with ssh."""
    def bad(why: str) -> UsageError:
        return UsageError(f"{text!r}: {why} (allowed: {ALLOWED})")

    if not text or text != text.strip():
        raise bad("empty or surrounded by spaces")
    user, at, rest = text.rpartition("@")
    if not at:
        user, rest = getpass.getuser(), text
    elif not user:
        raise bad("the user name before '@' is empty")
    if not _USER_RE.match(user):
        raise bad(f"{user!r} is not a user name")
    port_text = None
    if rest.startswith("["):
        host, close, after = rest[1:].partition("]")
        if not close or not _IPV6_RE.match(host) or ":" not in host:
            raise bad("expected an IPv6 address in brackets")
        if after:
            if not after.startswith(":"):
                raise bad(f"unexpected {after!r} after the address")
            port_text = after[1:]
    else:
        host, colon, port_text = rest.partition(":")
        if not colon:
            port_text = None
        if not host:
            raise bad("the host is empty")
        if not _HOST_RE.match(host):
            raise bad(f"{host!r} is not a host name or address (IPv6 addresses go in brackets)")
    port = 22
    if port_text is not None:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise bad(f"port {port_text!r} is not a number from 1 to 65535")
        port = int(port_text)
    return Target(user=user, host=host, port=port)
