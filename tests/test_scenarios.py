"""Scenario files: validation messages, workload layering, and seeded reproducibility."""

from __future__ import annotations

import os

import pytest

from testbed.cli import main
from testbed.errors import ValidationError
from testbed.scenario import load_scenario, parse_scenario_text

from .conftest import ROOT
from .test_bad_topologies import laughs

LINE3 = os.path.join(ROOT, "topologies", "line3.yaml")
HEAD = f"topology: {LINE3}\nduration: 10s\n"

# (case, text after HEAD, expected line, field in the message, words of the message)
BAD = [
    ("unknown top-level field", "timelines: []\n", 3, "timelines", "unknown field 'timelines'"),
    ("missing topology", None, 1, "topology", "missing field 'topology'"),
    ("topology file not found", "SUB:topology: nosuch.yaml\n", 1, "topology", "no topology file"),
    ("negative seed", "seed: -1\n", 3, "seed", "at least 0"),
    ("zero duration", "SUB:duration: 0s\n", 1, "duration", "above 0"),
    ("quiet too short", "quiet: 100ms\n", 3, "quiet", "too short"),
    ("capture snaplen too small", "capture: {snaplen: 20}\n", 3, "capture.snaplen", "from 96"),
    ("unknown role in workload", "workload:\n  defaults: {role: gossiper}\n", 4, "workload.defaults.role",
     "unknown value 'gossiper'"),
    ("negative rate", "workload:\n  defaults: {role: probe, params: {rate: -5}}\n", 4, "workload.defaults.params.rate",
     "-5 is not allowed (node h1) (allowed: messages per second, a number from 0 to 10000)"),
    ("unknown probe parameter", "workload:\n  nodes:\n    h1: {role: probe, params: {rtae: 5}}\n", 5,
     "workload.nodes.h1.params.rtae", "unknown parameter 'rtae'"),
    ("workload for an unknown node", "workload:\n  nodes:\n    h9: {role: probe}\n", 5, "workload.nodes.h9",
     "unknown node 'h9'"),
    ("workload for an unknown kind", "workload:\n  kinds:\n    server: {role: probe}\n", 5, "workload.kinds.server",
     "no node of the topology has kind"),
    ("timeline not a list", "timeline: {at: 1s}\n", 3, "timeline", "expected a list"),
    ("unknown action", "timeline:\n  - {at: 1s, action: explode, node: h1}\n", 4, "timeline[0].action",
     "unknown action 'explode'"),
    ("unknown node in an action", "timeline:\n  - {at: 1s, action: kill, node: h7}\n", 4, "timeline[0].node",
     "unknown node 'h7'"),
    ("action time beyond the duration", "timeline:\n  - {at: 11s, action: kill, node: h1}\n", 4, "timeline[0].at",
     "beyond the scenario's duration"),
    ("both at and every", "timeline:\n  - {at: 1s, every: 2s, action: kill, node: h1}\n", 4, "timeline[0]",
     "exactly one of 'at' and 'every'"),
    ("zero interval", "timeline:\n  - {every: 0s, action: pause, node: h1}\n", 4, "timeline[0].every", "above 0"),
    ("node and nodes", "timeline:\n  - {at: 1s, action: pause, node: h1, nodes: [h2]}\n", 4, "timeline[0]",
     "exactly one of 'node' and 'nodes'"),
    ("pick more than offered", "timeline:\n  - {every: 2s, action: pause, nodes: [h1, h2], pick: 3}\n", 4,
     "timeline[0].pick", "from 1 to 2"),
    ("a node named twice in nodes", "timeline:\n  - {every: 2s, action: pause, nodes: [h1, h1]}\n", 4,
     "timeline[0].nodes", "named twice"),
    ("partition naming a node twice", "timeline:\n  - action: partition\n    at: 2s\n    groups: [[h1, h2], [h2]]\n",
     6, "timeline[0].groups[1][0]", "already in group 1"),
    ("partition with one group", "timeline:\n  - {at: 2s, action: partition, groups: [[h1, h2, h3]]}\n", 4,
     "timeline[0].groups", "at least two groups"),
    ("link that does not exist", "timeline:\n  - {at: 2s, action: link_down, link: [h1, h3]}\n", 4,
     "timeline[0].link", "no link between"),
    ("set_link with bad loss", "timeline:\n  - {at: 2s, action: set_link, link: [h1, s1], loss: 2}\n", 4,
     "timeline[0].loss", "outside [0, 1]"),
    ("set_link changing nothing", "timeline:\n  - {at: 2s, action: set_link, link: [h1, s1]}\n", 4, "timeline[0]",
     "changes nothing"),
    ("for on an action that cannot be undone", "timeline:\n  - {at: 2s, action: kill, node: h1, for: 1s}\n", 4,
     "timeline[0].for", "cannot be undone"),
    ("field of another action", "timeline:\n  - {at: 2s, action: kill, node: h1, groups: [[h1]]}\n", 4,
     "timeline[0].groups", "unknown field 'groups' for action kill"),
    ("unknown link direction", "timeline:\n  - {at: 2s, action: link_down, link: [h1, s1], direction: up}\n", 4,
     "timeline[0].direction", "both, a_to_b, b_to_a"),
    ("exec without a command", "timeline:\n  - {at: 2s, action: exec, node: h1}\n", 4, "timeline[0].command",
     "a non-empty string"),
    ("set_link jitter on a link without delay", "timeline:\n  - {at: 2s, action: set_link, link: [h1, s1], "
     "jitter: 5ms}\n", 4, "timeline[0].jitter", "jitter varies a delay and needs one"),
    ("set_link removing the delay a jitter needs", "timeline:\n  - {at: 1s, action: set_link, link: [h1, s1], "
     "delay: 10ms, jitter: 2ms}\n  - {at: 2s, action: set_link, link: [h1, s1], delay: 0ms}\n", 5, "timeline[1]",
     "at 2s on link h1--s1"),
    ("start of a killed node", "timeline:\n  - {at: 2s, action: kill, node: h1}\n  - {at: 3s, action: start, node: h1}\n",
     5, "timeline[1]", "the node was killed"),
    ("infinite duration", "SUB:duration: .inf\n", 1, "duration", "inf is not finite"),
    ("unknown start", "workload:\n  nodes:\n    h1: {role: probe, start: later}\n", 5, "workload.nodes.h1.start",
     "unknown value 'later'"),
    ("held node that nothing starts", "workload:\n  defaults: {role: probe}\n  nodes:\n    h2: {start: timeline}\n"
     "timeline:\n  - {at: 2s, action: start, node: h1}\n", 6, "workload.nodes.h2.start",
     "node 'h2' waits for the timeline to start it, and no timeline entry does"),
    ("held node without an agent", "workload:\n  nodes:\n    h1: {role: idle, start: timeline}\n"
     "timeline:\n  - {at: 2s, action: start, node: h1}\n", 5, "workload.nodes.h1.start", "runs no testbed agent"),
    ("warm-up that overflows time.sleep", "warmup: 1.0e+300\n", 3, "warmup", "1e+300 is longer than 365 days"),
    ("set_link loss not a number", "timeline:\n  - {at: 2s, action: set_link, link: [h1, s1], loss: .nan}\n", 4,
     "timeline[0].loss", "nan is not a number"),
    ("aliases that expand ten billion times", "workload:\n  defaults:\n    params:\n" + laughs("      "), 11,
     "workload.defaults.params.l5[7]", "alias *l4 takes the document beyond 1,000,000 values"),
    ("alias inside its own anchor", "timeline: &t\n  - {at: 1s, action: exec, node: h1, command: *t}\n", 4,
     "timeline[0].command", "alias *t refers to a value that contains it"),
]


