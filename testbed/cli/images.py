"""`testbed images build`: build the agent image (and its base, offline if need be), cached."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("images", help="build the agent image")
    verbs = p.add_subparsers(dest="images_verb", metavar="build")
    verbs.required = True
    build = verbs.add_parser("build", help="build testbed/agent (skipped when nothing changed)")
    build.add_argument("--force", action="store_true", help="rebuild even if nothing changed")
    build.set_defaults(run=run_build)


def run_build(args) -> int:
    from ..images import build_all

    result = build_all(lambda message: print(f"[images] {message}", file=sys.stderr), force=args.force)
    state = "built" if result["built"] else "up to date"
    print(f"{result['agent']} {state} ({result['agent_id'][7:19]}), base {result['base']} from {result['base_source']}")
    return 0
