"""`testbed schema topology`: print the JSON Schema of an input file kind, for editors."""

from __future__ import annotations

import json


def register(sub) -> None:
    from ..schema import SCHEMAS

    p = sub.add_parser("schema", help="print the JSON Schema of topology files")
    p.add_argument("kind", choices=sorted(SCHEMAS))
    p.set_defaults(run=run)


def run(args) -> int:
    from ..schema import SCHEMAS

    print(json.dumps(SCHEMAS[args.kind](), indent=2))
    return 0