def _text(body):
    if body is None:
        return "duration: 10s\n"
    if body.startswith("SUB:"):
        key = body[4:].split(":", 1)[0]
        lines = [line for line in HEAD.splitlines() if not line.startswith(key + ":")]
        return "\n".join(lines[:0] + [body[4:].rstrip("\n")] + lines) + "\n"
    return HEAD + body


# Every quantity of a scenario: (name, text after HEAD with VALUE for the value, or SUB: to replace
# HEAD's line, its line, the field, which kind of quantity)
QUANTITIES = [
    ("duration", "SUB:duration: VALUE\n", 1, "duration", "time"),
    ("warmup", "warmup: VALUE\n", 3, "warmup", "time"),
    ("quiet", "quiet: VALUE\n", 3, "quiet", "time"),
    ("at", "timeline:\n  - {at: VALUE, action: kill, node: h1}\n", 4, "timeline[0].at", "time"),
    ("every", "timeline:\n  - {every: VALUE, action: pause, node: h1}\n", 4, "timeline[0].every", "time"),
    ("start", "timeline:\n  - {every: 2s, start: VALUE, action: pause, node: h1}\n", 4, "timeline[0].start", "time"),
    ("until", "timeline:\n  - {every: 2s, until: VALUE, action: pause, node: h1}\n", 4, "timeline[0].until", "time"),
    ("for", "timeline:\n  - {at: 2s, action: pause, node: h1, for: VALUE}\n", 4, "timeline[0].for", "time"),
] + [
    (f"set_link {key}", f"timeline:\n  - {{at: 2s, action: set_link, link: [h1, s1], {key}: VALUE}}\n", 4,
     f"timeline[0].{key}", kind)
    for key, kind in [("delay", "delay"), ("jitter", "delay"), ("bandwidth", "rate"), ("loss", "fraction"),
                      ("corruption", "fraction"), ("duplication", "fraction"), ("reordering", "fraction")]
]
HUGE = {"time": "1e+300 is longer than 365 days", "delay": "1e+300 is longer than 240s",
        "rate": "1e+300 is above 100gbit", "fraction": "1e+300 is outside [0, 1]"}


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1.0e+300"])
@pytest.mark.parametrize("name, body, line, field, kind", QUANTITIES, ids=[q[0] for q in QUANTITIES])
def test_every_scenario_quantity_refuses_infinite_nan_and_huge_numbers(name, body, line, field, kind, value):
    from testbed import units

    words = {".inf": "inf is not finite", "-.inf": "-inf is not finite", ".nan": "nan is not a number",
             "1.0e+300": HUGE[kind]}[value]
    allowed = {"time": units.TIME_ALLOWED, "delay": units.DELAY_ALLOWED, "rate": units.RATE_ALLOWED,
               "fraction": units.FRACTION_ALLOWED}[kind]
    with pytest.raises(ValidationError) as exc:
        parse_scenario_text(_text(body.replace("VALUE", value)), "s.yaml")
    error = exc.value
    assert (error.file, error.line, error.field) == ("s.yaml", line, field), str(error)
    assert words in error.message and error.allowed == allowed, str(error)


