"""`testbed down [LAB]`: tear a running lab down."""

from __future__ import annotations

import os
import signal
import time

from ..errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("down", help="tear down a running lab")
    p.add_argument("lab", nargs="?", help="lab name (default: the only running lab)")
    p.set_defaults(run=run)


def pick_lab(name):
    from ..cleanup import read_states

    states = read_states()
    if name:
        if name not in states:
            raise UsageError(f"no lab named {name!r} is up (running: {', '.join(states) or 'none'})")
        return states[name]
    if not states:
        return None
    if len(states) > 1:
        raise UsageError(f"several labs are up ({', '.join(states)}): name one")
    return next(iter(states.values()))


def run(args) -> int:
    from ..cleanup import alive, clean_all

    state = pick_lab(args.lab)
    if state is None:
        print("no lab is up")
        return 0
    name = state["lab"]
    started = time.monotonic()
    pid = state.get("keeper_pid")
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    leftovers = clean_all(name)  # the keeper removed everything unless it was killed; make sure
    extra = {k: v for k, v in leftovers.removed.items() if v}
    print(f"lab {name} is down in {time.monotonic() - started:.1f} s"
          + (f" (also removed: {', '.join(f'{v} {k}' for k, v in extra.items())})" if extra else ""))
    return 0
