"""Experiment files (testbed/experiment): parsing, refusals, shapes, statistics, and (network)
real sweeps end to end with an interruption and a resume, and over an SSH host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from testbed.cli import main
from testbed.errors import ValidationError
from testbed.experiment import fingerprint as fp
from testbed.experiment import shapes
from testbed.experiment.results import ci95, lookup
from testbed.experiment.spec import load_experiment

from .conftest import ROOT
from .helpers import benchmark, cli_in_process
from .test_remote import REMOTE_TESTBED, TOPOLOGY, sshd  # noqa: F401 (sshd: the fixture of a real sshd)

SCENARIO = """\
# probes on line3
name: small
topology: ../topologies/rline3.yaml
seed: 3
warmup: 1s
duration: 3s
quiet: 1500ms
workload:
  defaults: {role: probe, params: {rate: 5, to: broadcast}}
"""

EXPERIMENT = """\
name: small-sweep
description: probes at two rates, two seeds
scenarios:
  line: scenarios/small.yaml
grid:
  rate: {path: workload.defaults.params.rate, values: [5, 20]}
seeds: 2
measures:
  sent: {path: messages.all.sent, label: messages sent}
  ratio: messages.all.delivery_ratio
references:
  source: three probes at the rate for three seconds
  values:
    - {measure: sent, point: {rate: 5}, value: 45}
expect:
  - {measure: sent, trend: increasing, over: rate}
  - {measure: sent, ratio: [{rate: 20}, {rate: 5}], range: [3.8, 4.2]}
  - {measure: sent, near_reference: 1.1}
"""


#: the sweep of the real runs below judges its shapes whatever the fidelity monitor says: what it
#: measures (probes sent) is a count that a busy machine does not change, and a noisy machine (CI's)
#: can call a 3-second run unfaithful from 3 of its 45 paced wake-ups late; test_fidelity.py and
#: test_shapes.py test the verdict and what an unfaithful run does to the shapes
SWEEP = EXPERIMENT + "accept_unfaithful: true\n"


def workspace(tmp_path, experiment: str = EXPERIMENT, scenario: str = SCENARIO) -> str:
    (tmp_path / "topologies").mkdir(exist_ok=True)
    (tmp_path / "scenarios").mkdir(exist_ok=True)
    (tmp_path / "topologies" / "rline3.yaml").write_text(TOPOLOGY)
    (tmp_path / "scenarios" / "small.yaml").write_text(scenario)
    path = tmp_path / "exp.yaml"
    path.write_text(experiment)
    return str(path)


# -- the file ------------------------------------------------------------------------------------

def test_points_are_scenarios_crossed_with_the_grid_and_runs_go_seed_by_seed(tmp_path):
    text = EXPERIMENT.replace("scenarios:\n  line: scenarios/small.yaml\n",
                              "scenarios:\n  line: scenarios/small.yaml\n"
                              "  big:\n    file: scenarios/small.yaml\n    set: {duration: 5s}\n")
    text = text.replace("grid:\n", "grid:\n  q: {path: quiet, values: [2s, 3s]}\n")
    exp = load_experiment(workspace(tmp_path, text), extra_sets=("warmup=2s",))
    assert [p.id for p in exp.points] == [
        "line.q=2s.rate=5", "line.q=2s.rate=20", "line.q=3s.rate=5", "line.q=3s.rate=20",
        "big.q=2s.rate=5", "big.q=2s.rate=20", "big.q=3s.rate=5", "big.q=3s.rate=20"]
    big = exp.points[7]
    # the scenario's own overrides, the grid's, then the command line's (last wins)
    assert big.overrides == ('duration="5s"', 'quiet="3s"', "workload.defaults.params.rate=20", 'warmup=2s')
    runs = exp.runs()
    assert len(runs) == 16 and [s for _, s in runs[:8]] == [1] * 8 and runs[8] == (exp.points[0], 2)
    assert [p.id for p in exp.select({"scenario": "big", "rate": 5})] == ["big.q=2s.rate=5", "big.q=3s.rate=5"]


def test_seeds_a_list_and_the_command_lines_count(tmp_path):
    path = workspace(tmp_path, EXPERIMENT.replace("seeds: 2", "seeds: [7, 3, 11]"))
    assert load_experiment(path).seeds == [7, 3, 11]
    assert load_experiment(path, seeds=4).seeds == [1, 2, 3, 4]


def _parts(point, seed, accept=(), code="c0", images=None):
    return fp.parts(fp.point_inputs(point), seed, accept, code, images)


def test_a_fingerprint_follows_the_data_not_the_layout(tmp_path):
    exp = load_experiment(workspace(tmp_path))
    point = exp.points[0]
    before = _parts(point, 1)
    assert fp.digest(_parts(point, 2)) != fp.digest(before)
    (tmp_path / "scenarios" / "small.yaml").write_text("# another comment\n" + SCENARIO.replace("seed: 3", "seed:   3"))
    assert _parts(point, 1) == before and fp.stale_reasons(before, _parts(point, 1), {}) == []
    (tmp_path / "topologies" / "rline3.yaml").write_text(TOPOLOGY.replace("s2, s3]]", "s2, s3], [s1, s3]]"))
    assert fp.stale_reasons(before, _parts(point, 1), {}) == ["the topology changed"]


def test_a_stale_run_says_which_part_changed(tmp_path):
    """Every part of a run's fingerprint, changed alone, makes it stale with a reason in words;
    the code's reason names the files that changed."""
    exp = load_experiment(workspace(tmp_path))
    point = exp.points[0]
    before = _parts(point, 1, images={"example/flood:latest": "sha256:aaa"})
    code_files = {"c0": {"agents/roles/probe.py": "1", "testbed/run.py": "2"},
                  "c1": {"agents/roles/probe.py": "9", "testbed/run.py": "2", "agents/new.py": "3"}}
    assert fp.stale_reasons(before, _parts(point, 1, code="c1"), code_files) == [
        "the code changed (agents/new.py, agents/roles/probe.py)"]
    assert fp.stale_reasons(before, _parts(point, 1, accept=("delay",)), code_files) == [
        "accepted unemulated impairments: none before, delay now"]
    now = _parts(point, 1, images={"example/flood:latest": "sha256:bbb"})
    now["images"] = {"example/flood:latest": "sha256:bbb"}  # the scenario's nodes would use it
    before["images"] = {"example/flood:latest": "sha256:aaa"}
    assert fp.stale_reasons(before, now, code_files) == [
        "image example/flood:latest is another (sha256:aaa before, sha256:bbb now)"]
    now["images"] = None  # the engine did not answer: images are not compared
    assert fp.stale_reasons(before, now, code_files) == []
    assert fp.stale_reasons(None, now, code_files)[0].startswith("made before the ledger recorded")
    (tmp_path / "scenarios" / "small.yaml").write_text(SCENARIO.replace("duration: 3s", "duration: 4s"))
    assert fp.stale_reasons(before, _parts(point, 1), code_files) == ["the scenario changed"]


