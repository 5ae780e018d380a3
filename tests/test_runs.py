"""`testbed run` for real: agents, captures, logs and every timeline action, checked in the
captures (decoded with the written-down header) against the agents' logs."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from testbed.cleanup import leftovers
from testbed.run import Run
from testbed.scenario import parse_scenario_text

from .conftest import ROOT
from .helpers import binomial_interval
from .pcaps import messages

pytestmark = pytest.mark.network
LINE3 = os.path.join(ROOT, "topologies", "line3.yaml")
TREE = os.path.join(ROOT, "topologies", "tree-3-2-2.yaml")


def run(tmp_path, text, seed=None, name="run"):
    """Runs the scenario `text` into tmp_path/name; its directory and manifest, once completed."""
    scenario = parse_scenario_text(text, str(tmp_path / f"{name}.yaml"), seed=seed)
    execution = Run(scenario, out_dir=str(tmp_path / name), progress=False)
    manifest = execution.execute()
    assert manifest["status"] == "completed", manifest.get("error") or manifest.get("problems")
    return execution.dir, manifest


def logs(run_dir, node):
    with open(os.path.join(run_dir, "logs", f"{node}.jsonl")) as handle:
        return [json.loads(line) for line in handle]


def pcap(run_dir, node):
    return list(messages(os.path.join(run_dir, "pcap", f"{node}.pcap")))


def action_time(manifest, action, node=None, key="t_ns"):
    """When an action began (t_ns) or finished (done_ns)."""
    return next(a[key] for a in manifest["timeline"] if a["action"] == action and a.get("node", node) == node)


@pytest.mark.parametrize("topology, to", [(LINE3, "broadcast"), (TREE, "all")])
def test_every_probe_message_is_in_the_captures_and_the_logs_match(no_leftovers, images, tmp_path, topology, to):
    run_dir, manifest = run(tmp_path, f"""
topology: {topology}
warmup: 1s
duration: 3s
quiet: 1500ms
workload:
  defaults: {{role: probe, params: {{rate: 4, to: {to}, start_delay: 0.5}}}}
""")
    ids = manifest["node_ids"]
    names = {v: k for k, v in ids.items()}
    addresses = {n: {a.split("/")[0] for a in intfs.values()} for n, intfs in manifest["addresses"].items()}
    for_node = {n: addresses[n] | {str(ipaddress.ip_interface(a).network.broadcast_address) for a in intfs.values()}
                for n, intfs in manifest["addresses"].items()}  # what is addressed to the node, not forwarded
    captured = {node: pcap(run_dir, node) for node in ids}
    for node in ids:
        assert manifest["capture"][node]["kernel_drops"] == 0
        sent = [e for e in logs(run_dir, node) if e["event"] == "send"]
        assert len(sent) >= 8, f"{node} sent {len(sent)} probes"
        outgoing = {p.header.sequence for p in captured[node] if p.header.origin == ids[node] and p.src in addresses[node]}
        assert {e["seq"] for e in sent} <= outgoing, f"{node}: sends missing from its own capture"
        for e in sent:
            receivers = e["to"] if isinstance(e["to"], list) else [n for n in ids if n != node]
            for receiver in receivers:
                got = any(p.header.origin == ids[node] and p.header.sequence == e["seq"]
                          and p.src in addresses[node] for p in captured[receiver])
                assert got, f"{node} seq {e['seq']} not in {receiver}'s capture"
        # every receive in the log is a packet in the node's capture, and the other way round
        received = {(e["origin"], e["seq"]) for e in logs(run_dir, node) if e["event"] == "receive"}
        inbound = {(names[p.header.origin], p.header.sequence) for p in captured[node]
                   if p.header.origin != ids[node] and p.dst in for_node[node] and p.header.type == 2}
        assert received == inbound, f"{node}: log and capture disagree"


BROADCASTERS = f"""
topology: {LINE3}
warmup: 1s
duration: 4s
quiet: 1500ms
workload:
  defaults: {{role: probe, params: {{rate: 50, to: broadcast}}}}
