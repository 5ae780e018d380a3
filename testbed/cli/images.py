"""`testbed images build`: build the agent image (and its base, offline if need be), cached."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("images", help="build the agent image")
    verbs = p.add_subparsers(dest="images_verb", metavar="build")
    verbs.required = True
    build = verbs.add_parser("build", help="build testbed/agent, or an image of your own (skipped when nothing "
                                           "changed)")
    build.add_argument("--force", action="store_true", help="rebuild even if nothing changed")
    build.add_argument("--context", metavar="DIR", help="build the image of this directory (its Dockerfile; "
                                                        "ARG BASE gets the testbed's Debian base) instead")
    build.add_argument("--tag", help="with --context: the image's name, e.g. example/flood:latest")
    build.set_defaults(run=run_build)


def run_build(args) -> int:
    from ..errors import UsageError
    from ..images import build_all, build_directory

    if (args.context is None) != (args.tag is None):
        raise UsageError("--context and --tag go together: testbed images build --context DIR --tag NAME")
    if args.context is not None:
        import os
        import re

        if not os.path.isdir(args.context):
            raise UsageError(f"--context {args.context}: no such directory")
        if not re.match(r"^[a-z0-9][a-z0-9._/:@-]*$", args.tag):
            raise UsageError(f"--tag {args.tag!r}: not an image name (lower case, such as example/flood:latest)")
        image_id, built = build_directory(args.context, args.tag,
                                          lambda message: print(f"[images] {message}", file=sys.stderr),
                                          force=args.force)
        print(f"{args.tag} {'built' if built else 'up to date'} ({image_id[7:19]})")
        return 0

    result = build_all(lambda message: print(f"[images] {message}", file=sys.stderr), force=args.force)
    state = "built" if result["built"] else "up to date"
    print(f"{result['agent']} {state} ({result['agent_id'][7:19]}), base {result['base']} from {result['base_source']}")
    return 0
