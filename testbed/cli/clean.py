"""`testbed clean`: remove everything any testbed run left on this machine (and nothing else),
and finish the run directories of runs whose process was killed."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("clean", help="remove what testbed runs left behind, also after a crash")
    p.add_argument("--lab", help="only this lab's objects")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..cleanup import clean_all, leftovers

    cleaned = clean_all(args.lab)
    shown = ", ".join(f"{count} {what}" for what, count in cleaned.removed.items() if count)
    for run_dir in cleaned.finished_runs:
        print(f"finished the run directory of a killed run: {run_dir} (status aborted)")
    if shown:
        print(f"removed {shown}")
    elif not cleaned.problems and not cleaned.finished_runs:
        print("nothing to remove")
    for problem in cleaned.problems:
        print(f"testbed clean: {problem}", file=sys.stderr)
    code = 1 if cleaned.problems else 0
    if args.lab is None:
        remaining = leftovers()
        if remaining:
            print("still present: " + "; ".join(f"{k}: {', '.join(v[:5])}" for k, v in remaining.items()))
            code = 1
    return code
