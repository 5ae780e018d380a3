"""The remote verbs' flows: run a scenario on another machine, fetch a run from it, stop one,
show its doctor report. The command layer (testbed/cli/remote.py) parses arguments and prints
summaries; everything that talks to the remote machine is here and in the modules it uses.

`remote run`: bad input is refused before connecting (the scenario is loaded and validated here,
with --seed and --set); then connect, check the remote testbed and root, upload the inputs,
start the run detached, relay its output, download the run directory into runs/<run-id>/ (or
--out) and remove the remote work directory (unless --keep-remote). Ctrl-C stops the remote
run, waits for its teardown and downloads what it captured (exit 130). A broken connection
leaves the run going there; the error says how to fetch it later.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

from .. import __version__
from ..errors import RemoteError, TestbedError, UsageError
from . import jobs
from .checks import become_root, find_testbed
from .connection import ConnectOptions, Remote, connect
from .inputs import scenario_inputs
from .relay import Interrupts, Relay, StoppedWaiting
from .target import Target


class TestbedInterrupted(TestbedError):
    """Ctrl-C while waiting for a remote run: exit 130, with what to do next."""

    exit_code = 130


@dataclass
class Session:
    """Where and how to connect, and where the runs live there."""

    target: Target
    options: ConnectOptions
    remote_dir: Optional[str] = None
    remote_testbed: Optional[str] = None

    def command(self, verb: str, *args: str) -> str:
        """The `testbed remote VERB` command line that reaches the same machine the same way."""
        words = ["testbed", "remote", verb, str(self.target), *args]
        if self.options.key_file:
            words += ["--key", self.options.key_file]
        if self.options.known_hosts:
            words += ["--known-hosts", self.options.known_hosts]
        if self.remote_dir:
            words += ["--remote-dir", self.remote_dir]
        return " ".join(shlex.quote(w) for w in words)


@dataclass
class Outcome:
    exit_code: int
    run_dir: Optional[str] = None
    manifest: Optional[Dict] = None
    remote_stdout: str = ""


def job_name(scenario) -> str:
    """A run id made here (testbed.run's format; that module needs Mininet, which a laptop lacks)."""
    return f"{datetime.datetime.now():%Y%m%d-%H%M%S}-{scenario.name}-s{scenario.seed}"


def open_session(session: Session, relay: Relay) -> Remote:
    return connect(session.target, session.options, say=lambda m: relay.note(m, always=True))


def run(session: Session, scenario_path: str, seed: Optional[int] = None, sets: tuple = (),
        accept_unemulated: tuple = (), out: Optional[str] = None, quiet: bool = False,
        keep_remote: bool = False) -> Outcome:
    from ..scenario import load_scenario

    scenario = load_scenario(scenario_path, seed=seed, overrides=tuple(sets))  # bad input: exit 2, nothing sent
    inputs = scenario_inputs(scenario_path, scenario)
    if out:
        jobs.check_destination(out)
    relay = Relay(session.target.address, quiet=quiet, duration_s=scenario.duration_ms / 1000)
    remote = open_session(session, relay)
    try:
        testbed, version = find_testbed(remote, session.remote_testbed)
        if version != __version__:
            relay.note(f"{session.target.address} has testbed {version}, this machine {__version__}", always=True)
        become_root(remote, required=True, say=relay.note)
        base = jobs.resolve_base(remote, session.remote_dir)
        with Interrupts() as interrupts:
            meta = {"scenario": inputs.scenario, "from": socket.gethostname(),
                    "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(), "testbed": testbed}
            job = jobs.create(remote, base, job_name(scenario), meta)
            jobs.upload(remote, job, inputs)
            if interrupts.count:
                jobs.remove(remote, job)
                raise KeyboardInterrupt
            argv = [testbed, "run", f"{job.input}/{inputs.scenario}", "--out", job.run]
            if seed is not None:
                argv += ["--seed", str(seed)]
            for item in list(sets) + inputs.overrides(job.input):
                argv += ["--set", item]
            if accept_unemulated:
                argv += ["--accept-unemulated", ",".join(accept_unemulated)]
            jobs.write_meta(remote, job, dict(meta, argv=argv))
            pid = jobs.start(remote, job, argv)
            relay.note(f"started on {session.target.address} as job {job.name} (pid {pid}, in {job.path})")
            fetch_later = session.command("fetch", job.name, "--wait")
            try:
                exit_code = jobs.follow(remote, job, relay, interrupts, stop_on_interrupt=True)
            except StoppedWaiting:
                relay.close()
                raise TestbedInterrupted(f"stopped waiting; the run on {session.target.address} is still stopping. "
                                         f"Bring back what it captured with: {fetch_later}") from None
            except RemoteError as exc:
                relay.close()
                raise RemoteError(f"{exc}. The run goes on there; bring it back later with: {fetch_later} "
                                  f"(or stop it: {session.command('stop', job.name)})") from None
            relay.close()
            outcome = _collect(remote, job, relay, out, keep_remote, interrupts, session, exit_code=exit_code)
            if interrupts.count and outcome.exit_code == 0:
                outcome.exit_code = 130
            return outcome
    finally:
        relay.close()
        remote.close()


def _collect(remote: Remote, job: "jobs.Job", relay: Relay, out: Optional[str], keep_remote: bool,
             interrupts: Optional[Interrupts], session: Session, exit_code: Optional[int] = None,
             replay: bool = False) -> Outcome:
    """Download a finished job's run directory and remove the job there (unless kept)."""
    if exit_code is None:
        text = jobs.read_text(remote, job.exit) or ""
        exit_code = int(text.strip()) if text.strip().lstrip("-").isdigit() else 1
    manifest = jobs.remote_manifest(remote, job)
    outcome = Outcome(exit_code=exit_code, manifest=manifest, remote_stdout=relay.stdout.decode(errors="replace"))
    if manifest is None:
        if replay:  # nothing was relayed: show why the run made no run directory
            outcome.remote_stdout = jobs.read_text(remote, job.stdout) or ""
            relay.err((jobs.read_text(remote, job.stderr) or "").encode())
            relay.close()
        if not keep_remote:
            jobs.remove(remote, job)  # the run failed before it made a run directory; its messages were shown
        return outcome
    destination = os.path.abspath(out or os.path.join("runs", manifest.get("run_id") or job.name))
    try:
        jobs.download(remote, job, destination, progress=relay.note, interrupts=interrupts)
    except StoppedWaiting:
        raise TestbedInterrupted(f"download stopped; the run is still on {session.target.address}: "
                                 f"{session.command('fetch', job.name)}") from None
    except UsageError as exc:  # the local directory is taken
        raise UsageError(f"{exc}. The run is still on {session.target.address}: "
                         f"{session.command('fetch', job.name, '--out', 'DIR')}") from None
    except RemoteError as exc:
        raise RemoteError(f"{exc}. Fetch it again with: {session.command('fetch', job.name)}") from None
    outcome.run_dir = destination
    if keep_remote:
        relay.note(f"kept {job.path} on {session.target.address} (--keep-remote)")
    else:
        jobs.remove(remote, job)
    return outcome


def fetch(session: Session, name: str, out: Optional[str] = None, wait: bool = False, quiet: bool = False,
          keep_remote: bool = False) -> Outcome:
    if out:
        jobs.check_destination(out)
    relay = Relay(session.target.address, quiet=quiet)
    remote = open_session(session, relay)
    try:
        become_root(remote, required=False)  # sudo, when there, to remove what a root run wrote
        base = jobs.resolve_base(remote, session.remote_dir)
        job = jobs.find(remote, base, name)
        info = jobs.state(remote, job)
        with Interrupts() as interrupts:
            if info["state"] in ("running", "starting"):
                if not wait:
                    raise TestbedError(f"the run {job.name} is still running on {session.target.address}; wait for it "
                                       f"and fetch it then with: {session.command('fetch', job.name, '--wait')} "
                                       f"(or stop it: {session.command('stop', job.name)})")
                relay.note(f"waiting for {job.name} on {session.target.address} (Ctrl-C stops waiting, not the run)")
                try:
                    jobs.follow(remote, job, relay, interrupts, stop_on_interrupt=False)
                except StoppedWaiting:
                    raise TestbedInterrupted(f"stopped waiting; the run goes on on {session.target.address}") from None
                relay.close()
            elif info["state"] == "vanished":
                relay.note(f"the run {job.name} ended without an exit status (killed, or the machine restarted); "
                           f"fetching what it left", always=True)
            return _collect(remote, job, relay, out, keep_remote, interrupts, session,
                            exit_code=1 if info["state"] == "vanished" else None, replay=info["state"] == "finished")
    finally:
        relay.close()
        remote.close()


def list_runs(session: Session) -> List[Dict]:
    relay = Relay(session.target.address, quiet=True)
    remote = open_session(session, relay)
    try:
        return jobs.list_jobs(remote, jobs.resolve_base(remote, session.remote_dir))
    finally:
        remote.close()


def stop(session: Session, name: str) -> Dict:
    relay = Relay(session.target.address)
    remote = open_session(session, relay)
    try:
        become_root(remote, required=False)
        job = jobs.find(remote, jobs.resolve_base(remote, session.remote_dir), name)
        info = jobs.state(remote, job)
        if info["state"] != "running":
            return info
        with Interrupts() as interrupts:
            jobs.stop(remote, info["pid"])
            relay.note(f"stopping {job.name} on {session.target.address}: it tears its lab down")
            quiet = Relay(session.target.address, quiet=True)
            try:
                jobs.follow(remote, job, quiet, interrupts, stop_on_interrupt=False)
            except StoppedWaiting:
                raise TestbedInterrupted("stopped waiting; the run is still stopping") from None
        return jobs.state(remote, job)
    finally:
        relay.close()
        remote.close()


def doctor(session: Session, as_json: bool = False) -> int:
    relay = Relay(session.target.address)
    remote = open_session(session, relay)
    try:
        testbed, _ = find_testbed(remote, session.remote_testbed)
        become_root(remote, required=False)
        relay.note(f"doctor report of {session.target.address}" + (" (through sudo)" if remote.sudo else ""))
        command = f"{remote.sudo}{shlex.quote(testbed)} doctor" + (" --json" if as_json else "")

        def write(stream):
            def emit(data: bytes) -> None:
                stream.buffer.write(data)
                stream.flush()
            return emit

        status, _, _ = remote.run(command, timeout=300, on_out=write(sys.stdout), on_err=write(sys.stderr))
        return status
    finally:
        remote.close()


def describe(info: Dict) -> str:
    """One line of `testbed remote fetch HOST` (the list of runs there)."""
    state = info["state"]
    if state == "finished":
        state = f"finished ({info.get('status') or 'exit ' + str(info.get('exit'))})"
    run_id = info.get("run_id") or "-"
    return f"{info['job']:<44} {state:<22} {run_id:<44} {info.get('scenario', '')}"


def to_json(infos: List[Dict]) -> str:
    return json.dumps(infos, indent=2)
