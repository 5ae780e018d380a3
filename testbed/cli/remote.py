"""`testbed remote run|doctor|fetch|stop USER@HOST[:PORT] ...`: run scenarios on another machine
over SSH (paramiko) and bring their run directories back into runs/ here.

Exit codes as for the local verbs (2 bad input, before any connection; 3 the remote machine
lacks the testbed or root; 130 interrupted), and 4 when the remote machine cannot be reached,
its host key is unknown or has changed, the login is refused, or the connection breaks.
"""

from __future__ import annotations

import sys

from ..errors import UsageError
from .common import accepted_impairments, add_accept_unemulated


def register(sub) -> None:
    p = sub.add_parser("remote", help="run scenarios on another machine over SSH, fetch their run directories")
    verbs = p.add_subparsers(dest="remote_verb", metavar="SUBCOMMAND")
    verbs.required = True

    r = verbs.add_parser("run", help="run a scenario there; its run directory comes back into runs/<run-id>/")
    _target(r)
    r.add_argument("scenario", help="scenario YAML file here; it and its topology file are uploaded")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field (repeatable), as for 'testbed run'")
    add_accept_unemulated(r)
    _download_options(r)
    _connection(r, remote_dir=True, remote_testbed=True)
    r.set_defaults(run=run)

    d = verbs.add_parser("doctor", help="show the remote machine's 'testbed doctor' report")
    _target(d)
    d.add_argument("--json", action="store_true", help="the report as JSON")
    _connection(d, remote_dir=False, remote_testbed=True)
    d.set_defaults(run=doctor)

    # RUN is optional, and argparse cannot give an optional positional after options
    # (`fetch HOST --key K RUN`) unless it parses intermixed arguments.
    plain, verbs._parser_class = verbs._parser_class, _intermixed(verbs._parser_class)
    f = verbs.add_parser("fetch", help="download a remote run (or list the runs there, without RUN)")
    verbs._parser_class = plain
    _target(f)
    f.add_argument("name", nargs="?", metavar="RUN", help="job name or run id (as listed without RUN)")
    f.add_argument("--wait", action="store_true", help="if the run is still going, show it and wait for its end")
    _download_options(f)
    f.add_argument("--json", action="store_true", help="without RUN: the list as JSON")
    _connection(f, remote_dir=True, remote_testbed=False)
    f.set_defaults(run=fetch)

    s = verbs.add_parser("stop", help="stop a remote run (as Ctrl-C would); fetch it afterwards")
    _target(s)
    s.add_argument("name", metavar="RUN", help="job name or run id")
    _connection(s, remote_dir=True, remote_testbed=False)
    s.set_defaults(run=stop)


def _download_options(p) -> None:
    """Where a remote run comes back to, and what happens to it then (run and fetch)."""
    p.add_argument("--out", help="local run directory (default runs/<run-id>); must not exist or be empty")
    p.add_argument("--analyze", action="store_true",
                   help="analyse the downloaded run here afterwards (as 'testbed analyze')")
    p.add_argument("--master", help="with --analyze: Spark master URL (default local)")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.add_argument("--keep-remote", action="store_true",
                   help="keep the run's work directory there after downloading it")


def _intermixed(base):
    class Intermixed(base):
        _intermixing = False

        def parse_known_args(self, args=None, namespace=None):
            if self._intermixing:
                return super().parse_known_args(args, namespace)
            self._intermixing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixing = False
    return Intermixed


def _target(p) -> None:
    p.add_argument("target", metavar="USER@HOST[:PORT]", help="the machine, as for ssh (port 22 by default)")


def _connection(p, remote_dir: bool, remote_testbed: bool) -> None:
    g = p.add_argument_group("connection")
    g.add_argument("--key", metavar="FILE", help="private key to log in with (besides the ssh agent and ~/.ssh/id_*)")
    g.add_argument("--known-hosts", metavar="FILE", help="known-hosts file (default ~/.ssh/known_hosts)")
    g.add_argument("--accept-new-host-key", action="store_true",
                   help="accept an unknown host key and record it in the known-hosts file (a changed key is "
                        "always refused)")
    g.add_argument("--password-prompt", action="store_true", help="ask for a password (never shown or logged)")
    g.add_argument("--connect-timeout", type=float, default=15.0, metavar="SECONDS",
                   help="give up connecting after this long (default 15)")
    if remote_dir:
        g.add_argument("--remote-dir", metavar="DIR",
                       help="where runs are kept there (default ~/testbed-remote; relative to the login's home)")
    if remote_testbed:
        g.add_argument("--remote-testbed", metavar="PATH",
                       help="the testbed command there (default: 'testbed' on the PATH, or /usr/local/bin/testbed)")


def _session(args):
    """Everything about the connection, checked before connecting (exit 2)."""
    from ..remote.connection import ConnectOptions
    from ..remote.runner import Session
    from ..remote.target import parse_target

    target = parse_target(args.target)
    if args.connect_timeout <= 0:
        raise UsageError(f"--connect-timeout: {args.connect_timeout:g} is not allowed (seconds, above 0)")
    options = ConnectOptions(key_file=args.key, known_hosts=args.known_hosts,
                             accept_new_host_key=args.accept_new_host_key, password_prompt=args.password_prompt,
                             timeout=args.connect_timeout)
    if args.key:
        import os

        if not os.path.isfile(os.path.expanduser(args.key)):
            raise UsageError(f"--key {args.key}: no such file")
    return Session(target=target, options=options, remote_dir=getattr(args, "remote_dir", None),
                   remote_testbed=getattr(args, "remote_testbed", None))


def _check_analyze(args) -> None:
    if args.analyze:
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UsageError("--analyze: pyspark is not installed here: run ./setup.sh (or pip install -e .)") from None


def run(args) -> int:
    from ..remote import runner

    session = _session(args)
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed: {args.seed} is not allowed (a whole number, at least 0)")
    accepted = accepted_impairments(args.accept_unemulated)
    _check_analyze(args)
    outcome = runner.run(session, args.scenario, seed=args.seed, sets=tuple(args.set), accept_unemulated=accepted,
                         out=args.out, quiet=args.quiet, keep_remote=args.keep_remote)
    return _finish(outcome, args)


def fetch(args) -> int:
    from ..remote import runner

    session = _session(args)
    if args.name is None:
        infos = runner.list_runs(session)
        if args.json:
            print(runner.to_json(infos))
        elif not infos:
            print(f"no runs on {session.target.address}")
        else:
            for info in infos:
                print(runner.describe(info))
        return 0
    _check_analyze(args)
    outcome = runner.fetch(session, args.name, out=args.out, wait=args.wait, quiet=args.quiet,
                           keep_remote=args.keep_remote)
    return _finish(outcome, args)


def stop(args) -> int:
    from ..remote import runner

    info = runner.stop(_session(args), args.name)
    print(runner.describe(info))
    return 0


def doctor(args) -> int:
    from ..remote import runner

    return runner.doctor(_session(args), as_json=args.json)


def _finish(outcome, args) -> int:
    """Summarise the downloaded run as `testbed run` does, and analyse it here if asked."""
    from .run import finish

    if outcome.manifest is None or outcome.run_dir is None:
        sys.stdout.write(outcome.remote_stdout)
        return outcome.exit_code
    return finish(outcome.run_dir, outcome.manifest, args)
