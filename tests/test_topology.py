"""Topology files → model: shipped files, generators, inheritance, units, addressing, schema."""

from __future__ import annotations

import ipaddress
import json
import os
from collections import Counter

import jsonschema
import pytest
import yaml

from testbed.schema import topology_schema
from testbed.topology import load_topology, parse_topology_text
from testbed.units import parse_fraction, parse_rate_mbit, parse_time_ms
from testbed.errors import ValidationError
from testbed.yamlio import load_file, load_text

from .conftest import TOPOLOGIES, topology_path

SHIPPED = sorted(f for f in os.listdir(TOPOLOGIES) if f.endswith(".yaml"))


def test_required_topologies_are_shipped():
    for name in ("line3.yaml", "cluster-3-9.yaml", "ring-5-3.yaml", "tree-3-2-2.yaml", "tree-3-5-5.yaml",
                 "ring-31-5.yaml"):
        assert name in SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_topology_starts_with_a_comment_and_loads(name):
    with open(topology_path(name)) as handle:
        assert handle.readline().startswith("# "), "each topology file starts with a comment saying what it is"
    topo = load_topology(topology_path(name))
    assert topo.nodes and topo.links


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_topology_validates_against_the_json_schema(name):
    jsonschema.validate(load_file(topology_path(name)).data, topology_schema())


@pytest.mark.parametrize("name", SHIPPED)
def test_explicit_form_loads_back_to_the_same_network(name):
    topo = load_topology(topology_path(name))
    again = parse_topology_text(yaml.safe_dump(topo.to_dict(), sort_keys=False), "explicit.yaml")
    assert again.to_dict() == topo.to_dict()
    assert [s.subnet for s in again.segments] == [s.subnet for s in topo.segments]


def _counts(topo):
    servers = [n for n in topo.nodes if n.startswith("srv")]
    components = [n for n in topo.nodes if n.startswith("c")]
    return len(servers), len(components)


@pytest.mark.parametrize("name, servers, components", [
    ("cluster-3-9.yaml", 3, 9), ("ring-5-3.yaml", 5, 15), ("tree-3-2-2.yaml", 7, 14),
    ("tree-3-5-5.yaml", 31, 155), ("ring-31-5.yaml", 31, 155),
])
def test_paper_shapes_have_the_papers_node_counts(name, servers, components):
    assert _counts(load_topology(topology_path(name))) == (servers, components)


def test_cluster_puts_every_node_on_one_switch():
    topo = load_topology(topology_path("cluster-3-9.yaml"))
    assert list(topo.switches) == ["lan"]
    assert all("lan" in (l.a.node, l.b.node) for l in topo.links)
    assert len(topo.segments) == 1 and len(topo.segments[0].members) == 12


def test_ring_closes_the_ring_of_servers():
    topo = load_topology(topology_path("ring-5-3.yaml"))
    server_links = {frozenset((l.a.node, l.b.node)) for l in topo.links
                    if l.a.node.startswith("srv") and l.b.node.startswith("srv")}
    assert server_links == {frozenset((f"srv{i}", f"srv{i % 5 + 1}")) for i in range(1, 6)}
    degree = Counter(n for pair in server_links for n in pair)
    assert set(degree.values()) == {2}


def test_tree_levels_children_and_components_follow_the_paper():
    topo = load_topology(topology_path("tree-3-5-5.yaml"))
    parents = {n: node.params.get("parent") for n, node in topo.nodes.items() if n.startswith("srv")}
    roots = [n for n, p in parents.items() if p is None]
    assert roots == ["srv1"]
    children = Counter(p for p in parents.values() if p)
    assert children["srv1"] == 5 and all(children[f"srv{i}"] == 5 for i in range(2, 7))
    assert all(children[f"srv{i}"] == 0 for i in range(7, 32))  # level 3 servers are leaves
    per_server = Counter(node.params["parent"] for n, node in topo.nodes.items() if n.startswith("c"))
    assert set(per_server.values()) == {5} and len(per_server) == 31


