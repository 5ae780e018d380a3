"""`testbed remote` against a real SSH server: Debian's sshd, started here on a loopback port with
a host key and a user key made for the test, and paramiko on our side. The "remote machine" is
this machine (root, the testbed of this checkout), with the runs' work directories in a temporary
directory (--remote-dir) and HOME pointed at a temporary directory (no agent, no ~/.ssh keys, a
fresh known_hosts), so that nothing outside the test is read or left behind.

The runs use process nodes in the shape of line3 (the smallest network of test_runs.py): what is
tested here is the remote path (upload, detached start, relayed output, Ctrl-C, broken
connection, download), and process nodes keep it independent of the Docker engine and light on
a shared machine. The runs' own behaviour is tested in test_runs.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from .conftest import ROOT

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
REMOTE_TESTBED = os.path.join(os.path.dirname(sys.executable), "testbed")  # this checkout's, there too

TOPOLOGY = """\
# line3 with process nodes
name: rline3
defaults: {runtime: process}
nodes: {h1: {}, h2: {}, h3: {}}
switches: {s1: {}, s2: {}, s3: {}}
links: [[h1, s1], [h2, s2], [h3, s3], [s1, s2], [s2, s3]]
"""

SCENARIO = """\
# probes on line3 with a paused node
name: remote-small
topology: ../topologies/rline3.yaml
seed: 3
warmup: 1s
duration: {duration}
quiet: 1500ms
workload:
  defaults: {{role: probe, params: {{rate: 5, to: broadcast}}}}
timeline:
  - {{at: 1s, action: pause, node: h2, for: 1s}}
"""


class Sshd:
    def __init__(self, directory) -> None:
        self.dir = directory
        self.port = _free_port()
        self.target = f"root@127.0.0.1:{self.port}"
        for name in ("host_key", "user_key", "other_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(directory / name)],
                           check=True)
        (directory / "authorized_keys").write_text((directory / "user_key.pub").read_text())
        self.host_key_line = "[127.0.0.1]:%d %s" % (self.port, " ".join(
            (directory / "host_key.pub").read_text().split()[:2]))
        listed = subprocess.run(["ssh-keygen", "-lf", str(directory / "host_key.pub")], capture_output=True,
                                text=True, check=True).stdout
        self.fingerprint = listed.split()[1]  # SHA256:...
        self.config = directory / "sshd_config"
        self.config.write_text(f"""\
Port {self.port}
ListenAddress 127.0.0.1
HostKey {directory / 'host_key'}
AuthorizedKeysFile {directory / 'authorized_keys'}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile {directory / 'sshd.pid'}
Subsystem sftp {SFTP_SERVER}
PrintMotd no
""")
        self.log = open(directory / "sshd.log", "w")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    if conn.recv(64).startswith(b"SSH-"):
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"sshd did not start: {(directory / 'sshd.log').read_text()}")
            time.sleep(0.1)

    def connection_processes(self):
        """The sshd processes serving connections: the daemon's sshd descendants."""
        children = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                    with open(f"/proc/{entry}/comm") as handle:
                        comm = handle.read().strip()
                except OSError:
                    continue
                children.setdefault(int(fields[1]), []).append((int(entry), comm))
        found, todo = [], [self.proc.pid]
        while todo:
            for pid, comm in children.get(todo.pop(), []):
                if comm == "sshd":
                    found.append(pid)
                    todo.append(pid)
        return found

    def drop_connections(self) -> int:
        pids = self.connection_processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def stop(self) -> None:
        self.drop_connections()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    assert os.path.exists(SSHD) and os.path.exists(SFTP_SERVER), \
        "Debian's openssh-server is missing: run ./setup.sh (it installs it)"
    made_run_dir = not os.path.isdir("/run/sshd")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()
    if made_run_dir:
        try:
            os.rmdir("/run/sshd")
        except OSError:
            pass


@pytest.fixture
def user(tmp_path, sshd):
    """A user of this machine's side: a HOME of its own, the host's key already known."""
    return User(tmp_path, sshd)


