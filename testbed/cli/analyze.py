"""`testbed analyze RUN_DIR [RUN_DIR ...]`: delivery metrics, property checks and a report per run."""

from __future__ import annotations

import os
import sys

from ..errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("analyze", help="analyse run directories with PySpark into RUN_DIR/report/")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run directories (local paths or any URI Spark reads: file:, hdfs:, s3a:, ...)")
    p.add_argument("--master", help="Spark master URL (default: local[N] over this machine's cores)")
    p.add_argument("--causal", choices=("auto", "derive", "off"), default="auto",
                   help="causal-order check: derive causality from sends and deliveries (costly on large "
                        "histories), off, or auto (when the protocol logs vector clocks or dependencies, or the "
                        "history has at most 200,000 deliveries)")
    p.add_argument("--radio-times", type=_times, metavar="S,S,...",
                   help="runs with a radio medium: the times (seconds since t0) of the range circles on the "
                        "report's map (default: the first tick, the middle one and the last)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(run=run)


def _times(text: str):
    import argparse

    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds separated by commas, e.g. 0,30,60") from None


def check_local(run_dir: str) -> None:
    """A local run directory must hold a manifest this analysis reads: said before Spark starts."""
    from spark_analysis.inputs import local_path, normalise, read_manifest

    local = local_path(run_dir)
    if local is None:
        return
    if not os.path.isdir(local):
        raise UsageError(f"{run_dir}: no such run directory")
    if not os.path.isfile(os.path.join(local, "manifest.json")):
        raise UsageError(f"{run_dir}: not a run directory (no manifest.json; a run directory is what "
                         f"'testbed run' writes under runs/)")
    read_manifest(None, normalise(run_dir))  # its format and fields (AnalysisError, exit 2)


def run(args) -> int:
    for d in args.run_dirs:
        check_local(d)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError("pyspark is not installed: run ./setup.sh (or pip install -e .)") from None
    from spark_analysis.job import analyze

    results = analyze(args.run_dirs, master=args.master, progress=not args.quiet, causal=args.causal,
                      radio_times=args.radio_times)
    for res in results.values():
        print_summary(res)
    return 0


def fidelity_line(section) -> str:
    """The run's fidelity verdict and its reasons (spark_analysis/fidelity.py), in one line."""
    if not section:
        return "fidelity: unknown (analysed before the fidelity monitor)"
    reasons = section.get("reasons") or []
    return f"fidelity: {section.get('verdict')}" + (f" ({'; '.join(reasons)})" if reasons else "")


def print_summary(res: dict) -> None:
    run = res["run"]
    msg = res.get("messages", {}).get("all", {})
    lat = msg.get("first_copy_latency", {})
    app = res.get("application", {}).get("all", {})
    checks = res.get("checks", [])
    verdicts = {}
    for c in checks:
        verdicts.setdefault(c.get("verdict"), []).append(c.get("check"))

    def f(v, spec=".3f"):
        return "-" if v is None else format(v, spec)

    k = run.get("time_dilation", 1.0)
    print(f"run {run['id']}: {run.get('status')}" + (f" (times are virtual: {k:g} times slower than the wall clock)"
                                                     if k != 1.0 else ""))
    print(f"  messages sent {msg.get('sent', 0)}, receivers reached {msg.get('received', 0)}"
          f"/{msg.get('intended_receivers', 0)} (delivery ratio {f(msg.get('delivery_ratio'))})")
    print(f"  first-copy latency ms: median {f(lat.get('median_ms'))}, p95 {f(lat.get('p95_ms'))}, "
          f"max {f(lat.get('max_ms'))}; delivered to applications {app.get('delivered', 0)}")
    print("  checks: " + "; ".join(f"{v} {len(names)} ({', '.join(names)})" for v, names in sorted(verdicts.items())))
    print("  " + fidelity_line(res.get("fidelity")))
    damage = res.get("input", {}).get("damage", [])
    if damage:
        print(f"  damaged input: {len(damage)} place(s), e.g. {damage[0]['file']} at byte {damage[0]['offset']}: "
              f"{damage[0]['reason']}", file=sys.stderr)
    report = run["directory"].rstrip("/") + "/report/index.html"
    print(f"  report: {os.path.relpath(report) if '://' not in report and not report.startswith('file:') else report}")
