"""`testbed exec NODE -- CMD`: run a command inside a node of a running lab."""

from __future__ import annotations

import subprocess
import sys

from ..errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("exec", help="run a command inside a node")
    p.add_argument("--lab", help="lab name (default: the only running lab)")
    p.add_argument("--host-tools", action="store_true",
                   help="run the machine's own program in the node's network namespace "
                        "(for images without the tool)")
    p.add_argument("node")
    p.add_argument("command", nargs="+", help="the command, after --")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..runtimes import runtime_class
    from ..names import LabNames
    from .down import pick_lab

    state = pick_lab(args.lab)
    if state is None:
        raise UsageError("no lab is up: 'testbed up TOPOLOGY' first")
    nodes = state.get("nodes") or {}
    if args.node not in nodes:
        shown = ", ".join(list(nodes)[:12]) + (", ..." if len(nodes) > 12 else "")
        raise UsageError(f"lab {state['lab']!r} has no node {args.node!r} (nodes: {shown or 'none yet'})")
    info = nodes[args.node]
    command = args.command
    if args.host_tools:
        argv = ["nsenter", f"--net=/proc/{info['netns_pid']}/ns/net", "--"] + command
    else:
        runtime = runtime_class(info["runtime"])(LabNames(state["lab"], state.get("lab_id", "")))
        argv = runtime.exec_args(info, command, interactive=sys.stdin.isatty() and sys.stdout.isatty())
    try:
        return subprocess.call(argv)
    except FileNotFoundError:
        raise UsageError(f"cannot run {argv[0]!r} on this machine") from None
