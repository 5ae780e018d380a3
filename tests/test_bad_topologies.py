"""The bad-input corpus: each malformed topology gets one clear message naming the file, the line,
the field and what is allowed; `testbed up` exits 2 and creates nothing."""

from __future__ import annotations

import os

import pytest

from testbed import yamlio
from testbed.cli import main
from testbed.errors import ValidationError


def laughs(indent: str, levels: int = 10) -> str:
    """"Billion laughs": ten values, then `levels - 1` lists of ten aliases of the list before, each
    line one list (10**levels values once expanded). The 6th list passes a million values, at its
    8th alias of the 5th."""
    lines = [f"{indent}l0: &l0 [{', '.join(['lol'] * 10)}]\n"]
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, levels)]
    return "".join(lines)


# (case name, file text, expected line, field in the message, words of the message)
CORPUS = [
    ("yaml syntax error", "nodes:\n  a: {image: [x\n", 3, "", "YAML syntax error"),
    ("bad indentation", "nodes:\n  a: {}\n b: {}\n", 3, "", "YAML syntax error"),
    ("empty file", "", 1, "", "the file is empty"),
    ("top level is a list", "- a\n- b\n", 1, "", "expected a mapping"),
    ("unknown top-level field", "nodes: {a: {}}\nlinkz: []\n", 2, "linkz", "unknown field 'linkz'"),
    ("duplicate key", "nodes:\n  a: {}\n  a: {}\n", 3, "nodes.a", "duplicate key"),
    ("nodes is a list", "nodes: [a, b]\n", 1, "nodes", "expected a mapping"),
    ("node name with a space", "nodes:\n  'bad name': {}\n", 2, "nodes.bad name", "is not allowed"),
    ("node name starting with a digit", "nodes:\n  1abc: {}\n", 2, "nodes.1abc", "a letter"),
    ("unknown node field", "nodes:\n  a: {imagee: x}\n", 2, "nodes.a.imagee", "unknown field 'imagee'"),
    ("unknown role", "nodes:\n  a:\n    role: sequencer\n", 3, "nodes.a.role", "unknown value 'sequencer'"),
    ("unknown runtime", "nodes:\n  a: {runtime: vm}\n", 2, "nodes.a.runtime", "allowed: docker, process"),
    ("unknown kind", "nodes:\n  a: {kind: server}\n", 2, "nodes.a.kind", "unknown kind 'server'"),
    ("command of wrong type", "nodes:\n  a: {command: 5}\n", 2, "nodes.a.command", "a string or a non-empty list"),
    ("image with upper case", "nodes:\n  a: {image: Ubuntu}\n", 2, "nodes.a.image", "lower case"),
    ("negative memory", "nodes:\n  a:\n    resources: {memory: -5MiB}\n", 3, "nodes.a.resources.memory",
     "is not a size"),
    ("zero memory", "nodes:\n  a:\n    resources: {memory: 0}\n", 3, "nodes.a.resources.memory", "below 6MiB"),
    ("NaN memory", "nodes:\n  a:\n    resources: {memory: .nan}\n", 3, "nodes.a.resources.memory", "not a number"),
    ("huge memory", "nodes:\n  a:\n    resources: {memory: 1.0e+30}\n", 3, "nodes.a.resources.memory",
     "above 1024GiB"),
    ("memory as words", "nodes:\n  a:\n    resources: {memory: lots}\n", 3, "nodes.a.resources.memory",
     "'lots' is not a size"),
    ("memory below what the agent needs", "nodes:\n  a:\n    role: probe\n    resources: {memory: 16MiB}\n", 4,
     "nodes.a.resources.memory", "less than the agent needs to start"),
    ("pids zero", "nodes:\n  a:\n    resources: {pids: 0}\n", 3, "nodes.a.resources.pids", "below 1"),
    ("pids a fraction", "nodes:\n  a:\n    resources: {pids: 2.5}\n", 3, "nodes.a.resources.pids",
     "not a whole number"),
    ("pids a string", "nodes:\n  a:\n    resources: {pids: many}\n", 3, "nodes.a.resources.pids",
     "not a whole number"),
    ("pids below what the agent needs", "defaults:\n  resources: {pids: 4}\nnodes:\n  a: {role: probe}\n", 2,
     "defaults.resources.pids", "fewer than the agent needs"),
    ("negative cpus", "nodes:\n  a:\n    resources: {cpus: -1}\n", 3, "nodes.a.resources.cpus", "below 0.01"),
    ("infinite cpus", "nodes:\n  a:\n    resources: {cpus: .inf}\n", 3, "nodes.a.resources.cpus", "not finite"),
    ("huge cpus", "nodes:\n  a:\n    resources: {cpus: 1.0e+30}\n", 3, "nodes.a.resources.cpus", "above 1024"),
    ("cpus a string", "nodes:\n  a:\n    resources: {cpus: half}\n", 3, "nodes.a.resources.cpus", "not a number"),
    ("unknown resource", "nodes:\n  a:\n    resources: {disk: 1GiB}\n", 3, "nodes.a.resources.disk",
     "unknown field 'disk'"),
    ("resources a list", "nodes:\n  a:\n    resources: [1GiB]\n", 3, "nodes.a.resources", "expected a mapping"),
    # radio segments (testbed/radio): a careless or hostile declaration never builds anything
    ("radio member without a position", "nodes: {a: {}}\nradio:\n  air: {members: [a], range: 50}\n", 3,
     "radio.air.members[0]", "without a position"),
    ("negative radio range", "nodes: {a: {position: [0, 0]}}\nradio:\n  air:\n    members: [a]\n    range: -5\n",
     5, "radio.air.range", "negative"),
    ("infinite radio range", "nodes: {a: {position: [0, 0]}}\nradio:\n  air: {members: [a], range: .inf}\n", 3,
     "radio.air.range", "not finite"),
    ("position beyond the world", "nodes:\n  a: {position: [0, 1.0e+300]}\nradio: {air: {members: [a], range: 5}}\n",
     2, "nodes.a.position[1]", "beyond 10000km"),
    ("position of one number", "nodes:\n  a: {position: 5}\nradio: {air: {members: [a], range: 5}}\n", 2,
     "nodes.a.position", "expected a position"),
    ("radio tick nan", "nodes: {a: {position: [0, 0]}}\nradio:\n  air: {members: [a], range: 5, tick: .nan}\n", 3,
     "radio.air.tick", "not a number"),
    ("radio queue huge", "nodes: {a: {position: [0, 0]}}\nradio:\n  air: {members: [a], range: 5, queue: 1000000000}\n",
     3, "radio.air.queue", "not a queue length"),
    ("radio members not a list", "nodes: {a: {position: [0, 0]}}\nradio:\n  air: {members: a, range: 5}\n", 3,
     "radio.air.members", "needs its member nodes"),
    ("radio trace missing", "nodes: {a: {}}\nradio:\n  air:\n    members: [a]\n    range: 5\n    trace: nowhere.ns2\n",
     6, "radio.air.trace", "no such trace file"),
    ("radio trace is a device", "nodes: {a: {}}\nradio:\n  air:\n    members: [a]\n    range: 5\n    trace: /dev/zero\n",
     6, "radio.air.trace", "not a regular file"),
    ("unknown mobility model", "nodes:\n  a: {mobility: {model: teleport}}\n", 2,
     "nodes.a.mobility.model", "unknown mobility model"),
    ("capability not a name", "nodes:\n  a: {capabilities: [net raw]}\n", 2, "nodes.a.capabilities[0]",
     "capability names"),
    ("env value is a mapping", "nodes:\n  a:\n    env: {X: {y: 1}}\n", 3, "nodes.a.env.X", "expected a string"),
    ("switch and node share a name", "nodes: {a: {}}\nswitches:\n  a: {}\n", 3, "switches.a", "already the name"),
    ("unknown switch type", "switches:\n  s: {type: hub}\n", 2, "switches.s.type", "bridge, ovs"),
    ("stp not a boolean", "switches:\n  s: {stp: 'yes'}\n", 2, "switches.s.stp", "true or false"),
    ("links not a list", "nodes: {a: {}}\nlinks: {a: b}\n", 2, "links", "expected a list"),
    ("unknown node in a link", "nodes: {a: {}}\nlinks:\n  - [a, b]\n", 3, "links[0].endpoints[1]",
     "unknown node or switch 'b'"),
    ("link with one endpoint", "nodes: {a: {}}\nlinks:\n  - endpoints: [a]\n", 3, "links[0].endpoints",
     "expected two endpoints"),
    ("link to itself", "nodes: {a: {}}\nlinks:\n  - [a, a]\n", 3, "links[0].endpoints", "both ends are 'a'"),
    ("loss above one", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    loss: 1.5\n", 4,
     "links[0].loss", "outside [0, 1]"),
    ("negative loss percentage", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    loss: -5%\n", 4,
     "links[0].loss", "outside [0, 1]"),
    ("negative bandwidth", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    bandwidth: -10mbit\n", 4,
     "links[0].bandwidth", "not above 0"),
    ("bandwidth without unit or number", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    bandwidth: fast\n",
     4, "links[0].bandwidth", "is not a rate"),
    ("negative delay", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: -3ms\n", 4,
     "links[0].delay", "negative"),
    ("delay with a bad unit", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: 3 fortnights\n", 4,
     "links[0].delay", "not a duration"),
    ("reordering without delay", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    reordering: 0.1\n", 4,
     "links[0].reordering", "needs a delay"),
    ("jitter without delay", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    jitter: 5ms\n", 4,
     "links[0].jitter", "needs one"),
    ("unknown impairment", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    latency: 5ms\n", 4,
     "links[0].latency", "unknown field 'latency'"),
    ("interface on a switch", "nodes: {a: {}}\nswitches: {s: {}}\nlinks:\n  - [a, 's:eth3']\n", 4,
     "links[0].endpoints[1]", "switch ports are named by the testbed"),
    ("interface used twice", "nodes: {a: {}, b: {}, c: {}}\nlinks:\n  - ['a:eth1', b]\n  - ['a:eth1', c]\n", 4,
     "links[1].endpoints[0]", "already used"),
    ("loop of switches", "switches: {s1: {}, s2: {}, s3: {}}\nlinks:\n  - [s1, s2]\n  - [s2, s3]\n  - [s3, s1]\n",
     5, "links[2]", "closes a loop"),
    ("tree with a cycle", "nodes:\n  a: {params: {parent: b}}\n  b:\n    params: {parent: a}\n", 4,
     "params.parent", "form a cycle"),
    ("parent that is not a node", "nodes:\n  a:\n    params: {parent: zz}\n", 3, "nodes.a.params.parent",
     "parent 'zz' is not a node"),
    ("address clash", "nodes: {a: {}, b: {}}\nswitches: {s: {}}\nlinks:\n  - endpoints: [a, s]\n"
     "    addresses: [10.1.0.5/24, null]\n  - endpoints: [b, s]\n    addresses: [10.1.0.5/24, null]\n", 7,
     "links[1].addresses", "already used"),
    ("addresses in two subnets on one switch", "nodes: {a: {}, b: {}}\nswitches: {s: {}}\nlinks:\n"
     "  - endpoints: [a, s]\n    addresses: [10.1.0.5/24, null]\n  - endpoints: [b, s]\n"
     "    addresses: [10.2.0.5/24, null]\n", 5, "links[0].addresses", "different subnets"),
    ("address without prefix", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    addresses: [10.0.0.1, null]\n",
     4, "links[0].addresses[0]", "no prefix length"),
    ("address not IPv4", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    addresses: [fe80::1/64, null]\n",
     4, "links[0].addresses[0]", "not an IPv4 address"),
    ("address on a switch", "nodes: {a: {}}\nswitches: {s: {}}\nlinks:\n  - endpoints: [a, s]\n"
     "    addresses: [null, 10.0.0.1/24]\n", 5, "links[0].addresses[1]", "is a switch"),
    ("network address as host", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    addresses: [10.0.0.0/24, null]\n",
     4, "links[0].addresses[0]", "network or broadcast"),
    ("pool not a network", "nodes: {a: {}}\naddressing: {pool: 10.0.0.1/8}\n", 2, "addressing.pool",
     "not an IPv4 network"),
    ("pool too small", "addressing: {pool: 10.0.0.0/30}\ngenerate: {shape: cluster, servers: 1, components: 5}\n", 1,
     "addressing", "no room left"),
    ("unknown routing mode", "nodes: {a: {}}\naddressing: {routing: ospf}\n", 2, "addressing.routing", "static, none"),
    ("unknown unemulated impairment", "nodes: {a: {}}\naccept_unemulated: [latency]\n", 2, "accept_unemulated[0]",
     "unknown value 'latency'"),
    ("unknown shape", "generate: {shape: star, servers: 3}\n", 1, "generate.shape", "cluster, ring, tree"),
    ("tree without levels", "generate: {shape: tree, children: 2, components: 2}\n", 1, "generate.levels",
     "missing field 'levels'"),
    ("ring with zero servers", "generate:\n  shape: ring\n  servers: 0\n  components: 3\n", 3, "generate.servers",
     "at least 1"),
    ("cluster with a float count", "generate: {shape: cluster, servers: 2.5, components: 3}\n", 1,
     "generate.servers", "a whole number"),
    ("generator field of another shape", "generate: {shape: cluster, servers: 2, components: 2, levels: 3}\n", 1,
     "generate.levels", "unknown field 'levels' for shape cluster"),
    ("population without groups", "generate: {shape: nodes}\n", 1, "generate.groups", "missing field 'groups'"),
    ("population group without count", "generate:\n  shape: nodes\n  groups:\n    d: {kind: x}\n", 4,
     "generate.groups.d.count", "missing field 'count'"),
    ("population group of zero", "generate:\n  shape: nodes\n  groups:\n    d: {count: 0}\n", 4,
     "generate.groups.d.count", "at least 1"),
    ("population prefix with a space", "generate:\n  shape: nodes\n  groups:\n    'a b': {count: 2}\n", 4,
     "generate.groups.a b", "name prefix 'a b' is not allowed"),
    ("population groups making one name twice",
     "generate:\n  shape: nodes\n  groups:\n    d: {count: 11}\n    d1: {count: 1}\n", 5,
     "generate.groups.d1", "node d11 is made by two groups"),
    ("population too large", "generate:\n  shape: nodes\n  groups:\n    d: {count: 4000}\n    w: {count: 1001}\n",
     5, "generate.groups.w", "at most 5000 nodes"),
    ("population with links fields", "generate: {shape: nodes, groups: {d: {count: 2}}, server_links: {}}\n", 1,
     "generate.server_links", "unknown field 'server_links' for shape nodes"),
    ("population switch named like a node", "generate: {shape: nodes, groups: {d: {count: 2}}, switch: d1}\n", 1,
     "generate.switch", "switch name 'd1' is not allowed"),
    ("population links without a switch", "generate: {shape: nodes, groups: {d: {count: 2}}, links: {delay: 1ms}}\n",
     1, "generate.links", "without a switch"),
    ("tree too large", "generate: {shape: tree, levels: 9, children: 6, components: 5}\n", 1, "generate",
     "at most 5000 nodes"),
    # aliases are expanded into copies: bounded in number, depth, and never inside their own anchor
    ("aliases that expand ten billion times", "nodes:\n  a:\n    attributes:\n" + laughs("      "), 9,
     "nodes.a.attributes.l5[7]", "alias *l4 takes the document beyond 1,000,000 values (allowed: at most 1,000,000"),
    ("alias inside its own anchor", "nodes:\n  a:\n    attributes: &x {loop: [*x]}\n", 3,
     "nodes.a.attributes.loop[0]", "alias *x refers to a value that contains it (&x on line 3)"),
    ("merge key naming its own mapping", "kinds:\n  server: &s\n    role: idle\n    <<: *s\n", 4,
     "kinds.server.<<", "alias *s refers to a value that contains it"),
    ("lists nested 100000 deep", "nodes: {a: {attributes: {x: " + "[" * 100000 + "]" * 100000 + "}}}\n", 1, "",
     "nested more than 100 levels deep (allowed: at most 100 levels"),
    ("nesting deepened by an alias", "kinds:\n  k: {attributes: {x: &d " + "[" * 60 + "]" * 60 + "}}\nnodes:\n"
     "  a: {attributes: {y: " + "[" * 50 + "*d" + "]" * 50 + "}}\n", 4, "nodes.a.attributes.y[0][0]",
     "alias *d nests the document more than 100 levels deep"),
    # every quantity is finite and within what the machine takes (the full matrix is below)
    ("infinite delay", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: .inf\n", 4,
     "links[0].delay", "inf is not finite (allowed: a delay from 0 to 240s"),
    ("loss not a number", "nodes: {a: {}, b: {}}\nlink_defaults: {loss: .nan}\nlinks:\n  - [a, b]\n", 2,
     "link_defaults.loss", "nan is not a number"),
    ("bandwidth beyond tc", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    b_to_a: {bandwidth: 1.0e+300}\n",
     4, "links[0].b_to_a.bandwidth", "1e+300 is above 100gbit (allowed: a rate from 1kbit to 100gbit"),
    ("delay beyond netem", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: 5m\n", 4,
     "links[0].delay", "5m is longer than 240s"),
    # `testbed up` starts the agents with the topology's roles and parameters: checked like a scenario's
    ("probe rate of .inf", "nodes:\n  a:\n    role: probe\n    params: {rate: .inf}\n", 4, "nodes.a.params.rate",
     "inf is not finite (node a) (allowed: messages per second, a number from 0 to 10000)"),
    ("AbC time unit of .nan from a kind", "kinds:\n  comp:\n    role: abc-component\n    params: {time_unit_ms: .nan}\n"
     "nodes:\n  c1: {kind: comp}\n", 4, "kinds.comp.params.time_unit_ms", "nan is not a number (node c1)"),
    ("unknown probe parameter", "defaults:\n  role: probe\n  params: {rtae: 5}\nnodes: {a: {}}\n", 3,
     "defaults.params.rtae", "unknown parameter 'rtae' of role probe"),
    ("probe size from the generator", "generate:\n  shape: cluster\n  servers: 1\n  components: 2\n"
     "  component: {role: probe, params: {size: 100000000}}\n", 1, "generate", "100000000 is not allowed (node c1)"),
    ("impossible date", "nodes:\n  a:\n    attributes: {born: 2001-02-30}\n", 3, "nodes.a.attributes.born",
     "'2001-02-30' is not a valid timestamp"),
    ("int tag on a word", "nodes:\n  a: {attributes: {n: !!int many}}\n", 2, "nodes.a.attributes.n",
     "'many' is not a valid int"),
]