def test_set_overrides_are_validated_like_the_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(HEAD)
    for override, line, field, words in [("duration=.inf", 2, "duration", "inf is not finite"),
                                         ("warmup=1.0e+300", 1, "warmup", "longer than 365 days"),
                                         ("quiet=.nan", 1, "quiet", "nan is not a number")]:
        with pytest.raises(ValidationError) as exc:
            load_scenario(str(path), overrides=(override,))
        assert (exc.value.file, exc.value.line, exc.value.field) == (str(path), line, field), str(exc.value)
        assert words in exc.value.message


CLUSTER = os.path.join(ROOT, "topologies", "cluster-3-9.yaml")
# (role, node, parameter): every number a role takes, for one node of line3 (probe) or C[3,9] (AbC)
ROLE_NUMBERS = [("probe", "h1", p) for p in ("rate", "size", "count", "start_delay")] + \
    [("abc-component", "c1", p) for p in ("providers", "rate", "time_unit_ms", "transmission_rate", "count", "size",
                                          "start_delay")] + \
    [("abc-cluster-server", "srv1", p) for p in ("time_unit_ms", "transmission_rate")]
# (role, parameter, a value just beyond what it takes): a huge value would spin, hang or exhaust a node
ROLE_BOUNDS = [("probe", "rate", "10001"), ("probe", "rate", "1.0e+300"), ("probe", "size", str(64 * 2 ** 20 + 1)),
               ("probe", "count", str(2 ** 31)), ("probe", "start_delay", "31536001"),
               ("abc-component", "time_unit_ms", "1.0e+300"), ("abc-component", "size", "1" + "0" * 30),
               ("abc-component", "count", str(2 ** 31)), ("abc-component", "start_delay", "1.0e+300"),
               ("abc-cluster-server", "time_unit_ms", "31536000001")]


def _role_text(role, node, param, value):
    """The scenario, with the parameter on line 7 (probe) or 10 (AbC)."""
    if role == "probe":
        head = HEAD + "workload:\n  nodes:\n"
    else:
        head = f"topology: {CLUSTER}\nduration: 10s\nworkload:\n  kinds:\n    server: {{role: abc-cluster-server}}\n" \
               "    component: {role: abc-component}\n  nodes:\n"
    return head + f"    {node}:\n      role: {role}\n      params: {{{param}: {value}}}\n"


