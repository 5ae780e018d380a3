"""`testbed schema KIND`: print a JSON Schema: of topology and scenario files (for editors), of an
event log's lines, or of a run's manifest.json."""

from __future__ import annotations

import json


def register(sub) -> None:
    from ..schema import SCHEMAS

    p = sub.add_parser("schema", help="print a JSON Schema: topology, scenario, experiment, events or manifest")
    p.add_argument("kind", choices=sorted(SCHEMAS))
    p.set_defaults(run=run)


def run(args) -> int:
    from ..schema import SCHEMAS

    print(json.dumps(SCHEMAS[args.kind](), indent=2))
    return 0
