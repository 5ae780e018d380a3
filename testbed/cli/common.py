"""Arguments and checks that several verbs share."""

from __future__ import annotations

from typing import Tuple

from ..errors import UsageError

ACCEPT_HELP = "comma-separated impairments to run without when the kernel cannot emulate them"


def add_accept_unemulated(parser) -> None:
    parser.add_argument("--accept-unemulated", default="", metavar="LIST", help=ACCEPT_HELP)


def accepted_impairments(text: str) -> Tuple[str, ...]:
    """The --accept-unemulated list, checked against the seven impairments."""
    from ..topology import IMPAIRMENT_KEYS

    accepted = tuple(a.strip() for a in text.split(",") if a.strip())
    for item in accepted:
        if item not in IMPAIRMENT_KEYS:
            raise UsageError(f"--accept-unemulated: unknown impairment {item!r} (allowed: {', '.join(IMPAIRMENT_KEYS)})")
    return accepted


def ensure_not_up(name: str) -> None:
    """A lab name can be used by one running lab at a time."""
    from ..cleanup import alive, read_states

    existing = read_states().get(name)
    if existing and alive(existing.get("keeper_pid")):
        raise UsageError(f"lab {name!r} is already up; 'testbed down {name}' first, or pick another --name")
