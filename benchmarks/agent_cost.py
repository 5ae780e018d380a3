#!/usr/bin/env python3
"""What an agent costs (issue 68): CPU per idle agent and per message, for the probe role and each
paper's busiest roles, in isolation and at the papers' scale; this checkout's agent against
another commit's (--baseline), alternating run by run; with sampling profiles of where the time
goes; beside two floors, the same work done by a minimal C and a minimal Python program.

    python benchmarks/agent_cost.py [--case NAME ...] [--runs N] [--baseline REF] [--stdlib]
                                    [--profile] [--perf] [--list]

Every run is a real run (testbed.api.run: one container per node, captures, the scenario's
warm-up and workload) of a scenario made for its case; the figures come from its run directory:

- CPU: the host's accounting of each node's container (host.jsonl: every second, from the
  container's cgroup, docs/RUNDIR.md), summed over the measurement window, the workload's steady
  part (from SETTLE_S after its start to its end); not the agents' own estimate;
- messages: the `send` events the agents logged in that window: a send and all it leads to
  (its receive, its delivery, its acknowledgement) are what one message costs;
- per role: its agents' CPU (as a share of one core per agent), their sends and receives (a role
  that mostly receives, as an AbC component, is better described per message it handles); the
  agents' lateness and loop lag from their `fidelity` events; what each agent used (its
  `started` event's `loop` and `json`, agents/speedups.py).

A message's cost is the agents' CPU in the window over the sends in it, gross, and net of the idle
cost (the idle case's CPU per agent of the same variant, from this invocation or the results
file), as issue 68 measured it. Variants: `current` (this checkout's agent image), `baseline`
(--baseline REF: the agent of that commit, built from `git archive`), `stdlib` (--stdlib: this
checkout's agent without uvloop and orjson). Each case runs its variants in turn, A B A B, and
reports medians over --runs runs. The floors (`floor-*` cases) run the same workload as the probe
cases with benchmarks/floors/floor.c and floor.py instead of the agent.

--profile samples the busiest role's agents with py-spy (--gil: only while a thread runs Python,
so the samples are CPU, not waiting) during the last run of each variant; --perf samples the whole
machine with perf (kernel and user space, by program and library). Both are summarised into
benchmarks/results/agent_cost/ beside the raw stacks. Results: benchmarks/results/agent_cost.json
(cases run now replace their entries; the others stay).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import testbed.api as tb  # noqa: E402
from testbed.images import AGENT_IMAGE  # noqa: E402

RESULTS = os.path.join(HERE, "results", "agent_cost.json")
PROFILES = os.path.join(HERE, "results", "agent_cost")
FLOOR_IMAGE = "testbed/agent-cost-floor:latest"
#: the start of the workload left out of the window: agents settle, queues fill
SETTLE_S = 4.0
#: how long a profile samples, within the window
PROFILE_S = 12.0
#: agents of one role sampled at once by --profile
PROFILED_AGENTS = 8


# -- cases ------------------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    description: str
    build: Callable[[int], Any]  # seed → Scenario
    floor: Optional[str] = None  # "c" or "python": the nodes run that floor program, not the agent
    profile_role: Optional[str] = None  # the role --profile samples (default: the one with most sends)
    idle: bool = False  # the idle case: its CPU per agent is what the others' net figures subtract


def _ring(n: int, rate: float, reliable: bool = False, duration: str = "20s"):
    """n nodes on one switch, each sending unicast probes to the next at `rate` a second."""
    def build(seed: int):
        names = [f"p{i}" for i in range(1, n + 1)]
        return tb.scenario({
            "name": f"agent-cost-ring-{n}", "seed": seed, "warmup": "2s", "duration": duration, "quiet": "2s",
            "topology": {"name": f"agent-cost-{n}", "generate": {"shape": "nodes", "groups": {"p": {"count": n}},
                                                               "switch": "lan"}},
            "workload": {"defaults": {"role": "probe", "params": {"rate": rate, "reliable": reliable}},
                         "nodes": {name: {"params": {"to": [names[(i + 1) % n]]}} for i, name in enumerate(names)}},
        }, base_dir=ROOT)
    return build


def _file(path: str, duration: str, **overrides: Any):
    def build(seed: int):
        return tb.load_scenario(os.path.join(ROOT, path), seed=seed,
                                set={"duration": duration, "quiet": "2s", **overrides})
    return build


CASES: Dict[str, Case] = {c.name: c for c in [
    Case("idle-186", "186 agents that send nothing (probe, rate 0): what an idle agent costs",
         _ring(186, 0, duration="25s"), idle=True),
    Case("probe-2", "2 agents, unicast probes to each other at 200 a second each (in isolation)", _ring(2, 200)),
    Case("probe-186", "186 agents in a unicast ring, 5 probes a second each (930 a second in all)", _ring(186, 5)),
    Case("probe-reliable-2", "as probe-2 on the reliable channel (acknowledged)", _ring(2, 200, reliable=True)),
    Case("probe-reliable-186", "as probe-186 on the reliable channel", _ring(186, 5, reliable=True)),
    Case("abc-tree-21", "AbC T[3,2,2] (21 containers), the communication-intensive workload of ci-tree-3-5-5",
         _file("scenarios/abc-paper/ci-tree-3-5-5.yaml", "30s", topology="../../topologies/tree-3-2-2.yaml"),
         profile_role="abc-tree-server"),
    Case("abc-tree-186", "AbC T[3,5,5] (186 containers), ci-tree-3-5-5: every component sending, lambda_t = 15",
         _file("scenarios/abc-paper/ci-tree-3-5-5.yaml", "30s"), profile_role="abc-tree-server"),
    Case("causal-25", "the causal cluster of 25 members, all updating (causal-scale, Figure 4)",
         _file("scenarios/causal-scale.yaml", "20s")),
    Case("causal-125", "the causal cluster of 125 members, all updating (causal-scale, Figure 4)",
         _file("scenarios/causal-scale.yaml", "20s", **{"topology.generate.groups.m.count": 125})),
    Case("deeco-16", "DEECo gossip on 16 radio nodes (deeco-manet's workload on deeco-manet-16)",
         _file("scenarios/deeco-manet.yaml", "30s", topology="../topologies/deeco-manet-16.yaml")),
    Case("deeco-200", "DEECo gossip on 200 radio nodes (deeco-manet-200-sparse, the thesis's scale)",
         _file("scenarios/deeco-manet.yaml", "30s", topology="../topologies/deeco-manet-200-sparse.yaml")),
    Case("floor-c-2", "the C floor (benchmarks/floors/floor.c) doing probe-2's work", _ring(2, 200), floor="c"),
    Case("floor-c-186", "the C floor doing probe-186's work", _ring(186, 5), floor="c"),
    Case("floor-python-2", "the Python floor (benchmarks/floors/floor.py) doing probe-2's work", _ring(2, 200),
         floor="python"),
    Case("floor-python-186", "the Python floor doing probe-186's work", _ring(186, 5), floor="python"),
]}
DEFAULT_CASES = list(CASES)


# -- variants ---------------------------------------------------------------------------------------

@dataclass
class Variant:
    name: str
    image: str
    env: Dict[str, str] = field(default_factory=dict)
    ref: Optional[str] = None

    def describe(self) -> Dict[str, Any]:
        return {"image": self.image, "env": self.env, "ref": self.ref}


def _say(message: str) -> None:
    print(f"  [images] {message}", flush=True)


def current_variant() -> Variant:
    from testbed import dockerd
    from testbed.images import ensure_agent

    ensure_agent(dockerd.client(), _say)
    return Variant("current", AGENT_IMAGE, ref=_git("rev-parse", "--short=12", "HEAD") + ("+" if _dirty() else ""))


def baseline_variant(ref: str) -> Variant:
    """The agent of commit `ref`: its agents/ and Dockerfile from `git archive`, built beside ours."""
    from testbed import dockerd
    from testbed.images import ensure_agent

    sha = _git("rev-parse", "--short=12", ref)
    tag = f"testbed/agent:cost-{sha}"
    with tempfile.TemporaryDirectory(prefix="agent-cost-") as tree:
        archive = subprocess.run(["git", "-C", ROOT, "archive", sha, "agents", "images/agent/Dockerfile"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        ensure_agent(dockerd.client(), _say, root=tree, tag=tag)
    return Variant("baseline", tag, ref=sha)


def floor_image() -> str:
    """An image holding both floors: the C one compiled statically here, the Python one as it is."""
    from testbed.images import build_directory

    with tempfile.TemporaryDirectory(prefix="agent-cost-floor-") as context:
        subprocess.run(["gcc", "-O2", "-static", "-o", os.path.join(context, "floor"),
                        os.path.join(HERE, "floors", "floor.c")], check=True)
        shutil.copy(os.path.join(HERE, "floors", "floor.py"), context)
        with open(os.path.join(context, "Dockerfile"), "w") as fh:
            fh.write("ARG BASE\nFROM ${BASE}\nCOPY floor floor.py /opt/floor/\n")
        build_directory(context, FLOOR_IMAGE, _say)
    return FLOOR_IMAGE


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()


def _dirty() -> bool:
    return bool(_git("status", "--porcelain", "--", "agents", "images/agent"))


def prepare(case: Case, variant: Optional[Variant], seed: int):
    """The case's scenario for one run: the variant's agent image and environment on every agent
    node, or, for a floor, the floor program as every node's command."""
    scenario = case.build(seed)
    topo = scenario.topology
    if case.floor is not None:
        ids = {name: i for i, name in enumerate(topo.nodes, start=1)}
        for name, node in topo.nodes.items():
            peer = node.params["to"][0]
            argv = [str(ids[name]), peer, str(topo.address_of(peer).ip), str(node.params["rate"])]
            node.image = FLOOR_IMAGE
            node.command = (["/opt/floor/floor"] if case.floor == "c" else ["python3", "/opt/floor/floor.py"]) + argv
            node.role, node.params = "idle", {}
        return scenario
    for node in topo.nodes.values():
        if node.image == AGENT_IMAGE:
            node.image = variant.image
            node.env = {**node.env, **variant.env}
    return scenario


