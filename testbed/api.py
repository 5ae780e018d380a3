"""The testbed's Python API: what the `testbed` command does, for scripts (docs/API.md).

    import testbed.api as tb

    topo = tb.load_topology("topologies/line3.yaml")         # or tb.topology({...}) from a dict
    with tb.lab(topo) as lab:                                 # built here, torn down on leaving
        print(lab.exec("h1", "ping -c1 -W1 10.0.0.3"))       # the machine's tools in h1's network
        lab.set_link("h1", "s1", loss=0.3)                    # faults as a scenario's timeline has them
        lab.pause("h2"); lab.resume("h2"); lab.kill("h3")
    scenario = tb.load_scenario("scenarios/quickstart.yaml", seed=2, set={"duration": "5s"})
    run = tb.run(scenario, out="runs/mine")                   # one run directory, as `testbed run`
    results = tb.analyze([run.dir])                           # {run id: results.json}, as `testbed analyze`
    sweep = tb.experiment("experiments/abc/dp.yaml", seeds=1)  # as `testbed experiment`: summary, verdicts

Everything goes through the same code as the command line: files and dicts are validated by the
same loaders (errors are testbed.errors.ValidationError, naming the file or "<python>", the field
and what is allowed), faults are the timeline's actions (testbed/actions) carried out by the
nemesis, and a lab leaves nothing behind however the `with` block ends.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import CapabilityError, TestbedError, UsageError, ValidationError
from .faults import DryLab, Nemesis
from .model import Topology
from .network import Lab, ping_all
from .scenario import Scenario, load_scenario as _load_scenario_file, parse_scenario, plan_action
from .topology import ImpairmentError, load_topology as _load_topology_file, parse_topology
from .yamlio import Located

__all__ = ["LabSession", "RunOutcome", "analyze", "experiment", "lab", "load_scenario", "load_topology", "run", "scenario",
           "topology", "CapabilityError", "TestbedError", "UsageError", "ValidationError"]


# -- descriptions ----------------------------------------------------------------------------------

def load_topology(path: str, accept_unemulated: Iterable[str] = ()) -> Topology:
    """A topology file, validated and resolved (generators expanded, addresses assigned)."""
    return _load_topology_file(path, tuple(accept_unemulated))


def topology(spec: Mapping[str, Any], name: str = "<python>") -> Topology:
    """A topology from a dict with the fields of a topology file (`nodes`, `switches`, `links`,
    `generate`, ...)."""
    return parse_topology(Located(_plain(spec), {}, name))


def load_scenario(path: str, seed: Optional[int] = None, set: Optional[Mapping[str, Any]] = None) -> Scenario:
    """A scenario file, validated, its timeline expanded; `set` overrides fields by dotted path
    as `--set` does ({"workload.defaults.params.rate": 50})."""
    overrides = tuple(f"{key}={_yaml_text(value)}" for key, value in (set or {}).items())
    return _load_scenario_file(path, seed=seed, overrides=overrides)


def scenario(spec: Mapping[str, Any], seed: Optional[int] = None, base_dir: str = ".") -> Scenario:
    """A scenario from a dict with the fields of a scenario file; a relative `topology` path is
    taken from `base_dir`."""
    doc = Located(_plain(spec), {}, os.path.join(os.path.abspath(base_dir), "<python>"))
    return parse_scenario(doc, seed)


# -- labs ------------------------------------------------------------------------------------------

class LabSession:
    """A running lab: its nodes, commands in them, and the timeline's faults on demand.

    Use it as a context manager (`with tb.lab(topo) as lab:`), or call `stop()` yourself."""

    def __init__(self, topo: Topology, name: Optional[str] = None, accept_unemulated: Iterable[str] = (),
                 workdir: Optional[str] = None) -> None:
        self.topology = topo
        self._lab = Lab(topo, name, accept_unemulated=accept_unemulated, workdir=workdir)
        self._nemesis: Optional[Nemesis] = None

    # life cycle
    def start(self) -> "LabSession":
        """Check the machine (CapabilityError, UsageError) and build the lab; on failure nothing
        stays behind."""
        self._lab.check()
        self._lab.start()
        self._nemesis = Nemesis(self._lab)
        return self

    def stop(self) -> None:
        """Tear everything down (safe to call twice)."""
        self._nemesis = None
        self._lab.stop()

    def __enter__(self) -> "LabSession":
        return self.start() if self._nemesis is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # what is there
    @property
    def name(self) -> str:
        return self._lab.name

    @property
    def nodes(self) -> List[str]:
        return list(self.topology.nodes)

    def address(self, node: str) -> Optional[str]:
        """The node's first address (without the prefix), as peers reach it."""
        address = self._lab.address(node)
        return str(address.ip) if address else None

    def node_dir(self, node: str) -> str:
        """The node's directory: its config.json and, while its agent runs, its events.jsonl."""
        return self._lab.node_dirs[node]

    def state(self) -> Dict[str, object]:
        """What `testbed ls LAB --json` shows: nodes with their addresses, runtimes, pids."""
        return self._lab.state()

    # commands
    def exec(self, node: str, command: str, timeout: float = 600, check: bool = True) -> str:
        """Run a shell command in the node's network namespace with this machine's tools (ping,
        ip, tcpdump, ...); its output. With `check` a failing command raises TestbedError."""
        self._need(node)
        return self._lab.exec(node, command, timeout=timeout, check=check)

    def run_in(self, node: str, command: str, timeout: float = 30) -> Tuple[Optional[int], str]:
        """Run a shell command inside the node with the node's own tools (in its container);
        (exit status, output), the status None when it timed out."""
        self._need(node)
        return self._lab.exec_in_node(node, command, timeout=timeout)

    def ping_all(self, timeout_s: float = 1.0) -> Dict[Tuple[str, str], bool]:
        """Ping every ordered pair of nodes once; True where a reply came back."""
        return ping_all(self._lab, timeout_s=timeout_s)

    # faults: the timeline's actions, validated as a scenario's
    def act(self, action: str, **fields: Any) -> Optional[Dict[str, Any]]:
        """Carry out one timeline action now, e.g. act("set_link", link=["h1", "s1"], loss=0.1);
        returns what it reports (an exec's exit code). ValidationError for bad fields,
        CapabilityError for what this machine cannot emulate."""
        if self._nemesis is None:
            raise UsageError(f"lab {self.name} is not running: start it first (with tb.lab(topo) as lab: ...)")
        planned = plan_action({"action": action, **{k: _plain(v) for k, v in fields.items()}}, self.topology)
        self._rehearse(planned)
        self._lab.check_action(planned, action)
        return self._nemesis.apply(planned)

    def _rehearse(self, planned) -> None:
        """The action on a lab that does nothing, with the faults active now: what cannot be (a
        jitter without a delay on that direction) is refused before anything changes."""
        trial = Nemesis(DryLab(self.topology))
        trial.link_overrides = copy.deepcopy(self._nemesis.link_overrides)
        trial.links_down = set(self._nemesis.links_down)
        trial.paused, trial.killed = set(self._nemesis.paused), set(self._nemesis.killed)
        try:
            trial.apply(planned)
        except ImpairmentError as exc:
            raise ValidationError("<python>", exc.key, f"{planned.action} on {planned.link[0]}--{planned.link[1]} "
                                  f"with the faults active now: {exc.message}", exc.allowed) from None

    def set_link(self, a: str, b: str, direction: str = "both", **impairments: Any) -> None:
        """Change the impairments of the link between a and b (delay="20ms", loss=0.1, ...), on
        top of its topology values and the other active faults; restore_link() undoes them."""
        self.act("set_link", link=[a, b], direction=direction, **impairments)

    def restore_link(self, a: str, b: str, direction: str = "both") -> None:
        """The link's topology values again (every set_link on it undone), as a set_link's `for:` ends."""
        from .actions import action_class

        planned = plan_action({"action": "link_up", "link": [a, b], "direction": direction}, self.topology)
        planned.action = "set_link"
        planned.params = action_class("set_link")().undo_params({})
        self._nemesis.apply(planned)

    def link_down(self, a: str, b: str, direction: str = "both") -> None:
        self.act("link_down", link=[a, b], direction=direction)

    def link_up(self, a: str, b: str, direction: str = "both") -> None:
        self.act("link_up", link=[a, b], direction=direction)

    def kill(self, node: str) -> None:
        """SIGKILL the node; its interfaces go down and it stays dead."""
        self.act("kill", node=node)

    def stop_agent(self, node: str) -> None:
        self.act("stop", node=node)

    def start_agent(self, node: str) -> None:
        self.act("start", node=node)

    def pause(self, node: str) -> None:
        self.act("pause", node=node)

    def resume(self, node: str) -> None:
        self.act("resume", node=node)

    def partition(self, groups: List[List[str]]) -> None:
        """Nothing crosses between the groups (the nodes not named form one more) until heal()."""
        self.act("partition", groups=groups)

    def heal(self) -> None:
        self.act("heal")

    def move(self, node: str, to: Sequence[float], speed: Optional[float] = None) -> None:
        """Move a node on its radio segment to `to` ([x, y] or [x, y, z] metres): at once, or from
        where it is at `speed` m/s; it stays there afterwards."""
        self.act("move", node=node, to=list(to), **({} if speed is None else {"speed": speed}))

    def position(self, node: str) -> Tuple[float, float, float]:
        """Where the radio medium places the node now (x, y, z metres)."""
        self._need(node)
        if not any(node in segment.members for segment in self.topology.radio.values()):
            raise UsageError(f"node {node!r} is on no radio segment, so it has no position")
        return self._lab.position(node)

    def _need(self, node: str) -> None:
        if node not in self.topology.nodes:
            raise UsageError(f"lab {self.name} has no node {node!r} (nodes: {', '.join(self.nodes[:12])})")
        if self._nemesis is None:
            raise UsageError(f"lab {self.name} is not running: start it first (with tb.lab(topo) as lab: ...)")


