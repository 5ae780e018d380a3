"""The lab lifecycle through the `testbed` command, as a user runs it: up, ls, exec, down,
refusals that create nothing, and clean after the keeper was killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from testbed.cleanup import leftovers, read_states

from .conftest import topology_path

pytestmark = pytest.mark.network


def run_testbed(*args, check=True, timeout=300):
    res = subprocess.run([sys.executable, "-m", "testbed", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert res.returncode == 0, f"testbed {' '.join(args)} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res


def test_up_exec_down(no_leftovers, images):
    res = run_testbed("up", topology_path("line3.yaml"), "--name", "clitest")
    assert "lab clitest is up" in res.stdout and "h3" in res.stdout
    assert run_testbed("up", topology_path("line3.yaml"), "--name", "clitest", check=False).returncode == 2
    listed = run_testbed("ls").stdout
    assert "clitest" in listed and "up" in listed
    out = run_testbed("exec", "h1", "--", "cat", "/proc/net/dev").stdout
    assert "eth0" in out
    ping = run_testbed("exec", "--host-tools", "h1", "--", "ping", "-c1", "-W2", "10.0.0.3")
    assert "1 received" in ping.stdout
    assert run_testbed("exec", "nosuch", "--", "true", check=False).returncode == 2
    assert run_testbed("exec", "h1", "--", "sh", "-c", "exit 7", check=False).returncode == 7
    state = json.loads(run_testbed("ls", "clitest", "--json").stdout)
    assert set(state["nodes"]) == {"h1", "h2", "h3"}
    res = run_testbed("down")
    assert "lab clitest is down" in res.stdout
    assert not read_states()


def test_refusals_create_nothing(no_leftovers, images, machine, tmp_path):
    delay = tmp_path / "delay.yaml"
    delay.write_text("nodes: {a: {}, b: {}}\nlinks:\n  - endpoints: [a, b]\n    delay: 20ms\n")
    if not machine.has("netem"):
        res = run_testbed("up", str(delay), check=False)
        assert res.returncode == 3 and "sch_netem" in res.stderr
    missing_image = tmp_path / "image.yaml"
    missing_image.write_text("nodes: {a: {image: 'nosuch/image:1'}}\n")
    res = run_testbed("up", str(missing_image), check=False)
    assert res.returncode == 2 and "nosuch/image:1" in res.stderr
    ovs = tmp_path / "ovs.yaml"
    ovs.write_text("nodes: {a: {}}\nswitches: {s: {type: ovs}}\nlinks: [[a, s]]\n")
    if not machine.has("openvswitch"):
        res = run_testbed("up", str(ovs), check=False)
        assert res.returncode == 3 and "Open vSwitch" in res.stderr
    assert not read_states()
    assert not leftovers()


def test_clean_removes_what_a_killed_keeper_left(no_leftovers, images):
    run_testbed("up", topology_path("ring-5-3.yaml"), "--name", "killed")
    keeper = read_states()["killed"]["keeper_pid"]
    os.kill(keeper, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{keeper}") and time.monotonic() < deadline:
        time.sleep(0.05)
    left = leftovers()
    assert left.get("containers") and left.get("links"), left  # the kill really left things behind
    res = run_testbed("clean")
    assert "removed" in res.stdout
    assert not leftovers()
    assert not read_states()


def test_clean_touches_nothing_that_is_not_the_testbeds(no_leftovers, images):
    subprocess.run(["ip", "link", "add", "userbr0", "type", "bridge"], check=True)
    container = subprocess.run(["docker", "run", "-d", "--network", "none", "testbed/agent:latest"],
                               capture_output=True, text=True, check=True).stdout.strip()
    try:
        run_testbed("clean")
        assert subprocess.run(["ip", "link", "show", "userbr0"], capture_output=True).returncode == 0
        assert subprocess.run(["docker", "inspect", container], capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", "userbr0"])
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
