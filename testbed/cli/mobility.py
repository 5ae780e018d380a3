"""`testbed mobility sumo OUT`: an ns-2 movement trace of cars and walkers in a street grid, made
by SUMO (testbed/radio/sumo.py), for a radio segment's `trace:`."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("mobility", help="make movement traces for radio segments (sumo: cars and walkers)")
    kinds = p.add_subparsers(dest="source", metavar="SOURCE", parser_class=type(p))
    kinds.required = True
    s = kinds.add_parser("sumo", help="cars and walkers in a street grid, simulated by SUMO, as an ns-2 trace",
                         description="Cars on long random routes and walkers on long random walks in a grid of "
                                     "streets, simulated by SUMO and written as an ns-2 movement trace whose "
                                     "node_(i) are the cars, then the walkers. Defaults: the DEECo thesis's "
                                     "scenario (a 2 km square, 100 cars, 100 walkers, 15 minutes).")
    s.add_argument("out", help="the trace file to write (OUT.json records how it was made)")
    s.add_argument("--size", type=float, default=2000.0, help="the square's side in metres (default 2000)")
    s.add_argument("--block", type=float, default=250.0, help="distance between streets in metres (default 250)")
    s.add_argument("--cars", type=int, default=100, help="cars (default 100)")
    s.add_argument("--walkers", type=int, default=100, help="walkers (default 100)")
    s.add_argument("--duration", type=float, default=900.0, help="seconds of traffic (default 900)")
    s.add_argument("--seed", type=int, default=1, help="SUMO's and the routes' seed (default 1)")
    s.add_argument("--keep", metavar="DIR", help="keep SUMO's own files (network, routes, FCD) in DIR")
    s.set_defaults(run=run)


def run(args) -> int:
    from ..radio.sumo import Streets, generate

    streets = Streets(size_m=args.size, block_m=args.block, cars=args.cars, walkers=args.walkers,
                      duration_s=args.duration, seed=args.seed)
    made = generate(args.out, streets, keep=args.keep, progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    print(f"{args.out}: {streets.cars} cars (node_(0) to node_({streets.cars - 1})) and {streets.walkers} walkers, "
          f"{streets.duration_s:g} s in a {streets.size_m:g} m grid ({made['sumo_version']}); use it as "
          f"`trace: {args.out}` on a segment whose members are the cars, then the walkers")
    return 0
