"""Benchmark of the analysis: the vectorised pcap reader against scapy, dpkt and tshark, and the
whole `testbed analyze` (JVM start, decoding, metrics, checks, tables, report) on synthetic runs
of 1 and 10 million testbed packets over 186 pcaps (T[3,5,5]).

    python benchmarks/analysis.py [--sizes 1000000,10000000] [--repeat 3] [--keep] [--data DIR]

Prints the figures and writes benchmarks/results/analysis.json. Targets on 2 cores: the reader
at least 2 million packets per second per core (at least 300 x scapy and 20 x dpkt, measured in
the same run), faster than tshark, and 10 million packets analysed end to end in at most 30 s.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import baselines  # noqa: E402
from spark_analysis.pcapreader import read_file  # noqa: E402
from tests.synthetic import make_run  # noqa: E402


def reader_pps(run_dir: str) -> dict:
    """Our reader on every file of the run, one process, one core."""
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        ids = json.load(fh)["node_ids"]
    files = sorted(glob.glob(os.path.join(run_dir, "pcap", "*.pcap")))
    for f in files[:3]:  # warm the page cache and numpy
        read_file(f, ids[os.path.basename(f)[:-5]])
    packets = records = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for f in files:
        d = read_file(f, ids[os.path.basename(f)[:-5]])
        packets += d.packets
        records += d.records
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"files": len(files), "records": records, "testbed_packets": packets, "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "pps_per_core": round(records / cpu), "pps_wall": round(records / wall)}


def analyze_seconds(run_dir: str, repeat: int) -> dict:
    """`testbed analyze` end to end, `repeat` times: this machine's speed moves by a fifth or more
    between runs of the same code (Spark's start alone took 5 to 10 s), so the figure is the middle run
    by time (the median for an odd number of runs), and each run is kept."""
    runs = []
    for _ in range(repeat):
        shutil.rmtree(os.path.join(run_dir, "report"), ignore_errors=True)
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "testbed", "analyze", "--quiet", run_dir], cwd=ROOT,
                             capture_output=True, text=True)
        wall = time.perf_counter() - t
        if res.returncode != 0:
            raise SystemExit(f"testbed analyze failed:\n{res.stderr[-3000:]}")
        with open(os.path.join(run_dir, "report", "results.json")) as fh:
            results = json.load(fh)
        runs.append({"wall_s": round(wall, 2), "stages_s": results.get("timings_s")})
    middle = sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2]
    return {"wall_s": middle["wall_s"], "stages_s": middle["stages_s"], "runs": runs,
            "wall_s_min": min(r["wall_s"] for r in runs), "wall_s_max": max(r["wall_s"] for r in runs),
            "testbed_packets": results["input"]["testbed_packets"],
            "checks": {c["check"]: c["verdict"] for c in results["checks"]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--data", default="/var/tmp/testbed-bench-analysis")
    ap.add_argument("--keep", action="store_true", help="keep the generated runs")
    ap.add_argument("--no-analyze", action="store_true", help="measure the readers only")
    ap.add_argument("--repeat", type=_positive, default=3,
                    help="runs of testbed analyze per size, at least 1 (the middle run by time counts)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "analysis.json"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out = {"machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "runs": {}}
    for size in sizes:
        run_dir = os.path.join(args.data, f"synthetic-{size}")
        if not os.path.exists(os.path.join(run_dir, "ground_truth.json")):
            shutil.rmtree(run_dir, ignore_errors=True)
            t = time.perf_counter()
            # the logs hold send, deliver, retransmit and drop events; "receive" events (which only
            # repeat what the pcaps show) are left out, as 16 million of them would be 2.4 GB of JSON
            make_run(run_dir, packets=size, seed=1, receive_events=False)
            print(f"generated {size:,} packets in {time.perf_counter() - t:.1f}s", flush=True)
        entry = {"reader": reader_pps(run_dir)}
        print(f"{size:,}: reader {entry['reader']['pps_per_core']:,} packets/s per core", flush=True)
        files = sorted(glob.glob(os.path.join(run_dir, "pcap", "*.pcap")))
        if size == sizes[0]:
            for name, measure in (("scapy", lambda: baselines.scapy_pps(files, limit=100_000)),
                                  ("dpkt", lambda: baselines.dpkt_pps(files)),
                                  ("tshark", lambda: baselines.tshark_pps(files))):
                result = measure()
                entry[name] = {k: v for k, v in result.items() if k not in ("counts", "digest", "files_read")}
            for k in ("scapy", "dpkt", "tshark"):
                print(f"{size:,}: {k} {_pps(entry[k]):,.0f} packets/s", flush=True)
        if args.no_analyze:
            out["runs"][str(size)] = entry
            continue
        entry["analyze"] = analyze_seconds(run_dir, args.repeat)
        print(f"{size:,}: testbed analyze {entry['analyze']['wall_s']} s end to end, median of "
              f"{[r['wall_s'] for r in entry['analyze']['runs']]} (stages {entry['analyze']['stages_s']})", flush=True)
        out["runs"][str(size)] = entry
        if not args.keep and size != sizes[0]:
            shutil.rmtree(run_dir, ignore_errors=True)
    first = out["runs"][str(sizes[0])]
    reader = max(r["reader"]["pps_per_core"] for r in out["runs"].values())
    out["reader_pps_per_core"] = reader
    out["scapy_pps"] = _pps(first["scapy"])
    out["dpkt_pps"] = _pps(first["dpkt"])
    out["tshark_pps"] = _pps(first["tshark"])
    out["reader_over_scapy"] = round(reader / out["scapy_pps"], 1)
    out["reader_over_dpkt"] = round(reader / out["dpkt_pps"], 1)
    out["reader_over_tshark"] = round(reader / out["tshark_pps"], 1)
    if "analyze" in out["runs"].get("10000000", {}):
        out["analyze_seconds_10m"] = out["runs"]["10000000"]["analyze"]["wall_s"]
    out["analyze_seconds_1m"] = out["runs"].get("1000000", {}).get("analyze", {}).get("wall_s")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=1))
    if not args.keep:
        shutil.rmtree(os.path.join(args.data, f"synthetic-{sizes[0]}"), ignore_errors=True)
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of runs, at least 1")
    return value


def _pps(entry) -> float:
    return float(entry["pps"] if isinstance(entry, dict) else entry)


if __name__ == "__main__":
    sys.exit(main())