"""


def test_a_killed_node_sends_nothing_after_its_kill_time(no_leftovers, images, tmp_path):
    run_dir, manifest = run(tmp_path, BROADCASTERS + "timeline:\n  - {at: 1500ms, action: kill, node: h1}\n")
    killed = action_time(manifest, "kill", "h1")
    h1 = manifest["node_ids"]["h1"]
    for node in ("h1", "h2", "h3"):
        from_h1 = [p.t_ns for p in pcap(run_dir, node) if p.header.sender == h1]
        assert from_h1 and min(from_h1) < killed, "h1 was sending before the kill"
        assert max(from_h1) <= killed + 100_000_000, f"{node} saw h1 {(max(from_h1) - killed) / 1e6:.0f} ms after"


def test_nothing_crosses_a_partition_until_it_heals(no_leftovers, images, tmp_path):
    run_dir, manifest = run(tmp_path, BROADCASTERS + """timeline:
  - {at: 1s, action: partition, groups: [[h1], [h2, h3]]}
  - {at: 2500ms, action: heal}
""")
    start, end = action_time(manifest, "partition", key="done_ns"), action_time(manifest, "heal")
    ids = manifest["node_ids"]
    margin = 50_000_000
    for receiver, senders in (("h2", ["h1"]), ("h3", ["h1"]), ("h1", ["h2", "h3"])):
        times = [p.t_ns for p in pcap(run_dir, receiver) if p.header.sender in {ids[s] for s in senders}]
        across = [t for t in times if start + margin < t < end]
        assert not across, f"{len(across)} packets reached {receiver} across the partition"
        assert any(t > end + margin for t in times), f"traffic to {receiver} resumes after the heal"
        assert any(t < start for t in times)
    inside = [p for p in pcap(run_dir, "h3") if p.header.sender == ids["h2"] and start + margin < p.t_ns < end]
    assert inside, "h2 and h3 still talk inside their group"


def test_measured_loss_follows_a_changed_link(no_leftovers, images, tmp_path):
    run_dir, manifest = run(tmp_path, f"""
topology: {LINE3}
warmup: 1s
duration: 6s
quiet: 1500ms
workload:
  defaults: {{role: probe, params: {{rate: 0}}}}
  nodes: {{h1: {{params: {{rate: 400, to: [h2], start_delay: 0.5}}}}}}
timeline:
  - {{at: 2s, action: set_link, link: [h1, s1], loss: 0.5, for: 2s}}
""")
    began = [a["t_ns"] for a in manifest["timeline"] if a["action"] == "set_link"]
    done = [a["done_ns"] for a in manifest["timeline"] if a["action"] == "set_link"]
    sent = {p.header.sequence: p.t_ns for p in pcap(run_dir, "h1") if p.header.origin == 1}
    got = {p.header.sequence for p in pcap(run_dir, "h2") if p.header.origin == 1}
    margin = 50_000_000
    windows = {"before": (0, began[0]), "lossy": (done[0] + margin, began[1]), "after": (done[1] + margin, 2**63)}
    lost = {}
    for name, (lo, hi) in windows.items():
        seqs = [s for s, t in sent.items() if lo < t < hi]
        lost[name] = (sum(1 for s in seqs if s not in got), len(seqs))
    assert lost["before"][0] == 0 and lost["after"][0] == 0, lost
    n = lost["lossy"][1]
    low, high = binomial_interval(n, 0.5)
    assert n > 400 and low <= lost["lossy"][0] <= high, lost


@pytest.fixture(scope="module")
def paused_run(machine, images, tmp_path_factory):
    """One run, seed 5, h1 paused at 1 s for 1.5 s, for the tests that read a pause and the run
    directory (each used to make its own)."""
    from testbed.cleanup import leftovers

    assert not leftovers(), "testbed objects present before the run"
    result = run(tmp_path_factory.mktemp("paused"),
                 BROADCASTERS + "seed: 5\ntimeline:\n  - {at: 1s, action: pause, node: h1, for: 1500ms}\n")
    assert not leftovers(), "the run left testbed objects behind"
    return result


def test_a_paused_node_sends_nothing_until_resumed(paused_run):
    run_dir, manifest = paused_run
    paused, resumed = action_time(manifest, "pause", "h1", key="done_ns"), action_time(manifest, "resume", "h1")
    h1 = manifest["node_ids"]["h1"]
    times = [p.t_ns for p in pcap(run_dir, "h2") if p.header.sender == h1]
    assert not [t for t in times if paused + 50_000_000 < t < resumed]
    assert any(t > resumed for t in times) and any(t < paused for t in times)


def test_stop_start_link_down_and_exec(no_leftovers, images, tmp_path):
    run_dir, manifest = run(tmp_path, BROADCASTERS + """timeline:
  - {at: 500ms, action: exec, node: h2, command: "cat /proc/net/dev"}
  - {at: 1s, action: stop, node: h1}
  - {at: 2s, action: start, node: h1}
  - {at: 2500ms, action: link_down, link: [h3, s3]}
  - {at: 3500ms, action: link_up, link: [h3, s3]}
