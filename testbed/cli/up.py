"""`testbed up TOPOLOGY`: build the network and leave it running (held by a keeper process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from ..errors import UsageError
from .common import accepted_impairments, add_accept_unemulated, ensure_not_up


def register(sub) -> None:
    p = sub.add_parser("up", help="build a topology's network and leave it running")
    p.add_argument("topology", help="topology YAML file")
    p.add_argument("--name", help="lab name (default: the topology's name)")
    add_accept_unemulated(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from ..network import Lab
    from ..topology import NAME_ALLOWED, NAME_RE, load_topology

    accepted = accepted_impairments(args.accept_unemulated)
    if args.name is not None and not NAME_RE.match(args.name):
        raise UsageError(f"--name: {args.name!r} is not allowed ({NAME_ALLOWED})")
    topo = load_topology(args.topology, accepted)
    name = args.name or topo.name
    ensure_not_up(name)
    Lab(topo, name, accept_unemulated=accepted).check()  # every refusal before anything is created

    log_dir = "/var/log/testbed"
    os.makedirs(log_dir, exist_ok=True)
    read_fd, write_fd = os.pipe()
    with open(os.path.join(log_dir, f"keeper-{name}.log"), "w") as log:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "testbed.keeper", os.path.abspath(args.topology), "--name", name,
             "--accept-unemulated", ",".join(accepted), "--ready-fd", str(write_fd)],
            pass_fds=(write_fd,), start_new_session=True, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd=os.getcwd())
    os.close(write_fd)
    result = None
    try:
        with os.fdopen(read_fd) as reader:
            for line in reader:
                message = json.loads(line)
                if "progress" in message:
                    print(f"[{name}] {message['progress']}", file=sys.stderr)
                else:
                    result = message
                    break
    except KeyboardInterrupt:
        keeper.send_signal(signal.SIGTERM)
        keeper.wait()
        raise
    if result is None:
        keeper.wait()
        print(f"testbed: the lab keeper exited ({keeper.returncode}) without reporting; "
              f"see {log_dir}/keeper-{name}.log", file=sys.stderr)
        return 1
    if not result.get("ok"):
        keeper.wait()
        print(f"testbed: {result['error']}", file=sys.stderr)
        return int(result.get("exit_code", 1))
    state = result["state"]
    print(f"lab {name} is up in {state['up_seconds']:.1f} s: {len(state['nodes'])} nodes, "
          f"{len(state['switches'])} switches (shaping: {state['shaping']})")
    if state["unemulated"]:
        print(f"NOT emulated on this machine (accepted): {', '.join(state['unemulated'])}")
    shown = list(state["nodes"].items())
    for node, info in shown[:40]:
        addresses = ", ".join(f"{i} {a}" for i, a in info["interfaces"].items())
        print(f"  {node:<12} {info['runtime']:<8} {addresses}")
    if len(shown) > 40:
        print(f"  ... and {len(shown) - 40} more (testbed ls {name})")
    print(f"'testbed exec NODE -- CMD' runs a command in a node; 'testbed down {name}' removes the lab.")
    return 0
