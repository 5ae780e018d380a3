"""Per-node resource limits (testbed/resources.py): how files set them, what the runtimes apply,
and what a real container gets."""

from __future__ import annotations

import pytest

from testbed.errors import ValidationError
from testbed.resources import DEFAULTS, GIB, MIB, Resources, parse_memory
from testbed.topology import parse_topology_text

TOPOLOGY = """
defaults:
  resources: {memory: 512MiB}
kinds:
  small: {resources: {memory: 64MiB, cpus: 0.25}}
  free: {resources: {memory: null, pids: null}}
nodes:
  a: {kind: small, resources: {pids: 32}}
  b: {kind: free}
  c: {}
  d: {resources: {memory: 2g}}
"""


def test_limits_merge_field_by_field_from_defaults_kinds_and_nodes_and_null_lifts_one():
    nodes = parse_topology_text(TOPOLOGY, "limits.yaml").nodes
    assert nodes["a"].resources == Resources(memory=64 * MIB, pids=32, cpus=0.25)
    assert nodes["b"].resources == Resources(memory=None, pids=None, cpus=None)
    assert nodes["c"].resources == Resources(memory=512 * MIB, pids=DEFAULTS.pids, cpus=None)
    assert nodes["d"].resources.memory == 2 * GIB, "Docker's own units: 2g"
    assert nodes["a"].to_dict()["resources"] == {"memory": "64MiB", "pids": 32, "cpus": 0.25}
    assert nodes["b"].to_dict()["resources"] == {"memory": None, "pids": None, "cpus": None}
    # the defaults where a file says nothing, and what they are
    bare = parse_topology_text("nodes: {x: {}}\n", "bare.yaml").nodes["x"].resources
    assert bare == DEFAULTS == Resources(memory=GIB, pids=1024, cpus=None)


@pytest.mark.parametrize("text, size", [("256MiB", 256 * MIB), ("1GiB", GIB), ("512m", 512 * MIB), ("1.5g", 1536 * MIB),
                                        ("100MB", 100_000_000), (64 * MIB, 64 * MIB), ("6MiB", 6 * MIB)])
def test_memory_takes_binary_decimal_and_dockers_units(text, size):
    assert parse_memory(text) == size


def test_a_scenario_can_set_limits_and_the_agent_minimum_follows_the_role_it_gives(tmp_path):
    from testbed.scenario import load_scenario

    (tmp_path / "topo.yaml").write_text("kinds:\n  k: {role: idle, resources: {memory: 32MiB}}\n"
                                        "nodes:\n  a: {kind: k}\n  b: {kind: k}\n")
    ok = tmp_path / "ok.yaml"
    ok.write_text("topology: topo.yaml\nduration: 1s\nworkload:\n  nodes:\n    b: {resources: {cpus: 0.5}}\n")
    nodes = load_scenario(str(ok)).topology.nodes
    assert nodes["b"].resources == Resources(memory=32 * MIB, pids=DEFAULTS.pids, cpus=0.5)
    assert nodes["a"].resources.cpus is None, "idle runs no agent: 32MiB is enough"
    # the scenario gives the kind a role with an agent: the topology's 32MiB is refused where it was written
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology: topo.yaml\nduration: 1s\nworkload:\n  kinds:\n    k: {role: probe}\n")
    with pytest.raises(ValidationError) as err:
        load_scenario(str(bad))
    assert err.value.file.endswith("topo.yaml") and err.value.line == 2
    assert err.value.field == "kinds.k.resources.memory" and "less than the agent needs" in err.value.message
    assert "48MiB" in err.value.allowed
    # and the scenario can raise it for that role
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text("topology: topo.yaml\nduration: 1s\nworkload:\n  kinds:\n"
                     "    k: {role: probe, resources: {memory: 96MiB}}\n")
    assert load_scenario(str(fixed)).topology.nodes["a"].resources.memory == 96 * MIB
    # a bad value in the scenario names the scenario's line
    worse = tmp_path / "worse.yaml"
    worse.write_text("topology: topo.yaml\nduration: 1s\nworkload:\n  defaults:\n    resources: {pids: -3}\n")
    with pytest.raises(ValidationError) as err:
        load_scenario(str(worse))
    assert err.value.file.endswith("worse.yaml") and err.value.line == 5 and "below 1" in err.value.message


def test_the_docker_runtime_asks_the_engine_for_each_limit():
    from testbed.runtimes.docker import limits

    nodes = parse_topology_text(TOPOLOGY, "limits.yaml").nodes
    assert limits(nodes["a"]) == {"mem_limit": 64 * MIB, "memswap_limit": 64 * MIB, "pids_limit": 32,
                                  "nano_cpus": 250_000_000}
    assert limits(nodes["b"]) == {}


@pytest.mark.network
def test_a_real_container_runs_under_its_limits(lab_factory, tmp_path):
    import docker

    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 0}, resources: {memory: 96MiB, pids: 40, cpus: 0.5}}
  b: {role: probe, params: {rate: 0}}