def lab(topo: Topology, name: Optional[str] = None, accept_unemulated: Iterable[str] = (),
        workdir: Optional[str] = None) -> LabSession:
    """A lab of the topology, to use in a `with` block (built on entering, torn down on leaving)."""
    return LabSession(topo, name, accept_unemulated, workdir)


# -- runs and analyses -----------------------------------------------------------------------------

@dataclass
class RunOutcome:
    dir: str        # the run directory
    manifest: dict  # its manifest.json

    @property
    def status(self) -> str:
        return self.manifest.get("status", "")

    @property
    def run_id(self) -> str:
        return self.manifest.get("run_id", "")


def run(scenario: Scenario, out: Optional[str] = None, runs_root: str = "runs", accept_unemulated: Iterable[str] = (),
        progress: bool = False) -> RunOutcome:
    """Run a scenario end to end into one run directory (`out`, or runs_root/<run-id>), as
    `testbed run` does; the outcome's status says how it ended (completed, failed, interrupted)."""
    from .run import Run

    execution = Run(scenario, out_dir=out, runs_root=runs_root, accept_unemulated=tuple(accept_unemulated),
                    progress=progress)
    manifest = execution.execute()
    return RunOutcome(execution.dir, manifest)


def analyze(run_dirs: Iterable[str], master: Optional[str] = None, progress: bool = False,
            spark=None) -> Dict[str, dict]:
    """Analyse run directories with PySpark, as `testbed analyze` does: each gets its report/;
    returns {run id: results}. `spark`: a SparkSession to reuse across calls."""
    from spark_analysis.job import analyze as analyze_runs

    return analyze_runs(list(run_dirs), master=master, progress=progress, spark=spark)