# Numbers YAML reads that no quantity may be: (YAML text, words of the message for delay and jitter,
# for bandwidth, for the probabilities). 1.0e+300 is a float; YAML 1.1 reads 1e300 as the string
# '1e300', refused as "not a duration" before any of this.
NON_FINITE = [
    (".inf", "inf is not finite", "inf is not finite", "inf is not finite"),
    ("-.inf", "-inf is not finite", "-inf is not finite", "-inf is not finite"),
    (".nan", "nan is not a number", "nan is not a number", "nan is not a number"),
    ("1.0e+300", "1e+300 is longer than 240s", "1e+300 is above 100gbit", "1e+300 is outside [0, 1]"),
    ("1" + "0" * 400, " is longer than 240s", " is above 100gbit", " is outside [0, 1]"),  # an int too large for a float
]
# (where, the text around the impairment, its line, the field's path)
IMPAIRMENT_PLACES = [
    ("link_defaults", "nodes: {a: {}, b: {}}\nlink_defaults:\n  {field}: {value}\nlinks:\n  - [a, b]\n", 3,
     "link_defaults.{field}"),
    ("link", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    {field}: {value}\n", 4, "links[0].{field}"),
    ("a_to_b", "nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    a_to_b:\n      {field}: {value}\n", 5,
     "links[0].a_to_b.{field}"),
]


@pytest.mark.parametrize("where, around, line, field", IMPAIRMENT_PLACES, ids=[p[0] for p in IMPAIRMENT_PLACES])
@pytest.mark.parametrize("value, time_words, rate_words, fraction_words", NON_FINITE, ids=[v[0][:8] for v in NON_FINITE])
@pytest.mark.parametrize("impairment", ["delay", "jitter", "bandwidth", "loss", "corruption", "duplication",
                                        "reordering"])
def test_every_impairment_refuses_infinite_nan_and_huge_numbers(tmp_path, capsys, where, around, line, field, value,
                                                                time_words, rate_words, fraction_words, impairment):
    from testbed.units import DELAY_ALLOWED, FRACTION_ALLOWED, RATE_ALLOWED

    words, allowed = {"delay": (time_words, DELAY_ALLOWED), "jitter": (time_words, DELAY_ALLOWED),
                      "bandwidth": (rate_words, RATE_ALLOWED)}.get(impairment, (fraction_words, FRACTION_ALLOWED))
    path = tmp_path / "bad.yaml"
    path.write_text(around.replace("{field}", impairment).replace("{value}", value))
    assert main(["topo", "validate", str(path)]) == 2  # validate builds nothing, whatever it accepts
    err = capsys.readouterr().err.strip()
    assert f"{path}:{line}: {field.format(field=impairment)}: " in err, err
    assert words in err and f"(allowed: {allowed})" in err, err


def test_link_bounds_are_what_tc_takes(tmp_path):
    """Up to 240s of delay (netem takes 274.877 s) and 1kbit to 100gbit pass; a little beyond does not."""
    from testbed.topology import parse_topology_text

    ok = parse_topology_text("nodes: {a: {}, b: {}}\nlinks:\n  - {endpoints: [a, b], delay: 240s, jitter: 240000,"
                             " bandwidth: 100gbit, b_to_a: {bandwidth: 1kbit}}\n", "t.yaml")
    assert ok.links[0].forward.delay_ms == 240000 and ok.links[0].forward.bandwidth_mbit == 100000
    assert ok.links[0].backward.bandwidth_mbit == 0.001
    for impairment, words in [("delay: 240.5s", "240.5s is longer than 240s"), ("bandwidth: 999bit", "below 1kbit"),
                              ("bandwidth: 100001mbit", "is above 100gbit")]:
        with pytest.raises(ValidationError, match=words):
            parse_topology_text(f"nodes: {{a: {{}}, b: {{}}}}\nlinks:\n  - {{endpoints: [a, b], {impairment}}}\n",
                                "t.yaml")


def test_the_corpus_has_at_least_thirty_cases():
    assert len(CORPUS) >= 30
    assert len({case[0] for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("name, text, line, field, words", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_topology_gets_one_clear_message_and_exit_2(tmp_path, capsys, name, text, line, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code = main(["up", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, f"one message, got: {err}"
    assert f"{path}:{line}:" in err, err
    assert field in err and words in err, err
    assert os.path.exists(str(path))  # the input is left alone


def test_validate_and_show_report_the_same_errors(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("nodes: {a: {}}\nlinks:\n  - [a, b]\n")
    for verb in (["topo", "validate"], ["topo", "show"]):
        assert main(verb + [str(path)]) == 2
        assert "unknown node or switch 'b'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["aliases that expand ten billion times", "alias inside its own anchor",
                                  "lists nested 100000 deep"])
def test_topo_show_refuses_runaway_aliases_and_nesting_with_exit_2(tmp_path, capsys, name):
    _, text, line, field, words = next(case for case in CORPUS if case[0] == name)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["topo", "show", str(path)]) == 2
    captured = capsys.readouterr()
    assert not captured.out and f"{path}:{line}: " in captured.err and words in captured.err, captured.err


def test_the_value_budget_counts_each_alias_at_its_expanded_size(monkeypatch):
    text = "a: &a [1, 2]\nb: *a\n"  # the mapping, 2 keys, the list and its 2 items, then 3 again
    monkeypatch.setattr(yamlio, "MAX_VALUES", 9)
    assert yamlio.load_text(text, "f.yaml").data == {"a": [1, 2], "b": [1, 2]}
    monkeypatch.setattr(yamlio, "MAX_VALUES", 8)
    with pytest.raises(ValidationError) as exc:
        yamlio.load_text(text, "f.yaml")
    assert (exc.value.line, exc.value.field) == (2, "b") and "alias *a takes the document beyond 8 values" in str(exc.value)
    with pytest.raises(ValidationError) as exc:
        yamlio.load_text("a: [1, 2, 3, 4, 5, 6]\n", "f.yaml")  # the 6th item is the 9th value
    assert (exc.value.line, exc.value.field) == (1, "a[5]") and "beyond 8 values" in str(exc.value)


def test_an_alias_inside_its_own_anchor_is_refused_at_any_depth():
    for text, line, field in [("&a [*a]\n", 1, "[0]"), ("x: 1\na: &a\n  b: [1, {c: *a}]\n", 3, "a.b[1].c"),
                              ("a: &a {k: v, <<: *a}\n", 1, "a.<<")]:
        with pytest.raises(ValidationError) as exc:
            yamlio.load_text(text, "f.yaml")
        assert (exc.value.line, exc.value.field) == (line, field), text
        assert "alias *a refers to a value that contains it" in exc.value.message
        assert "aliases that refer to themselves are not allowed" in exc.value.allowed


def test_a_set_value_gets_the_same_bounds_as_a_file():
    """load_value is for `--set PATH=VALUE` (scenario.apply_overrides still uses yaml.safe_load)."""
    assert yamlio.load_value("[1, {a: b}]", "--set") == [1, {"a": "b"}]
    assert yamlio.load_value("", "--set") is None
    assert yamlio.load_value("[1, 2", "--set", text_if_not_yaml=True) == "[1, 2"
    with pytest.raises(ValidationError, match="YAML syntax error"):
        yamlio.load_value("[1, 2", "--set")
    for text, words in [("&a [*a]", "refers to a value that contains it"), ("[" * 5000 + "]" * 5000, "nested more than 100"),
                        ("{" + laughs("", 7).replace("\n", ", ") + "}", "beyond 1,000,000 values")]:
        with pytest.raises(ValidationError, match="--set:1: .*" + words):
            yamlio.load_value(text, "--set", text_if_not_yaml=True)


def test_missing_file_is_a_usage_error(tmp_path, capsys):
    assert main(["up", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_bad_cli_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["up"])
    assert exc.value.code == 2
    assert main(["up", "topologies/line3.yaml", "--accept-unemulated", "latency"]) == 2
    assert "unknown impairment 'latency'" in capsys.readouterr().err
    assert main(["up", "topologies/line3.yaml", "--name", "bad name"]) == 2


def test_bad_input_leaves_nothing_on_the_machine(no_leftovers, tmp_path, capsys):
    from testbed.cleanup import read_states

    for name, text, *_ in CORPUS[::5]:
        path = tmp_path / "bad.yaml"
        path.write_text(text)
        assert main(["up", str(path)]) == 2, name
    capsys.readouterr()
    assert not read_states()