@pytest.mark.parametrize("value, words", [(".inf", "inf is not finite"), ("-.inf", "-inf is not finite"),
                                          (".nan", "nan is not a number")])
@pytest.mark.parametrize("role, node, param", ROLE_NUMBERS, ids=[f"{r}.{p}" for r, _, p in ROLE_NUMBERS])
def test_role_parameters_refuse_infinite_and_nan(role, node, param, value, words):
    from agents.roles import check_params

    with pytest.raises(ValidationError) as exc:
        parse_scenario_text(_role_text(role, node, param, value), "s.yaml")
    error = exc.value
    assert (error.line, error.field) == (7 if role == "probe" else 10, f"workload.nodes.{node}.params.{param}"), str(error)
    assert error.message == f"{words} (node {node})" and error.allowed == check_params(role, {param: -1.5})[2], str(error)


@pytest.mark.parametrize("role, param, value", ROLE_BOUNDS, ids=[f"{r}.{p}={v[:10]}" for r, p, v in ROLE_BOUNDS])
def test_role_parameters_refuse_what_would_overflow_or_hang_a_node(role, param, value):
    node = {"probe": "h1", "abc-component": "c1", "abc-cluster-server": "srv1"}[role]
    with pytest.raises(ValidationError) as exc:
        parse_scenario_text(_role_text(role, node, param, value), "s.yaml")
    assert exc.value.field == f"workload.nodes.{node}.params.{param}" and "is not allowed" in exc.value.message
    assert " to " in exc.value.allowed or "at most" in exc.value.allowed, str(exc.value)


def test_role_parameters_at_their_bounds_are_taken():
    scenario = parse_scenario_text(_role_text("probe", "h1", "rate", "10000, size: 67108864, count: 2147483647, "
                                              "start_delay: 31536000"), "s.yaml")
    assert scenario.topology.nodes["h1"].params["rate"] == 10000


def test_the_scenario_corpus_has_at_least_twenty_cases():
    assert len(BAD) >= 20


