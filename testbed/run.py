"""Running a scenario end to end into one self-describing run directory.

    validate → build the network → start captures → start agents → warm-up → timeline →
    heal all → quiet period → stop agents → stop captures → collect → tear down

runs/<run-id>/ holds manifest.json (the resolved topology and scenario, versions, seed, start
time, node ids, the timeline as executed, capture statistics, status), timeline.jsonl,
pcap/<node>.pcap and logs/<node>.jsonl; nodes/<node>/ keeps each node's configuration
(testbed.rundir, docs/RUNDIR.md). However the run ends (success, error, Ctrl-C), the lab is torn
down and the manifest says how it ended; if the run's own process is killed, `testbed clean`
finishes the directory (status `aborted`).

An action that fails at run time (a node that cannot be paused, a command that fails in it) is
recorded in the timeline with its error, and the run goes on: the rest of the schedule still
happens, and the analysis sees which faults were injected.
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import platform
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import __version__
from .agent_config import node_ids
from .errors import TestbedError, UsageError
from .faults import Nemesis
from .limit_events import LimitWatch
from .monitor import HOST_FILE, HostMonitor
from .names import run_lab_name
from .network import Lab
from .rundir import (MANIFEST_VERSION, TEARDOWN_STACKS, TEARDOWN_STACKS_S, TimelineLog, collect_logs,
                     forget_running, record_running, write_manifest)
from .scenario import Scenario


class Progress:
    """One status line on stderr: the phase, and the scenario clock during the timeline."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.phase = ""
        self.clock: Optional[Callable[[], str]] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._tty = sys.stderr.isatty()

    def set(self, phase: str, clock: Optional[Callable[[], str]] = None) -> None:
        self.phase, self.clock = phase, clock
        if self.enabled and not self._tty:
            print(f"[run] {phase}", file=sys.stderr, flush=True)
        self._draw()

    def note(self, text: str) -> None:
        """A line of its own that stays (an event worth seeing), then the status line again."""
        if self.enabled:
            sys.stderr.write(("\r\033[K" if self._tty else "") + f"[run] {text}\n")
            sys.stderr.flush()
            self._draw()

    def _draw(self) -> None:
        if self.enabled and self._tty:
            text = f"[run] {self.phase}" + (f"  {self.clock()}" if self.clock else "")
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()

    def __enter__(self) -> "Progress":
        if self.enabled and self._tty:
            def loop() -> None:
                while not self._stop.wait(0.2):
                    self._draw()
            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            sys.stderr.write("\n")


def new_run_id(scenario: Scenario) -> str:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{scenario.name}-s{scenario.seed}"


def _versions(lab: Lab) -> Dict[str, Any]:
    from .provenance import run_code

    versions: Dict[str, Any] = {"testbed": __version__, "code": run_code(), "python": platform.python_version(),
                                "kernel": platform.release()}
    try:
        import mininet.net

        versions["mininet"] = mininet.net.VERSION
    except Exception:
        pass
    try:
        import scapy

        versions["scapy"] = scapy.__version__
    except Exception:
        pass
    try:
        versions.update(lab.versions())
    except Exception:
        pass
    return versions


def promises(scenario: Scenario) -> List[str]:
    """What the protocols of the run's roles promise that the checks should hold them to (the
    roles declare it: agents/roles), e.g. "contiguous-order"."""
    from agents.roles import role_promises

    return sorted({p for node in scenario.topology.nodes.values() for p in role_promises(node.role)})