class User:
    def __init__(self, tmp_path, sshd: Sshd) -> None:
        self.sshd = sshd
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.cwd = tmp_path / "work"
        self.cwd.mkdir()
        self.remote_dir = tmp_path / "remote"  # the runs' work directories "there"
        self.known_hosts = tmp_path / "known_hosts"
        self.known_hosts.write_text(sshd.host_key_line + "\n")
        self.env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        self.env["HOME"] = str(self.home)

    def args(self, known_hosts=True, key="user_key", remote_dir=True):
        args = []
        if key:
            args += ["--key", str(self.sshd.dir / key)]
        if known_hosts:
            args += ["--known-hosts", str(self.known_hosts)]
        if remote_dir:
            args += ["--remote-dir", str(self.remote_dir)]
        return args

    def testbed(self, *args, stdin=None, timeout=300):
        # A session of its own: no controlling terminal, so a password prompt reads stdin.
        return subprocess.run([sys.executable, "-m", "testbed", *args], cwd=self.cwd, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=timeout, start_new_session=True)

    def popen(self, *args):
        return subprocess.Popen([sys.executable, "-m", "testbed", *args], cwd=self.cwd, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def scenario(self, duration="3s") -> str:
        (self.cwd / "topologies").mkdir(exist_ok=True)
        (self.cwd / "scenarios").mkdir(exist_ok=True)
        (self.cwd / "topologies" / "rline3.yaml").write_text(TOPOLOGY)
        path = self.cwd / "scenarios" / "small.yaml"
        path.write_text(SCENARIO.format(duration=duration))
        return "scenarios/small.yaml"

    def remote_jobs(self):
        return sorted(os.listdir(self.remote_dir)) if self.remote_dir.exists() else []


class Lines:
    """A process's stderr, read as it comes, to act at a given point of a run."""

    def __init__(self, stream) -> None:
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline, f"{text!r} did not appear in: {''.join(self.lines)}"
            time.sleep(0.1)

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


def _stdout_after(proc, timeout: float) -> str:
    """The process's stdout once it has ended. Not communicate(): that would also read stderr,
    which a Lines reader is consuming, and lines would go to one reader or the other."""
    proc.wait(timeout=timeout)
    return proc.stdout.read()


@pytest.fixture
def nothing_left():
    """No testbed object appears because of the test. Others may run labs on this machine at the
    same time, so this compares before and after and cleans nothing."""
    from testbed.cleanup import leftovers

    def flat():
        return {(kind, item) for kind, items in leftovers().items() for item in items}

    before = flat()
    yield
    deadline = time.monotonic() + 10
    while flat() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not flat() - before, f"the test left testbed objects behind: {sorted(flat() - before)}"


# -- refused before or while connecting --------------------------------------------------------------

@pytest.mark.parametrize("target", ["root@", "@lab1", "root@lab1:0", "root@lab1:ssh", "root@lab 1", "root@[::1",
                                    "root@lab1:70000"])
def test_a_malformed_target_is_refused_before_connecting(user, target):
    res = user.testbed("remote", "doctor", target)
    assert res.returncode == 2, res.stderr
    assert "allowed: USER@HOST" in res.stderr


def test_bad_input_is_refused_before_any_connection(user):
    # The host does not resolve: reaching the network would be exit 4, not 2.
    nowhere = "root@nowhere.invalid"
    res = user.testbed("remote", "run", nowhere, "scenarios/missing.yaml")
    assert res.returncode == 2 and "missing.yaml" in res.stderr, res.stderr
    scenario = user.scenario()
    res = user.testbed("remote", "run", nowhere, scenario, "--set", "duration=-1s")
    assert res.returncode == 2 and "duration" in res.stderr, res.stderr
    res = user.testbed("remote", "run", nowhere, scenario, "--key", str(user.home / "no-such-key"))
    assert res.returncode == 2 and "no-such-key" in res.stderr, res.stderr
    res = user.testbed("remote", "run", nowhere, scenario)
    assert res.returncode == 4 and "nowhere.invalid" in res.stderr, res.stderr


def test_an_unreachable_host_is_a_clear_error(user):
    res = user.testbed("remote", "fetch", f"root@127.0.0.1:{_free_port()}", *user.args())
    assert res.returncode == 4
    assert "cannot reach 127.0.0.1:" in res.stderr and "Connection refused" in res.stderr, res.stderr


def test_an_unknown_host_key_is_refused_and_recorded_only_when_asked(user, sshd):
    known_hosts = user.home / ".ssh" / "known_hosts"  # the default one
    res = user.testbed("remote", "fetch", sshd.target, *user.args(known_hosts=False))
    assert res.returncode == 4, res.stderr
    assert "unknown host key" in res.stderr and sshd.fingerprint in res.stderr, res.stderr
    assert "--accept-new-host-key" in res.stderr
    assert not known_hosts.exists(), "nothing is recorded without the flag"

    res = user.testbed("remote", "fetch", sshd.target, "--accept-new-host-key", *user.args(known_hosts=False))
    assert res.returncode == 0, res.stderr
    assert f"recorded the new host key of 127.0.0.1:{sshd.port}" in res.stderr and sshd.fingerprint in res.stderr
    assert known_hosts.read_text() == sshd.host_key_line + "\n"
    assert "no runs on" in res.stdout

    res = user.testbed("remote", "fetch", sshd.target, *user.args(known_hosts=False))
    assert res.returncode == 0 and "recorded" not in res.stderr, res.stderr


def test_a_changed_host_key_is_refused_even_with_the_flag(user, sshd):
    other = " ".join((sshd.dir / "other_key.pub").read_text().split()[:2])
    user.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {other}\n")
    res = user.testbed("remote", "fetch", sshd.target, "--accept-new-host-key", *user.args())
    assert res.returncode == 4
    assert "host key has CHANGED" in res.stderr and "ssh-keygen -R" in res.stderr, res.stderr
    assert user.known_hosts.read_text() == f"[127.0.0.1]:{sshd.port} {other}\n"


def test_a_wrong_key_is_refused(user, sshd):
    res = user.testbed("remote", "fetch", sshd.target, *user.args(key="other_key"))
    assert res.returncode == 4
    assert "authentication failed" in res.stderr and "other_key" in res.stderr, res.stderr
    res = user.testbed("remote", "fetch", sshd.target, *user.args(key=None))
    assert res.returncode == 4 and "--key FILE" in res.stderr, res.stderr


def test_a_password_is_never_shown(user, sshd):
    password = "pw-never-shown-7d1e"
    res = user.testbed("remote", "fetch", sshd.target, "--password-prompt", *user.args(key="other_key"),
                       stdin=password + "\n")
    assert res.returncode == 4 and "authentication failed" in res.stderr, res.stderr
    assert "a password" in res.stderr
    assert password not in res.stdout + res.stderr


def test_a_missing_remote_testbed_says_how_to_install_it(user, sshd):
    res = user.testbed("remote", "doctor", sshd.target, "--remote-testbed", "/nonexistent/bin/testbed",
                       *user.args(remote_dir=False))
    assert res.returncode == 3
    assert "not installed on 127.0.0.1:" in res.stderr and "sudo ./setup.sh" in res.stderr, res.stderr


def test_remote_doctor_shows_the_remote_machines_report(user, sshd):
    local = subprocess.run([sys.executable, "-m", "testbed", "doctor", "--json"], capture_output=True, text=True)
    res = user.testbed("remote", "doctor", sshd.target, "--json", "--remote-testbed", REMOTE_TESTBED,
                       *user.args(remote_dir=False))
    assert res.returncode == local.returncode, res.stderr
    report = json.loads(res.stdout)
    assert set(report) == set(json.loads(local.stdout))
    res = user.testbed("remote", "doctor", sshd.target, "--remote-testbed", REMOTE_TESTBED,
                       *user.args(remote_dir=False))
    assert res.returncode == local.returncode
    assert "Machine" in res.stdout and "Link properties" in res.stdout and "running as root" in res.stdout
    assert f"doctor report of 127.0.0.1:{sshd.port}" in res.stderr


# -- runs -------------------------------------------------------------------------------------------

def test_the_upload_keeps_relative_references_and_relocates_absolute_ones(tmp_path):
    from testbed.remote.inputs import scenario_inputs
    from testbed.scenario import load_scenario

    (tmp_path / "topologies").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "topologies" / "rline3.yaml").write_text(TOPOLOGY)
    scenario = tmp_path / "scenarios" / "small.yaml"
    scenario.write_text(SCENARIO.format(duration="3s"))
    inputs = scenario_inputs(str(scenario), load_scenario(str(scenario)))
    assert sorted(rel for _, rel in inputs.files) == ["scenarios/small.yaml", "topologies/rline3.yaml"]
    assert inputs.scenario == "scenarios/small.yaml" and not inputs.overrides("/w/input")

    topology = str(tmp_path / "topologies" / "rline3.yaml")
    inputs = scenario_inputs(str(scenario), load_scenario(str(scenario), overrides=(f"topology={topology}",)))
    assert sorted(rel for _, rel in inputs.files) == ["absolute/topology-rline3.yaml", "small.yaml"]
    assert inputs.overrides("/w/input") == ['topology="/w/input/absolute/topology-rline3.yaml"']

    inline = tmp_path / "inline.yaml"
    inline.write_text("topology: {nodes: {a: {runtime: process}}}\n")
    inputs = scenario_inputs(str(inline), load_scenario(str(inline)))
    assert [rel for _, rel in inputs.files] == ["inline.yaml"]


