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
from testbed.experiment import shapes
from testbed.experiment.results import Data, ci95, lookup, summarise
from testbed.experiment.spec import fingerprint, load_experiment

from .conftest import ROOT
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


def test_a_fingerprint_follows_the_data_not_the_layout(tmp_path):
    exp = load_experiment(workspace(tmp_path))
    point = exp.points[0]
    before = fingerprint(point, 1)
    assert fingerprint(point, 2) != before
    (tmp_path / "scenarios" / "small.yaml").write_text("# another comment\n" + SCENARIO.replace("seed: 3", "seed:   3"))
    assert fingerprint(point, 1) == before
    (tmp_path / "topologies" / "rline3.yaml").write_text(TOPOLOGY.replace("s2, s3]]", "s2, s3], [s1, s3]]"))
    assert fingerprint(point, 1) != before, "the topology's data is part of the run"


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


# -- shapes and statistics -----------------------------------------------------------------------

SHAPES = """\
scenarios:
  simple: scenarios/small.yaml
  bounded: scenarios/small.yaml
grid:
  P: {path: workload.defaults.params.rate, values: [1, 2, 3]}
measures: {m: x.y}
references:
  source: a paper
  values:
    - {measure: m, point: {scenario: simple, P: 3}, value: [9, 11]}
    - {measure: m, point: {scenario: bounded, P: 3}, value: 3}
expect:
  - {measure: m, order: [bounded, simple]}
  - {measure: m, trend: increasing, over: P}
  - {measure: m, trend: increasing, over: P, where: {scenario: simple}}
  - {measure: m, ratio: [{scenario: simple, P: 3}, {scenario: bounded, P: 3}], range: [2, 4]}
  - {measure: m, near_reference: 1.5}
"""


def _judge(exp, means):
    rows = [{"point": pid, "measure": "m", "mean": v} for pid, v in means.items()]
    return [(s.name, s.judge(Data(exp, rows))) for s in exp.shapes]


def test_shapes_judge_each_free_combination_and_say_unknown_without_values(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    means = {"simple.P=1": 2, "simple.P=2": 6, "simple.P=3": 10, "bounded.P=1": 1, "bounded.P=2": 2, "bounded.P=3": 3}
    verdicts = [j["verdict"] for _, j in _judge(exp, means)]
    assert verdicts == ["valid"] * 5
    order = _judge(exp, means)[0][1]
    assert [g["group"] for g in order["groups"]] == ["P=1", "P=2", "P=3"]  # judged at every P
    means["bounded.P=2"] = 7  # above simple at P=2, and no longer increasing... for bounded only
    got = dict(_judge(exp, means))
    assert got["m: bounded < simple"]["verdict"] == "invalid"
    trend = _judge(exp, means)[1][1]
    assert trend["verdict"] == "invalid" and [g["verdict"] for g in trend["groups"]] == ["valid", "invalid"]
    assert [g["verdict"] for g in _judge(exp, means)[2][1]["groups"]] == ["valid"]  # where: simple only
    means["simple.P=3"] = 17  # 17 / 3 > 4, and 17 > 11 × 1.5
    got = dict(_judge(exp, means))
    ratio = next(v for k, v in got.items() if "/" in k)
    assert ratio["verdict"] == "invalid" and ratio["groups"][0]["ratio"] == pytest.approx(17 / 3)
    near = got["m within a factor 1.5 of the reference"]
    assert [g["verdict"] for g in near["groups"]] == ["invalid", "valid"]
    assert near["groups"][0]["factor"] == pytest.approx(17 / 11)
    del means["bounded.P=1"]
    assert _judge(exp, means)[0][1]["verdict"] in ("invalid",)  # invalid somewhere outweighs unknown
    means = {k: v for k, v in means.items() if k.startswith("simple")}
    assert _judge(exp, means)[0][1]["verdict"] == "unknown"


CURVES = """\
scenarios:
  fixed: scenarios/small.yaml
  all: scenarios/small.yaml
grid:
  N: {path: workload.defaults.params.rate, values: [25, 50, 75, 100, 125]}
measures: {m: x.y}
expect:
  - {measure: m, flat: 0.1, over: N, where: {scenario: fixed}}
  - {measure: m, fit: log, over: N, where: {scenario: fixed}}
  - {measure: m, fit: linear, over: N, where: {scenario: all}}
"""


def test_flat_and_fit_shapes_tell_a_constant_a_log_and_a_line_apart(tmp_path):
    exp = load_experiment(workspace(tmp_path, CURVES))
    import math
    sizes = [25, 50, 75, 100, 125]
    means = {f"fixed.N={n}": 10 + 3 * math.log(n) for n in sizes}   # 19.7 .. 24.5: not flat within 10 %
    means.update({f"all.N={n}": 4 + 0.2 * n for n in sizes})
    flat, log, line = (j for _, j in _judge(exp, means))
    assert (flat["verdict"], log["verdict"], line["verdict"]) == ("invalid", "valid", "valid")
    assert flat["groups"][0]["spread"] == pytest.approx(max(abs(v - sum(means[f"fixed.N={n}"] for n in sizes) / 5)
                                                         for v in (means[f"fixed.N={n}"] for n in sizes))
                                                     / (sum(means[f"fixed.N={n}"] for n in sizes) / 5))
    means.update(dict(zip((f"fixed.N={n}" for n in sizes), [103, 99, 100, 97, 96])))   # within ±5 %, falling
    flat, log, _ = (j for _, j in _judge(exp, means))
    assert flat["verdict"] == "valid" and log["verdict"] == "invalid", "no growth: no log curve either"
    means.update({f"all.N={n}": 10 + 3 * math.log(n) for n in sizes})
    assert [j["verdict"] for _, j in _judge(exp, means)][2] == "invalid", "a log curve is not a line"
    means.update({f"all.N={n}": 50 - 0.2 * n for n in sizes})
    assert [j["verdict"] for _, j in _judge(exp, means)][2] == "invalid", "a falling line does not grow"
    del means["all.N=50"]
    assert [j["verdict"] for _, j in _judge(exp, means)][2] == "unknown"


@pytest.mark.parametrize("entry, field, message", [
    ("{measure: m, flat: 0, over: N}", "expect[0].flat", "is not a tolerance"),
    ("{measure: m, flat: yes, over: N}", "expect[0].flat", "is not a tolerance"),
    ("{measure: m, fit: cubic, over: N}", "expect[0].fit", "unknown curve 'cubic'"),
    ("{measure: m, fit: log, over: Q}", "expect[0].over", "no grid parameter 'Q'"),
    ("{measure: m, fit: log}", "expect[0]", "missing field 'over'"),
])
def test_flat_and_fit_refuse_bad_entries(tmp_path, entry, field, message):
    text = CURVES.split("expect:")[0] + f"expect:\n  - {entry}\n"
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, text))
    assert err.value.field == field and message in str(err.value), str(err.value)


