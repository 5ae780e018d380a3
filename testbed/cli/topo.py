"""`testbed topo show|validate FILE`: the explicit network a topology file describes."""

from __future__ import annotations

import json

import yaml


def register(sub) -> None:
    p = sub.add_parser("topo", help="validate or print a topology file")
    verbs = p.add_subparsers(dest="topo_verb", metavar="show|validate")
    verbs.required = True
    show = verbs.add_parser("show", help="print the explicit graph, with addresses and routes")
    show.add_argument("file")
    show.add_argument("--json", action="store_true")
    show.add_argument("--routes", action="store_true", help="also print every node's routes")
    show.set_defaults(run=run_show)
    check = verbs.add_parser("validate", help="check a topology file and say what it holds")
    check.add_argument("file")
    check.set_defaults(run=run_validate)


def run_show(args) -> int:
    """Print the explicit topology: loadable as a topology file itself, with its subnets (and
    optionally routes) as comments."""
    from ..topology import load_topology

    topo = load_topology(args.file)
    data = topo.to_dict()
    if args.json:
        data["segments"] = [{"name": s.name, "subnet": str(s.subnet),
                             "members": [f"{n}:{i}" for n, i in s.members]} for s in topo.segments]
        if args.routes:
            data["routes"] = {n: [f"{r.destination} via {r.via} dev {r.interface}" for r in routes]
                              for n, routes in topo.routes.items() if routes}
        print(json.dumps(data, indent=2))
        return 0
    print(f"# {topo.name}: explicit form of {args.file} ({len(topo.nodes)} nodes, {len(topo.switches)} switches, "
          f"{len(topo.links)} links)")
    print(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110), end="")
    print("# subnets:")
    for s in topo.segments:
        members = ", ".join(f"{n}:{i}" for n, i in s.members)
        print(f"#   {s.subnet} {s.name}: {members}")
    if args.routes:
        print("# routes:")
        for node, routes in topo.routes.items():
            for r in routes:
                print(f"#   {node}: {r.destination} via {r.via} dev {r.interface}")
    return 0


def run_validate(args) -> int:
    from ..topology import load_topology

    topo = load_topology(args.file)
    print(f"{args.file}: valid: {len(topo.nodes)} nodes, {len(topo.switches)} switches, {len(topo.links)} links, "
          f"{len(topo.segments)} subnets")
    return 0
