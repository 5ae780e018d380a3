"""Runs on a remote machine, kept in one work directory each so that they outlive the connection.

    <remote dir>/<job>/          (remote dir: ~/testbed-remote, or --remote-dir)
      job.json                   what was started (scenario, command line), from where, when
      input/                     the uploaded scenario and the files it references
      stdout.log, stderr.log     the remote `testbed run`'s output (stderr has its progress lines)
      pid                        the `testbed run` process, once started
      exit                       its exit status, once it has ended
      run/                       the run directory (`testbed run --out`)

The job name is a run id made on this machine (stamp, scenario name, seed); the run directory
has its own run id, from the remote clock, and is downloaded under that name. `testbed run` is
started detached (setsid, nohup, its output in files) by a small shell that records its pid and
then its exit status: a broken connection leaves the run going, and `testbed remote fetch`
finds it later by its job name or run id. A job is `running` (pid alive, no exit file),
`finished` (exit file), `starting` (no pid yet) or `vanished` (its process is gone without an
exit status: the machine rebooted, or someone killed it with SIGKILL).

Stopping sends SIGTERM to `testbed run`, which treats it as Ctrl-C: the lab is torn down and
the manifest says `interrupted`. (SIGINT would not do: a non-interactive shell starts background
commands with SIGINT ignored.)
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import shlex
import shutil
import socket
import stat
import time
from typing import Callable, Dict, List, Optional

from ..errors import RemoteError, TestbedError, UsageError
from .connection import Remote
from .inputs import Inputs
from .relay import Interrupts, Relay, StoppedWaiting

DEFAULT_REMOTE_DIR = "testbed-remote"
JOB_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
POLL_S = 0.5

# The job's shell: start `testbed run` in the background (it gets no terminal, so it reports its
# progress as lines on stderr), record its pid, wait for it, record its exit status.
_JOB_SHELL = ('"$@" > stdout.log 2> stderr.log < /dev/null & '
              'echo $! > pid.tmp && mv pid.tmp pid; '
              'wait $!; echo $? > exit.tmp && mv exit.tmp exit')


class Job:
    """The paths of one job's work directory on the remote machine."""

    def __init__(self, base: str, name: str) -> None:
        if not JOB_RE.match(name):
            raise UsageError(f"{name!r} is not a job name or run id (letters, digits, '.', '_', '-')")
        self.base, self.name = base, name
        self.path = posixpath.join(base, name)

    def _file(self, name: str) -> str:
        return posixpath.join(self.path, name)

    @property
    def input(self) -> str:
        return self._file("input")

    @property
    def run(self) -> str:
        return self._file("run")

    @property
    def stdout(self) -> str:
        return self._file("stdout.log")

    @property
    def stderr(self) -> str:
        return self._file("stderr.log")

    @property
    def pid(self) -> str:
        return self._file("pid")

    @property
    def exit(self) -> str:
        return self._file("exit")

    @property
    def meta(self) -> str:
        return self._file("job.json")


def connection_errors() -> tuple:
    import paramiko

    return (paramiko.SSHException, EOFError, socket.error, socket.timeout)


def resolve_base(remote: Remote, base: Optional[str]) -> str:
    """The remote dir as an absolute path; relative (and ~/) paths are in the login's home."""
    base = base or DEFAULT_REMOTE_DIR
    if base == "~":
        base = "."
    elif base.startswith("~/"):
        base = base[2:]
    try:
        home = remote.sftp.normalize(".")
    except connection_errors() as exc:
        raise remote.broken(exc) from None
    return posixpath.normpath(posixpath.join(home, base))


def exists(remote: Remote, path: str) -> bool:
    try:
        remote.sftp.stat(path)
        return True
    except FileNotFoundError:
        return False
    except PermissionError:
        return True
    except connection_errors() as exc:
        raise remote.broken(exc) from None


def read_text(remote: Remote, path: str) -> Optional[str]:
    try:
        with remote.sftp.open(path, "rb") as handle:
            return handle.read().decode(errors="replace")
    except FileNotFoundError:
        return None
    except connection_errors() as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.ENOENT):
            return None
        raise remote.broken(exc) from None