links: [[a, b]]
""", "limits.yaml"), workdir=str(tmp_path))
    client = docker.from_env()
    host = {n: client.containers.get(lab.names.container(n)).attrs["HostConfig"] for n in ("a", "b")}
    assert (host["a"]["Memory"], host["a"]["MemorySwap"], host["a"]["PidsLimit"], host["a"]["NanoCpus"]) == \
        (96 * MIB, 96 * MIB, 40, 500_000_000)
    assert (host["b"]["Memory"], host["b"]["PidsLimit"], host["b"]["NanoCpus"]) == (GIB, 1024, 0)
    assert lab.agent_pid("a") and lab.agent_pid("b"), "the agent starts within its limits"


def _fake_v1(root):
    for controller in ("memory", "pids", "cpu"):
        (root / controller).mkdir(parents=True)
    return root


def test_control_groups_v1_get_each_limit_and_go_away(tmp_path):
    """On a fake v1 tree (directories stand in for the kernel's files): the node's groups, their
    limit files, the processes added, and removal deepest first."""
    from testbed.runtimes.cgroups import Cgroups

    groups = Cgroups(str(_fake_v1(tmp_path)))
    assert not groups.v2 and groups.available() == {"memory": True, "pids": True, "cpus": True}
    assert groups.create("lab1", "a", Resources(memory=64 * MIB, pids=32, cpus=0.25)) == []
    base = tmp_path
    assert (base / "memory/testbed/lab1/a/memory.limit_in_bytes").read_text() == str(64 * MIB)
    assert (base / "memory/testbed/lab1/a/memory.memsw.limit_in_bytes").read_text() == str(64 * MIB)
    assert (base / "pids/testbed/lab1/a/pids.max").read_text() == "32"
    assert (base / "cpu/testbed/lab1/a/cpu.cfs_quota_us").read_text() == "25000"
    assert (base / "cpu/testbed/lab1/a/cpu.cfs_period_us").read_text() == "100000"
    groups.create("lab1", "b", Resources(memory=None, pids=None, cpus=None))
    assert not (base / "memory/testbed/lab1/b").exists(), "no limit, no group"
    groups.add("lab1", "a", 4242)
    assert (base / "pids/testbed/lab1/a/cgroup.procs").read_text() == "4242"
    assert len(groups.leftovers()) == 3 and groups.leftovers("other") == []
    for f in base.glob("*/testbed/lab1/a/*"):   # the kernel's files go with the group; here they are ours
        f.unlink()
    assert groups.remove("lab1") == 3 and groups.leftovers() == []
    assert not (base / "memory/testbed").exists()


def test_control_groups_v2_enable_the_controllers_down_the_tree(tmp_path):
    from testbed.runtimes.cgroups import Cgroups

    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    groups = Cgroups(str(tmp_path))
    assert groups.v2 and groups.available() == {"memory": True, "pids": True, "cpus": True}
    groups.create("lab1", "a", Resources(memory=96 * MIB, pids=40, cpus=1.5))
    node = tmp_path / "testbed/lab1/a"
    assert (node / "memory.max").read_text() == str(96 * MIB) and (node / "memory.swap.max").read_text() == "0"
    assert (node / "pids.max").read_text() == "40" and (node / "cpu.max").read_text() == "150000 100000"
    for parent in (tmp_path, tmp_path / "testbed", tmp_path / "testbed/lab1"):
        assert (parent / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    # a machine without the pids controller: that limit is the one it cannot apply
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    assert Cgroups(str(tmp_path)).create("lab2", "a", Resources(memory=96 * MIB, pids=40)) == ["pids"]


def test_a_process_node_whose_file_asks_for_a_limit_the_machine_cannot_apply_is_refused(tmp_path):
    from testbed.errors import CapabilityError
    from testbed.names import lab_names
    from testbed.runtimes import cgroups
    from testbed.runtimes.process import ProcessRuntime

    nodes = parse_topology_text("nodes:\n  a: {runtime: process, resources: {memory: 64MiB}}\n"
                                "  b: {runtime: process}\n", "p.yaml").nodes
    runtime = ProcessRuntime(lab_names("p"))
    runtime._cgroups = cgroups.Cgroups(str(tmp_path / "none"))
    with pytest.raises(CapabilityError, match="node a .*memory limit.*resources.memory: null"):
        runtime.check([nodes["a"]], None)
    runtime.check([nodes["b"]], None)   # the defaults alone: warned, not refused
    runtime.create([nodes["b"]], {}, {})
    assert runtime.unapplied == {"b": ["memory", "pids"]}


@pytest.mark.network
def test_a_process_node_runs_in_its_control_groups_which_go_with_the_lab(lab_factory, tmp_path):
    from testbed.runtimes.cgroups import Cgroups

    lab = lab_factory(parse_topology_text("""
nodes:
  a: {role: probe, params: {rate: 0}, runtime: process, resources: {memory: 96MiB, pids: 64, cpus: 0.5}}
  b: {role: probe, params: {rate: 0}, runtime: process}
links: [[a, b]]
""", "plimits.yaml"), workdir=str(tmp_path))
    pid = lab.agent_pid("a")
    assert pid
    with open(f"/proc/{pid}/cgroup") as fh:
        mine = fh.read()
    assert f"testbed/{lab.names.lab}/a" in mine, mine
    groups = Cgroups()
    memory = [p for p in groups.leftovers(lab.names.lab) if p.endswith("/a") and "memory" in p or
              (groups.v2 and p.endswith("/a"))][0]
    limit_file = "memory.max" if groups.v2 else "memory.limit_in_bytes"
    with open(f"{memory}/{limit_file}") as fh:
        assert int(fh.read()) == 96 * MIB
    lab.stop()
    assert Cgroups().leftovers(lab.names.lab) == []