# -- one run's figures ------------------------------------------------------------------------------

def _read_jsonl(path: str):
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


def measure(run_dir: str, idle_share: Optional[float]) -> Dict[str, Any]:
    """The run's figures over its window (see the module's description)."""
    with open(os.path.join(run_dir, "manifest.json")) as fh:
        manifest = json.load(fh)
    start = manifest["t0_ns"] + int(SETTLE_S * 1e9)
    end = manifest["workload_end_ns"]
    roles = {name: (node.get("role") or "idle") for name, node in manifest["topology"]["nodes"].items()}
    samples = [s for s in _read_jsonl(os.path.join(run_dir, "host.jsonl"))
               if s["t"] - s["interval_s"] * 1e9 >= start and s["t"] <= end]
    if not samples:
        raise RuntimeError(f"{run_dir}: no host sample inside the window")
    window = (samples[-1]["t"] - (samples[0]["t"] - samples[0]["interval_s"] * 1e9)) / 1e9
    w0, w1 = samples[0]["t"] - samples[0]["interval_s"] * 1e9, samples[-1]["t"]
    cpu_us: Dict[str, int] = collections.Counter()
    for s in samples:
        for node, figures in s["nodes"].items():
            cpu_us[node] += figures["cpu_us"]
    sends: Dict[str, int] = collections.Counter()
    receives: Dict[str, int] = collections.Counter()
    late = collections.Counter()
    lags: List[float] = []
    speedups = collections.Counter()
    for node in roles:
        path = os.path.join(run_dir, "logs", f"{node}.jsonl")
        if not os.path.exists(path):
            continue
        for e in _read_jsonl(path):
            kind = e.get("event")
            if kind == "send" and w0 <= e["t"] <= w1:
                sends[node] += 1
            elif kind == "receive" and w0 <= e["t"] <= w1:
                receives[node] += 1
            elif kind == "fidelity" and w0 <= e["t"] <= w1:
                late["periodic"] += e.get("periodic", 0)
                late["late"] += e.get("late_periodic", 0)
                lags.append(e.get("loop_lag_us", 0) / 1000)
            elif kind == "state" and e.get("state") == "started":
                speedups[f"{e.get('loop', 'asyncio (before agents/speedups.py)')} + "
                         f"{e.get('json', 'json')}"] += 1
    by_role: Dict[str, Dict[str, Any]] = {}
    for node, role in roles.items():
        entry = by_role.setdefault(role, {"agents": 0, "cpu_s": 0.0, "sends": 0, "receives": 0})
        entry["agents"] += 1
        entry["cpu_s"] += cpu_us.get(node, 0) / 1e6
        entry["sends"] += sends.get(node, 0)
        entry["receives"] += receives.get(node, 0)
    for entry in by_role.values():
        handled = entry["sends"] + entry["receives"]
        entry["core_share_per_agent"] = entry["cpu_s"] / window / entry["agents"]
        entry["us_per_send"] = entry["cpu_s"] / entry["sends"] * 1e6 if entry["sends"] else None
        # a role that mostly receives (an AbC component) is better described per message it handles
        entry["us_per_handled"] = entry["cpu_s"] / handled * 1e6 if handled else None
        entry["cpu_s"] = round(entry["cpu_s"], 4)
    agents = len(roles)
    cpu_s = sum(cpu_us.values()) / 1e6
    total_sends = sum(sends.values())
    build = manifest.get("build_seconds") or {}
    ended = manifest.get("ended_at")
    lab = {"build_s": round(sum(build.values()), 3), "create_nodes_s": build.get("create_nodes"),
           "launch_s": build.get("launch"), "teardown_s": manifest.get("teardown_seconds")}
    if ended:  # the workload's end to the run's: the quiet period, stopping, collecting, tearing down
        end_ns = datetime.datetime.fromisoformat(ended).timestamp() * 1e9
        quiet_s = manifest["scenario"].get("quiet_s", 0) * manifest.get("time_dilation", 1.0)
        lab["after_quiet_s"] = round((end_ns - manifest["workload_end_ns"]) / 1e9 - quiet_s, 3)
    out = {"run": os.path.relpath(run_dir, ROOT), "window_s": round(window, 3), "nodes": agents, "lab": lab,
           "cpu_s": round(cpu_s, 4), "core_share_per_agent": cpu_s / window / agents, "sends": total_sends,
           "sends_per_s": total_sends / window,
           "us_per_message": cpu_s / total_sends * 1e6 if total_sends else None,
           "machine_busy": statistics.mean(s["cpu_busy"] for s in samples),
           "late_share": late["late"] / late["periodic"] if late["periodic"] else None,
           "loop_lag_p99_ms": _quantile(sorted(lags), 0.99) if lags else None,
           "speedups": dict(speedups), "roles": by_role}
    if idle_share is not None and total_sends:
        out["us_per_message_net"] = (cpu_s - idle_share * window * agents) / total_sends * 1e6
    return out