def test_a_mobility_trace_is_part_of_the_fingerprint_and_of_a_remote_runs_inputs(tmp_path):
    """A radio segment's trace is a file the run reads: its content is in the fingerprint, and a
    remote run uploads it beside the topology."""
    from testbed.remote.inputs import scenario_inputs
    from testbed.scenario import load_scenario

    (tmp_path / "topologies").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "topologies" / "moves.csv").write_text("0,0,0,0\n0,1,10,0\n")
    (tmp_path / "topologies" / "air.yaml").write_text(
        "# two radios\nname: air\ndefaults: {runtime: process}\nnodes: {a: {}, b: {}}\n"
        "radio: {air: {members: [a, b], range: 100, trace: moves.csv}}\n")
    (tmp_path / "scenarios" / "air.yaml").write_text("# air\nname: air\ntopology: ../topologies/air.yaml\n")
    (tmp_path / "exp.yaml").write_text("# e\nname: e\nscenarios: {s: scenarios/air.yaml}\nmeasures: {m: a.b}\n")
    exp = load_experiment(str(tmp_path / "exp.yaml"))
    before = _parts(exp.points[0], 1)
    assert list(before["files"]) == ["trace of radio segment air: moves.csv"]
    (tmp_path / "topologies" / "moves.csv").write_text("0,0,0,0\n0,1,20,0\n")
    assert fp.stale_reasons(before, _parts(exp.points[0], 1), {}) == ["trace of radio segment air: moves.csv changed"]
    scenario = load_scenario(str(tmp_path / "scenarios" / "air.yaml"))
    inputs = scenario_inputs(str(tmp_path / "scenarios" / "air.yaml"), scenario)
    assert sorted(rel for _, rel in inputs.files) == ["scenarios/air.yaml", "topologies/air.yaml",
                                                       "topologies/moves.csv"]


def test_the_code_digest_ignores_comments_and_docstrings_and_follows_code(tmp_path):
    from testbed import provenance

    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "m.py"
    source.write_text('"""Doc."""\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n')
    parts = (("pkg", ()),)
    first = provenance.digest(parts, root=str(tmp_path), cached=False)
    source.write_text('"""Another doc."""\n\n\ndef f(x):  # layout\n    return x + 1\n')
    assert provenance.digest(parts, root=str(tmp_path), cached=False)[0] == first[0]
    source.write_text('def f(x):\n    return x + 2\n')
    second = provenance.digest(parts, root=str(tmp_path), cached=False)
    assert second[0] != first[0] and provenance.changed_files(first[1], second[1]) == ["pkg/m.py"]
    code, files = provenance.digest(provenance.RUN_CODE, cached=False)
    assert "agents/wire.py" in files and "testbed/run.py" in files and "images/agent/Dockerfile" in files
    assert not any(f.startswith(("testbed/experiment/", "spark_analysis/")) for f in files), \
        "the experiment layer and the analysis do not make runs"


BAD = [
    # (what the file says, the field named, words of the message)
    ("", "", "the file is empty"),
    ("name: x\nmeasures: {a: b.c}\n", "scenarios", "missing field 'scenarios'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b.c}\ncolour: red\n", "colour", "unknown field"),
    ("scenarios: {s: nowhere.yaml}\nmeasures: {a: b.c}\n", "scenarios.s.file", "no scenario file 'nowhere.yaml'"),
    ("scenarios: {1s: scenarios/small.yaml}\nmeasures: {a: b.c}\n", "scenarios.1s", "cannot label"),
    ("scenarios: {s: scenarios/small.yaml}\n", "measures", "missing field 'measures'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: 'b..c'}\n", "measures.a.path", "is not allowed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {rate: [1, 2]}\n", "grid.rate",
     "needs {path: ..., values: [...]}"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {workload.defaults.params.rate: []}\n",
     "grid.workload.defaults.params.rate", "non-empty list"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {workload.defaults.params.rate: [1, 2, 1]}\n",
     "grid.workload.defaults.params.rate", "the value 1 is given twice"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {workload.defaults.params.rate: [5, -1]}\n",
     "grid", "point s.rate=-1: "),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {workload.defaults.params.rate: [5, .nan]}\n",
     "grid.workload.defaults.params.rate[1]", "nan is not allowed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {duration.x: [5]}\n", "grid",
     "'duration' is not a mapping"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nseeds: 0\n", "seeds", "0 is not allowed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\ngrid: {s: {path: seed, values: [1, 2]}}\n", "grid.s",
     "the experiment gives each run its seed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nset: {seed: 4}\n", "set.seed",
     "the experiment gives each run its seed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nseeds: '3'\n", "seeds", "is not allowed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nseeds: [1, 1]\n", "seeds", "a seed is given twice"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nseeds: [1, -4]\n", "seeds[1]", "-4 is not a seed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nreferences: {values: [{measure: z, point: s, value: 1}]}\n",
     "references.values[0].measure", "no measure 'z'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nreferences: {values: [{measure: a, point: t, value: 1}]}\n",
     "references.values[0].point", "no scenario 't'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nreferences: {values: [{measure: a, point: s, value: 1}]}\n",
     "references.values[0].source", "no source"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nreferences: {source: x, values: [{measure: a, point: s, "
     "value: [3, 1]}]}\n", "references.values[0].value", "LOW is above HIGH"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a}]\n", "expect[0]", "no kind of shape"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, order: [s, s], trend: increasing}]\n",
     "expect[0]", "exactly one kind"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, order: [s]}]\n", "expect[0].order",
     "at least two points"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, trend: up, over: r}]\n",
     "expect[0].trend", "unknown trend 'up'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, trend: increasing, over: r}]\n",
     "expect[0].over", "no grid parameter 'r'"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, ratio: [s, s], range: [2]}]\n",
     "expect[0].range", "expected [LOW, HIGH]"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, near_reference: 1.5}]\n",
     "expect[0].measure", "no reference value for a"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, near_reference: 0.5}]\n",
     "expect[0].near_reference", "0.5 is not allowed"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nexpect: [{measure: a, order: [s, t], colour: 1}]\n",
     "expect[0].colour", "unknown field"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nhosts: ['root@']\n", "hosts[0].target", "empty"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nhosts: [{target: local, key: k}]\n", "hosts[0].key",
     "for a remote host"),
    ("scenarios: {s: scenarios/small.yaml}\nmeasures: {a: b}\nhosts: [local, local]\n", "hosts[1]", "listed twice"),
    ("a: &a [*a]\n", "a[0]", "alias *a refers to a value that contains it"),
]


@pytest.mark.parametrize("text,field,words", BAD, ids=[f"{i}-{b[1] or 'file'}" for i, b in enumerate(BAD)])
def test_bad_experiment_files_are_refused_with_the_line_and_field(tmp_path, text, field, words):
    path = workspace(tmp_path, text)
    with pytest.raises(ValidationError) as info:
        load_experiment(path)
    exc = info.value
    assert exc.file == path and exc.field == field and words in str(exc), str(exc)
    if text:
        assert exc.line is not None, str(exc)


