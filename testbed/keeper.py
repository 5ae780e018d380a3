"""The lab keeper: the background process that holds a lab built by `testbed up`.

Mininet's nodes live as long as the process that made them, so `testbed up` starts this keeper,
detached from the terminal, and returns once it reports the lab ready. The keeper writes the
lab's state file (for `exec`, `down` and `clean`), then waits; SIGTERM, SIGINT or SIGHUP make it
tear the whole lab down and exit. Progress and the final result go to the pipe `--ready-fd` as
JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import List, Optional

from .cleanup import remove_state, write_state
from .errors import TestbedError


class _Stop(BaseException):
    """Raised from the signal handler to unwind a build or the wait."""


def _on_signal(signum, frame):  # noqa: ARG001
    raise _Stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="testbed-keeper")
    parser.add_argument("topology")
    parser.add_argument("--name", required=True)
    parser.add_argument("--accept-unemulated", default="")
    parser.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args(argv)
    out = os.fdopen(args.ready_fd, "w", buffering=1)

    def report(**message) -> None:
        try:
            out.write(json.dumps(message) + "\n")
            out.flush()
        except (BrokenPipeError, ValueError):
            pass  # `testbed up` stopped listening; the lab still comes up and stays

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    from .network import Lab
    from .topology import load_topology

    accepted = tuple(a for a in args.accept_unemulated.split(",") if a)
    state = {"lab": args.name, "keeper_pid": os.getpid(), "status": "starting", "topology": args.topology}
    write_state(state)
    lab = None
    code = 0
    try:
        topo = load_topology(args.topology, accepted)
        lab = Lab(topo, args.name, accept_unemulated=accepted, progress=lambda m: report(progress=m))
        started_at = time.time()
        lab.check()
        lab.start()
        state = lab.state()
        state.update(keeper_pid=os.getpid(), status="up", started_at=started_at,
                     up_seconds=round(time.time() - started_at, 3))
        write_state(state)
        report(ok=True, state=state)
        out.close()
        while True:
            signal.pause()
    except _Stop:
        code = 0
    except TestbedError as exc:
        report(ok=False, error=str(exc), exit_code=exc.exit_code)
        code = exc.exit_code
    except Exception as exc:  # reported to `testbed up`, which prints it
        report(ok=False, error=f"{type(exc).__name__}: {exc}", exit_code=1)
        code = 1
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # finish the teardown whatever arrives now
        if lab is not None:
            try:
                lab.stop()
            except TestbedError as exc:
                print(exc, file=sys.stderr)
                code = code or 1
        remove_state(args.name)
    return code


if __name__ == "__main__":
    sys.exit(main())