def experiment(path: str, out: Optional[str] = None, seeds: Union[int, Sequence[int], None] = None,
               set: Optional[Mapping[str, Any]] = None, hosts: Optional[Sequence[str]] = None,
               analyze: bool = True, master: Optional[str] = None, progress: bool = False,
               accept_code_changes: bool = False, accept_unfaithful: bool = False,
               only: Sequence[str] = (), redo_unfaithful: bool = False) -> Dict[str, Any]:
    """Carry out an experiment file as `testbed experiment` does: every point x seed not complete
    yet into `out` (default runs/experiments/<name>), then (with `analyze`) one Spark analysis and
    the tables, plots, verdicts and index.html. Returns {"directory", "runs": {name: status}, and
    with analyze "summary" (one dict per point and measure) and "shapes" (verdicts)}.
    `accept_code_changes` and `accept_unfaithful` are the command's --accept-code-changes (keep
    complete runs stale only because the code changed) and --accept-unfaithful (judge shapes on
    runs the fidelity monitor called unfaithful). `seeds` is a number N (seeds 1..N) or a list of
    seeds, and `only` shell patterns of point names (--only): a slice of the experiment.
    `redo_unfaithful` makes again the complete runs the fidelity monitor called unfaithful
    (--redo-unfaithful)."""
    from .experiment.runner import Runner
    from .experiment.spec import LOCAL, Host, load_experiment

    extra = tuple(f"{k}={_yaml_text(v)}" for k, v in (set or {}).items())
    host_list = [Host(h) for h in hosts] if hosts else None
    for h in host_list or []:
        if h.target != LOCAL:
            from .remote.target import parse_target
            parse_target(h.target)
    exp = load_experiment(path, seeds=list(seeds) if isinstance(seeds, (list, tuple)) else seeds, extra_sets=extra,
                          hosts=host_list)
    if accept_unfaithful:
        exp.accept_unfaithful = True
    runner = Runner(exp, out or os.path.join("runs", "experiments", exp.name), progress=progress,
                    accept_code_changes=accept_code_changes,
                    only=(only,) if isinstance(only, str) else tuple(only), redo_unfaithful=redo_unfaithful)
    runner.execute()
    outcome: Dict[str, Any] = {"directory": runner.out, "runs": {p.name: p.status for p in runner.planned}}
    if analyze:
        from .experiment.results import write

        res = write(exp, runner, master=master, progress=progress)
        outcome.update(summary=res["summary"], shapes=res["shapes"])
    return outcome


# -- helpers ---------------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """Dicts, lists and tuples as plain dicts and lists (the loaders' input)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _yaml_text(value: Any) -> str:
    """A Python value as --set's YAML text (JSON is YAML; a string stays a string)."""
    import json

    return json.dumps(_plain(value))
