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
    assert runtime.warnings == ["process nodes b run without the default memory limit: no writable control group "
                                "for it here", "process nodes b run without the default pids limit: no writable "
                                "control group for it here"]


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


def test_the_watch_reports_each_oom_kill_and_the_first_refused_fork(tmp_path, monkeypatch):
    from testbed import limit_events

    files = {}
    for node in ("a", "b", "c"):
        oom, pids = tmp_path / f"{node}.oom", tmp_path / f"{node}.pids"
        oom.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
        pids.write_text("max 0\n")
        files[node] = (str(oom), str(pids))
    by_pid = {1: files["a"], 2: files["b"], 3: None, 4: files["c"]}
    monkeypatch.setattr(limit_events, "limit_files", lambda pid, root: by_pid[pid])
    watch = limit_events.LimitWatch()
    pids = {"a": 1, "b": 2, "x": 3, "c": 4}
    assert watch.poll(pids) == [] and watch.hit() == {}
    (tmp_path / "a.oom").write_text("oom_kill_disable 0\nunder_oom 1\noom_kill 2\n")
    (tmp_path / "b.pids").write_text("max 37\n")
    assert watch.poll(pids) == [("a", "oom", 2), ("b", "pids_limit", 37)]
    (tmp_path / "b.pids").write_text("max 90\n")
    assert watch.poll(pids) == [], "a refused fork is an event once; the rest is counted"
    (tmp_path / "a.oom").write_text("oom_kill 3\n")
    (tmp_path / "c.oom").unlink()   # a node whose group went away is skipped
    assert watch.poll(pids) == [("a", "oom", 1)]
    assert watch.hit() == {"a": {"oom": 3}, "b": {"pids_limit": 90}}


