"""The `testbed` command. Each verb is one module here that parses its arguments and calls the
library; no logic lives in this layer.

Exit codes: 0 success, 1 failure while running, 2 bad input (a file, a field or an argument),
3 the machine cannot do what was asked (missing kernel feature or tool; for `testbed remote`, the
remote machine lacks the testbed or root), 4 a remote machine cannot be reached, its host key is
unknown or has changed, the login is refused, or the connection broke (`testbed remote`),
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from ..errors import TestbedError
from . import (analyze, clean, doctor, down, exec_, experiment, images, ls, mobility, pingall, remote, run, schema,
               topo, up)

VERBS = [doctor, run, analyze, experiment, remote, up, down, exec_, ls, pingall, clean, topo, schema, images, mobility]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 already; keep its usage line short
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="testbed", description="Network-emulation testbed on Mininet with real containers.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"testbed {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb in VERBS:
        verb.register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head or less that closed early
        sys.stderr.close()
        return 0