def test_generated_tree_can_be_small_or_degenerate():
    topo = parse_topology_text("generate: {shape: tree, levels: 1, children: 3, components: 0}\n", "t.yaml")
    assert list(topo.nodes) == ["srv1"] and not topo.links
    topo = parse_topology_text("generate: {shape: tree, levels: 4, children: 1, components: 1}\n", "t.yaml")
    assert _counts(topo) == (4, 4)


def test_nodes_inherit_defaults_then_kind_then_their_own_fields():
    topo = parse_topology_text("""
defaults: {runtime: process, env: {A: "1"}, params: {x: 1}}
kinds:
  big: {image: other/image:1, env: {B: "2"}, params: {y: 2}}
nodes:
  n1: {kind: big, env: {A: "9"}, params: {x: 3}}
  n2: {}
links: [[n1, n2]]
""", "t.yaml")
    n1, n2 = topo.nodes["n1"], topo.nodes["n2"]
    assert (n1.runtime, n1.image, n1.env, n1.params) == ("process", "other/image:1", {"A": "9", "B": "2"},
                                                          {"x": 3, "y": 2})
    assert (n2.runtime, n2.image, n2.env) == ("process", "testbed/agent:latest", {"A": "1"})


def test_generated_nodes_can_be_overridden_by_hand():
    topo = parse_topology_text("""
generate: {shape: cluster, servers: 2, components: 2}
nodes:
  c1: {runtime: process}
""", "t.yaml")
    assert topo.nodes["c1"].runtime == "process" and topo.nodes["c1"].params == {"infrastructure": "cluster"}


def test_generated_population_keeps_group_order_and_fields_and_can_be_overridden():
    topo = parse_topology_text("""
kinds:
  car: {params: {speed: 3}}
generate:
  shape: nodes
  groups:
    d: {count: 3, kind: car}
    w: {count: 2, params: {walker: true}}
nodes:
  w2: {runtime: process}
  extra: {}
""", "t.yaml")
    assert [n for n in topo.nodes if n not in ("w2", "extra")] == ["d1", "d2", "d3", "w1"]
    assert {"w2", "extra"} <= set(topo.nodes) and len(topo.nodes) == 6
    assert topo.nodes["d2"].params == {"speed": 3} and topo.nodes["w1"].params == {"walker": True}
    assert topo.nodes["w2"].runtime == "process" and topo.nodes["w2"].params == {"walker": True}
    assert topo.links == [] and topo.switches == {}


def test_a_generated_population_on_a_switch_is_cabled_to_it_with_the_links_impairments():
    topo = parse_topology_text("""
generate:
  shape: nodes
  groups: {m: {count: 3}}
  switch: lan
  links: {delay: 2ms}
""", "t.yaml")
    assert list(topo.switches) == ["lan"] and len(topo.links) == 3
    assert {(link.a.node, link.b.node) for link in topo.links} == {("m1", "lan"), ("m2", "lan"), ("m3", "lan")}
    assert all(link.forward.delay_ms == 2 for link in topo.links)


def test_the_manet_topologies_generate_the_nodes_they_used_to_list():
    """deeco-manet-16/60/60-sparse listed d1..dN, w1..wN by hand; the generator makes the same."""
    for name, per_kind in (("deeco-manet-16", 8), ("deeco-manet-60", 30), ("deeco-manet-60-sparse", 30),
                           ("deeco-manet-200-sparse", 100)):
        topo = load_topology(os.path.join(TOPOLOGIES, name + ".yaml"))
        expected = [f"d{i}" for i in range(1, per_kind + 1)] + [f"w{i}" for i in range(1, per_kind + 1)]
        assert list(topo.nodes) == expected, name
        assert {topo.nodes[n].kind for n in expected[:per_kind]} == {"driver"}
        assert {topo.nodes[n].kind for n in expected[per_kind:]} == {"walker"}


