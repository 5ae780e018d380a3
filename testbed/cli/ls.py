"""`testbed ls [LAB]`: the running labs, or one lab's nodes and addresses."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("ls", help="list running labs, or the nodes of one")
    p.add_argument("lab", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..cleanup import alive, read_states
    from .down import pick_lab

    if args.lab:
        state = pick_lab(args.lab)
        if args.json:
            print(json.dumps(state, indent=2))
            return 0
        for node, info in state.get("nodes", {}).items():
            addresses = ", ".join(f"{i} {a}" for i, a in info["interfaces"].items())
            print(f"{node:<12} {info['runtime']:<8} {addresses}")
        return 0
    states = read_states()
    if args.json:
        print(json.dumps(states, indent=2))
        return 0
    if not states:
        print("no lab is up")
    for name, state in states.items():
        status = state.get("status", "?") if alive(state.get("keeper_pid")) else "dead (testbed clean)"
        print(f"{name:<20} {status:<8} {len(state.get('nodes', {})):>5} nodes  {state.get('topology', '')}")
    return 0
