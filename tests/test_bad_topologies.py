"""The bad-input corpus: each malformed topology gets one clear message naming the file, the line,
the field and what is allowed; `testbed up` exits 2 and creates nothing."""

from __future__ import annotations

import os

import pytest

from testbed.cli import main

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
    ("tree too large", "generate: {shape: tree, levels: 9, children: 6, components: 5}\n", 1, "generate",
     "at most 5000 nodes"),
]


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