@pytest.mark.network
@pytest.mark.spark
def test_a_remote_run_comes_back_analysable(user, sshd, nothing_left):
    scenario = user.scenario()
    res = user.testbed("remote", "run", sshd.target, scenario, "--analyze", "--remote-testbed", REMOTE_TESTBED,
                       *user.args(), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = re.search(r"^run (\S+): completed$", res.stdout, re.M).group(1)
    run_dir = user.cwd / "runs" / run_id
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["run_id"] == run_id
    assert manifest["scenario"]["source"].startswith(str(user.remote_dir))  # it ran there, from the upload
    assert sorted(os.listdir(run_dir / "logs")) == ["h1.jsonl", "h2.jsonl", "h3.jsonl"]
    assert {f for f in os.listdir(run_dir / "pcap") if f.endswith(".pcap")} == {"h1.pcap", "h2.pcap", "h3.pcap"}
    assert all(manifest["capture"][n]["captured"] > 0 for n in ("h1", "h2", "h3"))
    # relayed progress, the local summary, and the local analysis of the downloaded directory
    assert "[run] timeline" in res.stderr and "[run] tearing down" in res.stderr
    assert f"run directory: runs/{run_id}/" in res.stdout
    assert "delivery ratio" in res.stdout and (run_dir / "report" / "index.html").is_file()
    assert user.remote_jobs() == [], "the remote work directory is removed once downloaded"


@pytest.mark.network
def test_ctrl_c_stops_the_remote_run_and_brings_back_what_it_captured(user, sshd, nothing_left):
    scenario = user.scenario(duration="60s")
    proc = user.popen("remote", "run", sshd.target, scenario, "--remote-testbed", REMOTE_TESTBED, *user.args())
    err = Lines(proc.stderr)
    err.wait_for("[run] timeline")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out = _stdout_after(proc, timeout=180)
    assert proc.returncode == 130, out + err.text()
    assert "stopping the run on" in err.text()
    run_id = re.search(r"^run (\S+): interrupted$", out, re.M).group(1)
    manifest = json.loads((user.cwd / "runs" / run_id / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["capture"]["h1"]["captured"] > 0
    assert user.remote_jobs() == []


@pytest.mark.network
def test_a_broken_connection_leaves_the_run_to_fetch_later(user, sshd, nothing_left):
    scenario = user.scenario(duration="8s")
    proc = user.popen("remote", "run", sshd.target, scenario, "--remote-testbed", REMOTE_TESTBED, *user.args())
    err = Lines(proc.stderr)
    err.wait_for("[run] timeline")
    assert sshd.drop_connections() > 0
    out = _stdout_after(proc, timeout=60)
    assert proc.returncode == 4, out + err.text()
    job = re.search(r"started on \S+ as job (\S+) ", err.text()).group(1)
    assert f"testbed remote fetch {sshd.target} {job} --wait" in err.text()

    listed = user.testbed("remote", "fetch", sshd.target, *user.args())
    assert listed.returncode == 0 and job in listed.stdout, listed.stderr
    if "running" in listed.stdout:
        res = user.testbed("remote", "fetch", sshd.target, job, *user.args())
        assert res.returncode == 1 and "still running" in res.stderr and "--wait" in res.stderr, res.stderr
    res = user.testbed("remote", "fetch", sshd.target, job, "--wait", *user.args(), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = re.search(r"^run (\S+): completed$", res.stdout, re.M).group(1)
    manifest = json.loads((user.cwd / "runs" / run_id / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert [a["action"] for a in manifest["timeline"]] == ["pause", "resume", "heal_all"]
    assert user.remote_jobs() == []


# -- the VM --------------------------------------------------------------------------------------------

def test_the_vagrantfile_provisions_with_the_setup_script():
    with open(os.path.join(ROOT, "Vagrantfile")) as handle:
        text = handle.read()
    assert re.search(r'config\.vm\.synced_folder\s+"\.",\s*"/vagrant"', text)
    provisions = re.findall(r'config\.vm\.provision\s+"shell".*?(?:<<~?(\w+)\n(.*?)\n\s*\1|inline:\s*"([^"]*)")',
                            text, re.S)
    scripts = [heredoc or inline for _, heredoc, inline in provisions]
    assert any(re.search(r"cd /vagrant && \./setup\.sh", s) for s in scripts), scripts
    with open(os.path.join(ROOT, "setup.sh")) as handle:
        setup = handle.read()
    assert "/usr/local/bin/testbed" in setup and "openssh-server" in setup  # `testbed` on PATH; sshd for remote runs
