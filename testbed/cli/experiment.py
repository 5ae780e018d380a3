"""`testbed experiment FILE`: run an experiment (a grid of scenario parameters × seeds), resume it,
analyse its runs together and write its tables, plots, verdicts and index.html."""

from __future__ import annotations

import os
import re
import sys

from ..errors import UsageError
from .common import accepted_impairments, add_accept_unemulated


def register(sub) -> None:
    p = sub.add_parser("experiment", help="run a parameter sweep with replications, compare it with a paper")
    p.add_argument("file", help="experiment YAML file (testbed schema experiment)")
    p.add_argument("--out", help="experiment directory (default runs/experiments/<name>); resumed when it exists")
    p.add_argument("--seeds", metavar="N|S,S,...",
                   help="seeds 1..N per point instead of the file's seeds, or a list of seeds (4,5; 5, for seed 5 "
                        "alone): a slice of the experiment, as --only is")
    p.add_argument("--only", action="append", default=[], metavar="PATTERN",
                   help="carry out only the points whose names match this shell pattern ('tree-3-5-5.k=8', "
                        "'*.P=0.1*'; repeatable): a slice of the experiment, whose runs the analysis covers")
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
    p.add_argument("--accept-code-changes", action="store_true",
                   help="keep the complete runs that are stale only because the code that makes runs changed "
                        "(the plan and the ledger say which code made each); others are made again")
    g.add_argument("--bench-after", type=int, default=None, metavar="K",
                   help="a host whose runs fail K times in a row leaves the pool, its runs going to the others "
                        "(default 3; a host that cannot be reached leaves at once)")
    add_accept_unemulated(p)
    p.add_argument("--accept-unfaithful", action="store_true",
                   help="judge shapes on points whose runs the fidelity monitor called unfaithful (by default "
                        "such a shape is 'not shown'); the file's accept_unfaithful: true does the same")
    p.add_argument("--redo-unfaithful", action="store_true",
                   help="make again the complete runs the fidelity monitor called unfaithful (the machine did not "
                        "keep up with them); each stays until its remake completes, and the ledger says why")
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


def seeds_arg(text):
    """--seeds: N (seeds 1..N) or a comma-separated list of seeds (4,5; one seed alone: 5,); None
    when not given."""
    if text is None:
        return None
    parts = [t.strip() for t in str(text).split(",")]
    listed = len(parts) > 1
    if listed and parts[-1] == "":
        parts = parts[:-1]  # "5,": the list of seed 5 alone
    if not parts or not all(re.fullmatch(r"[0-9]+", t) for t in parts):
        raise UsageError(f"--seeds {text}: not allowed (a whole number N for seeds 1..N, at least 1, "
                         f"or a list of seeds such as 4,5 or 5,)")
    if not listed:
        n = int(parts[0])
        if n < 1:
            raise UsageError(f"--seeds: {text} is not allowed (a whole number, at least 1)")
        return n
    return [int(t) for t in parts]


