"""`testbed clean`: remove everything any testbed run left on this machine (and nothing else)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("clean", help="remove what testbed runs left behind, also after a crash")
    p.add_argument("--lab", help="only this lab's objects")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..cleanup import clean_all, leftovers

    removed = clean_all(args.lab)
    shown = ", ".join(f"{count} {what}" for what, count in removed.items() if count)
    print(f"removed {shown}" if shown else "nothing to remove")
    if args.lab is None:
        remaining = leftovers()
        if remaining:
            print("still present: " + "; ".join(f"{k}: {', '.join(v[:5])}" for k, v in remaining.items()))
            return 1
    return 0