class Run:
    def __init__(self, scenario: Scenario, out_dir: Optional[str] = None, runs_root: str = "runs",
                 accept_unemulated: tuple = (), progress: bool = True) -> None:
        self.scenario = scenario
        self.run_id = new_run_id(scenario)
        self.dir = os.path.abspath(out_dir or os.path.join(runs_root, self.run_id))
        self.accept_unemulated = accept_unemulated
        self.progress = Progress(progress)
        lab_name = run_lab_name(self.dir)
        self.lab = Lab(scenario.topology, lab_name, accept_unemulated=accept_unemulated, workdir=self.dir,
                       seed=scenario.seed, progress=lambda m: self.progress.set(m), hold_workload=True,
                       time_dilation=scenario.time_dilation)
        self.captures = None
        self.monitor: Optional[HostMonitor] = None
        self.nemesis: Optional[Nemesis] = None
        self.executed: List[Dict[str, Any]] = []
        self.manifest: Dict[str, Any] = {}
        self.t0_ns: Optional[int] = None
        self._t0_mono: Optional[float] = None
        self.timeline_log: Optional[TimelineLog] = None
        self._record_lock = threading.Lock()
        self.limits: Optional[LimitWatch] = None

    # -- the whole run -----------------------------------------------------------------------------

    def check(self) -> None:
        """Everything that can be refused before anything is created (exit 2 or 3)."""
        if os.path.exists(self.dir) and os.listdir(self.dir):
            raise UsageError(f"--out {self.dir}: exists and is not empty; runs never overwrite a run directory")
        if self.scenario.capture["enabled"]:
            from collect.capture import available

            missing = available()
            if missing:
                raise TestbedError(f"packet capture is not possible here: {missing}")
        self.lab.check()
        self._check_schedule()

    def _check_schedule(self) -> None:
        """The link properties the timeline asks for must be emulated here (or accepted)."""
        for planned in self.scenario.schedule:
            self.lab.check_action(planned, f"{self.scenario.source}: {planned.source} ({planned.action} at "
                                           f"{planned.at_ms / 1000:g}s)")

    def execute(self) -> Dict[str, Any]:
        self.check()
        os.makedirs(self.dir, exist_ok=True)
        started_ns = time.time_ns()
        self.manifest = {
            "manifest_version": MANIFEST_VERSION, "run_id": self.run_id, "status": "running",
            "started_at": datetime.datetime.fromtimestamp(started_ns / 1e9, datetime.timezone.utc).isoformat(),
            "started_ns": started_ns, "clock": "CLOCK_REALTIME nanoseconds, shared by all nodes and the captures",
            "seed": self.scenario.seed, "scenario": self.scenario.to_dict(),
            "topology": self.scenario.topology.to_dict(), "node_ids": node_ids(self.scenario.topology),
            "addresses": {n: {e.interface: str(e.address) for e in self.scenario.topology.interfaces(n)}
                          for n in self.scenario.topology.nodes},
            "command": sys.argv, "promises": promises(self.scenario),
            # the emulated world ran k times slower than the wall clock; every node's virtual clock
            # counts from the origin: virtual = origin + (wall - origin) / k (docs/RUNDIR.md)
            "time_dilation": self.scenario.time_dilation, "clock_origin_ns": self.lab.clock_origin_ns,
        }
        if self.lab.warnings:
            self.manifest["warnings"] = list(self.lab.warnings)
        self._write_manifest()
        record_running(self.lab.name, self.dir)
        self.timeline_log = TimelineLog(self.dir)
        previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops a run like Ctrl-C
        status, error = "completed", None
        try:
            with self.progress:
                self._run()
        except KeyboardInterrupt:
            status = "interrupted"
        except TestbedError as exc:
            status, error = "failed", str(exc)
        except Exception as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            # Finish the teardown whatever arrives now: a second Ctrl-C must not leave a half-run.
            old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stacks = _StacksIfSlow(self.dir)
            try:
                self._finish(status, error)
            finally:
                if stacks.close():
                    self.manifest.setdefault("problems", []).append(
                        f"its ending took over {TEARDOWN_STACKS_S} s: its threads' stacks are in {TEARDOWN_STACKS}")
                    self._write_manifest()
                forget_running(self.lab.name)
                signal.signal(signal.SIGINT, old_int)
                signal.signal(signal.SIGTERM, previous)
        return self.manifest

    def _run(self) -> None:
        scenario = self.scenario
        k = scenario.time_dilation  # the scenario's times are virtual: k wall seconds each
        self.lab.start(before_launch=self._start_captures)
        self.manifest["versions"] = _versions(self.lab)
        self.manifest["capabilities"] = {"shaping": self.lab.shaper.name, "unemulated": sorted(self.lab.unemulated)}
        self.manifest["build_seconds"] = dict(self.lab.timings)
        self.manifest.update(self.lab.media_manifest())
        self._write_manifest()
        # the machine's side of fidelity, from the warm-up on (the analysis judges from t0)
        self.limits = LimitWatch()
        self.monitor = HostMonitor(self.dir, lambda: {n: s.netns_pid for n, s in self.lab.started.items()},
                                   watch=self.limits, on_limit=self._limit_hit,
                                   watch_pids=lambda: {n: s.process_pid or s.netns_pid
                                                       for n, s in self.lab.started.items()})
        self.monitor.start()
        self.nemesis = Nemesis(self.lab)
        self.progress.set("warm-up")
        warmup_end = time.monotonic() + scenario.warmup_ms / 1000 * k
        late = self.lab.wait_agents_ready()
        if late:
            shown = "; ".join(f"{node} {why}" for node, why in list(late.items())[:5])
            raise TestbedError(f"agents did not start: {shown}{' ...' if len(late) > 5 else ''} "
                               f"(see their logs in {self.dir}/nodes/)")
        time.sleep(max(0.0, warmup_end - time.monotonic()))
        # The workload starts for every agent at once: the scenario clock's zero.
        self.t0_ns = time.time_ns()
        t0 = self._t0_mono = time.monotonic()
        self.lab.start_workload(self.t0_ns)
        self.manifest["t0_ns"] = self.t0_ns
        self._write_manifest()  # a run killed from here on still has its time zero
        total = len(scenario.schedule)

        def clock() -> str:
            return (f"t={(time.monotonic() - t0) / k:5.1f}/{scenario.duration_ms / 1000:g}s"
                    f"{f' (virtual, {k:g}x slower)' if k != 1 else ''}  actions {len(self.executed)}/{total}")

        self.progress.set("timeline", clock)
        for action in scenario.schedule:
            delay = t0 + action.at_ms / 1000 * k - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._execute(action, t0)
        remaining = t0 + scenario.duration_ms / 1000 * k - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        # The workload ends; agents keep receiving and retransmitting through the quiet period.
        self.manifest["workload_end_ns"] = time.time_ns()
        self.lab.signal_agents(signal.SIGUSR1)
        self.progress.set("heal all, quiet period")
        record: Dict[str, Any] = {"action": "heal_all", "planned_s": scenario.duration_ms / 1000,
                                  "t_s": round((time.monotonic() - t0) / k, 3), "t_ns": time.time_ns()}
        try:
            record.update(ok=True, details=self.nemesis.heal_all())
        except Exception as exc:
            record.update(ok=False, error=_error_text(exc))
        record["from"] = "end of scenario"
        self._record(record)
        time.sleep(scenario.quiet_ms / 1000 * k)

    def _start_captures(self, lab: Lab) -> None:
        if not self.scenario.capture["enabled"]:
            return
        from collect.capture import Captures

        self.progress.set("starting captures")
        self.captures = Captures(os.path.join(self.dir, "pcap"), self.scenario.capture["snaplen"],
                                 self.scenario.capture["buffer_mib"])
        for name in lab.topo.nodes:
            interfaces = [e.interface for e in lab.topo.interfaces(name)]
            if interfaces:
                self.captures.start(name, lab.hosts[name].pid, interfaces)
        self.captures.wait_ready()

    def _execute(self, action, t0: float) -> None:
        self._record(execute(self.nemesis, action, t0, self.scenario.time_dilation))

    def _record(self, record: Dict[str, Any]) -> None:
        with self._record_lock:  # the host monitor's thread records limit events too
            self.executed.append(record)
            if self.timeline_log is not None:
                self.timeline_log.append(record)

    def _limit_hit(self, node: str, event: str, count: int) -> None:
        """A node met its resource limit (testbed.limit_events): a timeline entry, observed
        rather than planned; the analysis counts the node as down from it on."""
        now = time.monotonic()
        k = self.scenario.time_dilation
        record = {"action": event, "node": node, "observed": True, "ok": True, "count": count,
                  "t_ns": time.time_ns(), "from": "resource limits", "limit": self._limit_text(node, event)}
        if self._t0_mono is not None:  # in the warm-up there is no scenario clock yet
            record["t_s"] = round((now - self._t0_mono) / k, 3)
        self._record(record)
        self.progress.note(f"node {node} met its {record['limit']}: {event}")

    def _limit_text(self, node: str, event: str) -> str:
        res = self.lab.topo.nodes[node].resources
        from .resources import size_text
        if event == "oom":
            return f"memory limit ({size_text(res.memory)})" if res.memory is not None else "memory"
        return f"pids limit ({res.pids})" if res.pids is not None else "pids limit"

    def _finish(self, status: str, error: Optional[str]) -> None:
        self.progress.set("stopping agents and captures")
        problems = []
        try:
            exited = self.lab.stop_agents() if self.lab.started else {}
            late = sorted(n for n, ok in exited.items() if not ok)
            if late:
                problems.append(f"agents killed after not stopping within 3 s: {', '.join(late)}")
        except Exception as exc:
            problems.append(f"stopping agents: {exc}")
        if self.monitor is not None:
            try:
                self.monitor.stop()
                self.manifest["host_monitor"] = {"file": HOST_FILE, "samples": self.monitor.samples,
                                                 "interval_s": self.monitor.interval,
                                                 **({"error": self.monitor.error} if self.monitor.error else {})}
            except Exception as exc:
                problems.append(f"host monitor: {exc}")
        if self.limits is not None and self.limits.hit():
            self.manifest["limits_hit"] = self.limits.hit()
        if self.captures is not None:
            time.sleep(1.1)  # libpcap hands over buffered packets within its 1 s timeout
            try:
                self.captures.stop()
                self.captures.merge()
                self.manifest["capture"] = self.captures.statistics()
            except Exception as exc:
                problems.append(f"captures: {exc}")
        self.manifest["log_events"] = collect_logs(self.dir, self.lab.node_dirs)
        if self.timeline_log is not None:
            self.timeline_log.close()
        self.progress.set("tearing down")
        try:
            self.lab.stop()
        except Exception as exc:
            problems.append(str(exc))
        self.manifest.update(self.lab.media_manifest())
        problems += self.lab.media_problems()
        self.manifest["timeline"] = self.executed
        self.manifest["status"] = status
        if error:
            self.manifest["error"] = error
        if problems:
            self.manifest["problems"] = problems
        self.manifest["ended_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
        self.manifest["teardown_seconds"] = self.lab.timings.get("stop")
        self._write_manifest()

    def _write_manifest(self) -> None:
        write_manifest(self.dir, self.manifest)


class _StacksIfSlow:
    """While a run ends, its threads' stacks go to teardown-stacks.txt every TEARDOWN_STACKS_S
    (faulthandler, which writes even while every thread waits in C on a lock or a socket): a run
    whose ending hangs ignores Ctrl-C by design (a half-torn-down lab is worse), so the one who
    kills it learns from the file where it was."""

    def __init__(self, run_dir: str) -> None:
        self.path = os.path.join(run_dir, TEARDOWN_STACKS)
        self.file = None
        try:
            self.file = open(self.path, "w")
            faulthandler.dump_traceback_later(TEARDOWN_STACKS_S, repeat=True, file=self.file)
        except (OSError, ValueError):
            pass

    def close(self) -> bool:
        """Stop; whether stacks were written (else the file is removed)."""
        if self.file is None:
            return False
        faulthandler.cancel_dump_traceback_later()
        self.file.close()
        if os.path.getsize(self.path):
            return True
        os.remove(self.path)
        return False


def execute(nemesis: Nemesis, planned, t0: float, dilation: float = 1.0) -> Dict[str, Any]:
    """Carry out one planned action now; its record for the manifest's timeline. An action that
    fails is recorded with its error (`ok` false) and nothing is raised: the run goes on, the rest
    of the schedule still happens, and the analysis sees which faults were injected."""
    record = planned.describe()
    record["planned_s"] = record.pop("at_s")
    record["t_ns"] = time.time_ns()
    record["t_s"] = round((time.monotonic() - t0) / dilation, 3)  # virtual seconds since t0
    try:
        details = nemesis.apply(planned)
        record["ok"] = True
        if details:
            record["details"] = details
    except Exception as exc:
        record["ok"] = False
        record["error"] = _error_text(exc)
    record["done_ns"] = time.time_ns()  # e.g. a stopped agent may take a while to exit
    return record


def _error_text(exc: Exception) -> str:
    """An error as the manifest records it: a testbed error's message, else its type and message."""
    return str(exc) if isinstance(exc, TestbedError) else f"{type(exc).__name__}: {exc}"