def run(args) -> int:
    from ..experiment.runner import Runner
    from ..experiment.spec import load_experiment

    if args.redo_unfaithful and args.no_run:
        raise UsageError("--redo-unfaithful makes runs again and --no-run runs nothing: give one of them")
    seeds = seeds_arg(args.seeds)
    accepted = accepted_impairments(args.accept_unemulated)
    exp = load_experiment(args.file, seeds=seeds, extra_sets=tuple(args.set), hosts=_hosts(args))
    if args.accept_unfaithful:
        exp.accept_unfaithful = True
    if not (args.plan or args.no_analyze):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UsageError("pyspark is not installed: run ./setup.sh (or pip install -e .), or use --no-analyze") \
                from None
    out = args.out or os.path.join("runs", "experiments", exp.name)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a directory")
    if args.bench_after is not None and args.bench_after < 1:
        raise UsageError(f"--bench-after: {args.bench_after} is not allowed (a whole number, at least 1)")
    runner = Runner(exp, out, progress=not args.quiet, accept_unemulated=accepted,
                    accept_code_changes=args.accept_code_changes, only=tuple(args.only),
                    redo_unfaithful=args.redo_unfaithful,
                    **({"bench_after": args.bench_after} if args.bench_after else {}))
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
        _print_benched(runner)
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
    print(f"experiment {exp.name}: {len(runner.points)} points × {len(exp.seeds)} seed{'s' if len(exp.seeds) > 1 else ''} = {len(planned)} runs "
          f"in {os.path.relpath(runner.out)}/ on {', '.join(h.target for h in exp.hosts)}")
    from ..experiment import measures
    from ..experiment.results import read_results

    analysed = read_results(runner)
    width = max([len(p.name) for p in planned] + [10])
    for p in planned:
        state = "complete" if p.status == "complete" else "stale" if p.stale else "to run"
        print(f"  {p.name:<{width}} {state:<9} {' '.join(p.point.overrides)}")
        fidelity = (analysed.get(p.name) or {}).get("fidelity") or {}
        if fidelity.get("verdict") in ("degraded", "unfaithful"):
            print(f"  {'':<{width}}   fidelity: {fidelity['verdict']} ({'; '.join(fidelity.get('reasons') or [])})")
        for reason in p.stale:
            print(f"  {'':<{width}}   stale: {reason}")
        for reason in p.kept:
            print(f"  {'':<{width}}   kept, though {reason} (--accept-code-changes)")
    stale = sum(1 for p in planned if p.stale)
    if stale:
        print(f"  {stale} stale run{'s' if stale > 1 else ''}: the experiment makes {'them' if stale > 1 else 'it'} "
              f"again")
    # the measures' paths against the runs analysed already (an error, as after an analysis)
    measures.check(exp, analysed, after="(checked against the runs analysed so far)")
    return 0


def _print_benched(runner) -> None:
    for host, why in runner.benched.items():
        print(f"  host {host} left the pool: {why}")


def print_summary(exp, runner, res) -> None:
    from ..experiment.shapes.common import shown

    print(f"experiment {exp.name}: {res['runs']} of {res['planned']} runs analysed ({_counts(runner)})")
    stale = [p for p in runner.planned if p.stale and p.status == "pending"]
    if stale:
        print(f"  {len(stale)} stale run{'s' if len(stale) > 1 else ''} left out ({stale[0].stale[0]}); "
              f"run without --no-run to make {'them' if len(stale) > 1 else 'it'} again")
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
    print("  " + _fidelity_counts(res["rows"], exp))
    for s in res["shapes"]:
        print(f"  shape {shown(s):<22} {s['name']}")
        for line in _intervals(s):
            print(f"        {line}")
    _print_benched(runner)
    print(f"  report: {os.path.relpath(res['index'])}", file=sys.stdout)


def _fidelity_counts(rows, exp) -> str:
    """How many runs the fidelity monitor called faithful, degraded, unfaithful, and where."""
    counts: dict = {}
    for row in rows:
        counts.setdefault(row.get("fidelity") or "unknown", []).append(row["run"])
    text = "fidelity: " + ", ".join(f"{len(counts[v])} {v}" for v in ("faithful", "degraded", "unfaithful", "unknown")
                                    if v in counts)
    bad = counts.get("unfaithful", [])
    if bad:
        text += f" ({', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''}" + \
            ("; judged all the same: accept_unfaithful)" if exp.accept_unfaithful else
             "; the shapes resting on them are not shown)")
    return text


def _intervals(shape, most: int = 3):
    """A shape's judged intervals, a line per combination of free parameters: those that are not
    valid first, at most `most` of them."""
    from ..experiment.shapes.common import judged_groups

    groups, rest = judged_groups(shape, most)
    out = []
    for group, verdict, reason, tests in groups:
        why = f" ({reason})" if reason and verdict != "valid" else ""
        if tests or why:
            out.append(f"{f'[{group}] ' if group else ''}{verdict}" + (f": {tests}" if tests else "") + why)
    if rest:
        out.append(f"... {len(rest)} more in shapes.csv")
    return out