@pytest.mark.parametrize("version", [1, 2])
def test_a_nodes_own_group_files_are_found_on_either_cgroup_version_and_the_runners_are_not(tmp_path, monkeypatch, version):
    """The monitor's CPU files and the watch's limit counters come from one lookup of a node's own
    groups (testbed/monitor.own_group_dirs), on a version 1 machine with co-mounted hierarchies
    and on a version 2 one; a process in the runner's own group has nothing of its own."""
    import os

    from testbed import limit_events, monitor

    node, runner = "/docker/n1", "/user.slice"
    if version == 2:
        (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
        group = tmp_path / "docker" / "n1"
        group.mkdir(parents=True)
        for name in ("cpu.stat", "memory.events", "pids.events"):
            (group / name).write_text("")
        maps = {10: {"": node}, 11: {"": runner}}
        expect_cpu = (str(group / "cpu.stat"),) * 2
        expect_limits = (str(group / "memory.events"), str(group / "pids.events"))
    else:
        for mount, names in (("cpu,cpuacct", ("cpu.stat", "cpuacct.usage")), ("memory", ("memory.oom_control",)),
                             ("pids", ("pids.events",)), ("name=systemd", ())):
            group = tmp_path / mount / "docker" / "n1"
            group.mkdir(parents=True)
            for name in names:
                (group / name).write_text("")
        both = tmp_path / "cpu,cpuacct" / "docker" / "n1"
        maps = {10: {"cpu": node, "cpuacct": node, "memory": node, "pids": runner, "name=systemd": node},
                11: {"cpu": runner, "cpuacct": runner, "memory": runner, "pids": runner, "name=systemd": runner}}
        expect_cpu = (str(both / "cpuacct.usage"), str(both / "cpu.stat"))
        expect_limits = (str(tmp_path / "memory" / "docker" / "n1" / "memory.oom_control"), None)  # pids: the runner's
    maps[os.getpid()] = maps[11]
    monkeypatch.setattr(monitor, "cgroup_of", lambda pid: maps[pid])
    root = str(tmp_path)
    assert monitor.cgroup_files(10, root) == expect_cpu
    assert limit_events.limit_files(10, root) == expect_limits
    assert monitor.cgroup_files(11, root) is None and limit_events.limit_files(11, root) is None
    monkeypatch.setattr(monitor, "cgroup_of", lambda pid: (_ for _ in ()).throw(FileNotFoundError(pid)))
    assert monitor.cgroup_files(10, root) is None and limit_events.limit_files(10, root) is None, "a process gone"


def test_real_counter_files_read_as_the_kernel_writes_them(tmp_path):
    from testbed.limit_events import read_counts

    (tmp_path / "v1").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
    (tmp_path / "v2").write_text("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n")
    (tmp_path / "pids").write_text("max 5\n")
    assert read_counts((str(tmp_path / "v1"), str(tmp_path / "pids"))) == (4, 5)
    assert read_counts((str(tmp_path / "v2"), None)) == (2, 0), "v2's memory.events: oom_kill, not max"


def test_a_node_that_met_its_limits_is_down_from_then_on_in_the_analysis():
    from spark_analysis.history import down_intervals
    from testbed.actions import action_names, liveness, timers

    manifest = {"t0_ns": 0, "topology": {"nodes": {"a": {}, "b": {}}},
                "timeline": [{"action": "oom", "node": "a", "t_ns": 5, "ok": True, "observed": True},
                             {"action": "pids_limit", "node": "b", "t_ns": 7, "ok": True, "observed": True}]}
    assert down_intervals(manifest) == {"a": [(5, None)], "b": [(7, None)]}
    assert liveness("oom") == "down" and timers("pids_limit") == "held"
    assert "oom" not in action_names() and "pids_limit" not in action_names(), "observed, never scheduled"


def test_a_command_run_in_a_process_node_joins_its_control_groups():
    from testbed.names import lab_names
    from testbed.runtimes.process import ProcessRuntime

    argv = ProcessRuntime(lab_names("p")).exec_args(
        {"netns_pid": 77, "cgroup_procs": ["/sys/fs/cgroup/memory/testbed/p/a/cgroup.procs"]}, ["ip", "addr"], False)
    assert argv[:3] == ["nsenter", "--net=/proc/77/ns/net", "--"] and argv[-2:] == ["ip", "addr"]
    assert "echo $$ > /sys/fs/cgroup/memory/testbed/p/a/cgroup.procs; exec" in argv[5]
    plain = ProcessRuntime(lab_names("p")).exec_args({"netns_pid": 77}, ["ip", "addr"], False)
    assert plain == ["nsenter", "--net=/proc/77/ns/net", "--", "ip", "addr"]


HOGS = """
name: limits
topology:
  nodes:
    e: {role: probe, params: {rate: 20}}
    a: {role: probe, params: {rate: 0}, resources: {memory: 96MiB}}
    b: {role: probe, params: {rate: 0}, resources: {pids: 40}}
    c: {role: probe, params: {rate: 0}, resources: {cpus: 0.2}}
    d: {role: probe, params: {rate: 0}}
  switches: {s: {}}
  links: [[e, s], [a, s], [b, s], [c, s], [d, s]]
seed: 1
warmup: 1s
duration: 9s
quiet: 2s
timeline:
  # a leak: 400 MiB in a node allowed 96
  - {at: 1s, action: exec, node: a, command: "python3 -c 'b = bytearray(400 * 2**20)'"}
  # a fork bomb, without the CPU of one: forks until the pids limit refuses them
  - {at: 1s, action: exec, node: b, command: "for i in $(seq 200); do sleep 30 & done; true"}
  # the same busy loop in a node bounded to a fifth of a core, and in one not bounded
  - {at: 1s, action: exec, node: c, command: "timeout 6 python3 -c 'while True: pass' > /dev/null 2>&1 &"}
  - {at: 1s, action: exec, node: d, command: "timeout 6 python3 -c 'while True: pass' > /dev/null 2>&1 &"}
"""


@pytest.mark.network
def test_hogs_meet_their_limits_on_the_timeline_while_the_run_goes_on(no_leftovers, images, spark, tmp_path):
    """A leak is OOM-killed, a fork bomb is stopped at its pids limit, and a busy loop held to a
    fifth of a core, each recorded on the timeline; the other nodes keep running, the run
    completes with its captures, and the analysis counts the two nodes down from then on."""
    import json

    from spark_analysis.history import down_intervals

    from .helpers import cli_in_process

    path = tmp_path / "limits.yaml"
    path.write_text(HOGS)
    out = tmp_path / "run"
    code, stdout, stderr = cli_in_process("run", str(path), "--out", str(out), "--analyze")
    assert code == 0, stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    observed = {(a["action"], a["node"]) for a in manifest["timeline"] if a.get("observed")}
    assert observed == {("oom", "a"), ("pids_limit", "b")}, manifest["timeline"]
    leak = next(a for a in manifest["timeline"] if a.get("action") == "exec" and a["node"] == "a")
    assert leak["details"]["exit_code"] == 137, "the leaking process was killed (SIGKILL), not the run"
    assert manifest["limits_hit"]["a"]["oom"] >= 1 and manifest["limits_hit"]["b"]["pids_limit"] >= 1
    oom = next(a for a in manifest["timeline"] if a.get("action") == "oom")
    # observed by the host monitor's next sample after the kill (the exec's end): between the
    # leak's start and two sampling intervals after its end, however long the exec took to start
    sample_ns = manifest["host_monitor"]["interval_s"] * 1e9
    assert oom["limit"] == "memory limit (96MiB)" and leak["t_ns"] <= oom["t_ns"] <= leak["done_ns"] + 2 * sample_ns, \
        (leak, oom)
    assert "node a met its memory limit (96MiB): oom" in stderr and "limits: node a:" in stdout
    downs = down_intervals(manifest)
    assert set(downs) == {"a", "b"} and downs["a"][0][1] is None
    # the others kept running: every node's agent logged to the end, and every capture is there
    for node in ("e", "c", "d"):
        events = [json.loads(line) for line in (out / "logs" / f"{node}.jsonl").read_text().splitlines()]
        assert events[-1]["state"] == "stopped", node
    assert len(list((out / "pcap").glob("*.pcap"))) == 5
    # the CPU each busy node got, second by second, from the host monitor: c held to its fifth
    samples = [json.loads(line) for line in (out / "host.jsonl").read_text().splitlines()]
    busy = [s["nodes"] for s in samples if s["nodes"].get("d", {}).get("cpu_us", 0) > 300_000]
    assert len(busy) >= 3, "the unbounded loop ran for several seconds"
    c = sorted(s["c"]["cpu_us"] for s in busy if "c" in s)
    d = sorted(s["d"]["cpu_us"] for s in busy)
    assert c[len(c) // 2] <= 250_000 < d[len(d) // 2], (c, d)
    assert any(s["c"]["throttled_us"] > 0 for s in busy if "c" in s)
    results = json.loads((out / "report" / "results.json").read_text())
    assert results["run"]["limits_hit"] == manifest["limits_hit"]
    assert "Resource limits met" in (out / "report" / "index.html").read_text()
