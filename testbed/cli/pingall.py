"""`testbed pingall TOPOLOGY`: build the network, ping every ordered pair of nodes, report, and
tear everything down (as Mininet's `mn --test pingall`). Exit 0 when every pair answers."""

from __future__ import annotations

import json
import sys
import time

from .common import accepted_impairments, add_accept_unemulated, ensure_not_up


def register(sub) -> None:
    p = sub.add_parser("pingall", help="build a topology, ping every pair of nodes, tear it down")
    p.add_argument("topology")
    p.add_argument("--name", help="lab name (default: the topology's name)")
    add_accept_unemulated(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..network import Lab, ping_all
    from ..topology import load_topology

    accepted = accepted_impairments(args.accept_unemulated)
    topo = load_topology(args.topology, accepted)
    name = args.name or topo.name
    ensure_not_up(name)
    lab = Lab(topo, name, accept_unemulated=accepted, progress=lambda m: print(f"[{name}] {m}", file=sys.stderr))
    lab.check()
    started = time.monotonic()
    lab.start()
    try:
        up = time.monotonic() - started
        print(f"[{name}] pinging {len(topo.nodes) * (len(topo.nodes) - 1)} ordered pairs", file=sys.stderr)
        t = time.monotonic()
        results = ping_all(lab)
        ping_seconds = time.monotonic() - t
        state = lab.state()
    finally:
        t = time.monotonic()
        lab.stop()
        down = time.monotonic() - t
    failed = sorted(pair for pair, ok in results.items() if not ok)
    report = {
        "lab": name, "topology": args.topology, "nodes": len(topo.nodes), "switches": len(topo.switches),
        "links": len(topo.links), "subnets": len(topo.segments), "pairs": len(results),
        "reached": len(results) - len(failed), "unreached": [f"{a}->{b}" for a, b in failed],
        "up_seconds": round(up, 2), "ping_seconds": round(ping_seconds, 2), "down_seconds": round(down, 2),
        "shaping": state["shaping"], "unemulated": state["unemulated"], "timings": state["timings"],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{name}: {report['nodes']} nodes, {report['switches']} switches, {report['links']} links, "
              f"{report['subnets']} subnets")
        print(f"  built in {report['up_seconds']:.1f} s, torn down in {report['down_seconds']:.1f} s "
              f"(shaping backend: {report['shaping']})")
        print(f"  ping all: {report['reached']}/{report['pairs']} ordered pairs answered "
              f"in {report['ping_seconds']:.1f} s")
        if failed:
            shown = ", ".join(report["unreached"][:10])
            print(f"  unreached: {shown}{' ...' if len(failed) > 10 else ''}")
        if report["unemulated"]:
            print(f"  NOT emulated on this machine (accepted): {', '.join(report['unemulated'])}")
    return 0 if not failed else 1