@pytest.mark.parametrize("name, body, line, field, words", BAD, ids=[c[0] for c in BAD])
def test_bad_scenario_gets_one_clear_message_and_exit_2(tmp_path, capsys, name, body, line, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text(_text(body))
    code = main(["run", str(path), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert f"{path}:{line}:" in err and field in err and words in err, err
    assert not (tmp_path / "run").exists(), "nothing is created for a bad scenario"


def test_bad_cli_arguments_exit_2(tmp_path, capsys):
    good = tmp_path / "ok.yaml"
    good.write_text(HEAD)
    assert main(["run", str(good), "--seed", "-3"]) == 2
    assert main(["run", str(good), "--set", "novalue"]) == 2
    assert main(["run", str(good), "--accept-unemulated", "speed"]) == 2
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "something").write_text("x")
    assert main(["run", str(good), "--out", str(occupied)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (occupied / "something").read_text() == "x"


NEMESIS = HEAD + """
workload:
  defaults: {role: probe, params: {rate: 5}}
timeline:
  - {every: 1s, action: pause, nodes: [h1, h2, h3], pick: 1, for: 500ms}
  - {every: 3s, action: set_link, link: [h1, s1], loss: 0.5, for: 1s}
  - {every: 2500ms, action: stop, nodes: all, pick: 2, for: 1s}
"""


def test_same_seed_gives_the_same_schedule_and_workload():
    a = parse_scenario_text(NEMESIS, "s.yaml", seed=7)
    b = parse_scenario_text(NEMESIS, "s.yaml", seed=7)
    assert [x.describe() for x in a.schedule] == [x.describe() for x in b.schedule]
    assert {n: (x.role, x.params) for n, x in a.topology.nodes.items()} == \
        {n: (x.role, x.params) for n, x in b.topology.nodes.items()}
    others = [parse_scenario_text(NEMESIS, "s.yaml", seed=s) for s in range(8, 14)]
    assert any([x.describe() for x in o.schedule] != [x.describe() for x in a.schedule] for o in others), \
        "a different seed chooses differently"


def test_every_expands_with_undo_actions_in_time_order():
    schedule = parse_scenario_text(NEMESIS, "s.yaml", seed=1).schedule
    times = [a.at_ms for a in schedule]
    assert times == sorted(times)
    pauses = [a for a in schedule if a.action == "pause"]
    resumes = [a for a in schedule if a.action == "resume"]
    assert len(pauses) == len(resumes) == 10
    # each undo follows 500 ms later, or at the end of the scenario if that comes first
    assert all(r.at_ms - p.at_ms == min(500, 10000 - p.at_ms) and r.node == p.node for p, r in zip(pauses, resumes))
    stops = [a for a in schedule if a.action == "stop"]
    assert len(stops) == 8 and all(a.node in ("h1", "h2", "h3") for a in stops)


def test_workload_is_laid_over_the_topology_kinds():
    scenario = load_scenario(os.path.join(ROOT, "scenarios", "quickstart.yaml"))
    roles = {n.role for n in scenario.topology.nodes.values()}
    assert roles == {"probe"}  # the topology's kinds say idle; the workload wins
    c1 = scenario.topology.nodes["c1"]
    assert c1.params["rate"] == 20 and c1.params["reliable"] is True and c1.params["parent"] == "srv1"


def test_a_node_held_for_the_timeline_is_down_until_its_start():
    from spark_analysis.history import down_intervals
    from testbed.faults import DryLab, Nemesis

    text = HEAD + ("workload:\n  defaults: {role: probe}\n  nodes:\n    h3: {start: timeline}\n"
                   "timeline:\n  - {at: 2s, action: start, node: h3}\n  - {at: 3s, action: stop, node: h3}\n")
    scenario = parse_scenario_text(text, os.path.join(ROOT, "scenarios", "s.yaml"))
    nodes = scenario.topology.nodes
    assert [n for n in nodes if nodes[n].held] == ["h3"] and nodes["h3"].to_dict()["start"] == "timeline"
    assert "start" not in nodes["h1"].to_dict()
    lab = DryLab(scenario.topology)
    assert lab.agent_pid("h3") is None and lab.agent_pid("h1") == 1
    Nemesis(lab).apply(scenario.schedule[0])
    assert lab.calls == [("start_agent", ("h3",))], "the timeline's start starts a held agent"
    manifest = {"t0_ns": 1000, "topology": {"nodes": {n: x.to_dict() for n, x in nodes.items()}},
                "timeline": [{"action": "start", "node": "h3", "t_ns": 5000, "ok": True},
                             {"action": "stop", "node": "h3", "t_ns": 7000, "ok": True}]}
    assert down_intervals(manifest) == {"h3": [(1000, 5000), (7000, None)]}


def test_set_overrides_a_scenario_field(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "workload:\n  defaults: {role: probe, params: {rate: 5}}\n")
    scenario = load_scenario(str(path), overrides=("workload.defaults.params.rate=50", "seed=9"))
    assert scenario.seed == 9 and scenario.topology.nodes["h2"].params["rate"] == 50


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(os.path.join(ROOT, "scenarios")) if f.endswith(".yaml")))
def test_shipped_scenarios_start_with_a_comment_and_load(name):
    path = os.path.join(ROOT, "scenarios", name)
    assert open(path).readline().startswith("# ")
    assert load_scenario(path).schedule is not None


def test_readme_scenario_example_is_valid(tmp_path):
    import re

    text = open(os.path.join(ROOT, "README.md")).read()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "timeline:" in b)
    path = os.path.join(ROOT, "scenarios", "readme-example.yaml")  # where its relative topology resolves
    scenario = parse_scenario_text(block, path)
    assert scenario.name == "example" and len(scenario.schedule) > 5


def test_an_every_that_would_expand_without_end_is_refused(tmp_path):
    from testbed.errors import ValidationError

    with pytest.raises(ValidationError) as info:
        parse_scenario_text(f"topology: {LINE3}\nduration: 1000s\ntimeline:\n  - {{every: 1us, action: pause, node: h1}}\n",
                            str(tmp_path / "s.yaml"))
    assert "timeline[0].every" in str(info.value) and "at most 100,000" in str(info.value)


def test_a_set_value_has_the_bounds_of_a_file(tmp_path):
    from testbed.errors import ValidationError

    path = tmp_path / "s.yaml"
    path.write_text(HEAD)
    with pytest.raises(ValidationError) as info:
        load_scenario(str(path), overrides=("description=" + "[" * 5000 + "]" * 5000,))
    assert "--set description" in str(info.value)
    scenario = load_scenario(str(path), overrides=("description=not: yaml: at all",))
    assert scenario.description == "not: yaml: at all"
