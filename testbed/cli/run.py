"""`testbed run SCENARIO`: run a scenario end to end into one run directory."""

from __future__ import annotations

import os
import sys

from ..errors import UsageError
from .common import accepted_impairments, add_accept_unemulated


def register(sub) -> None:
    p = sub.add_parser("run", help="run a scenario end to end into runs/<run-id>/")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field, e.g. workload.defaults.params.rate=50 (repeatable)")
    p.add_argument("--out", help="run directory (default runs/<run-id>); must not exist or be empty")
    add_accept_unemulated(p)
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--analyze", action="store_true", help="analyse the run afterwards (as 'testbed analyze')")
    p.add_argument("--master", help="with --analyze: Spark master URL (default local)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..run import Run
    from ..scenario import load_scenario
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed: {args.seed} is not allowed (a whole number, at least 0)")
    accepted = accepted_impairments(args.accept_unemulated)
    scenario = load_scenario(args.scenario, seed=args.seed, overrides=tuple(args.set))
    execution = Run(scenario, out_dir=args.out, accept_unemulated=accepted, progress=not args.quiet)
    manifest = execution.execute()
    return finish(execution.dir, manifest, args)


def finish(run_dir: str, manifest: dict, args) -> int:
    """Summarise a run directory (here or downloaded), analyse it with --analyze, and give the
    exit code its status means: 0 completed, 130 interrupted (not analysed), 1 otherwise."""
    summarize(run_dir, manifest)
    status = manifest.get("status")
    if status == "interrupted":
        return 130
    if args.analyze:
        from .analyze import print_summary
        from spark_analysis.job import analyze
        for res in analyze([run_dir], master=args.master, progress=not args.quiet).values():
            print_summary(res)
    return 0 if status == "completed" else 1


def summarize(run_dir: str, manifest: dict) -> None:
    rel = os.path.relpath(run_dir)
    pcap_dir = os.path.join(run_dir, "pcap")
    pcaps = sorted(f for f in os.listdir(pcap_dir) if f.endswith(".pcap")) if os.path.isdir(pcap_dir) else []
    logs = manifest.get("log_events", {})
    capture = manifest.get("capture", {})
    captured = sum(v.get("captured", 0) for v in capture.values())
    drops = sum(v.get("kernel_drops", 0) for v in capture.values())
    print(f"run {manifest['run_id']}: {manifest['status']}" + (f" ({manifest['error']})" if manifest.get("error") else ""))
    print(f"  run directory: {rel}/")
    print(f"    manifest.json  scenario, topology, seed {manifest['seed']}, versions, timeline as executed")
    print(f"    pcap/          {len(pcaps)} captures, {captured} packets, {drops} dropped by the kernel")
    print(f"    logs/          {len(logs)} event logs, {sum(logs.values())} events")
    timeline = [a for a in manifest.get("timeline", []) if not a.get("observed")]
    failed = [a for a in timeline if not a.get("ok", True)]
    print(f"  timeline: {len(timeline)} actions executed" + (f", {len(failed)} failed" if failed else ""))
    for node, hit in (manifest.get("limits_hit") or {}).items():
        what = []
        if hit.get("oom"):
            what.append(f"{hit['oom']} process(es) ended by the OOM killer at its memory limit")
        if hit.get("pids_limit"):
            what.append(f"{hit['pids_limit']} fork(s) refused at its pids limit")
        print(f"  limits: node {node}: {'; '.join(what)} (down from then in the analysis)")
    for problem in manifest.get("problems", []):
        print(f"  problem: {problem}", file=sys.stderr)