def test_the_command_refuses_a_bad_file_with_exit_2_and_makes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = workspace(tmp_path, EXPERIMENT.replace("values: [5, 20]", "values: [5, twenty]"))
    assert main(["experiment", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:5: grid: point line.rate=twenty: " in err and "'twenty' is not allowed" in err
    assert not (tmp_path / "runs").exists()
    assert main(["experiment", workspace(tmp_path), "--seeds", "0"]) == 2
    assert main(["experiment", workspace(tmp_path), "--host", "root@"]) == 2
    assert main(["experiment", workspace(tmp_path), "--set", "nonsense"]) == 2
    assert not (tmp_path / "runs").exists()


def test_the_plan_lists_every_run_without_running_any(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", workspace(tmp_path), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "2 points × 2 seeds = 4 runs" in out and out.count("to run") == 4 and "line.rate=20-s2" in out
    assert not (tmp_path / "runs").exists()


def test_a_slice_of_seeds_and_points_plans_only_its_runs(tmp_path, capsys, monkeypatch):
    """--seeds 4,5 and --only PATTERN carry out a slice of an experiment (a set too long for one
    sitting); a pattern that names no point, or a bad seed list, is refused with exit 2 and the
    points there are, and nothing is made."""
    from testbed.experiment.runner import Runner

    monkeypatch.chdir(tmp_path)
    path = workspace(tmp_path)
    assert main(["experiment", path, "--plan", "--seeds", "4,2", "--only", "*rate=20"]) == 0
    out = capsys.readouterr().out
    assert "1 points × 2 seeds = 2 runs" in out and out.count("to run") == 2
    assert "line.rate=20-s4" in out and "line.rate=20-s2" in out and "rate=5-" not in out
    assert main(["experiment", path, "--plan", "--seeds", "5,"]) == 0  # seed 5 alone
    out = capsys.readouterr().out
    assert "2 points × 1 seed = 2 runs" in out and "line.rate=5-s5" in out and "-s1" not in out
    exp = load_experiment(path, seeds=[3])
    runner = Runner(exp, str(tmp_path / "out"), progress=False, only=("line.rate=5", "line.rate=2?"))
    assert [p.name for p in runner.plan()] == ["line.rate=5-s3", "line.rate=20-s3"]
    for argv in (["--only", "tree*"], ["--seeds", "2,x"], ["--seeds", "3,3"], ["--seeds", "1,-2"], ["--seeds", ""],
                 ["--seeds", "²"], ["--seeds", ","]):
        assert main(["experiment", path, "--plan", *argv]) == 2, argv
    err = capsys.readouterr().err
    assert "--only tree*: no point of small-sweep is called so" in err and "line.rate=5, line.rate=20" in err
    assert "3,3 is not allowed" in err and "--seeds 2,x: not allowed" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


# -- statistics (the shapes: tests/test_shapes.py) -----------------------------------------------

def test_the_confidence_interval_is_students_t_over_seeds():
    mean, sd, low, high = ci95([1.0, 2.0, 3.0])
    assert (mean, sd) == (2.0, 1.0)
    assert high - mean == pytest.approx(4.302653 / 3 ** 0.5, rel=1e-6)  # t(0.975, 2) = 4.3027
    assert ci95([5.0]) == (5.0, None, None, None) and ci95([]) == (None, None, None, None)


def test_an_over_time_plot_draws_each_points_reference_in_its_curves_colour():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from testbed.experiment.report import _reference_level

    fig, ax = plt.subplots()
    assert not _reference_level(ax, None, "C0") and not _reference_level(ax, {"reference_low": None}, "C0")
    assert not ax.lines
    assert _reference_level(ax, {"reference_low": 800, "reference_high": 800}, "C1")
    assert [tuple(line.get_ydata()) for line in ax.lines] == [(800, 800)] and ax.lines[0].get_linestyle() == ":"
    assert _reference_level(ax, {"reference_low": 5.5, "reference_high": 6}, "C2")
    assert [tuple(line.get_ydata()) for line in ax.lines[1:]] == [(5.5, 5.5), (6, 6)] and len(ax.patches) == 1
    assert ax.lines[2].get_color() == "C2"
    plt.close(fig)


def test_a_measure_path_reads_results_and_is_none_when_absent():
    res = {"abc": {"delivery_time": {"mean_ms": 3.5}}, "list": [{"a": 1}]}
    assert lookup(res, ("abc", "delivery_time", "mean_ms")) == 3.5
    assert lookup(res, ("abc", "nothing")) is None and lookup(res, ("list", "0", "a")) == 1


def test_a_misspelt_measure_path_is_an_error_naming_the_nearest_keys(tmp_path):
    from testbed.experiment.measures import UnresolvedMeasures, check, nearest

    text = EXPERIMENT.replace("  ratio: messages.all.delivery_ratio\n", "  ratio: delivery.ratio\n"
                                                                       "  whole: messages.all\n")
    exp = load_experiment(workspace(tmp_path, text))
    results = {"r1": {"messages": {"all": {"sent": 45, "delivery_ratio": 0.98, "delivered": 90}},
                      "run": {"id": "x", "duration_s": 3.0}},
               "r2": {"messages": {"all": {"sent": 46, "delivery_ratio": 0.97}}}}
    with pytest.raises(UnresolvedMeasures) as err:
        check(exp, results, after="the runs are kept")
    problems = {p.field: p for p in err.value.problems}
    assert sorted(problems) == ["measures.ratio.path", "measures.whole.path"]
    ratio = problems["measures.ratio.path"]
    assert ratio.file == exp.source and ratio.line == 10
    assert "delivery.ratio is in none of the 2 analysed runs' results" in str(ratio)
    assert ratio.allowed.startswith("the nearest paths that exist: messages.all.delivery_ratio"), ratio.allowed
    assert "is a mapping" in str(problems["measures.whole.path"]) and "messages.all.sent" in str(
        problems["measures.whole.path"])
    assert err.value.exit_code == 2 and str(err.value).endswith("the runs are kept")
    check(exp, {})  # nothing analysed yet: nothing to say
    # a path that is there but null in every run (a success rate where nothing was asked, in a
    # slice of the experiment without the runs that ask) is a real path, not a misspelt one
    text = EXPERIMENT.replace("  ratio: messages.all.delivery_ratio\n", "  ratio: recovery.success_rate\n")
    nulls = {"r1": {"messages": {"all": {"sent": 45}}, "recovery": {"requests": 0, "success_rate": None}}}
    check(load_experiment(workspace(tmp_path, text)), nulls)
    with pytest.raises(UnresolvedMeasures):
        check(load_experiment(workspace(tmp_path, text.replace("recovery.success_rate", "recovery.sucess_rate"))),
              nulls)
    assert nearest("abc.delivery_time.mean", ["abc.delivery_time.mean_ms", "abc.gap.mean_ms", "run.id"])[0] == \
        "abc.delivery_time.mean_ms"
    assert nearest("zzz", ["abc.delivery_time.mean_ms"]) == []


def test_every_shape_kind_is_in_the_schema():
    kinds = {entry["required"][1] for entry in shapes.schema()["oneOf"]}
    assert kinds == {k.KEY for k in shapes.KINDS}


def test_the_shipped_experiments_load():
    folder = os.path.join(ROOT, "experiments")
    files = [os.path.join(d, f) for d, _, names in os.walk(folder) for f in names if f.endswith(".yaml")]
    assert files
    for path in files:
        assert open(path).readline().startswith("# "), path
        exp = load_experiment(path)
        assert exp.points and exp.measures


# -- real runs -----------------------------------------------------------------------------------

def _testbed(cwd, *args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "testbed", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.mark.network
def test_a_sweep_runs_resumes_after_an_interruption_and_reruns_only_what_changed(tmp_path, no_leftovers, monkeypatch,
                                                                                  capsys, spark):
    path = workspace(tmp_path, SWEEP)
    out = tmp_path / "runs" / "experiments" / "small-sweep"
    proc = _testbed(tmp_path, "experiment", path)
    deadline = time.monotonic() + 180
    while not (out / "runs" / "line.rate=20-s1" / "manifest.json").exists():  # the second run has started
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted: 1 of 4 runs complete; run the same command again to resume" in stderr
    ledger = json.loads((out / "experiment.json").read_text())
    assert ledger["runs"]["line.rate=5-s1"]["status"] == "completed"
    assert ledger["runs"]["line.rate=20-s1"]["status"] == "interrupted"
    first = (out / "runs" / "line.rate=5-s1" / "manifest.json").stat().st_mtime_ns

    code, stdout, stderr = cli_in_process("experiment", path, cwd=tmp_path)  # resumed, in this process
    assert code == 0, stderr
    assert "4 runs (2 points × 2 seeds), 1 already complete, 3 to run on 1 host" in stderr
    assert "line.rate=5-s1" not in stderr.split("already complete")[1], "a complete run is not run again"
    assert (out / "runs" / "line.rate=5-s1" / "manifest.json").stat().st_mtime_ns == first
    assert "left, about" in stderr  # progress: runs left and the time remaining
    # the tidy table, the summary with the reference, the verdicts, plots and index
    import pandas as pd

    runs = pd.read_parquet(out / "runs.parquet")
    assert sorted(runs["run"]) == sorted(["line.rate=5-s1", "line.rate=20-s1", "line.rate=5-s2", "line.rate=20-s2"])
    # each run's fidelity, counted in the summary line as the runs' table has it
    counts = runs["fidelity"].value_counts()
    assert set(counts.index) <= {"faithful", "degraded", "unfaithful"}
    assert "fidelity: " + ", ".join(f"{counts[v]} {v}" for v in ("faithful", "degraded", "unfaithful")
                                    if v in counts) in stdout
    # three probes for three seconds: 15 or 16 sends each at 5/s (the last may fall on the edge), 60 or 61 at 20/s
    sent = dict(zip(runs["run"], runs["sent"]))
    assert all(45 <= sent[f"line.rate=5-s{k}"] <= 48 and 180 <= sent[f"line.rate=20-s{k}"] <= 183 for k in (1, 2)), sent
    assert list(pd.read_csv(out / "runs.csv")["seed"]) == list(runs["seed"])
    def sent_of(run):
        return float(runs.loc[runs["run"] == run, "sent"].iloc[0])

    summary = pd.read_csv(out / "summary.csv")
    sent = summary[summary["measure"] == "sent"].set_index("point")
    assert sent.loc["line.rate=5", "n"] == 2
    assert sent.loc["line.rate=5", "mean"] == pytest.approx((sent_of("line.rate=5-s1") + sent_of("line.rate=5-s2")) / 2)
    assert sent.loc["line.rate=5", "reference"] == 45 and 180 <= sent.loc["line.rate=20", "mean"] <= 183
    # the verdicts rest on intervals over the two seeds: the fourfold rise is shown (Welch), and
    # the ratio's and the reference's intervals are those of the stats over these very values
    shapes = {s["kind"]: s for s in json.loads((out / "shapes.json").read_text())}
    assert shapes["trend"]["verdict"] == "valid"
    from testbed.experiment import stats

    five, twenty = ([sent_of(f"line.rate={r}-s{k}") for k in (1, 2)] for r in (5, 20))
    (ratio_test,) = shapes["ratio"]["groups"][0]["tests"]
    q, low, high = stats.ratio(twenty, five)
    assert (ratio_test["estimate"], ratio_test["low"], ratio_test["high"]) == (q, low, high)
    assert shapes["ratio"]["verdict"] == ("valid" if 3.8 <= low and high <= 4.2 else "not shown")
    assert shapes["near_reference"]["verdict"] in ("valid", "not shown")
    assert "shape valid                  sent increasing over rate" in stdout
    assert "Welch rise over the range of rate" in stdout  # the interval judged, printed
    verdict_table = pd.read_parquet(out / "shapes.parquet")
    assert set(verdict_table["kind"]) == {"trend", "ratio", "near_reference"}
    assert verdict_table.loc[verdict_table["kind"] == "ratio", "low"].iloc[0] == pytest.approx(low)
    assert (out / "plots" / "sent.png").stat().st_size > 1000
    index = (out / "index.html").read_text()
    assert "runs/line.rate=20-s2/report/index.html" in index and "three probes at the rate" in index
    assert "intervals judged" in index
    assert all((out / "runs" / r / "report" / "results.json").is_file() for r in runs["run"])
    ledger = json.loads((out / "experiment.json").read_text())
    from testbed import provenance

    code = provenance.run_code()
    assert {e["parts"]["code"] for e in ledger["runs"].values()} == {code} and code in ledger["code"]
    made_by = json.loads((out / "runs" / "line.rate=5-s1" / "manifest.json").read_text())["versions"]["code"]
    assert made_by == code and "made by other code" not in stderr
    assert {e["analysed_by"] for e in ledger["runs"].values()} == {provenance.analysis_code()}

    # a misspelt measure: an error after the analysis, naming the nearest key; the runs are kept
    (tmp_path / "exp.yaml").write_text(SWEEP.replace("ratio: messages.all.delivery_ratio",
                                                          "ratio: delivery.ratio"))
    code, stdout, stderr = cli_in_process("experiment", path, "--no-run", cwd=tmp_path)
    assert code == 2, stderr
    assert f"{path}:10: measures.ratio.path: delivery.ratio is in none of the 4 analysed runs' results" in stderr
    assert "nearest paths that exist: messages.all.delivery_ratio" in stderr
    code, _, stderr = cli_in_process("experiment", path, "--plan", cwd=tmp_path)  # checked against the runs analysed
    assert code == 2 and "delivery.ratio" in stderr
    (tmp_path / "exp.yaml").write_text(SWEEP)

    # a change of the agents' code makes every run stale, and the plan names the file
    from testbed.cli.experiment import show_plan
    from testbed.experiment.runner import Runner

    real = provenance.digest

    def touched(parts=provenance.RUN_CODE, root=provenance.ROOT, cached=True):
        digest, files = real(parts, root, cached)
        if parts == provenance.RUN_CODE:
            files = dict(files, **{"agents/roles/probe.py": "another"})
            digest = "touched-" + digest[:8]
        return digest, files

    monkeypatch.setattr(provenance, "digest", touched)
    runner = Runner(load_experiment(path), str(out), progress=False)
    assert show_plan(runner) == 0
    monkeypatch.undo()
    assert "stale: the code changed (agents/roles/probe.py)" in capsys.readouterr().out
    assert {p.status for p in runner.planned} == {"pending"}
    assert runner.planned[0].stale == ["the code changed (agents/roles/probe.py)"]

    # a third rate: only its two runs are made; the four others are kept
    (tmp_path / "exp.yaml").write_text(SWEEP.replace("values: [5, 20]", "values: [5, 20, 10]")
                                       .replace("range: [3.8, 4.2]", "range: [3.8, 4.2]}\n  - {measure: ratio, "
                                                "trend: non-increasing, over: rate"))
    import testbed.api as tb

    outcome = tb.experiment(path, out=str(out))  # the Python API, as the command
    assert sorted(outcome["runs"].values()) == ["complete"] * 4 + ["completed"] * 2
    assert outcome["shapes"][0]["verdict"] == "valid"  # 5 < 10 < 20: rising at every step, and overall
    assert [t["what"] for t in outcome["shapes"][0]["groups"][0]["tests"]][:2] == [
        "Theil–Sen rise over the range of rate", "rise from rate=5 to 10"]
    assert outcome["shapes"][-1]["verdict"] != "invalid"  # the delivery ratio does not fall
    means = [r["mean"] for r in outcome["summary"] if r["measure"] == "sent"]
    assert [round(m / 45) for m in means] == [1, 4, 2], means
    ledger = json.loads((out / "experiment.json").read_text())
    assert len(ledger["runs"]) == 6 and (out / "runs" / "line.rate=10-s2").is_dir()
    assert (out / "runs" / "line.rate=5-s1" / "manifest.json").stat().st_mtime_ns == first
    runs = pd.read_parquet(out / "runs.parquet")
    assert sorted({round(v / 45) for v in runs["sent"]}) == [1, 2, 4]


@pytest.mark.network
def test_a_host_that_fails_leaves_the_pool_and_its_runs_complete_elsewhere(tmp_path, sshd, no_leftovers,  # noqa: F811
                                                                           spark):
    """Three hosts: a healthy sshd, a second sshd whose testbed command is broken, and a port where
    nothing listens. The unreachable host leaves the pool at its first run, the broken one after
    two failures in a row (--bench-after 2); their runs go to the healthy host, which makes all
    three there and brings them back for the analysis, and the summary and the ledger name the
    hosts that left."""
    from .test_remote import Sshd, _free_port

    (tmp_path / "broken-sshd").mkdir()
    broken = Sshd(tmp_path / "broken-sshd")
    try:
        known = tmp_path / "known_hosts"
        known.write_text(sshd.host_key_line + "\n" + broken.host_key_line + "\n")
        nowhere = f"root@127.0.0.1:{_free_port()}"
        common = f"key: {sshd.dir / 'user_key'}, known_hosts: {known}, remote_dir: {tmp_path / 'remote'}"
        hosts = (f"hosts:\n  - {{target: '{sshd.target}', {common}, remote_testbed: {REMOTE_TESTBED}}}\n"
                 f"  - {{target: '{broken.target}', key: {broken.dir / 'user_key'}, known_hosts: {known}, "
                 f"remote_dir: {tmp_path / 'remote-b'}, remote_testbed: /bin/false}}\n"
                 f"  - {{target: '{nowhere}', {common}}}\n")
        text = EXPERIMENT.replace("seeds: 2", "seeds: 1").replace("values: [5, 20]", "values: [5, 10, 20]") \
            .split("references:")[0] + hosts
        path = workspace(tmp_path, text)
        code, stdout, stderr = cli_in_process("experiment", path, "--bench-after", "2", cwd=tmp_path)
    finally:
        broken.stop()
    assert code == 0, stderr
    out = tmp_path / "runs" / "experiments" / "small-sweep"
    ledger = json.loads((out / "experiment.json").read_text())
    assert {name: e["status"] for name, e in ledger["runs"].items()} == {
        f"line.rate={r}-s1": "completed" for r in (5, 10, 20)}
    assert {e["host"] for e in ledger["runs"].values()} == {sshd.target}
    benched = ledger["hosts_benched"]
    assert sorted(benched) == sorted([broken.target, nowhere])
    assert benched[nowhere].startswith("cannot be reached") and "2 runs failed in a row" in benched[broken.target]
    assert f"host {nowhere} leaves the pool: cannot be reached" in stderr
    assert f"host {broken.target} left the pool: 2 runs failed in a row" in stdout
    assert "3 of 3 runs analysed" in stdout
    # the runs ran there, came back for the analysis, and the remote work directory went with them
    manifest = json.loads((out / "runs" / "line.rate=5-s1" / "manifest.json").read_text())
    assert manifest["scenario"]["source"].startswith(str(tmp_path / "remote"))
    assert os.listdir(tmp_path / "remote") == [], "the remote work directory is removed once downloaded"


HANGING_RUN = """\
import os, signal, subprocess, sys, time
sys.path.insert(0, {root!r})
from testbed.rundir import record_running, write_manifest
out = sys.argv[sys.argv.index("--out") + 1]
os.makedirs(out)
write_manifest(out, {{"manifest_version": 1, "run_id": "hang", "status": "running", "started_ns": time.time_ns()}})
record_running("run-hang0001", out)
signal.signal(signal.SIGINT, signal.SIG_IGN)  # like a run in its teardown
child = subprocess.Popen(["sleep", "300"])
with open(os.path.join(out, "child.pid"), "w") as fh:
    fh.write(str(child.pid))
time.sleep(300)
"""


def test_a_run_past_its_time_limit_that_ignores_ctrl_c_is_killed_with_its_children_and_its_directory_finished(
        tmp_path):
    """A campaign goes on past a run that hangs: told to stop at its time limit, killed with its
    process group when it does not stop within the grace period, its run directory finished as
    `testbed clean` finishes a killed run's, and counted as failed with the reason. (The run is a
    stand-in that ignores Ctrl-C, like a run whose teardown hangs; the real runs' stop at the
    limit is the next test.)"""
    from testbed.cleanup import _gone
    from testbed.experiment.runner import Runner
    from testbed.rundir import read_manifest, running_in

    fake = tmp_path / "hanging-python"
    fake.write_text(f"#!{sys.executable}\n" + HANGING_RUN.format(root=ROOT))
    fake.chmod(0o755)
    exp = load_experiment(workspace(tmp_path), seeds=[1])
    runner = Runner(exp, str(tmp_path / "out"), progress=False, python=str(fake), only=("line.rate=5",),
                    run_limit_s=3, stop_grace_s=2)
    started = time.monotonic()
    assert runner.execute() == {"failed": 1}
    (p,) = runner.planned
    assert time.monotonic() - started < 60
    assert p.error.startswith("killed: it went on past its time limit (3s) and did not stop within 2s"), p.error
    target = runner.run_dir(p.name)
    with open(os.path.join(target, "child.pid")) as fh:
        child = int(fh.read())
    assert _gone(child), "the run's child died with it"
    assert running_in(target) is None
    manifest = read_manifest(target)
    assert manifest["status"] == "aborted" and "was killed" in manifest["error"]
    assert json.loads((tmp_path / "out" / "experiment.json").read_text())["runs"][p.name]["status"] == "failed"


STAND_IN_RUN = """\
import json, os, sys
out = sys.argv[sys.argv.index("--out") + 1]
os.makedirs(out)
with open(os.path.join(out, "manifest.json"), "w") as fh:
    json.dump({{"manifest_version": 1, "run_id": "stand-in", "status": {status!r}}}, fh)
open(os.path.join(out, "made-by-the-remake"), "w").close()
sys.exit({code})
"""


def test_a_complete_run_made_again_is_kept_until_its_remake_completes(tmp_path):
    """A stale complete run (made by other code) stays in place when its remake fails, or when
    the experiment remaking it is killed (the next command puts it back); only a remake that
    completes replaces it. (The runs are stand-ins that write a manifest and exit.)"""
    from testbed.experiment import runner as runner_module
    from testbed.experiment.runner import Runner

    def stand_in(status, code):
        fake = tmp_path / f"python-{status}"
        fake.write_text(f"#!{sys.executable}\n" + STAND_IN_RUN.format(status=status, code=code))
        fake.chmod(0o755)
        return str(fake)

    exp = load_experiment(workspace(tmp_path), seeds=[1])
    out = str(tmp_path / "out")
    runner = Runner(exp, out, progress=False, only=("line.rate=5",))
    (p,) = runner.plan()
    old_entry = {"status": "completed", "parts": dict(p.parts, code="older-code"), "point": p.point.id, "seed": 1,
                 "wall_s": 12.0}
    target = runner.run_dir(p.name)
    os.makedirs(target)
    with open(os.path.join(target, "manifest.json"), "w") as fh:
        json.dump({"status": "completed"}, fh)
    open(os.path.join(target, "captured-before"), "w").close()
    (tmp_path / "out" / "experiment.json").write_text(json.dumps(
        {"experiment": exp.name, "runs": {p.name: old_entry}, "code": {"older-code": {}}}))

    def ledger_entry():
        return json.loads((tmp_path / "out" / "experiment.json").read_text())["runs"][p.name]

    # a remake that fails: the complete run stays, with its ledger entry; the attempt is beside it
    runner = Runner(exp, out, progress=False, only=("line.rate=5",), python=stand_in("failed", 1))
    assert runner.execute() == {"failed": 1}
    assert sorted(os.listdir(target)) == ["captured-before", "manifest.json"]
    assert os.path.exists(os.path.join(out, "runs", f".{p.name}.failed", "made-by-the-remake"))
    assert not os.path.exists(os.path.join(out, "runs", f".{p.name}.previous"))
    assert ledger_entry() == old_entry
    # an experiment killed while it remade the run left it aside and a partial attempt in place:
    # the next command puts it back before planning, and still finds it stale
    os.replace(target, os.path.join(out, "runs", f".{p.name}.previous"))
    os.makedirs(target)
    runner = Runner(exp, out, progress=False, only=("line.rate=5",), python=stand_in("interrupted", 130))
    with pytest.raises(runner_module.ExperimentInterrupted):
        runner.execute()
    assert sorted(os.listdir(target)) == ["captured-before", "manifest.json"] and ledger_entry() == old_entry
    # a remake that completes replaces it, and nothing is left aside
    runner = Runner(exp, out, progress=False, only=("line.rate=5",), python=stand_in("completed", 0))
    assert runner.execute() == {"completed": 1}
    assert sorted(os.listdir(target)) == ["made-by-the-remake", "manifest.json"]
    assert sorted(os.listdir(os.path.join(out, "runs"))) == [p.name]
    assert ledger_entry()["status"] == "completed" and ledger_entry()["parts"]["code"] == runner.code


def test_an_unfaithful_run_is_made_again_only_when_asked_and_the_ledger_says_why(tmp_path, capsys, monkeypatch):
    """A complete run whose analysis called it unfaithful stays complete; --redo-unfaithful makes
    it again (kept until the remake completes, as a stale run is), the ledger entry keeps the
    monitor's reasons, and runs called faithful or degraded are left alone. (Stand-in runs.)"""
    from testbed.experiment.runner import Runner

    fake = tmp_path / "python-completed"
    fake.write_text(f"#!{sys.executable}\n" + STAND_IN_RUN.format(status="completed", code=0))
    fake.chmod(0o755)
    exp = load_experiment(workspace(tmp_path), seeds=[1])
    out = str(tmp_path / "out")
    runner = Runner(exp, out, progress=False, only=("line.rate=*",))
    planned = runner.plan()
    assert len(planned) == 2
    verdicts = {planned[0].name: "unfaithful", planned[1].name: "degraded"}
    reason = "the agents' event-loop lag, 99th percentile of each agent's largest per second (ms): 333 ms"
    entries = {}
    for p in planned:
        target = runner.run_dir(p.name)
        os.makedirs(os.path.join(target, "report"))
        with open(os.path.join(target, "manifest.json"), "w") as fh:
            json.dump({"status": "completed"}, fh)
        with open(os.path.join(target, "report", "results.json"), "w") as fh:
            json.dump({"fidelity": {"verdict": verdicts[p.name], "reasons": [reason]},
                       "messages": {"all": {"sent": 10, "delivery_ratio": 1.0}}}, fh)
        entries[p.name] = {"status": "completed", "parts": p.parts, "point": p.point.id, "seed": 1, "wall_s": 3.0}
    (tmp_path / "out" / "experiment.json").write_text(json.dumps(
        {"experiment": exp.name, "runs": entries, "code": {runner.code: runner.code_files}}))
    assert [p.status for p in Runner(exp, out, progress=False, only=("line.rate=*",)).plan()] == ["complete"] * 2
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", workspace(tmp_path), "--out", out, "--seeds", "1", "--only", "line.rate=*",
                 "--plan", "--redo-unfaithful"]) == 0
    shown = capsys.readouterr().out
    assert f"stale: unfaithful ({reason}): made again, as --redo-unfaithful asks" in shown and "1 stale run" in shown
    runner = Runner(exp, out, progress=False, only=("line.rate=*",), redo_unfaithful=True, python=str(fake))
    assert runner.execute() == {"completed": 1, "complete": 1}
    ledger = json.loads((tmp_path / "out" / "experiment.json").read_text())["runs"]
    redone, kept = planned[0].name, planned[1].name
    assert ledger[redone]["redone_unfaithful"] == [reason] and ledger[redone]["status"] == "completed"
    assert sorted(os.listdir(runner.run_dir(redone))) == ["made-by-the-remake", "manifest.json"]
    assert ledger[kept] == entries[kept] and os.path.isdir(os.path.join(runner.run_dir(kept), "report"))
    assert sorted(os.listdir(os.path.join(out, "runs"))) == sorted(verdicts)
    # the remake is not analysed yet: nothing says it is unfaithful, so it is not made a third time
    assert [p.status for p in Runner(exp, out, progress=False, only=("line.rate=*",), redo_unfaithful=True).plan()] \
        == ["complete"] * 2
    # --redo-unfaithful makes runs: with --no-run it is refused before anything is read or made
    assert main(["experiment", workspace(tmp_path), "--out", out, "--no-run", "--redo-unfaithful"]) == 2
    assert "--redo-unfaithful" in capsys.readouterr().err


@pytest.mark.network
def test_a_real_run_past_its_time_limit_is_stopped_and_its_lab_torn_down(tmp_path, no_leftovers):
    """A run told to stop at its limit stops like on Ctrl-C: status interrupted, its lab torn
    down (no_leftovers), the run failed with the reason."""
    from testbed.experiment.runner import Runner
    from testbed.rundir import read_manifest

    exp = load_experiment(workspace(tmp_path), seeds=[1])
    runner = Runner(exp, str(tmp_path / "out"), progress=False, only=("line.rate=5",), run_limit_s=6)
    assert runner.execute() == {"failed": 1}
    (p,) = runner.planned
    assert p.error == "stopped at its time limit (6s), exit code 130", p.error
    manifest = read_manifest(runner.run_dir(p.name))
    assert manifest["status"] == "interrupted"


@pytest.mark.network
def test_the_reduced_abc_data_provider_experiment_runs_and_judges_its_shapes(tmp_path, no_leftovers, spark):
    """experiments/abc/dp-reduced.yaml: the paper's DP experiment on small infrastructures, here
    for 50 time units (the file says 150): about a hundred messages a run, and a curve over time
    of a few dozen points, are what the test needs of it."""
    out = tmp_path / "abc"
    code, stdout, stderr = cli_in_process("experiment", os.path.join(ROOT, "experiments", "abc", "dp-reduced.yaml"),
                                          "--out", out, "--set", "warmup=1s", "--set", "duration=5s",
                                          "--set", "quiet=4s", cwd=ROOT)
    assert code == 0, stderr
    import pandas as pd

    runs = pd.read_csv(out / "runs.csv").set_index("point")
    assert sorted(runs.index) == ["cluster", "ring", "tree"]
    # every run measured: a delivery time from wanting to send, a gap, and messages from 2 senders
    assert (runs["delivery_time"] > 0).all() and (runs["time_gap"] > 0).all() and (runs["messages"] >= 2).all()
    shapes = json.loads((out / "shapes.json").read_text())
    assert [s["verdict"] in ("valid", "invalid") for s in shapes] == [True, True], shapes
    curves = json.loads((out / "over_time.json").read_text())["delivery_time"]
    assert set(curves) == {"tree", "ring", "cluster"} and all(len(c) > 2 for c in curves.values())
    assert (out / "plots" / "delivery_time-over-time.png").is_file()
    # each run is fault free: total order and exactly-once from the logs and the checks, the 2
    # senders the file sets, every data message on every capture (the paced runs' quiet period
    # lets the last of them finish)
    from .test_abc import assert_fault_free
    for point in ("tree", "ring", "cluster"):
        run = out / "runs" / f"{point}-s1"
        with open(run / "report" / "results.json") as fh:
            assert_fault_free(str(run), json.load(fh), 100, providers=2)


def test_benchmark_sets_pass_their_extra_arguments_and_keep_the_other_sets_results(tmp_path, monkeypatch):
    """benchmarks/experiment_sets.py: a set given as (file, arguments) runs `testbed experiment`
    with them; the JSON file keeps the sets it did not run. (The runs and the gathering are the
    experiment runner's, tested above on real sweeps; here they are fakes.)"""
    experiment_sets = benchmark("experiment_sets")
    commands = []
    monkeypatch.setattr(experiment_sets, "HERE", str(tmp_path))
    codes = [0]

    def run(command, **kw):
        commands.append(command)
        return subprocess.CompletedProcess(command, codes[0])
    monkeypatch.setattr(experiment_sets.subprocess, "run", run)
    monkeypatch.setattr(experiment_sets, "gather",
                        lambda out, file=None: {"directory": out, "shapes": [], "file": file})
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.json").write_text(json.dumps({"experiments": {"old": {"shapes": []}}}))
    files = {"plain": "experiments/x.yaml", "over": ("experiments/x.yaml", ["--set", "topology=t.yaml"])}
    assert experiment_sets.main("d", files, "p", "r.json", "plain", ["--set", "over", "--no-run"]) == 0
    (command,) = commands
    assert command[command.index("experiment") + 1] == os.path.join(ROOT, "experiments/x.yaml")
    assert command[-3:] == ["--set", "topology=t.yaml", "--no-run"]
    assert command[command.index("--out") + 1].endswith(os.path.join("runs", "experiments", "p-over"))
    kept = json.loads((tmp_path / "results" / "r.json").read_text())["experiments"]
    assert sorted(kept) == ["old", "over"]
    # testbed experiment failing (interrupted, a bad file): its exit code, and the file as it was
    codes[0] = 130
    assert experiment_sets.main("d", files, "p", "r.json", "plain", ["--set", "plain"]) == 130
    assert sorted(json.loads((tmp_path / "results" / "r.json").read_text())["experiments"]) == ["old", "over"]


def test_the_reproduction_documents_tables_are_generated_from_the_results_files():
    """docs/REPRODUCTION.md's tables of our values are benchmarks/reproduction.py's output from
    benchmarks/results/*.json: a hand edit of a generated block, or results the document was
    not regenerated from, fail here."""
    reproduction = benchmark("reproduction")
    with open(reproduction.DOC) as fh:
        text = fh.read()
    generated, unknown = reproduction.render(text)
    assert unknown == []
    assert generated == text, "run: python benchmarks/reproduction.py"
    assert text.count("<!-- generated: ") >= 20


def test_stored_runs_are_judged_again_with_the_current_shapes(tmp_path):
    """experiment_sets.rejudge: a results file's runs give the summary and the verdicts that
    `testbed experiment` gives on the same values (the seeds' spread included)."""
    experiment_sets = benchmark("experiment_sets")
    path = workspace(tmp_path)
    runs = [{"run": f"line.rate={r}-s{k}", "point": f"line.rate={r}", "seed": k, "sent": v, "ratio": 1.0}
            for r, k, v in ((5, 1, 45.0), (5, 2, 47.0), (20, 1, 180.0), (20, 2, 183.0))]
    entry = experiment_sets.rejudge({"directory": "x", "runs": runs, "points": {}, "shapes": []}, path)
    assert entry["file"] == path and entry["points"]["line.rate=5"]["sent"]["n"] == 2
    assert entry["points"]["line.rate=5"]["sent"]["mean"] == 46.0
    verdicts = {s["name"]: s["verdict"] for s in entry["shapes"]}
    assert verdicts["sent increasing over rate"] == "valid"
    assert verdicts["sent within a factor 1.1 of the reference"] == "not shown"  # 46 ± 12.7 crosses 49.5
    json.dumps(entry, allow_nan=False)  # strict JSON


def test_slices_of_a_set_pool_into_one_results_entry_judged_again(tmp_path):
    """experiment_sets.merge (--add): the runs of a slice made in another sitting join the stored
    ones (a run made again replaces its namesake), the summary and verdicts are computed over all
    of them, the curves over time are averaged by their runs, and the directories are listed."""
    experiment_sets = benchmark("experiment_sets")
    path = workspace(tmp_path)

    def run(rate, seed, sent):
        return {"run": f"line.rate={rate}-s{seed}", "point": f"line.rate={rate}", "seed": seed, "sent": sent,
                "ratio": 1.0}

    old = experiment_sets.rejudge({"directory": "a", "runs": [run(5, 1, 45.0), run(20, 1, 180.0), run(20, 2, 1.0)],
                                   "points": {}, "shapes": [],
                                   "over_time": {"sent": {"line.rate=5": [[0, 1.0], [1, 2.0]]}}}, path)
    new = {"directory": "b", "runs": [run(5, 2, 47.0), run(20, 2, 183.0)], "points": {}, "shapes": [],
           "over_time": {"sent": {"line.rate=5": [[0, 3.0], [1, None]], "line.rate=20": [[0, 5.0]]}}}
    with pytest.raises(SystemExit, match="another version"):  # the stored entry does not say which file made it
        experiment_sets.merge(old, new, path)
    old["file_sha256"] = new["file_sha256"] = experiment_sets.file_digest(path)
    entry = experiment_sets.merge(old, new, path)
    assert sorted(r["run"] for r in entry["runs"]) == ["line.rate=20-s1", "line.rate=20-s2", "line.rate=5-s1",
                                                       "line.rate=5-s2"]
    assert entry["points"]["line.rate=20"]["sent"]["mean"] == 181.5  # seed 2's 1.0 was replaced
    assert entry["points"]["line.rate=5"]["sent"]["n"] == 2
    assert {s["name"]: s["verdict"] for s in entry["shapes"]}["sent increasing over rate"] == "valid"
    assert entry["over_time"]["sent"] == {"line.rate=5": [[0, 2.0], [1, 2.0]], "line.rate=20": [[0, 5.0]]}
    assert entry["directories"] == ["a", "b"]
    with pytest.raises(SystemExit, match="come from"):
        experiment_sets.merge(dict(old, file="experiments/other.yaml"), new, path)
    with open(path, "a") as fh:
        fh.write("# edited\n")
    with pytest.raises(SystemExit, match="another version"):
        experiment_sets.merge(old, dict(new, file_sha256=experiment_sets.file_digest(path)), path)
    json.dumps(entry, allow_nan=False)


def test_grid_quantities_get_a_column_in_base_units_beside_their_text(tmp_path):
    from testbed.experiment.results import grid_cells, grid_columns

    text = EXPERIMENT.replace("grid:\n", "grid:\n  length: {path: duration, values: [3s, 1500ms]}\n"
                                         "  loss: {path: description, values: ['1%', '10%']}\n")
    exp = load_experiment(workspace(tmp_path, text))
    assert grid_columns(exp) == ["length", "length_s", "loss", "loss_fraction", "rate"]
    cells = grid_cells(exp, exp.points[-1])
    assert cells == {"length": "1500ms", "length_s": 1.5, "loss": "10%", "loss_fraction": 0.1, "rate": 20}


def test_a_run_made_before_an_agent_file_changed_is_stale_and_named_in_the_plan(tmp_path, capsys, monkeypatch):
    """The plan of an experiment whose ledger says a run was made by code in which
    agents/roles/probe.py differed: that run is stale (the reason names the file) and is made
    again; the runs made by this code are complete. (The real sweep above checks the same after
    real runs.)"""
    from testbed.cli.experiment import show_plan
    from testbed.experiment.runner import Runner, run_name

    monkeypatch.chdir(tmp_path)
    exp = load_experiment(workspace(tmp_path))
    runner = Runner(exp, str(tmp_path / "out"), progress=False)
    runner.plan()
    old_files = dict(runner.code_files, **{"agents/roles/probe.py": "0" * 16})
    runs = {}
    for i, p in enumerate(runner.planned):
        parts = dict(p.parts, code="older-code" if i == 0 else runner.code)
        runs[p.name] = {"status": "completed", "parts": parts, "point": p.point.id, "seed": p.seed}
        os.makedirs(runner.run_dir(p.name))
        with open(os.path.join(runner.run_dir(p.name), "manifest.json"), "w") as fh:
            json.dump({"status": "completed"}, fh)
    ledger = {"experiment": exp.name, "runs": runs, "code": {"older-code": old_files, runner.code: runner.code_files}}
    (tmp_path / "out" / "experiment.json").write_text(json.dumps(ledger))
    assert show_plan(Runner(exp, str(tmp_path / "out"), progress=False)) == 0
    out = capsys.readouterr().out
    first = run_name(exp.points[0], exp.seeds[0])
    assert f"{first}" in out and "stale: the code changed (agents/roles/probe.py)" in out, out
    assert out.count("complete ") == 3 and "1 stale run: the experiment makes it again" in out
    # with --accept-code-changes the run made by other code is kept, and the plan says so
    runner = Runner(exp, str(tmp_path / "out"), progress=False, accept_code_changes=True)
    assert show_plan(runner) == 0
    out = capsys.readouterr().out
    assert out.count("complete ") == 4 and "kept, though the code changed (agents/roles/probe.py)" in out
    assert runner.planned[0].status == "complete" and runner.planned[0].entry["parts"]["code"] == "older-code"
    # a run whose scenario changed as well is made again all the same
    ledger["runs"][first]["parts"] = dict(ledger["runs"][first]["parts"], scenario="another")
    (tmp_path / "out" / "experiment.json").write_text(json.dumps(ledger))
    runner = Runner(exp, str(tmp_path / "out"), progress=False, accept_code_changes=True)
    runner.plan()
    assert runner.planned[0].status == "pending" and "the scenario changed" in runner.planned[0].stale


def test_the_fidelity_benchmark_reads_the_largest_size_whose_runs_are_all_faithful():
    """benchmarks/fidelity.py's capacity: per k, the sizes climb while every seed is faithful;
    the first size with a degraded or unfaithful run stops the ladder. (The runs are the
    experiment runner's, tested above on real sweeps; here they are rows.)"""
    bench = benchmark("fidelity")
    verdicts = {(25, 1): ["faithful"] * 3, (50, 1): ["faithful", "degraded", "faithful"], (75, 1): ["faithful"] * 3,
                (25, 4): ["faithful"] * 3, (50, 4): ["faithful"] * 3, (75, 4): ["faithful"] * 3,
                (25, 2): ["unfaithful", "faithful", "faithful"]}
    runs = [{"members": size, "k": k, "fidelity": v, "scenario": "causal"}
            for (size, k), vs in verdicts.items() for v in vs]
    got = bench.capacity(runs, bench.SIZES["causal"])
    assert {k: c["largest_faithful"] for k, c in got.items()} == {"1": 25, "2": None, "4": 75}
    assert got["1"]["runs"]["50"] == ["degraded", "faithful", "faithful"]
    abc = bench.capacity([{"scenario": "t105", "k": 2, "fidelity": "faithful"}], bench.SIZES["abc"])
    assert abc == {"2": {"largest_faithful": 105, "runs": {"105": ["faithful"]}}}


def test_the_readme_tables_of_what_an_agent_costs_and_how_large_a_system_runs_faithfully_are_generated():
    """README's tables of the agent's cost and of the scaling ladder are agent_cost.py's and
    fidelity.py's --markdown output from their results files, before beside after: a hand edit of
    a table, or results the README was not regenerated from, fail here."""
    import json

    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    for name, results in (("agent_cost", "agent_cost.json"), ("fidelity", "fidelity.json")):
        bench = benchmark(name)
        with open(os.path.join(ROOT, "benchmarks", "results", results)) as fh:
            generated = bench.markdown(json.load(fh))
        for block in generated.split("\n\n"):
            assert block.strip() in readme, f"README lacks a table of: python benchmarks/{name}.py --markdown"


def test_the_ladder_table_puts_each_point_of_the_other_ladder_beside_this_ones():
    """fidelity.py --markdown: the largest faithful size per family and k for both ladders, and per
    point both sides' verdicts and measures; a point one side did not run says so."""
    bench = benchmark("fidelity")
    point = {"late_share": {"mean": 0.01, "ci95_high": 0.015}, "loop_lag_ms": {"mean": 2.0, "ci95_high": 3.0}}
    after_runs = [{"run": f"causal.members=25.k=1-s{s}", "point": "causal.members=25.k=1", "members": 25, "k": 1,
                   "fidelity": "faithful", "scenario": "causal"} for s in (1, 2, 3)]
    result = {"commit": "new", "experiments": {"causal": {
        "runs": after_runs, "points": {"causal.members=25.k=1": point},
        "capacity": bench.capacity(after_runs, bench.SIZES["causal"])}},
        "before": {"commit": "old", "capacity": {"causal": {
            "1": {"largest_faithful": None, "runs": {"25": ["degraded", "faithful", "faithful"]}},
            "2": {"largest_faithful": 25, "runs": {"25": ["faithful"] * 3}}}},
            "points": {"causal": {"causal.members=25.k=1": point}}}}
    text = bench.markdown(result)
    assert "| causal cluster, every member updating (members) | 1 | none | 25 |" in text
    assert "| causal cluster, every member updating (members) | 2 | 25 | not run |" in text
    assert "| 25 | 1 | 1 degraded, 2 faithful | 1.00% ± 0.50% | 2 ± 1 | 3/3 faithful | 1.00% ± 0.50% | 2 ± 1 |" in text
    assert "| 25 | 2 | 3/3 faithful | - | - | not run | - | - |" in text
    # the other agent's points made again today sit between the two, by the sizes re-run
    result["spot"] = {"ref": "old", "runs": [
        {"family": "causal", "point": "causal.members=50.k=1", "seed": s, "fidelity": v, "late_share": 0.0,
         "loop_lag_ms": lag} for s, v, lag in ((1, "faithful", 4.0), (2, "faithful", 6.0), (3, "unfaithful", 8.0))]}
    text = bench.markdown(result)
    assert "| causal cluster, every member updating (members) | 1 | none | 50: 2 faithful, 1 unfaithful | 25 |" in text
    assert ("| 50 | 1 | not run | - | - | 2 faithful, 1 unfaithful | 0.00% ± 0.00% | 6 ± 4.97 | not run | - | - |"
            in text)
    # a ladder made at some sizes only says which
    sliced = after_runs + [dict(r, members=50, k=4, point="causal.members=50.k=4") for r in after_runs]
    result["experiments"]["causal"]["capacity"] = bench.capacity(sliced, bench.SIZES["causal"])
    assert "| causal cluster, every member updating (members) | 4 | not run | not run | 50 (only 50 run) |" \
        in bench.markdown(result)


def test_the_python_api_passes_the_accept_flags_as_the_command_does(tmp_path, monkeypatch):
    """testbed.api.experiment(accept_code_changes=..., accept_unfaithful=...) reach the runner
    and the experiment as --accept-code-changes and --accept-unfaithful do. (The runs are the
    runner's, tested above on real sweeps; here it runs nothing.)"""
    import testbed.api as tb
    from testbed.experiment.runner import Runner

    seen = {}

    def execute(runner):
        seen.update(code=runner.accept_code_changes, unfaithful=runner.exp.accept_unfaithful,
                    redo=runner.redo_unfaithful)
        return {}

    monkeypatch.setattr(Runner, "execute", execute)
    path = workspace(tmp_path)
    tb.experiment(path, out=str(tmp_path / "out"), analyze=False)
    assert seen == {"code": False, "unfaithful": False, "redo": False}
    tb.experiment(path, out=str(tmp_path / "out"), analyze=False, accept_code_changes=True, accept_unfaithful=True,
                  redo_unfaithful=True)
    assert seen == {"code": True, "unfaithful": True, "redo": True}
