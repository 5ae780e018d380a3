"""Carrying out an experiment's runs: every point × seed, skipping those already complete, one
run at a time per host, with progress and an estimate of the time left.

The experiment directory holds:

    experiment.json        the plan and the ledger: points, seeds, and per run its fingerprint,
                           status, host, wall time and testbed version (rewritten as runs end)
    experiment.yaml        a copy of the experiment file as it was
    runs/<point>-s<seed>/  the run directories (as `testbed run --out` makes them)
    logs/<point>-s<seed>.log   what each run printed

A run is complete when the ledger says completed with the same fingerprint (fingerprint.py: the
scenario's data with the point's overrides, the topology's data, every other file the run reads,
the seed, the accepted impairments, the digest of the code that makes runs and the images' ids)
and its run directory's manifest says completed. A completed run whose fingerprint differs is
*stale*: the plan says why (which part, which files of the code) and it is made again. Any other
run is (re)run into a fresh directory: an interrupted or failed run leaves a directory that is
replaced. So an interrupted experiment resumes where it stopped, and a change of scenario, file,
flag, image or code reruns exactly the runs it changes. The ledger keeps, per code digest, its
files' hashes, so that a stale run names the files that changed.

Each run is a child process (`testbed run`, or `testbed remote run` for a remote host), in a
session of its own: Ctrl-C (or SIGTERM) reaches the experiment, which passes it on once to the
runs under way, waits for them to stop (they tear their labs down and keep what they captured)
and exits 130. One experiment at a time uses a directory (a lock file).

A run that goes on past its time limit (RUN_LIMIT_FACTOR times its scenario's wall-clock length,
plus RUN_LIMIT_MARGIN_S for building and tearing down its lab) is told to stop like Ctrl-C; one
still there STOP_GRACE_S later (a teardown that hangs ignores Ctrl-C) is killed with its process
group, its lab is removed and its run directory finished as `testbed clean` does, and it counts as
failed: a campaign of many hours goes on past one run that hangs. A run that hangs in its
teardown writes its threads' stacks into its directory first (testbed.run, teardown-stacks.txt).

A complete run that the fidelity monitor called unfaithful (its analysis says the machine did not
keep up: spark_analysis/fidelity.py) stays complete unless the runner is asked to redo such runs
(`redo_unfaithful`, --redo-unfaithful): then it is made again like a stale run (kept aside until
its remake completes), and its ledger entry keeps why, in `redone_unfaithful`.

A runner may carry out a slice of the experiment: `only` keeps the points whose names match one of
its shell-style patterns (`--only 'tree-3-5-5.k=8'`), and the experiment's seeds may be a list
(`--seeds 4,5`); the runs outside the slice are neither planned nor touched in the ledger.
"""

from __future__ import annotations

import datetime
import fcntl
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .. import __version__, provenance
from ..errors import TestbedError, UsageError
from ..rundir import TEARDOWN_STACKS, lab_running_in, running_in
from . import fingerprint as fp
from .spec import Experiment, Host, Point

LEDGER = "experiment.json"
OVERHEAD_S = 60.0  # a first guess of building and tearing down a lab, before any run has been timed
BENCH_AFTER = 3    # a host whose runs fail this many times in a row leaves the pool
UNREACHABLE = 4    # `testbed remote run`'s exit code when the host cannot be reached (RemoteError)
RUN_LIMIT_FACTOR = 2         # a run may take this many times its scenario's wall-clock length ...
RUN_LIMIT_MARGIN_S = 1200.0  # ... plus this (a lab of 200 containers builds in 1-3 minutes)
STOP_GRACE_S = 300.0         # a run told to stop at its limit is killed when still there after this


class ExperimentInterrupted(TestbedError):
    exit_code = 130