def _quantile(ordered: List[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# -- profiles ---------------------------------------------------------------------------------------

def _agent_pids(nodes: List[str]) -> Dict[str, int]:
    """The machine's pid of each named node's agent (its environment names the node)."""
    wanted, found = set(nodes), {}
    for environ in glob.glob("/proc/[0-9]*/environ"):
        pid = int(environ.split("/")[2])
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"-m\0agents" not in fh.read():
                    continue
            with open(environ, "rb") as fh:
                env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
        except (OSError, ValueError):
            continue
        node = env.get(b"TESTBED_NODE", b"").decode()
        if node in wanted:
            found[node] = pid
    return found


class Profiler(threading.Thread):
    """Waits for the run's workload to start, then samples: py-spy on a few agents of one role,
    and/or perf on the whole machine, for PROFILE_S seconds inside the window."""

    def __init__(self, run_dir: str, nodes: List[str], stem: str, floor: bool, pyspy: bool, perf: bool) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.nodes, self.stem, self.floor = run_dir, nodes, stem, floor
        self.pyspy, self.perf = pyspy and not floor, perf
        self.files: Dict[str, str] = {}

    def _workload_started(self) -> bool:
        """An agent logs that its workload started; a floor, which has no warm-up, its first send."""
        path = os.path.join(self.run_dir, "nodes", self.nodes[0], "events.jsonl")
        try:
            with open(path, "rb") as fh:
                text = fh.read()
        except OSError:
            return False
        return b'"workload started"' in text or (self.floor and b'"event":"send"' in text)

    def run(self) -> None:
        for _ in range(1200):
            if self._workload_started():
                break
            time.sleep(0.25)
        else:
            return
        time.sleep(SETTLE_S + (5 if self.floor else 0))  # a floor logs from before the warm-up
        procs = []
        if self.pyspy:
            spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
            for node, pid in sorted(_agent_pids(self.nodes).items()):
                raw = f"{self.stem}-{node}.raw.txt"
                procs.append(subprocess.Popen([spy, "record", "--gil", "--nonblocking", "-r", "1000", "-d",
                                               str(int(PROFILE_S)), "-f", "raw", "-o", raw, "-p", str(pid)],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                self.files.setdefault("pyspy", [])
                self.files["pyspy"].append(raw)
        if self.perf and shutil.which("perf"):
            data = f"{self.stem}.perf.data"
            procs.append(subprocess.Popen(["perf", "record", "-a", "-F", "499", "-g", "-o", data, "--", "sleep",
                                           str(PROFILE_S)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.files["perf"] = data
        for p in procs:
            p.wait()


#: where a sample's innermost frame is, in words: the first rule whose pattern the frame holds
CATEGORIES = (
    ("the event loop's own C code (uvloop)", ("Runner.run (", "run_until_complete", "run_forever")),
    ("the event log (gathering, JSON, writes)", ("EventLog.", "speedups.py", "json/")),
    ("the wire codec (headers, fragments)", ("agents/wire.py", "<string>")),
    ("sending (sendto system calls included)", ("Agent.send", "Agent._sendto", "Agent._send_reliable",
                                                "Agent._expect_ack", "_SelectorDatagramTransport.sendto")),
    ("receiving and acknowledging", ("Agent._received", "Agent._read_acks", "Agent._acknowledged",
                                     "Agent.deliver", "datagram_received", "_read_ready")),
    ("retransmission and housekeeping", ("Agent._retransmit_due", "Agent._housekeeping", "Agent._log_fidelity",
                                         "Monitor.window")),
    ("timers and tasks (asyncio, the agent clock)", ("asyncio/", "agents/clock.py", "Handle._run")),
    ("the role's own code", ("agents/abc/", "agents/causal/", "agents/deeco/", "agents/roles/", "random.py")),
)


def category(frame: str) -> str:
    return next((name for name, marks in CATEGORIES if any(m in frame for m in marks)), "other")


def summarise_pyspy(raws: List[str], out: str, top: int = 40) -> Dict[str, Any]:
    """Self and inclusive shares of the frames in py-spy's collapsed stacks, over all the files,
    and the self samples by category (CATEGORIES)."""
    own, inclusive, total = collections.Counter(), collections.Counter(), 0
    for raw in raws:
        if not os.path.exists(raw):
            continue
        with open(raw) as fh:
            for line in fh:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not count.isdigit():
                    continue
                n = int(count)
                frames = stack.split(";")
                total += n
                own[frames[-1]] += n
                for frame in set(frames):
                    inclusive[frame] += n
    by_category = collections.Counter()
    for frame, n in own.items():
        by_category[category(frame)] += n
    lines = [f"py-spy --gil samples: {total} (1000 a second, while a thread ran Python; a frame of Runner.run itself "
             f"is the event loop's own C code), {len(raws)} agents", "", "share  where (the innermost frame)"]
    lines += [f"{c / total:6.1%}  {name}" for name, c in by_category.most_common()] if total else []
    lines += ["", "self  share  frame"]
    lines += [f"      {c / total:6.1%}  {f}" for f, c in own.most_common(top)] if total else []
    lines += ["", "inclusive  share  frame"]
    lines += [f"           {c / total:6.1%}  {f}" for f, c in inclusive.most_common(top)] if total else []
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return {"samples": total, "by_category": [[name, round(c / total, 4)] for name, c in by_category.most_common()]
            if total else [], "self": [[f, round(c / total, 4)] for f, c in own.most_common(15)] if total else []}


def summarise_perf(data: str, out: str) -> Dict[str, Any]:
    """The machine's samples by program and library (perf report --sort comm,dso)."""
    res = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "comm,dso", "--no-children", "-g",
                          "none"], capture_output=True, text=True)
    rows = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("%"):
            rows.append([parts[1], " ".join(parts[2:]), float(parts[0].rstrip("%")) / 100])
    with open(out, "w") as fh:
        fh.write("perf record -a -F 499 (cpu-clock) over the whole machine: share of samples by program and library\n\n")
        fh.writelines(f"{share:7.2%}  {comm:<18} {dso}\n" for comm, dso, share in rows)
    os.remove(data)
    return {"by_program_and_library": rows[:20]}


# -- driving ----------------------------------------------------------------------------------------

def one_run(case: Case, variant: Optional[Variant], seed: int, out_root: str, idle_share: Optional[float],
            profile: Optional[Tuple[bool, bool]] = None) -> Dict[str, Any]:
    label = variant.name if variant else case.floor
    run_dir = os.path.join(out_root, f"{case.name}-{label}-s{seed}")
    shutil.rmtree(run_dir, ignore_errors=True)
    scenario = prepare(case, variant, seed)
    profiler = None
    if profile is not None and any(profile):
        role = case.profile_role or _busiest_role(scenario)
        nodes = [n for n, node in scenario.topology.nodes.items() if node.role == role][:PROFILED_AGENTS]
        os.makedirs(PROFILES, exist_ok=True)
        stem = os.path.join(PROFILES, f"{case.name}-{label}-{role}")
        profiler = Profiler(run_dir, nodes, stem, case.floor is not None, *profile)
        profiler.start()
    outcome = tb.run(scenario, out=run_dir)
    if outcome.status != "completed":
        raise RuntimeError(f"{case.name} ({label}, seed {seed}): run {outcome.status}: {run_dir}")
    figures = measure(run_dir, idle_share)
    if profiler is not None:
        profiler.join(timeout=PROFILE_S + 60)
        figures["profile"] = {}
        if profiler.files.get("pyspy"):
            figures["profile"]["pyspy"] = summarise_pyspy(profiler.files["pyspy"], stem + ".txt")
            figures["profile"]["pyspy"]["file"] = os.path.relpath(stem + ".txt", ROOT)
        if profiler.files.get("perf") and os.path.exists(profiler.files["perf"]):
            figures["profile"]["perf"] = summarise_perf(profiler.files["perf"], stem + ".perf.txt")
            figures["profile"]["perf"]["file"] = os.path.relpath(stem + ".perf.txt", ROOT)
    return figures


def _busiest_role(scenario) -> str:
    roles = collections.Counter(node.role for node in scenario.topology.nodes.values())
    return roles.most_common(1)[0][0]


def medians(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The median of each figure over the runs, with its range, and per role."""
    def med(values):
        values = [v for v in values if v is not None]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else None

    keys = ("us_per_message", "us_per_message_net", "core_share_per_agent", "sends_per_s", "machine_busy",
            "late_share", "loop_lag_p99_ms")
    out = {k: med([r.get(k) for r in runs]) for k in keys}
    out["runs"] = len(runs)
    out["lab"] = {k: med([r.get("lab", {}).get(k) for r in runs])
                  for k in ("build_s", "create_nodes_s", "launch_s", "teardown_s", "after_quiet_s")}
    roles = sorted({role for r in runs for role in r["roles"]})
    out["roles"] = {role: {k: med([r["roles"].get(role, {}).get(k) for r in runs])
                           for k in ("core_share_per_agent", "us_per_send", "us_per_handled")} for role in roles}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="a case (default: all)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each variant (default 5)")
    parser.add_argument("--baseline", metavar="REF", help="also measure the agent of this commit")
    parser.add_argument("--stdlib", action="store_true", help="also measure this agent without uvloop and orjson")
    parser.add_argument("--speedups", action="append", metavar="NAME=LIST", default=[],
                        help="also measure this agent with TESTBED_AGENT_SPEEDUPS=LIST, as variant NAME")
    parser.add_argument("--profile", action="store_true", help="py-spy profiles of the busiest role")
    parser.add_argument("--perf", action="store_true", help="perf profiles of the whole machine")
    parser.add_argument("--out-runs", default=os.path.join(ROOT, "runs", "agent-cost"),
                        help="where the run directories go (default runs/agent-cost)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--markdown", action="store_true", help="print the results file's tables and exit")
    parser.add_argument("--remeasure", action="store_true",
                        help="compute every stored run's figures again from its run directory (no runs) and exit")
    args = parser.parse_args()
    if args.list:
        for case in CASES.values():
            print(f"{case.name:<20} {case.description}")
        return 0
    if args.markdown:
        with open(RESULTS) as fh:
            print(markdown(json.load(fh)))
        return 0
    if args.remeasure:
        return remeasure()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cases = [CASES[n] for n in (args.case or DEFAULT_CASES)]
    variants = [current_variant()]
    if args.baseline:
        variants.append(baseline_variant(args.baseline))
    if args.stdlib:
        variants.append(Variant("stdlib", AGENT_IMAGE, env={"TESTBED_AGENT_SPEEDUPS": "none"}, ref=variants[0].ref))
    for spec in args.speedups:
        name, _, value = spec.partition("=")
        variants.append(Variant(name, AGENT_IMAGE, env={"TESTBED_AGENT_SPEEDUPS": value}, ref=variants[0].ref))
    if any(c.floor for c in cases):
        floor_image()
    results: Dict[str, Any] = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as fh:
            results = json.load(fh)
    results["machine"] = {"cores": os.cpu_count(), "kernel": os.uname().release}
    results.setdefault("variants", {}).update({v.name: v.describe() for v in variants})
    results.setdefault("cases", {})
    # idle cases first: the others' net figures subtract their CPU per agent
    cases.sort(key=lambda c: not c.idle)
    for case in cases:
        entry = {"description": case.description, "runs": {}, "median": {}}
        lanes = [None] if case.floor else variants
        for index in range(args.runs):
            for variant in lanes:
                label = variant.name if variant else case.floor
                idle = _idle_share(results, label) if not case.idle else None
                figures = one_run(case, variant, seed=index + 1, out_root=args.out_runs, idle_share=idle)
                entry["runs"].setdefault(label, []).append(figures)
                _print_run(case, label, index + 1, figures)
        if args.profile or args.perf:  # one more run each, not counted: the profilers take CPU of their own
            for variant in lanes:
                label = variant.name if variant else case.floor
                figures = one_run(case, variant, seed=args.runs + 1, out_root=args.out_runs,
                                  idle_share=_idle_share(results, label), profile=(args.profile, args.perf))
                entry.setdefault("profiled", {})[label] = figures
                _print_run(case, label, args.runs + 1, figures, "profiled")
        for label, runs in entry["runs"].items():
            entry["median"][label] = medians(runs)
            m = entry["median"][label]
            print(f"== {case.name} {label}: median over {m['runs']}: {_fmt(_m(m, 'core_share_per_agent'), '.4%')} "
                  f"of a core per node; {_fmt(_m(m, 'us_per_message'))} us a message gross, "
                  f"{_fmt(_m(m, 'us_per_message_net'))} net", flush=True)
        results["cases"][case.name] = entry
        os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
        with open(RESULTS, "w") as fh:
            json.dump(results, fh, indent=1)
    print(f"wrote {os.path.relpath(RESULTS, ROOT)}")
    return 0


def _cell(m: Optional[Dict[str, float]], spec: str, scale: float = 1.0) -> str:
    """A median with its range over the runs: 'median (min-max)'."""
    if not m:
        return "-"
    return f"{format(m['median'] * scale, spec)} ({format(m['min'] * scale, spec)}-{format(m['max'] * scale, spec)})"


def markdown(results: Dict[str, Any]) -> str:
    """The results file's figures as Markdown tables: per case and variant the medians (and
    ranges) over the runs; then per case and role."""
    lines = ["| case | variant | runs | CPU per node (% of a core) | µs a message (gross) | µs a message (net of idle) "
             "| sends/s | machine busy | late wake-ups |", "|---|---|---|---|---|---|---|---|---|"]
    roles = ["| case | variant | role | CPU per agent (% of a core) | µs a send | µs a message handled (sent or received) |",
             "|---|---|---|---|---|---|"]
    for name in [n for n in CASES if n in results.get("cases", {})]:
        for label, m in results["cases"][name]["median"].items():
            lines.append(f"| {name} | {label} | {m['runs']} | {_cell(m['core_share_per_agent'], '.3f', 100)} | "
                         f"{_cell(m['us_per_message'], '.0f')} | {_cell(m['us_per_message_net'], '.0f')} | "
                         f"{_cell(m['sends_per_s'], '.0f')} | {_cell(m['machine_busy'], '.0f', 100)}% | "
                         f"{_cell(m['late_share'], '.2f', 100)}% |")
            if len(m["roles"]) > 1:
                for role, r in m["roles"].items():
                    roles.append(f"| {name} | {label} | {role} | {_cell(r['core_share_per_agent'], '.3f', 100)} | "
                                 f"{_cell(r['us_per_send'], '.0f')} | {_cell(r.get('us_per_handled'), '.0f')} |")
    labs = ["| case | variant | building the lab (s) | of which containers | launching agents and captures | "
            "tearing down | from the quiet period's end to the run's |", "|---|---|---|---|---|---|---|"]
    for name in [n for n in CASES if n in results.get("cases", {})]:
        for label, m in results["cases"][name]["median"].items():
            lab = m.get("lab") or {}
            labs.append(f"| {name} | {label} | {_cell(lab.get('build_s'), '.1f')} | "
                        f"{_cell(lab.get('create_nodes_s'), '.1f')} | {_cell(lab.get('launch_s'), '.1f')} | "
                        f"{_cell(lab.get('teardown_s'), '.1f')} | {_cell(lab.get('after_quiet_s'), '.1f')} |")
    return "\n".join(lines + [""] + roles + [""] + labs)


def remeasure() -> int:
    """Every stored run measured again from its directory (this file's `measure`, which may have
    learnt more since), and the medians with it; the idle shares first, as a run does."""
    with open(RESULTS) as fh:
        results = json.load(fh)
    names = sorted(results["cases"], key=lambda n: not CASES[n].idle if n in CASES else True)
    for name in names:
        entry = results["cases"][name]
        for label, runs in entry["runs"].items():
            idle = None if name in CASES and CASES[name].idle else _idle_share(results, label)
            entry["runs"][label] = [dict(measure(os.path.join(ROOT, r["run"]), idle), **(
                {"profile": r["profile"]} if "profile" in r else {})) for r in runs]
            entry["median"][label] = medians(entry["runs"][label])
        for label, run in (entry.get("profiled") or {}).items():
            idle = None if name in CASES and CASES[name].idle else _idle_share(results, label)
            entry["profiled"][label] = dict(measure(os.path.join(ROOT, run["run"]), idle), profile=run.get("profile"))
    with open(RESULTS, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"wrote {os.path.relpath(RESULTS, ROOT)}")
    return 0


def _print_run(case: Case, label: str, seed: int, figures: Dict[str, Any], note: str = "") -> None:
    print(f"{case.name:<19} {label:<8} s{seed}{' ' + note if note else ''}: {figures['core_share_per_agent']:.4%} of a "
          f"core per node, {figures['sends']} sends, {_fmt(figures['us_per_message'])} us a message "
          f"({_fmt(figures.get('us_per_message_net'))} net), machine busy {figures['machine_busy']:.0%}, late "
          f"{_fmt(figures['late_share'], '.2%')}, {figures['speedups']}", flush=True)


def _idle_share(results: Dict[str, Any], label: str) -> Optional[float]:
    idle = results.get("cases", {}).get("idle-186", {}).get("median", {}).get(label)
    return idle["core_share_per_agent"]["median"] if idle and idle.get("core_share_per_agent") else None


def _m(medians_: Dict[str, Any], key: str) -> Optional[float]:
    value = medians_.get(key)
    return value["median"] if value else None


def _fmt(value: Optional[float], spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


if __name__ == "__main__":
    sys.exit(main())