# -- starting ---------------------------------------------------------------------------------------

def create(remote: Remote, base: str, name: str, meta: Dict) -> Job:
    """A new, empty work directory (a suffix when the name is taken) with its job.json."""
    status, _, err = remote.run(f"mkdir -p -- {shlex.quote(base)}")
    if status != 0:
        raise TestbedError(f"{remote.target.address}: cannot create {base}: {err.strip()} (choose another "
                           f"--remote-dir)")
    for attempt in range(1, 50):
        job = Job(base, name if attempt == 1 else f"{name}-{attempt}")
        status, _, err = remote.run(f"mkdir -- {shlex.quote(job.path)}")
        if status == 0:
            write_meta(remote, job, meta)
            return job
        if "exists" not in err:
            raise TestbedError(f"{remote.target.address}: cannot create {job.path}: {err.strip()}")
    raise TestbedError(f"{remote.target.address}: no free job name for {name} in {base}")


def upload(remote: Remote, job: Job, inputs: Inputs) -> None:
    sftp = remote.sftp
    made = set()
    try:
        for local, rel in inputs.files:
            target = posixpath.join(job.input, rel)
            _makedirs(sftp, posixpath.dirname(target), made)
            sftp.put(local, target)
    except connection_errors() as exc:
        raise remote.broken(exc) from None


def _makedirs(sftp, path: str, made: set) -> None:
    if path in made:
        return
    parent = posixpath.dirname(path)
    if parent and parent != path:
        _makedirs(sftp, parent, made)
    try:
        sftp.stat(path)
    except FileNotFoundError:
        sftp.mkdir(path)
    made.add(path)


def write_meta(remote: Remote, job: Job, meta: Dict) -> None:
    _put_bytes(remote, job.meta, json.dumps(dict(meta, job=job.name), indent=2).encode())


def _put_bytes(remote: Remote, path: str, data: bytes) -> None:
    try:
        with remote.sftp.open(path, "wb") as handle:
            handle.write(data)
    except connection_errors() as exc:
        raise remote.broken(exc) from None