""")
    ids = manifest["node_ids"]
    exec_record = next(a for a in manifest["timeline"] if a["action"] == "exec")
    assert exec_record["details"]["exit_code"] == 0 and "eth0" in exec_record["details"]["output"]
    stopped, started = action_time(manifest, "stop", "h1", key="done_ns"), action_time(manifest, "start", "h1")
    h1_times = [p.t_ns for p in pcap(run_dir, "h2") if p.header.sender == ids["h1"]]
    assert not [t for t in h1_times if stopped + 50_000_000 < t < started]
    assert any(t > started for t in h1_times)
    assert [e["state"] for e in logs(run_dir, "h1") if e["event"] == "state"] == \
        ["started", "workload started", "stopped", "started", "quiesced", "stopped"], \
        "a fresh agent process after start, its workload at once"
    down, up = action_time(manifest, "link_down", key="done_ns"), action_time(manifest, "link_up")
    h3_rx = [p.t_ns for p in pcap(run_dir, "h3") if p.header.sender != ids["h3"]]
    assert not [t for t in h3_rx if down + 50_000_000 < t < up], "nothing reaches h3 while its link is down"
    assert any(t > up + 50_000_000 for t in h3_rx)


def test_the_run_directory_is_self_describing(paused_run):
    run_dir, manifest = paused_run
    on_disk = json.load(open(os.path.join(run_dir, "manifest.json")))
    assert on_disk["status"] == "completed" and on_disk["seed"] == 5
    for key in ("scenario", "topology", "versions", "node_ids", "addresses", "started_ns", "t0_ns", "timeline",
                "capture", "capabilities"):
        assert key in on_disk, key
    assert on_disk["versions"]["images"]["testbed/agent:latest"].startswith("sha256:")
    assert [a["action"] for a in on_disk["timeline"]] == ["pause", "resume", "heal_all"]
    assert sorted(os.listdir(os.path.join(run_dir, "logs"))) == ["h1.jsonl", "h2.jsonl", "h3.jsonl"]
    assert {f for f in os.listdir(os.path.join(run_dir, "pcap")) if f.endswith(".pcap")} == \
        {"h1.pcap", "h2.pcap", "h3.pcap"}
    tshark = subprocess.run(["tshark", "-r", os.path.join(run_dir, "pcap", "h2.pcap"), "-c", "1"],
                            capture_output=True, text=True)
    assert tshark.returncode == 0, "standard pcap that tshark opens"


def test_interrupting_a_run_keeps_a_readable_directory_and_leaves_nothing(no_leftovers, images, tmp_path):
    scenario = tmp_path / "long.yaml"
    scenario.write_text(BROADCASTERS.replace("duration: 4s", "duration: 60s"))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "run", str(scenario), "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest_path = out / "manifest.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if manifest_path.exists() and "t0_ns" in manifest_path.read_text():
            break
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["capture"]["h1"]["captured"] > 0
    assert sum(1 for _ in messages(str(out / "pcap" / "h2.pcap"))) > 0
    assert not leftovers()


MANY = """
topology:
  generate: {shape: nodes, groups: {m: {count: 60}}, switch: lan}