@dataclass
class Planned:
    name: str
    point: Point
    seed: int
    fingerprint: str
    parts: Dict = field(default_factory=dict)
    status: str = "pending"     # pending, complete (from before), running, completed, failed, interrupted
    stale: List[str] = field(default_factory=list)  # why a run completed before is made again
    kept: List[str] = field(default_factory=list)   # why it would be, kept with accept_code_changes
    tried: set = field(default_factory=set)          # the hosts it was given to
    wall_s: Optional[float] = None
    host: Optional[str] = None
    error: Optional[str] = None
    entry: Dict = field(default_factory=dict)
    # a remake that did not complete: the ledger entry of the complete run it was to replace, which stays
    restored: Optional[Dict] = None
    # why a complete run is made again for its fidelity (redo_unfaithful): the monitor's reasons
    redo: List[str] = field(default_factory=list)


def select_points(exp: Experiment, patterns: Tuple[str, ...] = ()) -> List[Point]:
    """The experiment's points whose names match one of the shell-style `patterns` (`*`, `?`,
    `[...]`; --only), in the experiment's order; every point when there are none. A pattern that
    matches no point is a usage error naming the points there are."""
    if not patterns:
        return list(exp.points)
    chosen = set()
    for pattern in patterns:
        hits = {p.id for p in exp.points if fnmatch.fnmatchcase(p.id, pattern)}
        if not hits:
            names = [p.id for p in exp.points]
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            raise UsageError(f"--only {pattern}: no point of {exp.name} is called so (shell patterns: *, ?, [...]); "
                             f"its points: {shown}")
        chosen |= hits
    return [p for p in exp.points if p.id in chosen]


def run_name(point: Point, seed: int) -> str:
    return f"{point.id}-s{seed}"


