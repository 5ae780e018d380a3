"""`testbed experiment FILE`: run an experiment (a grid of scenario parameters × seeds), resume it,
analyse its runs together and write its tables, plots, verdicts and index.html."""

from __future__ import annotations

import os
import sys

from ..errors import UsageError
from .common import accepted_impairments, add_accept_unemulated


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run a parameter sweep with replications, compare it with a paper")
    p.add_argument("file", help="experiment YAML file (testbed schema experiment)")
    p.add_argument("--out", help="experiment directory (default runs/experiments/<name>); resumed when it exists")
    p.add_argument("--seeds", type=int, help="seeds 1..N per point instead of the file's seeds")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field in every run, after the file's own (repeatable)")
    p.add_argument("--host", action="append", default=[], metavar="USER@HOST[:PORT]",
                   help="spread the runs over these machines instead of the file's hosts ('local' is this one; "
                        "repeatable); each runs one run at a time")
    g = p.add_argument_group("remote hosts given with --host")
    g.add_argument("--key", metavar="FILE", help="private key to log in with")
    g.add_argument("--known-hosts", metavar="FILE", help="known-hosts file")
    g.add_argument("--remote-dir", metavar="DIR", help="where runs are kept there")
    g.add_argument("--remote-testbed", metavar="PATH", help="the testbed command there")
    add_accept_unemulated(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="show the runs and which are complete; run nothing")
    mode.add_argument("--no-run", action="store_true", help="analyse the runs already complete; run nothing")
    mode.add_argument("--no-analyze", action="store_true", help="run, but do not analyse")
    p.add_argument("--reanalyze", action="store_true", help="analyse every run again, not only the new ones")
    p.add_argument("--master", help="Spark master URL (default local)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=run)


def _hosts(args):
    from ..experiment.spec import LOCAL, Host
    from ..remote.target import parse_target

    hosts = []
    for target in args.host:
        if target != LOCAL:
            parse_target(target)  # a usage error for a malformed one
        if args.key and not os.path.isfile(os.path.expanduser(args.key)):
            raise UsageError(f"--key {args.key}: no such file")
        remote = target != LOCAL
        hosts.append(Host(target, key=args.key if remote else None, known_hosts=args.known_hosts if remote else None,
                          remote_dir=args.remote_dir if remote else None,
                          remote_testbed=args.remote_testbed if remote else None))
    if len(set(hosts)) != len(hosts):
        raise UsageError("--host: a host is given twice (each runs one run at a time)")
    return hosts


def run(args) -> int:
    from ..experiment.runner import Runner
    from ..experiment.spec import load_experiment

    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds: {args.seeds} is not allowed (a whole number, at least 1)")
    accepted = accepted_impairments(args.accept_unemulated)
    exp = load_experiment(args.file, seeds=args.seeds, extra_sets=tuple(args.set), hosts=_hosts(args))
    if not (args.plan or args.no_analyze):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UsageError("pyspark is not installed: run ./setup.sh (or pip install -e .), or use --no-analyze") \
                from None
    out = args.out or os.path.join("runs", "experiments", exp.name)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a directory")
    runner = Runner(exp, out, progress=not args.quiet, accept_unemulated=accepted)
    if args.plan:
        return show_plan(runner)
    counts = {}
    if not args.no_run:
        counts = runner.execute()
    else:
        if not os.path.isdir(out):
            raise UsageError(f"{out}: no such experiment directory (run the experiment first)")
        runner.plan()
    if args.no_analyze:
        print(f"experiment {exp.name}: runs {_counts(runner)} in {os.path.relpath(runner.out)}/")
        return 1 if counts.get("failed") else 0
    from ..experiment.results import write

    res = write(exp, runner, master=args.master, reanalyze=args.reanalyze, progress=not args.quiet)
    print_summary(exp, runner, res)
    return 1 if counts.get("failed") else 0


def _counts(runner) -> str:
    states = {}
    for p in runner.planned:
        s = "complete" if p.status in ("complete", "completed") else p.status
        states[s] = states.get(s, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(states.items()))


def show_plan(runner) -> int:
    planned = runner.plan()
    exp = runner.exp
    print(f"experiment {exp.name}: {len(exp.points)} points × {len(exp.seeds)} seed{'s' if len(exp.seeds) > 1 else ''} = {len(planned)} runs "
          f"in {os.path.relpath(runner.out)}/ on {', '.join(h.target for h in exp.hosts)}")
    for p in planned:
        state = "complete" if p.status == "complete" else "to run"
        print(f"  {p.name:<40} {state:<9} {' '.join(p.point.overrides)}")
    return 0


def print_summary(exp, runner, res) -> None:
    print(f"experiment {exp.name}: {res['runs']} of {res['planned']} runs analysed ({_counts(runner)})")
    width = max([len(p.id) for p in exp.points] + [10])
    for m in exp.measures:
        print(f"  {m.label}:")
        for row in res["summary"]:
            if row["measure"] != m.name:
                continue
            ci = f" ± {row['ci95_high'] - row['mean']:.3g}" if row["ci95_high"] is not None else ""
            ref = ""
            if row["reference"] is not None:
                target = f"{row['reference_low']:g}" if row["reference_low"] == row["reference_high"] else \
                    f"{row['reference_low']:g}-{row['reference_high']:g}"
                ref = f"   reference {target}"
            mean = f"{row['mean']:.4g}" if row["mean"] is not None else "–"
            print(f"    {row['point']:<{width}} {mean}{ci} (n={row['n']}){ref}")
    for s in res["shapes"]:
        print(f"  shape {s['verdict']:<8} {s['name']}")
    print(f"  report: {os.path.relpath(res['index'])}", file=sys.stdout)