warmup: 1s
duration: 30s
quiet: 1500ms
workload:
  defaults: {role: probe, params: {rate: 1, to: broadcast}}
"""


def test_interrupting_a_run_while_its_containers_start_leaves_none(no_leftovers, images, tmp_path):
    """Ctrl-C while 60 containers are being started: the containers the workers were still
    starting when it came are removed too (the lab's record of what started never saw them)."""
    import docker

    from testbed.names import LABEL_LAB

    scenario = tmp_path / "many.yaml"
    scenario.write_text(MANY)
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "run", str(scenario), "--out", str(tmp_path / "run"),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = docker.from_env().api

    def lab_containers():
        # the plain list (no inspect of each, which fails on a container removed meanwhile)
        return client.containers(all=True, filters={"label": LABEL_LAB})

    try:
        deadline = time.monotonic() + 120
        count = 0
        while time.monotonic() < deadline and proc.poll() is None:
            count = len(lab_containers())
            if count >= 5:
                break
            time.sleep(0.05)
        assert 5 <= count < 60, f"the interrupt should come while the containers start ({count} there)"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 130, stderr
        assert lab_containers() == []
    finally:
        if proc.poll() is None:  # a failed assertion must not leave the run going on under the next tests
            proc.kill()
            proc.wait()
        client.close()
    assert not leftovers()


KILLED = """
topology:
  nodes: {h1: {}, r: {}, h2: {}}
  links: [[h1, r], [r, h2]]
warmup: 1s
duration: 60s
quiet: 2s
workload:
  defaults: {role: probe, params: {rate: 20, to: all}}
timeline:
  - {at: 500ms, action: set_link, link: [h1, r], loss: 0.1, for: 30s}
"""


def test_a_killed_runner_leaves_a_directory_that_clean_finishes_and_analyze_reads(no_leftovers, images, spark,
                                                                                   tmp_path):
    """SIGKILL of `testbed run` itself: nothing it captured is lost. As left, the directory has
    per-interface captures and the logs under nodes/, and the analysis reads it; `testbed clean`
    removes the lab and finishes the directory (captures merged, logs in place, the timeline so
    far, status aborted, ended at its last packet)."""
    from spark_analysis.job import analyze

    from testbed.cleanup import live_owners
    from testbed.rundir import last_packet_ns

    scenario = tmp_path / "killed.yaml"
    scenario.write_text(KILLED)
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "run", str(scenario), "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest_path = out / "manifest.json"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not ((out / "timeline.jsonl").exists()
                                               and (out / "timeline.jsonl").read_text()):
        time.sleep(0.2)
    time.sleep(1.5)
    proc.kill()
    proc.communicate(timeout=30)
    left = json.loads(manifest_path.read_text())
    assert left["status"] == "running" and left.get("t0_ns")
    assert {"r.eth0.pcap", "r.eth1.pcap"} <= set(os.listdir(out / "pcap")), "the router's captures, unmerged"
    assert not (out / "logs").exists() and (out / "nodes" / "h1" / "events.jsonl").exists()
    assert leftovers(), "the killed runner's lab is still there"
    owners = live_owners()
    assert any(o.startswith("running container tb-") for o in owners), owners  # its nodes still run
    assert not any(o.startswith("testbed run pid") for o in owners), "the runner is gone"

    as_left = tmp_path / "as-left"
    shutil.copytree(out, as_left)  # what another machine would get before anyone cleans up
    res = subprocess.run([sys.executable, "-m", "testbed", "clean"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"finished the run directory of a killed run: {out}" in res.stdout
    assert not leftovers() and not live_owners()

    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "aborted" and "testbed clean" in manifest["error"]
    assert manifest["ended_by"] == "last packet" and manifest["ended_ns"] == last_packet_ns(str(out / "pcap"))
    assert [a["action"] for a in manifest["timeline"]] == ["set_link"]
    assert {f for f in os.listdir(out / "pcap") if f.endswith(".pcap")} == {"h1.pcap", "r.pcap", "h2.pcap"}
    assert sorted(os.listdir(out / "logs")) == ["h1.jsonl", "h2.jsonl", "r.jsonl"]
    assert manifest["capture"]["r"]["interfaces"] == ["eth0", "eth1"] and manifest["capture"]["r"]["captured"] > 0
    sent = sum(1 for line in open(out / "logs" / "h1.jsonl") if '"event":"send"' in line)
    assert sent >= 20

    results = analyze([str(as_left)], progress=False, spark=spark)
    left_res = next(iter(results.values()))
    assert left_res["run"]["status"] == "running"
    assert left_res["application"]["all"]["sent"] >= 20, "the logs under nodes/ are read"
    assert left_res["input"]["pcaps"]["r"]["file"].count(".pcap") == 2, "the router's two captures, as one"
    results = analyze([str(out)], progress=False, spark=spark)
    finished = next(iter(results.values()))
    assert finished["run"]["status"] == "aborted"
    assert finished["application"]["all"]["sent"] >= left_res["application"]["all"]["sent"]
    assert finished["messages"]["all"]["received"] > 0


def test_clean_says_when_it_could_not_look_for_containers(no_leftovers, tmp_path):
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-engine.sock")
    res = subprocess.run([sys.executable, "-m", "testbed", "clean"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 1
    assert "could not look for containers" in res.stderr and "not reachable" in res.stderr
    assert "nothing to remove" not in res.stdout


def test_run_pointers_tell_live_runs_from_killed_ones(tmp_path, monkeypatch):
    """A pointer names a live run only while the process with its pid and start time runs: a
    dead pid, or a pid since reused by another process, is a killed run."""
    from testbed import rundir

    monkeypatch.setattr(rundir, "RUNS_DIR", str(tmp_path))
    monkeypatch.setattr(rundir, "run_pointer", lambda lab: str(tmp_path / f"{lab}.json"))
    rundir.record_running("live", str(tmp_path / "a"))
    me = json.loads((tmp_path / "live.json").read_text())
    (tmp_path / "reused.json").write_text(json.dumps(dict(me, lab="reused", pid_start=me["pid_start"] - 1)))
    (tmp_path / "torn.json").write_text('{"lab": "to')
    assert [p["lab"] for p in rundir.live_runs()] == ["live"]
    assert [p["lab"] for p in rundir.killed_runs()] == ["reused"]
    assert rundir.running_in(str(tmp_path / "a")) == os.getpid() and rundir.running_in(str(tmp_path)) is None
    rundir.forget_running("live")
    assert rundir.live_runs() == [] and rundir.running_in(str(tmp_path / "a")) is None


def test_a_run_whose_ending_is_slow_writes_its_threads_stacks_and_one_that_is_not_writes_none(tmp_path, monkeypatch):
    """A run that hangs in its teardown ignores Ctrl-C; the one who kills it finds in
    teardown-stacks.txt where each thread was (written even while every thread waits in C)."""
    import threading

    import testbed.run as run

    monkeypatch.setattr(run, "TEARDOWN_STACKS_S", 1)
    quick = run._StacksIfSlow(str(tmp_path))
    assert quick.close() is False and not (tmp_path / "teardown-stacks.txt").exists()
    stuck = threading.Event()
    waiter = threading.Thread(target=stuck.wait, name="stuck-in-teardown", daemon=True)
    waiter.start()
    slow = run._StacksIfSlow(str(tmp_path))
    time.sleep(2.5)  # two dumps, one a second
    assert slow.close() is True
    stuck.set()
    text = (tmp_path / "teardown-stacks.txt").read_text()
    assert text.count("Current thread") + text.count("Thread 0x") >= 4 and "wait" in text, text
