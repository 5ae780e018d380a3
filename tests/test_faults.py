"""The nemesis and the action registry without a network: a timeline played on the recording
DryLab calls exactly the lab methods it should, faults stack and undo, every registered action is
complete, and the analysis reads liveness from the same registry. The same actions on a real lab
are tested in tests/test_runs.py."""

from __future__ import annotations

import os

import pytest

from testbed.actions import action_class, action_names, liveness
from testbed.actions.base import COMMON_FIELDS, TARGET_FIELDS, FaultAction
from testbed.faults import DryLab, Nemesis
from testbed.model import LinkProps
from testbed.scenario import parse_scenario_text

from .conftest import ROOT

LINE3 = os.path.join(ROOT, "topologies", "line3.yaml")


def play(timeline: str, duration: str = "10s"):
    scenario = parse_scenario_text(f"topology: {LINE3}\nduration: {duration}\ntimeline:\n{timeline}", "s.yaml")
    lab = DryLab(scenario.topology)
    nemesis = Nemesis(lab)
    details = [nemesis.apply(planned) for planned in scenario.schedule]
    return scenario, lab, nemesis, details


def test_every_registered_action_is_complete():
    for name in action_names():
        cls = action_class(name)
        assert issubclass(cls, FaultAction) and cls.name == name
        assert cls.summary and cls.target in TARGET_FIELDS
        assert cls.inverse is None or cls.inverse in action_names()
        assert cls.liveness in (None, "down", "up")
        assert not set(cls.fields) & set(COMMON_FIELDS + TARGET_FIELDS[cls.target])
        assert cls.apply is not FaultAction.apply, f"{name} does not say how it is applied"


def test_a_timeline_calls_the_lab_methods_in_order():
    _, lab, _, details = play("""
  - {at: 1s, action: pause, node: h2, for: 1s}
  - {at: 3s, action: stop, node: h3}
  - {at: 4s, action: start, node: h3}
  - {at: 5s, action: partition, groups: [[h1]]}
  - {at: 6s, action: heal}
  - {at: 7s, action: exec, node: h1, command: "echo hi"}
  - {at: 8s, action: kill, node: h1}
""")
    assert [c[0] for c in lab.calls] == ["pause_node", "resume_node", "stop_agents", "start_agent", "partition",
                                         "heal", "exec_in_node", "kill_node"]
    assert lab.calls[4][1] == ([["h1"], ["h2", "h3"]],)  # the nodes not named form one more group
    assert {"exited_in_time": True} in details and {"exit_code": 0, "output": ""} in details


def test_link_faults_stack_and_return_to_the_topologys_values():
    scenario, lab, nemesis, _ = play("""
  - {at: 1s, action: set_link, link: [h1, s1], loss: 0.2, delay: 10ms, for: 5s}
  - {at: 2s, action: set_link, link: [h1, s1], direction: a_to_b, jitter: 2ms}
  - {at: 3s, action: link_down, link: [s1, h1], direction: b_to_a, for: 1s}
""")
    shaped = [(args[0], args[1], args[2]) for method, args in lab.calls if method == "set_link"]
    index = lab.link_index("h1", "s1")
    assert all(i == index for i, _, _ in shaped)
    first, second, down, up, restored = shaped
    assert first[1] == first[2] == LinkProps(loss=0.2, delay_ms=10)
    assert second[1] == LinkProps(loss=0.2, delay_ms=10, jitter_ms=2) and second[2] == LinkProps(loss=0.2, delay_ms=10)
    # [s1, h1] b_to_a is h1 → s1, the topology link's a → b
    assert down[1].loss == 1.0 and down[2].loss == 0.2 and up[1] == second[1]
    assert restored[1] == restored[2] == scenario.topology.links[index].forward
    assert not nemesis.link_overrides and not nemesis.links_down


def test_heal_all_undoes_everything_but_kills_and_stops():
    _, lab, nemesis, _ = play("""
  - {at: 1s, action: pause, node: h2}
  - {at: 2s, action: link_down, link: [h1, s1]}
  - {at: 3s, action: partition, groups: [[h1], [h2]]}
  - {at: 4s, action: stop, node: h3}
""")
    before = len(lab.calls)
    done = nemesis.heal_all()
    assert done == ["partition healed", "1 link(s) restored", "h2 resumed"]
    assert [c[0] for c in lab.calls[before:]] == ["heal", "set_link", "resume_node"]
    assert lab.agent_pid("h3") is None, "a stopped agent stays stopped"


def test_starting_a_running_agent_does_nothing():
    _, lab, _, _ = play("  - {at: 1s, action: start, node: h1}\n")
    assert lab.calls == []


def test_liveness_comes_from_the_registry():
    assert {name: liveness(name) for name in action_names() if liveness(name)} == \
        {"kill": "down", "stop": "down", "start": "up"}
    assert liveness("an action of a later version") is None


@pytest.mark.parametrize("timeline", [
    "  - {at: 1s, action: set_link, link: [h1, s1], delay: 10ms}\n  - {at: 2s, action: set_link, link: [h1, s1], jitter: 1ms}\n",
    "  - {at: 1s, action: set_link, link: [h1, s1], delay: 10ms, jitter: 1ms, for: 2s}\n",
])
def test_a_jitter_on_a_delay_set_earlier_is_valid(timeline):
    play(timeline)


class BrokenLab(DryLab):
    """A lab whose pause fails the way a real one can (the engine refuses, a node is gone)."""

    def pause_node(self, node):
        raise RuntimeError(f"the engine refused to pause {node}")


def test_an_action_that_fails_at_run_time_is_recorded_and_the_run_goes_on():
    from testbed.run import execute

    scenario = parse_scenario_text(f"topology: {LINE3}\nduration: 5s\ntimeline:\n"
                                   "  - {at: 1s, action: pause, node: h2}\n  - {at: 2s, action: kill, node: h3}\n",
                                   "s.yaml")
    lab = BrokenLab(scenario.topology)
    nemesis = Nemesis(lab)
    records = [execute(nemesis, planned, 0.0) for planned in scenario.schedule]
    assert records[0]["ok"] is False and records[0]["error"] == "RuntimeError: the engine refused to pause h2"
    assert records[0]["from"] == "timeline[0]" and records[0]["done_ns"] >= records[0]["t_ns"]
    assert records[1]["ok"] is True and [c[0] for c in lab.calls] == ["kill_node"]
    assert "h2" not in nemesis.paused, "a pause that failed is not undone by heal_all"
