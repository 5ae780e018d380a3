"""Running a scenario end to end into one self-describing run directory.

    validate → build the network → start captures → start agents → warm-up → timeline →
    heal all → quiet period → stop agents → stop captures → collect → tear down

runs/<run-id>/ holds manifest.json (the resolved topology and scenario, versions, seed, start
time, node ids, the timeline as executed, capture statistics, status), pcap/<node>.pcap and
logs/<node>.jsonl; nodes/<node>/ keeps each agent's configuration. However the run ends
(success, error, Ctrl-C), the lab is torn down and the manifest says how it ended.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shutil
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from . import __version__
from .agent_config import LOG_NAME, node_ids
from .errors import TestbedError, UsageError
from .faults import Nemesis
from .network import Lab
from .scenario import Scenario

MANIFEST_VERSION = 1


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
    versions: Dict[str, Any] = {"testbed": __version__, "python": platform.python_version(),
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
    docker_rt = lab.runtimes.get("docker")
    if docker_rt is not None:
        try:
            versions["docker_engine"] = docker_rt.docker.version().get("Version")
            versions["images"] = {image: docker_rt.docker.images.get(image).id
                                  for image in sorted({n.image for n in lab.topo.nodes.values()
                                                       if n.runtime == "docker"})}
        except Exception:
            pass
    return versions


class Run:
    def __init__(self, scenario: Scenario, out_dir: Optional[str] = None, runs_root: str = "runs",
                 accept_unemulated: tuple = (), progress: bool = True) -> None:
        self.scenario = scenario
        self.run_id = new_run_id(scenario)
        self.dir = os.path.abspath(out_dir or os.path.join(runs_root, self.run_id))
        self.accept_unemulated = accept_unemulated
        self.progress = Progress(progress)
        lab_name = "run-" + hashlib.sha1(self.dir.encode()).hexdigest()[:8]
        self.lab = Lab(scenario.topology, lab_name, accept_unemulated=accept_unemulated, workdir=self.dir,
                       seed=scenario.seed, progress=lambda m: self.progress.set(m), hold_workload=True)
        self.captures = None
        self.nemesis: Optional[Nemesis] = None
        self.executed: List[Dict[str, Any]] = []
        self.manifest: Dict[str, Any] = {}
        self.t0_ns: Optional[int] = None

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
            "command": sys.argv,
        }
        self._write_manifest()
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
            try:
                self._finish(status, error)
            finally:
                signal.signal(signal.SIGINT, old_int)
                signal.signal(signal.SIGTERM, previous)
        return self.manifest

    def _run(self) -> None:
        scenario = self.scenario
        self.lab.start(before_launch=self._start_captures)
        self.manifest["versions"] = _versions(self.lab)
        self.manifest["capabilities"] = {"shaping": self.lab.shaper.name, "unemulated": sorted(self.lab.unemulated)}
        self.manifest["build_seconds"] = dict(self.lab.timings)
        self.nemesis = Nemesis(self.lab)
        self.progress.set("warm-up")
        warmup_end = time.monotonic() + scenario.warmup_ms / 1000
        late = self.lab.wait_agents_ready()
        if late:
            raise TestbedError(f"agents did not start within 60 s: {', '.join(late[:5])} "
                               f"(see their logs in {self.dir}/nodes/)")
        time.sleep(max(0.0, warmup_end - time.monotonic()))
        # The workload starts for every agent at once: the scenario clock's zero.
        self.t0_ns = time.time_ns()
        t0 = time.monotonic()
        self.lab.start_workload()
        self.manifest["t0_ns"] = self.t0_ns
        total = len(scenario.schedule)

        def clock() -> str:
            return f"t={time.monotonic() - t0:5.1f}/{scenario.duration_ms / 1000:g}s  actions {len(self.executed)}/{total}"

        self.progress.set("timeline", clock)
        for action in scenario.schedule:
            delay = t0 + action.at_ms / 1000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._execute(action, t0)
        remaining = t0 + scenario.duration_ms / 1000 - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        # The workload ends; agents keep receiving and retransmitting through the quiet period.
        self.manifest["workload_end_ns"] = time.time_ns()
        self.lab.signal_agents(signal.SIGUSR1)
        self.progress.set("heal all, quiet period")
        healed = self.nemesis.heal_all()
        self.executed.append({"action": "heal_all", "planned_s": scenario.duration_ms / 1000,
                              "t_s": round(time.monotonic() - t0, 3), "t_ns": time.time_ns(), "ok": True,
                              "details": healed, "from": "end of scenario"})
        time.sleep(scenario.quiet_ms / 1000)

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
        record = action.describe()
        record["planned_s"] = record.pop("at_s")
        record["t_ns"] = time.time_ns()
        record["t_s"] = round(time.monotonic() - t0, 3)
        try:
            details = self.nemesis.apply(action)
            record["ok"] = True
            if details:
                record["details"] = details
        except TestbedError as exc:
            record["ok"] = False
            record["error"] = str(exc)
        record["done_ns"] = time.time_ns()  # e.g. a stopped agent may take a while to exit
        self.executed.append(record)

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
        if self.captures is not None:
            time.sleep(1.1)  # libpcap hands over buffered packets within its 1 s timeout
            try:
                self.captures.stop()
                self.captures.merge()
                self.manifest["capture"] = self.captures.statistics()
            except Exception as exc:
                problems.append(f"captures: {exc}")
        self._collect_logs()
        self.progress.set("tearing down")
        try:
            self.lab.stop()
        except Exception as exc:
            problems.append(str(exc))
        self.manifest["timeline"] = self.executed
        self.manifest["status"] = status
        if error:
            self.manifest["error"] = error
        if problems:
            self.manifest["problems"] = problems
        self.manifest["ended_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
        self.manifest["teardown_seconds"] = self.lab.timings.get("stop")
        self._write_manifest()

    def _collect_logs(self) -> None:
        logs = os.path.join(self.dir, "logs")
        os.makedirs(logs, exist_ok=True)
        counts = {}
        for name, node_dir in self.lab.node_dirs.items():
            source = os.path.join(node_dir, LOG_NAME)
            if os.path.exists(source):
                target = os.path.join(logs, f"{name}.jsonl")
                shutil.move(source, target)
                with open(target, "rb") as handle:
                    counts[name] = sum(1 for _ in handle)
        self.manifest["log_events"] = counts

    def _write_manifest(self) -> None:
        path = os.path.join(self.dir, "manifest.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.manifest, handle, indent=2, default=str)
        os.replace(tmp, path)