def start(remote: Remote, job: Job, argv: List[str], timeout: float = 20) -> int:
    """Start `argv` (the remote testbed run) detached in the job's directory; its pid."""
    command = (f"cd {shlex.quote(job.path)} && {remote.sudo}env PYTHONUNBUFFERED=1 setsid nohup "
               f"sh -c {shlex.quote(_JOB_SHELL)} testbed-remote-job {' '.join(shlex.quote(a) for a in argv)} "
               f"< /dev/null > /dev/null 2>&1 &")
    status, _, err = remote.run(command)
    if status != 0:
        raise TestbedError(f"{remote.target.address}: could not start the run: {err.strip()}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = read_text(remote, job.pid)
        if pid and pid.strip().isdigit():
            return int(pid)
        time.sleep(0.2)
    raise TestbedError(f"{remote.target.address}: the run did not start within {timeout:g} s (is setsid there?); "
                       f"see {job.path}")


# -- state ------------------------------------------------------------------------------------------

def state(remote: Remote, job: Job) -> Dict:
    """What a job is doing: state, pid, exit status, run id and status from its manifest."""
    info: Dict = {"job": job.name, "path": job.path}
    meta = read_text(remote, job.meta)
    if meta:
        try:
            info.update({k: v for k, v in json.loads(meta).items() if k in ("scenario", "created_at", "from")})
        except ValueError:
            pass
    manifest = read_text(remote, posixpath.join(job.run, "manifest.json"))
    if manifest:
        try:
            data = json.loads(manifest)
            info["run_id"], info["status"] = data.get("run_id"), data.get("status")
        except ValueError:  # being rewritten right now
            pass
    exit_text = read_text(remote, job.exit)
    pid_text = read_text(remote, job.pid)
    if exit_text is not None and exit_text.strip().lstrip("-").isdigit():
        info["state"], info["exit"] = "finished", int(exit_text)
    elif pid_text and pid_text.strip().isdigit():
        info["pid"] = int(pid_text)
        if exists(remote, f"/proc/{info['pid']}"):
            info["state"] = "running"
        else:
            time.sleep(0.5)  # the job's shell writes the exit status right after the run ends
            exit_text = read_text(remote, job.exit)
            if exit_text is not None and exit_text.strip().lstrip("-").isdigit():
                info["state"], info["exit"] = "finished", int(exit_text)
            else:
                info["state"] = "vanished"
    else:
        info["state"] = "starting"
    return info


def list_jobs(remote: Remote, base: str) -> List[Dict]:
    try:
        names = sorted(a.filename for a in remote.sftp.listdir_attr(base) if stat.S_ISDIR(a.st_mode or 0))
    except FileNotFoundError:
        return []
    except connection_errors() as exc:
        raise remote.broken(exc) from None
    return [state(remote, Job(base, n)) for n in names if JOB_RE.match(n)]


def find(remote: Remote, base: str, name: str) -> Job:
    """A job by its name, or by the run id of its run directory."""
    job = Job(base, name)
    if exists(remote, job.path):
        return job
    for info in list_jobs(remote, base):
        if info.get("run_id") == name:
            return Job(base, info["job"])
    known = [i["job"] for i in list_jobs(remote, base)]
    raise UsageError(f"{remote.target.address}: no remote run {name!r} in {base} "
                     f"({'runs there: ' + ', '.join(known[-5:]) if known else 'there are no runs there'})")


def stop(remote: Remote, pid: int) -> None:
    """SIGTERM to `testbed run`: it stops as on Ctrl-C, tearing its lab down."""
    remote.run(f"{remote.sudo}kill -TERM {int(pid)}")


def remove(remote: Remote, job: Job) -> None:
    if not JOB_RE.match(job.name) or posixpath.dirname(job.path) != job.base:
        raise TestbedError(f"refusing to remove {job.path}")
    status, _, err = remote.run(f"{remote.sudo}rm -rf -- {shlex.quote(job.path)}")
    if status != 0:
        raise TestbedError(f"{remote.target.address}: could not remove {job.path}: {err.strip()}")


# -- following ----------------------------------------------------------------------------------------

def follow(remote: Remote, job: Job, relay: Relay, interrupts: Interrupts, stop_on_interrupt: bool,
           stop_timeout: float = 900) -> int:
    """Relay the job's output until it ends; its exit status.

    With stop_on_interrupt, the first Ctrl-C stops the remote run and the wait goes on until it
    has cleaned up; a second one stops waiting. Without it, Ctrl-C stops waiting (StoppedWaiting).
    A broken connection is a RemoteError; the run goes on there."""
    offsets = {job.stdout: 0, job.stderr: 0}
    handled = 0
    stop_sent: Optional[float] = None
    pid: Optional[int] = None
    last_check = 0.0
    try:
        while True:
            if interrupts.count > handled:
                handled = interrupts.count
                if not stop_on_interrupt or stop_sent is not None:
                    raise StoppedWaiting()
                pid = pid or _pid(remote, job)
                if pid:
                    relay.note(f"stopping the run on {remote.target.address} (SIGTERM): it tears its lab down and "
                               f"keeps what it captured; Ctrl-C again to stop waiting", always=True)
                    stop(remote, pid)
                stop_sent = time.monotonic()
            finished = exists(remote, job.exit)
            if not finished and not exists(remote, job.path):
                raise TestbedError(f"the run {job.name} is no longer on {remote.target.address}: another "
                                   f"'testbed remote' fetched or removed it")
            _relay_new(remote, offsets, job, relay)
            if finished:
                text = read_text(remote, job.exit) or ""
                return int(text.strip()) if text.strip().lstrip("-").isdigit() else 1
            now = time.monotonic()
            if now - last_check > 3:
                last_check = now
                pid = pid or _pid(remote, job)
                if pid and not exists(remote, f"/proc/{pid}"):
                    info = state(remote, job)
                    if info["state"] == "vanished":
                        raise TestbedError(f"the run on {remote.target.address} ended without an exit status (the "
                                           f"machine restarted, or its process was killed); what it left is in "
                                           f"{job.path}")
            if stop_sent is not None and now - stop_sent > stop_timeout:
                raise TestbedError(f"the run on {remote.target.address} did not stop within {stop_timeout:g} s of "
                                   f"SIGTERM; it is still in {job.path}")
            time.sleep(POLL_S)
    except connection_errors() as exc:
        raise remote.broken(exc) from None


def _pid(remote: Remote, job: Job) -> Optional[int]:
    text = read_text(remote, job.pid)
    return int(text) if text and text.strip().isdigit() else None


def _relay_new(remote: Remote, offsets: Dict[str, int], job: Job, relay: Relay) -> None:
    for path in (job.stdout, job.stderr):
        try:
            size = remote.sftp.stat(path).st_size or 0
        except FileNotFoundError:
            continue
        if size <= offsets[path]:
            continue
        try:
            with remote.sftp.open(path, "rb") as handle:
                handle.seek(offsets[path])
                data = handle.read(size - offsets[path])
        except FileNotFoundError:  # removed meanwhile; the loop notices
            continue
        offsets[path] += len(data)
        (relay.out if path == job.stdout else relay.err)(data)


# -- downloading --------------------------------------------------------------------------------------

def remote_manifest(remote: Remote, job: Job) -> Optional[Dict]:
    text = read_text(remote, posixpath.join(job.run, "manifest.json"))
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def check_destination(path: str) -> None:
    """As `testbed run --out`: a run directory is never overwritten."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise UsageError(f"{path}: exists and is not empty; a run directory is never overwritten (choose --out DIR)")


def download(remote: Remote, job: Job, destination: str, progress: Callable[[str], None] = lambda m: None,
             interrupts: Optional[Interrupts] = None) -> int:
    """The job's run directory, recursively, into `destination` (made whole at the end); bytes.
    A new Ctrl-C counted by `interrupts` stops it between files (StoppedWaiting)."""
    check_destination(destination)
    if remote.sudo:  # the run wrote as root; let the login read all of it
        remote.run(f"{remote.sudo}chmod -R a+rX -- {shlex.quote(job.run)}")
    partial = destination.rstrip("/") + ".partial"
    if os.path.exists(partial):
        shutil.rmtree(partial)
    os.makedirs(os.path.dirname(os.path.abspath(partial)), exist_ok=True)
    total = [0, 0]
    try:
        already = interrupts.count if interrupts is not None else 0
        stopped = (lambda: interrupts.count > already) if interrupts is not None else (lambda: False)
        _get_tree(remote.sftp, job.run, partial, total, stopped)
    except StoppedWaiting:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except connection_errors() as exc:
        raise RemoteError(f"the connection to {remote.target.address} broke while downloading ({exc}); the run is "
                          f"still there; what came is in {partial}") from None
    if os.path.isdir(destination):
        os.rmdir(destination)  # empty, checked above
    os.rename(partial, destination)
    progress(f"downloaded {total[0]} files, {total[1] / 1e6:.1f} MB into {os.path.relpath(destination)}/")
    return total[1]


def _get_tree(sftp, remote_dir: str, local_dir: str, total: List[int], stopped: Callable[[], bool]) -> None:
    os.makedirs(local_dir, exist_ok=True)
    for entry in sftp.listdir_attr(remote_dir):
        if stopped():
            raise StoppedWaiting()
        source = posixpath.join(remote_dir, entry.filename)
        target = os.path.join(local_dir, entry.filename)
        mode = entry.st_mode or 0
        if stat.S_ISDIR(mode):
            _get_tree(sftp, source, target, total, stopped)
        elif stat.S_ISREG(mode):
            sftp.get(source, target)  # paramiko checks the size it got against the remote's
            if entry.st_mtime:
                os.utime(target, (entry.st_atime or entry.st_mtime, entry.st_mtime))
            total[0] += 1
            total[1] += entry.st_size or 0