def test_fit_needs_three_positive_values(tmp_path):
    text = CURVES.replace("[25, 50, 75, 100, 125]", "[0, 50, 75]")
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, text))
    assert "not all positive numbers" in str(err.value)
    text = CURVES.replace("[25, 50, 75, 100, 125]", "[25, 50]")
    with pytest.raises(ValidationError) as err:
        load_experiment(workspace(tmp_path, text))
    assert "too few to tell a log from a line" in str(err.value)


def test_the_confidence_interval_is_students_t_over_seeds():
    mean, sd, low, high = ci95([1.0, 2.0, 3.0])
    assert (mean, sd) == (2.0, 1.0)
    assert high - mean == pytest.approx(4.302653 / 3 ** 0.5, rel=1e-6)  # t(0.975, 2) = 4.3027
    assert ci95([5.0]) == (5.0, None, None, None) and ci95([]) == (None, None, None, None)


def test_summary_rows_carry_the_reference_and_leave_out_missing_values(tmp_path):
    exp = load_experiment(workspace(tmp_path, SHAPES))
    rows = [{"point": "simple.P=3", "m": 10.0}, {"point": "simple.P=3", "m": 12.0}, {"point": "simple.P=3", "m": None}]
    summary = {r["point"]: r for r in summarise(exp, rows)}
    s = summary["simple.P=3"]
    assert s["n"] == 2 and s["mean"] == 11.0 and s["reference_low"] == 9 and s["reference_high"] == 11
    assert s["ratio_to_reference"] == pytest.approx(1.1) and s["reference_source"] == "a paper"
    assert summary["simple.P=1"]["n"] == 0 and summary["simple.P=1"]["mean"] is None


