"""The Python API (testbed/api.py) and the runnable scripts of examples/: descriptions from files
and dicts with the loaders' errors, actions validated as a scenario's, and every example run as a
user runs it, for real."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import testbed.api as tb
from testbed.scenario import plan_action

from .conftest import ROOT

EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))


def test_a_topology_from_a_dict_is_validated_like_a_file():
    topo = tb.topology({"nodes": {"a": {}, "b": {"role": "probe"}}, "links": [["a", "b"]]})
    assert list(topo.nodes) == ["a", "b"] and topo.nodes["b"].role == "probe"
    assert str(topo.address_of("a")).endswith("/30")
    with pytest.raises(tb.ValidationError) as info:
        tb.topology({"nodes": {"a": {"rle": "probe"}}})
    assert str(info.value).startswith("<python>: nodes.a.rle: unknown field 'rle'")


def test_a_scenario_from_a_dict_and_a_file_with_overrides(tmp_path):
    scenario = tb.scenario({"topology": "topologies/line3.yaml", "duration": "3s",
                            "timeline": [{"at": "1s", "action": "pause", "node": "h2", "for": "1s"}]}, base_dir=ROOT)
    assert [p.action for p in scenario.schedule] == ["pause", "resume"]
    quick = tb.load_scenario(os.path.join(ROOT, "scenarios", "quickstart.yaml"), seed=4,
                             set={"duration": "7s", "workload.defaults.params.rate": 9})
    assert quick.seed == 4 and quick.duration_ms == 7000 and quick.topology.nodes["c2"].params["rate"] == 9
    with pytest.raises(tb.ValidationError) as info:
        tb.load_scenario(os.path.join(ROOT, "scenarios", "quickstart.yaml"), set={"duration": "5s"})
    assert "timeline[2].at" in str(info.value) and "beyond the scenario's duration" in str(info.value)


@pytest.mark.parametrize("entry, words", [
    ({"action": "explode", "node": "h1"}, "action: unknown action 'explode'"),
    ({"action": "kill", "node": "h9"}, "node: unknown node 'h9'"),
    ({"action": "kill", "nodes": ["h1"]}, "unknown field 'nodes' for action kill"),
    ({"action": "set_link", "link": ["h1", "h3"], "loss": 0.1}, "no link between 'h1' and 'h3'"),
    ({"action": "set_link", "link": ["h1", "s1"], "loss": 2}, "loss: 2 is outside [0, 1]"),
    ({"action": "partition", "groups": [["h1", "h2", "h3"]]}, "at least two groups"),
])
def test_an_action_from_python_is_validated_as_a_timeline_entry(entry, words):
    topo = tb.load_topology(os.path.join(ROOT, "topologies", "line3.yaml"))
    with pytest.raises(tb.ValidationError) as info:
        plan_action(entry, topo)
    assert str(info.value).startswith("<python>: ") and words in str(info.value)


def test_actions_on_a_running_lab_refuse_what_cannot_be(no_leftovers, images):
    topo = tb.topology({"name": "apitest", "nodes": {"a": {}, "b": {}}, "links": [["a", "b"]]})
    with tb.lab(topo) as lab:
        assert lab.exec("a", f"ping -c1 -W1 {lab.address('b')}", check=False).count("1 received") == 1
        with pytest.raises(tb.ValidationError) as info:
            lab.set_link("a", "b", jitter="5ms")  # jitter needs a delay on the same direction
        assert "jitter" in str(info.value)
        if "delay" not in lab._lab.shaper.emulates:
            with pytest.raises(tb.CapabilityError):
                lab.set_link("a", "b", delay="10ms")
        with pytest.raises(tb.TestbedError) as failed:
            lab.exec("a", "exit 3")
        assert "exit 3" in str(failed.value)
        assert lab.run_in("a", "echo inside")[0] == 0
        with pytest.raises(tb.UsageError):
            lab.exec("zz", "true")
    assert not lab._lab.started, "left, the lab is gone"


@pytest.mark.network
@pytest.mark.parametrize("script", [e for e in EXAMPLES if e != "run_and_analyze.py"])
def test_an_example_runs_as_documented(no_leftovers, images, script):
    res = subprocess.run([sys.executable, os.path.join("examples", script)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.network
@pytest.mark.spark
def test_the_run_and_analyze_example_runs_as_documented(no_leftovers, images, tmp_path):
    res = subprocess.run([sys.executable, os.path.join("examples", "run_and_analyze.py"), str(tmp_path / "run")],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "completed" in res.stdout and "delivery ratio" in res.stdout
    assert os.path.exists(tmp_path / "run" / "report" / "index.html")


def test_every_example_says_what_it_shows():
    for name in EXAMPLES:
        text = open(os.path.join(ROOT, "examples", name)).read()
        assert text.startswith('"""') and "Run as root" in text, name