def test_impairments_parse_units_and_directions():
    topo = parse_topology_text("""
nodes: {a: {}, b: {}}
link_defaults: {loss: 1%}
links:
  - endpoints: [a, b]
    delay: 20ms
    jitter: 2
    bandwidth: 500kbit
    duplication: 0.5%
    b_to_a: {loss: 0.3, delay: 1s}
accept_unemulated: true
""", "t.yaml")
    link = topo.links[0]
    assert link.forward.delay_ms == 20 and link.forward.jitter_ms == 2 and link.forward.loss == 0.01
    assert link.forward.bandwidth_mbit == pytest.approx(0.5) and link.forward.duplication == 0.005
    assert link.backward.loss == 0.3 and link.backward.delay_ms == 1000 and link.backward.bandwidth_mbit == 0.5
    assert link.forward.active() == {"delay", "jitter", "loss", "bandwidth", "duplication"}


@pytest.mark.parametrize("text, ms", [("20ms", 20), ("1.5s", 1500), ("300us", 0.3), (7, 7), ("0", 0)])
def test_durations(text, ms):
    assert parse_time_ms(text) == pytest.approx(ms)


@pytest.mark.parametrize("text, mbit", [("10mbit", 10), ("500kbit", 0.5), ("1gbit", 1000), ("10Mbps", 10), (2.5, 2.5)])
def test_rates(text, mbit):
    assert parse_rate_mbit(text) == pytest.approx(mbit)


@pytest.mark.parametrize("text, value", [("10%", 0.1), (0.25, 0.25), (1, 1.0), ("0%", 0.0)])
def test_fractions(text, value):
    assert parse_fraction(text) == pytest.approx(value)


REUSED = """\
defaults: &d {role: probe, params: {rate: 5}}
kinds:
  server: *d
  client: {role: idle, params: &p {rate: 2, size: 10}}
nodes:
  a: {kind: server}
  b: {kind: client, attributes: *p}
link_defaults: &slow {delay: 20ms, loss: 1%}
links:
  - {endpoints: [a, b], a_to_b: *slow, b_to_a: {delay: 5ms}}
"""
WRITTEN_OUT = """\
defaults: {role: probe, params: {rate: 5}}
kinds:
  server: {role: probe, params: {rate: 5}}
  client: {role: idle, params: {rate: 2, size: 10}}
nodes:
  a: {kind: server}
  b: {kind: client, attributes: {rate: 2, size: 10}}
link_defaults: {delay: 20ms, loss: 1%}
links:
  - {endpoints: [a, b], a_to_b: {delay: 20ms, loss: 1%}, b_to_a: {delay: 5ms}}
"""


def test_anchors_and_aliases_for_reuse_load_like_the_written_out_file():
    reused, written = load_text(REUSED, "t.yaml"), load_text(WRITTEN_OUT, "t.yaml")
    assert reused.data == written.data
    assert reused.line(("kinds", "server")) == 3 and reused.line(("kinds", "server", "role")) == 1  # the anchor's
    a, b = parse_topology_text(REUSED, "t.yaml"), parse_topology_text(WRITTEN_OUT, "t.yaml")
    assert {n: (x.role, x.params, x.attributes) for n, x in a.nodes.items()} == \
        {n: (x.role, x.params, x.attributes) for n, x in b.nodes.items()}
    assert [(l.forward, l.backward) for l in a.links] == [(l.forward, l.backward) for l in b.links]


def test_merge_keys_are_refused_as_before_with_their_line():
    """The loader has never supported `<<` (PyYAML's SafeConstructor merges only when it builds
    the mappings itself); a merge key is refused naming its line, whatever it merges."""
    with pytest.raises(ValidationError) as exc:
        load_text("defaults: &d {role: idle}\nkinds:\n  server:\n    <<: *d\n    image: x\n", "t.yaml")
    assert exc.value.line == 4 and "merge" in exc.value.message


def test_explicit_addresses_are_kept_and_automatic_ones_avoid_them():
    topo = parse_topology_text("""
nodes: {a: {}, b: {}, c: {}}
switches: {s: {}}
links:
  - endpoints: [a, s]
    addresses: [192.168.7.1/24, null]
  - [b, s]
  - [c, s]
""", "t.yaml")
    addrs = {str(e.address) for l in topo.links for e in (l.a, l.b) if e.address}
    assert addrs == {"192.168.7.1/24", "192.168.7.2/24", "192.168.7.3/24"}