def test_a_measure_path_reads_results_and_is_none_when_absent():
    res = {"abc": {"delivery_time": {"mean_ms": 3.5}}, "list": [{"a": 1}]}
    assert lookup(res, ("abc", "delivery_time", "mean_ms")) == 3.5
    assert lookup(res, ("abc", "nothing")) is None and lookup(res, ("list", "0", "a")) == 1


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
def test_a_sweep_runs_resumes_after_an_interruption_and_reruns_only_what_changed(tmp_path, no_leftovers):
    path = workspace(tmp_path)
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

    proc = _testbed(tmp_path, "experiment", path)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "4 runs (2 points × 2 seeds), 1 already complete, 3 to run on 1 host" in stderr
    assert "line.rate=5-s1" not in stderr.split("already complete")[1], "a complete run is not run again"
    assert (out / "runs" / "line.rate=5-s1" / "manifest.json").stat().st_mtime_ns == first
    assert "left, about" in stderr  # progress: runs left and the time remaining
    # the tidy table, the summary with the reference, the verdicts, plots and index
    import pandas as pd

    runs = pd.read_parquet(out / "runs.parquet")
    assert sorted(runs["run"]) == sorted(["line.rate=5-s1", "line.rate=20-s1", "line.rate=5-s2", "line.rate=20-s2"])
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
    verdicts = {s["kind"]: s["verdict"] for s in json.loads((out / "shapes.json").read_text())}
    assert verdicts == {"trend": "valid", "ratio": "valid", "near_reference": "valid"}
    assert "shape valid    sent increasing over rate" in stdout
    assert (out / "plots" / "sent.png").stat().st_size > 1000
    index = (out / "index.html").read_text()
    assert "runs/line.rate=20-s2/report/index.html" in index and "three probes at the rate" in index
    assert all((out / "runs" / r / "report" / "results.json").is_file() for r in runs["run"])

    # a third rate: only its two runs are made; the four others are kept
    (tmp_path / "exp.yaml").write_text(EXPERIMENT.replace("values: [5, 20]", "values: [5, 20, 10]")
                                       .replace("range: [3.8, 4.2]", "range: [3.8, 4.2]}\n  - {measure: ratio, "
                                                "trend: non-increasing, over: rate"))
    import testbed.api as tb

    outcome = tb.experiment(path, out=str(out))  # the Python API, as the command
    assert sorted(outcome["runs"].values()) == ["complete"] * 4 + ["completed"] * 2
    assert {s["verdict"] for s in outcome["shapes"]} == {"valid"}
    means = [r["mean"] for r in outcome["summary"] if r["measure"] == "sent"]
    assert [round(m / 45) for m in means] == [1, 4, 2], means
    ledger = json.loads((out / "experiment.json").read_text())
    assert len(ledger["runs"]) == 6 and (out / "runs" / "line.rate=10-s2").is_dir()
    assert (out / "runs" / "line.rate=5-s1" / "manifest.json").stat().st_mtime_ns == first
    runs = pd.read_parquet(out / "runs.parquet")
    assert sorted({round(v / 45) for v in runs["sent"]}) == [1, 2, 4]


@pytest.mark.network
def test_runs_spread_over_a_remote_host_come_back_for_the_analysis(tmp_path, sshd, no_leftovers):  # noqa: F811
    known = tmp_path / "known_hosts"
    known.write_text(sshd.host_key_line + "\n")
    text = EXPERIMENT.replace("seeds: 2", "seeds: 1").replace("values: [5, 20]", "values: [5]") \
        .replace("  - {measure: sent, trend: increasing, over: rate}\n", "") \
        .replace("  - {measure: sent, ratio: [{rate: 20}, {rate: 5}], range: [3.8, 4.2]}\n", "")
    path = workspace(tmp_path, text)
    proc = _testbed(tmp_path, "experiment", path, "--host", sshd.target, "--key", str(sshd.dir / "user_key"),
                    "--known-hosts", str(known), "--remote-dir", str(tmp_path / "remote"),
                    "--remote-testbed", REMOTE_TESTBED)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    out = tmp_path / "runs" / "experiments" / "small-sweep"
    ledger = json.loads((out / "experiment.json").read_text())
    assert ledger["runs"]["line.rate=5-s1"]["host"] == sshd.target
    manifest = json.loads((out / "runs" / "line.rate=5-s1" / "manifest.json").read_text())
    assert manifest["scenario"]["source"].startswith(str(tmp_path / "remote"))  # it ran there
    assert "shape valid    sent within a factor 1.1 of the reference" in stdout
    assert os.listdir(tmp_path / "remote") == [], "the remote work directory is removed once downloaded"


@pytest.mark.network
def test_the_reduced_abc_data_provider_experiment_runs_and_judges_its_shapes(tmp_path, no_leftovers):
    """experiments/abc/dp-reduced.yaml: the paper's DP experiment on small infrastructures."""
    out = tmp_path / "abc"
    proc = _testbed(ROOT, "experiment", os.path.join(ROOT, "experiments", "abc", "dp-reduced.yaml"), "--out", str(out))
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr
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


def test_benchmark_sets_pass_their_extra_arguments_and_keep_the_other_sets_results(tmp_path, monkeypatch):
    """benchmarks/experiment_sets.py: a set given as (file, arguments) runs `testbed experiment`
    with them; the JSON file keeps the sets it did not run. (The runs and the gathering are the
    experiment runner's, tested above on real sweeps; here they are fakes.)"""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import experiment_sets
    finally:
        sys.path.pop(0)
    commands = []
    monkeypatch.setattr(experiment_sets, "HERE", str(tmp_path))
    monkeypatch.setattr(experiment_sets.subprocess, "run", lambda command, **kw: commands.append(command))
    monkeypatch.setattr(experiment_sets, "gather", lambda out: {"directory": out, "shapes": []})
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