def _fmt_time(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Lock:
    """One experiment at a time in a directory (flock: released when the process dies)."""

    def __init__(self, out_dir: str) -> None:
        self.path = os.path.join(out_dir, ".lock")
        self.fh = None

    def __enter__(self) -> "Lock":
        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.seek(0)
            pid = self.fh.read().strip()
            self.fh.close()
            raise UsageError(f"{os.path.dirname(self.path)}: another 'testbed experiment' is using this directory"
                             + (f" (pid {pid})" if pid else "")) from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(str(os.getpid()))
        self.fh.flush()
        return self

    def __exit__(self, *exc) -> None:
        if self.fh:
            self.fh.close()


class Runner:
    def __init__(self, exp: Experiment, out_dir: str, progress: bool = True, accept_unemulated: Tuple[str, ...] = (),
                 python: str = sys.executable, bench_after: int = BENCH_AFTER,
                 accept_code_changes: bool = False, only: Tuple[str, ...] = (),
                 run_limit_s: Optional[float] = None, stop_grace_s: float = STOP_GRACE_S,
                 redo_unfaithful: bool = False) -> None:
        self.exp = exp
        #: make again the complete runs whose analysis called them unfaithful
        self.redo_unfaithful = redo_unfaithful
        #: the wall-clock seconds a run may take (None: from its scenario, see the module's text)
        self.run_limit_s = run_limit_s
        self.stop_grace_s = stop_grace_s
        #: the points this runner carries out (all of the experiment's unless `only` picks some)
        self.points = select_points(exp, only)
        #: keep the runs that are stale only because the code that makes runs changed
        self.accept_code_changes = accept_code_changes
        self.bench_after = bench_after
        self.benched: Dict[str, str] = {}  # host -> why it left the pool
        self._executed = False
        self.out = os.path.abspath(out_dir)
        self.progress = progress
        self.accept = accept_unemulated
        self.python = python
        self.ledger: Dict = {}
        self.planned: List[Planned] = []
        self._lock = threading.Lock()
        self._procs: Dict[str, subprocess.Popen] = {}
        self._stop = False
        self._seconds: Dict[str, float] = {}  # point id -> the scenario's own length, for estimates
        self._inputs: Dict[str, Dict] = {}    # point id -> the parts of its fingerprint its files make
        self.code, self.code_files = provenance.digest(provenance.RUN_CODE)

    # -- the plan ----------------------------------------------------------------------------

    def plan(self) -> List[Planned]:
        """Every run with its status: complete (from before) or pending."""
        self.ledger = self._read_ledger()
        old = self.ledger.get("runs", {})
        code_files = dict(self.ledger.get("code") or {})
        code_files[self.code] = self.code_files
        for point in self.points:
            if point.id not in self._inputs:
                self._inputs[point.id] = fp.point_inputs(point)
        images = fp.image_ids(sorted({n for i in self._inputs.values() for n in i["image_names"]}))
        out = []
        mine = {p.id for p in self.points}
        for point, seed in self.exp.runs():
            if point.id not in mine:
                continue
            name = run_name(point, seed)
            parts = fp.parts(self._inputs[point.id], seed, tuple(self.accept), self.code, images)
            p = Planned(name=name, point=point, seed=seed, fingerprint=fp.digest(parts), parts=parts)
            entry = old.get(name) or {}
            p.entry = dict(entry)
            if entry.get("status") == "completed" and _manifest_status(self.run_dir(name)) == "completed":
                p.stale = fp.stale_reasons(entry.get("parts"), parts, code_files)
                if p.stale and self.accept_code_changes and fp.only_the_code_differs(entry.get("parts"), parts):
                    p.kept, p.stale = p.stale, []  # the user keeps runs made by other code
                if not p.stale and self.redo_unfaithful:
                    p.redo = _unfaithful(self.run_dir(name))
                    if p.redo:
                        p.stale = [f"unfaithful ({'; '.join(p.redo)}): made again, as --redo-unfaithful asks"]
                if not p.stale:
                    p.status = "complete"
                    p.wall_s = entry.get("wall_s")
                    p.host = entry.get("host")
            elif entry.get("status") in ("failed", "interrupted"):
                p.error = f"{entry['status']} before" + (f": {entry['error']}" if entry.get("error") else "")
            out.append(p)
        self.planned = out
        return out

    def run_dir(self, name: str) -> str:
        return os.path.join(self.out, "runs", name)

    def _aside(self, name: str, what: str) -> str:
        """Where a run's directory waits beside the one being made: `previous` (the complete run a
        remake replaces, until the remake completes) or `failed` (a remake that did not)."""
        return os.path.join(self.out, "runs", f".{name}.{what}")

    @staticmethod
    def _discard(path: str) -> None:
        if os.path.exists(path):
            shutil.rmtree(path)

    def _recover(self) -> None:
        """Finish what an experiment killed while it remade a complete run left: the complete run
        goes back in place unless its remake completed."""
        runs = os.path.join(self.out, "runs")
        for entry in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
            if not (entry.startswith(".") and entry.endswith(".previous")):
                continue
            name = entry[1:-len(".previous")]
            target, previous = self.run_dir(name), os.path.join(runs, entry)
            if running_in(target) is not None:
                continue  # its remake still goes on: _run_one refuses it, and the next command recovers
            if _manifest_status(target) == "completed":
                shutil.rmtree(previous)
            else:
                self._discard(target)
                os.replace(previous, target)

    def _read_ledger(self) -> Dict:
        path = os.path.join(self.out, LEDGER)
        if not os.path.isfile(path):
            return {}
        try:
            with open(path) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: not an experiment ledger ({exc}); move it away to start afresh") from None
        if data.get("experiment") != self.exp.name:
            raise UsageError(f"{self.out} holds the experiment {data.get('experiment')!r}, not {self.exp.name!r}: "
                             f"choose another --out")
        return data

    def save_ledger(self) -> None:
        """Write the ledger with what the plan and the runs' entries say now (the analysis records
        in each entry which analysis code analysed it)."""
        with Lock(self.out):
            self._write_ledger()

    def _write_ledger(self) -> None:
        runs = dict(self.ledger.get("runs", {}))
        for p in self.planned:
            if p.status in ("pending", "complete") and not p.entry:
                continue
            if p.restored is not None:  # the complete run stays, with its entry
                runs[p.name] = p.restored
                continue
            if p.status == "complete" and p.name in runs:
                runs[p.name] = dict(runs[p.name], **{k: v for k, v in p.entry.items() if k == "analysed_by"})
                continue
            if p.status not in ("pending", "complete"):
                p.entry.update({"point": p.point.id, "seed": p.seed, "fingerprint": p.fingerprint,
                                "parts": p.parts, "status": p.status, "host": p.host, "wall_s": p.wall_s,
                                "error": p.error, "directory": os.path.join("runs", p.name)})
            runs[p.name] = p.entry
        known = dict(self.ledger.get("code") or {})
        known[self.code] = self.code_files
        used = {(e.get("parts") or {}).get("code") for e in runs.values()} | {self.code}
        self.ledger = {
            "experiment": self.exp.name, "source": self.exp.source, "description": self.exp.description,
            "testbed": __version__, "created": self.ledger.get("created") or _now(), "updated": _now(),
            # a slice (--seeds 4,5) adds its seeds to those the directory's runs were made with
            "seeds": list(dict.fromkeys([*(self.ledger.get("seeds") or []), *self.exp.seeds])),
            "hosts": [h.target for h in self.exp.hosts],
            "hosts_benched": dict(self.benched) if self._executed else self.ledger.get("hosts_benched", {}),
            "points": [{"id": p.id, "scenario": p.scenario.label, "file": p.scenario.file,
                        "values": dict(p.values), "overrides": list(p.overrides)} for p in self.exp.points],
            "runs": runs,
            "code": {digest: files for digest, files in known.items() if digest in used},
        }
        tmp = os.path.join(self.out, LEDGER + ".tmp")
        with open(tmp, "w") as fh:
            json.dump(self.ledger, fh, indent=1, default=str)
        os.replace(tmp, os.path.join(self.out, LEDGER))

    # -- carrying it out ---------------------------------------------------------------------

    def execute(self) -> Dict[str, int]:
        """Run every pending run; returns counts by status. Raises ExperimentInterrupted on Ctrl-C."""
        os.makedirs(os.path.join(self.out, "runs"), exist_ok=True)
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        with Lock(self.out):
            shutil.copyfile(self.exp.source, os.path.join(self.out, "experiment.yaml"))
            self._executed = True
            self._recover()
            self.plan()
            self._write_ledger()
            todo = [p for p in self.planned if p.status == "pending"]
            done = len(self.planned) - len(todo)
            stale = [p for p in todo if p.stale]
            self._say(f"experiment {self.exp.name}: {len(self.planned)} runs ({len(self.points)} points × "
                      f"{len(self.exp.seeds)} seed{'s' if len(self.exp.seeds) > 1 else ''}), {done} already complete, "
                      + (f"{len(stale)} stale, " if stale else "") + f"{len(todo)} to run on "
                      f"{len(self.exp.hosts)} host{'s' if len(self.exp.hosts) > 1 else ''}"
                      + (f", about {_fmt_time(self._remaining(todo))}" if todo else ""))
            for reason, count in _tally(r for p in stale for r in p.stale):
                self._say(f"  stale: {count} run{'s' if count > 1 else ''}: {reason}")
            kept = [p for p in self.planned if p.kept]
            if kept:
                self._say(f"  kept: {len(kept)} complete run{'s' if len(kept) > 1 else ''} made by other code "
                          f"({kept[0].kept[0]}), as --accept-code-changes asks")
            queue = list(todo)
            previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
            for s in previous:
                signal.signal(s, self._on_signal)
            try:
                workers = [threading.Thread(target=self._work, args=(host, queue), daemon=True)
                           for host in self.exp.hosts]
                for w in workers:
                    w.start()
                while any(w.is_alive() for w in workers):
                    for w in workers:
                        w.join(timeout=0.2)
            finally:
                for s, h in previous.items():
                    signal.signal(s, h)
                self._write_ledger()
        counts: Dict[str, int] = {}
        for p in self.planned:
            counts[p.status] = counts.get(p.status, 0) + 1
        if self._stop:
            complete = counts.get("complete", 0) + counts.get("completed", 0)
            raise ExperimentInterrupted(f"interrupted: {complete} of {len(self.planned)} runs complete; run the same "
                                        f"command again to resume")
        return counts

    def _on_signal(self, signum, frame) -> None:
        if self._stop:
            return
        self._stop = True
        self._say("stopping: the runs under way are told to stop (their labs are torn down, their captures kept)")
        with self._lock:
            for proc in self._procs.values():
                try:
                    proc.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass

    def _work(self, host: Host, queue: List[Planned]) -> None:
        failed: List[Planned] = []  # this host's runs that failed in a row
        while not self._stop:
            with self._lock:
                mine = [q for q in queue if host.target not in q.tried]
                if mine:
                    p = mine[0]
                    queue.remove(p)
                    p.status = "running"
                    p.host = host.target
                    p.tried.add(host.target)
                elif not any(q.status == "running" for q in self.planned):
                    return
            if not mine:  # runs under way elsewhere may yet come back, if their host leaves the pool
                time.sleep(0.5)
                continue
            self._run_one(p, host)
            with self._lock:
                if p.status == "failed":
                    failed.append(p)
                    why = None
                    if p.entry.get("exit_code") == UNREACHABLE:
                        why = f"cannot be reached ({p.error})" if p.error else "cannot be reached"
                    elif len(failed) >= self.bench_after:
                        why = f"{len(failed)} runs failed in a row (the last: {p.error or 'no message'})"
                    others = [h for h in self.exp.hosts if h.target != host.target and h.target not in self.benched]
                    if why and others:
                        self._bench(host, why, failed, queue)
                        self._write_ledger()
                        return
                elif p.status in ("completed",):
                    failed = []
                self._write_ledger()
            if p.status == "interrupted":
                self._stop = True
                return

    def _bench(self, host: Host, why: str, failed: List[Planned], queue: List[Planned]) -> None:
        """Take a host out of the pool; the runs that failed on it go back to the queue, for the
        hosts that have not tried them."""
        self.benched[host.target] = why
        back = [q for q in failed if any(h.target not in q.tried and h.target not in self.benched
                                         for h in self.exp.hosts)]
        for q in back:
            q.status, q.host, q.error = "pending", None, None
        queue[:0] = back
        self._say(f"host {host.target} leaves the pool: {why}; "
                  + (f"{len(back)} of its failed runs go to the other hosts" if back else "the other hosts go on"))

    def command(self, p: Planned, host: Host) -> List[str]:
        argv = [self.python, "-m", "testbed"]
        if host.local:
            argv += ["run", p.point.scenario.file]
        else:
            argv += ["remote", "run", host.target, p.point.scenario.file]
            for flag, value in (("--key", host.key), ("--known-hosts", host.known_hosts),
                                ("--remote-dir", host.remote_dir), ("--remote-testbed", host.remote_testbed)):
                if value:
                    argv += [flag, value]
        argv += ["--seed", str(p.seed), "--out", self.run_dir(p.name), "--quiet"]
        for item in p.point.overrides:
            argv += ["--set", item]
        if self.accept:
            argv += ["--accept-unemulated", ",".join(self.accept)]
        return argv

    def _run_one(self, p: Planned, host: Host) -> None:
        target = self.run_dir(p.name)
        writer = running_in(target)
        if writer is not None:  # a run of an experiment that was killed goes on writing there
            p.status, p.wall_s = "failed", 0.0
            p.error = (f"a testbed run (pid {writer}) is still writing {target}, left by an experiment that was "
                       f"killed; wait for it to end or stop it (kill -INT {writer})")
            self._say(f"{p.name}: {p.error}")
            return
        previous, kept_entry, p.restored = None, dict(p.entry), None
        if p.stale and _manifest_status(target) == "completed":
            # a complete run made again (its inputs or code changed): kept aside until the new one
            # completes, so that a remake that fails or is interrupted loses nothing
            previous = self._aside(p.name, "previous")
            self._discard(previous)
            os.replace(target, previous)
        else:
            self._discard(target)  # what an interrupted or failed attempt left, or a run of another fingerprint
        index = sum(1 for q in self.planned if q.status not in ("pending",))
        self._say(f"[{index}/{len(self.planned)}] {p.name} on {host.target}: started")
        log = os.path.join(self.out, "logs", f"{p.name}.log")
        start = time.monotonic()
        p.entry = {"started": _now()}
        if p.redo:
            p.entry["redone_unfaithful"] = list(p.redo)
        with open(log, "wb") as fh:
            fh.write((" ".join(self.command(p, host)) + "\n").encode())
            fh.flush()
            proc = subprocess.Popen(self.command(p, host), stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            with self._lock:
                self._procs[p.name] = proc
                if self._stop:
                    proc.send_signal(signal.SIGINT)
            limit = self._limit(p)
            overrun = None
            try:
                code = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                code, overrun = self._overrun(p, proc, host, target, limit)
            with self._lock:
                del self._procs[p.name]
        p.wall_s = round(time.monotonic() - start, 1)
        status = _manifest_status(target)
        p.entry["exit_code"] = code
        if overrun:
            p.status, p.error = "failed", overrun
        elif code == 130 or status == "interrupted" or self._stop:
            p.status = "interrupted"
        elif code == 0 and status == "completed":
            p.status = "completed"
        else:
            p.status = "failed"
            p.error = _last_line(log) or f"exit code {code}"
        kept = ""
        if p.status == "completed":
            for what in ("previous", "failed"):  # what it replaces, and an attempt that failed before
                self._discard(self._aside(p.name, what))
        elif previous is not None:
            failed = self._aside(p.name, "failed")
            self._discard(failed)
            if os.path.exists(target):
                os.replace(target, failed)
            os.replace(previous, target)
            p.restored = kept_entry
            kept = (f"; the complete run it was to replace stays in {os.path.relpath(target)}"
                    + (f" (this attempt: {os.path.relpath(failed)})" if os.path.exists(failed) else ""))
        if p.status == "completed":
            made_by = _manifest_code(target)
            if made_by and made_by != p.parts.get("code"):
                p.entry["made_by_code"] = made_by
                self._say(f"{p.name}: made by other code than this checkout's ({made_by}, here {p.parts.get('code')}): "
                          f"the testbed on {host.target} differs")
            left = [q for q in self.planned if q.status in ("pending", "running") and q is not p]
            self._say(f"[{index}/{len(self.planned)}] {p.name}: completed in {_fmt_time(p.wall_s)}; "
                      f"{len(left)} left" + (f", about {_fmt_time(self._remaining(left))} to go" if left else ""))
        else:
            self._say(f"[{index}/{len(self.planned)}] {p.name}: {p.status} after {_fmt_time(p.wall_s)}"
                      + (f" ({p.error}; see {os.path.relpath(log)})" if p.error else "") + kept)

    def _limit(self, p: Planned) -> float:
        if self.run_limit_s is not None:
            return self.run_limit_s
        if p.point.id not in self._seconds:
            self._seconds[p.point.id] = _scenario_seconds(p.point)
        return RUN_LIMIT_FACTOR * self._seconds[p.point.id] + RUN_LIMIT_MARGIN_S

    def _overrun(self, p: Planned, proc: subprocess.Popen, host: Host, target: str,
                 limit: float) -> Tuple[int, str]:
        """A run past its limit: told to stop, killed if it does not, its lab removed; (exit code,
        what happened)."""
        lab = lab_running_in(target)  # while its process is alive: the lab its pointer names
        self._say(f"{p.name}: still running after {_fmt_time(limit)}, its time limit: told to stop")
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=self.stop_grace_s)
            return code, f"stopped at its time limit ({_fmt_time(limit)}), exit code {code}"
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the run and every child it made
        except ProcessLookupError:
            pass
        code = proc.wait()
        what = (f"killed: it went on past its time limit ({_fmt_time(limit)}) and did not stop within "
                f"{_fmt_time(self.stop_grace_s)} of being told to")
        if os.path.isfile(os.path.join(target, TEARDOWN_STACKS)):
            what += f"; its threads' stacks are in {os.path.join(target, TEARDOWN_STACKS)}"
        if host.local and lab:
            from ..cleanup import clean_all

            try:
                cleaned = clean_all(lab)
                if cleaned.problems:
                    what += "; cleaning its lab: " + "; ".join(cleaned.problems)
            except Exception as exc:
                what += f"; cleaning its lab failed ({exc}): run 'testbed clean'"
        elif not host.local:
            what += f"; run 'testbed clean' on {host.target}"
        self._say(f"{p.name}: {what}")
        return code, what

    def _remaining(self, left: List[Planned]) -> float:
        """The time the runs left should take: each at the mean wall time of the runs of its scenario
        timed so far (else of all timed runs, else the scenario's own times plus an overhead), spread
        over the hosts."""
        timed = [q for q in self.planned if q.wall_s and q.status in ("complete", "completed")]
        overall = sum(q.wall_s for q in timed) / len(timed) if timed else None
        total = 0.0
        for q in left:
            same = [t.wall_s for t in timed if t.point.scenario.label == q.point.scenario.label]
            if same:
                total += sum(same) / len(same)
            elif overall:
                total += overall
            else:
                if q.point.id not in self._seconds:
                    self._seconds[q.point.id] = _scenario_seconds(q.point)
                total += self._seconds[q.point.id] + OVERHEAD_S
        return total / max(1, len([h for h in self.exp.hosts if h.target not in self.benched]))

    def _say(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr, flush=True)


def _tally(reasons) -> List[Tuple[str, int]]:
    counts: Dict[str, int] = {}
    for r in reasons:
        counts[r] = counts.get(r, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _scenario_seconds(point: Point) -> float:
    """The wall-clock seconds of the point's scenario: warm-up, duration and quiet period, times
    its time dilation."""
    from ..scenario import load_scenario

    try:
        s = load_scenario(point.scenario.file, overrides=point.overrides)
    except Exception:
        return 0.0
    return (s.warmup_ms + s.duration_ms + s.quiet_ms) / 1000 * s.time_dilation


def _manifest_status(run_dir: str) -> Optional[str]:
    try:
        with open(os.path.join(run_dir, "manifest.json")) as fh:
            return json.load(fh).get("status")
    except (OSError, ValueError):
        return None


def results_file(run_dir: str) -> str:
    """Where a run's analysis writes its results (spark_analysis: report/results.json)."""
    return os.path.join(run_dir, "report", "results.json")


def _unfaithful(run_dir: str) -> List[str]:
    """The fidelity monitor's reasons when the run's analysis called it unfaithful, else []."""
    try:
        with open(results_file(run_dir)) as fh:
            fidelity = json.load(fh).get("fidelity") or {}
    except (OSError, ValueError, AttributeError):
        return []
    if fidelity.get("verdict") != "unfaithful":
        return []
    return [str(r) for r in fidelity.get("reasons") or []] or ["no reason given"]


def _manifest_code(run_dir: str) -> Optional[str]:
    try:
        with open(os.path.join(run_dir, "manifest.json")) as fh:
            return (json.load(fh).get("versions") or {}).get("code")
    except (OSError, ValueError, AttributeError):
        return None


def _last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            lines = [line.strip() for line in fh if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines[1:] if line.startswith("testbed:") or "error" in line.lower()]
    return (errors or lines[1:] or [""])[-1][:300]