def test_automatic_subnets_skip_explicit_ones():
    topo = parse_topology_text("""
nodes: {a: {}, b: {}, c: {}, d: {}}
links:
  - endpoints: [a, b]
    addresses: [10.0.0.1/30, 10.0.0.2/30]
  - [c, d]
""", "t.yaml")
    assert [str(s.subnet) for s in topo.segments] == ["10.0.0.0/30", "10.0.0.4/30"]


def test_large_segments_get_a_larger_subnet():
    topo = parse_topology_text("generate: {shape: cluster, servers: 10, components: 300}\n", "t.yaml")
    assert topo.segments[0].subnet.prefixlen == 23


@pytest.mark.parametrize("name", SHIPPED)
def test_static_routes_reach_every_subnet_from_every_node(name):
    topo = load_topology(topology_path(name))
    subnets = {s.subnet for s in topo.segments}
    for node in topo.nodes:
        direct = {e.address.network for e in topo.interfaces(node)}
        routed = {r.destination for r in topo.routes[node]}
        assert direct | routed == subnets, node
        assert not direct & routed


def test_routes_follow_shortest_paths_through_routers():
    topo = load_topology(topology_path("ring-5-3.yaml"))
    # srv1's neighbours on the ring are srv2 and srv5: srv4's subnet is two hops either way,
    # srv3's via srv2 and srv4's via srv5.
    srv_addr = {(e.node): e.address for l in topo.links for e in (l.a, l.b)
                if l.a.node.startswith("srv") and l.b.node.startswith("srv")}
    lan = {s.name: s.subnet for s in topo.segments}
    routes = {r.destination: r for r in topo.routes["srv1"]}
    srv2_on_link = next(e.address.ip for l in topo.links for e in (l.a, l.b)
                        if {l.a.node, l.b.node} == {"srv1", "srv2"} and e.node == "srv2")
    srv5_on_link = next(e.address.ip for l in topo.links for e in (l.a, l.b)
                        if {l.a.node, l.b.node} == {"srv1", "srv5"} and e.node == "srv5")
    assert routes[lan["lan3"]].via == srv2_on_link
    assert routes[lan["lan4"]].via == srv5_on_link
    assert srv_addr


def test_json_schema_is_printed_by_the_cli(capsys):
    from testbed.cli import main

    assert main(["schema", "topology"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "testbed topology" and "generate" in schema["properties"]


def test_topo_show_prints_a_loadable_explicit_graph(capsys, tmp_path):
    from testbed.cli import main

    assert main(["topo", "show", topology_path("tree-3-2-2.yaml")]) == 0
    out = capsys.readouterr().out
    assert "srv7" in out and "c14" in out and "generate" not in out
    path = tmp_path / "explicit.yaml"
    path.write_text(out)
    assert main(["topo", "validate", str(path)]) == 0


def test_addresses_are_ipv4_interfaces():
    topo = load_topology(topology_path("line3.yaml"))
    assert topo.address_of("h2") == ipaddress.IPv4Interface("10.0.0.2/24")


def test_readme_topology_examples_are_valid():
    """The README's YAML examples load (the generator snippet inside a minimal file)."""
    import re

    from .conftest import ROOT

    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    full = [b for b in blocks if "nodes:" in b and "timeline:" not in b]
    assert full, "the README shows a topology example"
    for block in full:
        topo = parse_topology_text(block, "README.md")
        assert topo.nodes
    generator = next(b for b in blocks if "generate:" in b)
    snippet = "\n".join(line[2:] if line.startswith("  ") else line for line in generator.splitlines())
    snippet = snippet.replace("{kind: server}", "{}").replace("{kind: component}", "{}")
    topo = parse_topology_text(snippet, "README.md")
    assert len(topo.nodes) == 186
