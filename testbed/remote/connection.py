"""SSH connections to the machine that runs the testbed, with paramiko.

Host keys are checked as OpenSSH checks them: against the known-hosts file (~/.ssh/known_hosts,
or --known-hosts FILE) and /etc/ssh/ssh_known_hosts. An unknown key is refused with its
fingerprint and nothing is recorded, unless --accept-new-host-key is given: then the key is
appended to the known-hosts file and the user is told so (OpenSSH's
StrictHostKeyChecking=accept-new). A key that differs from a recorded one is always refused.

Authentication tries what OpenSSH tries: the --key file, the ssh agent (SSH_AUTH_SOCK), the
default keys ~/.ssh/id_*, and a password only when --password-prompt asks for one. Passwords and
key passphrases are read with getpass (no echo), handed to paramiko and never printed, logged or
kept in a message.

Every failure to connect is a RemoteError (exit 4) that names the machine and says what to do.
"""

from __future__ import annotations

import getpass
import os
import shlex
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from ..errors import RemoteError, UsageError
from .target import Target

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")


def _paramiko():
    try:
        import paramiko
    except ImportError:
        raise UsageError("paramiko is not installed: run ./setup.sh (or pip install -e .)") from None
    return paramiko


@dataclass
class ConnectOptions:
    key_file: Optional[str] = None
    known_hosts: Optional[str] = None
    accept_new_host_key: bool = False
    password_prompt: bool = False
    timeout: float = 15.0

    @property
    def known_hosts_file(self) -> str:
        return os.path.abspath(os.path.expanduser(self.known_hosts or DEFAULT_KNOWN_HOSTS))


def load_key(path: str):
    """The --key file as a paramiko key, asking for its passphrase (without echo) when it has one.
    Bad input (exit 2) before any connection is made."""
    paramiko = _paramiko()
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        raise UsageError(f"--key {path}: no such file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"--key {path}: not readable by this user")
    try:
        return paramiko.PKey.from_path(path)
    except paramiko.PasswordRequiredException:
        if not sys.stdin.isatty():
            raise UsageError(f"--key {path}: the key is protected by a passphrase and there is no terminal to ask "
                             f"for it; load it into the ssh agent (ssh-add {path}) instead") from None
        passphrase = getpass.getpass(f"passphrase for key {path}: ")
        try:
            return paramiko.PKey.from_path(path, passphrase)
        except paramiko.SSHException:
            raise UsageError(f"--key {path}: wrong passphrase") from None
    except (paramiko.SSHException, ValueError, OSError) as exc:
        raise UsageError(f"--key {path}: not a private key paramiko can read ({exc})") from None


def fingerprint(key) -> str:
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")
    return f"{key.get_name()} SHA256:{digest}"


class Remote:
    """One SSH connection: commands, files (SFTP) and the prefix that makes commands root."""

    def __init__(self, client, target: Target) -> None:
        self.client = client
        self.target = target
        self.sudo = ""  # "sudo -n " when the login is not root but may become root without a password
        self._sftp = None

    # -- commands ---------------------------------------------------------------------------------

    def run(self, command: str, timeout: float = 120,
            on_out: Optional[Callable[[bytes], None]] = None,
            on_err: Optional[Callable[[bytes], None]] = None) -> Tuple[int, str, str]:
        """Run a POSIX shell command there (through sh, whatever the login shell is); its exit
        status, stdout and stderr (or stream them)."""
        paramiko = _paramiko()
        out, err = [], []
        try:
            channel = self.transport.open_session(timeout=timeout)
            channel.settimeout(timeout)
            channel.exec_command("sh -c " + shlex.quote(command))
            deadline = time.monotonic() + timeout
            while True:
                busy = False
                if channel.recv_ready():
                    data = channel.recv(65536)
                    (on_out or out.append)(data)
                    busy = True
                if channel.recv_stderr_ready():
                    data = channel.recv_stderr(65536)
                    (on_err or err.append)(data)
                    busy = True
                if not busy:
                    if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                        break
                    if time.monotonic() > deadline:
                        channel.close()
                        raise RemoteError(f"{self.target.address}: {command.split()[0]!r} did not finish in {timeout:g} s")
                    time.sleep(0.02)
            status = channel.recv_exit_status()
            channel.close()
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise self.broken(exc) from None
        if status < 0:
            raise RemoteError(f"{self.target.address}: the command ended without an exit status (connection lost?)")
        return status, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")

    @property
    def transport(self):
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise RemoteError(f"the connection to {self.target.address} is closed")
        return transport

    @property
    def sftp(self):
        if self._sftp is None:
            self.transport  # noqa: B018 (a closed connection says so, not "no SFTP")
            try:
                self._sftp = self.client.open_sftp()
                self._sftp.get_channel().settimeout(60)
            except Exception as exc:
                raise RemoteError(f"{self.target.address}: SFTP is not available ({exc}); the SSH server needs its "
                                  f"sftp subsystem (Debian's openssh-server has it)") from None
        return self._sftp

    def broken(self, exc: BaseException) -> RemoteError:
        return RemoteError(f"the connection to {self.target.address} broke ({type(exc).__name__}: {exc})")

    def close(self) -> None:
        try:
            if self._sftp is not None:
                self._sftp.close()
        except Exception:
            pass
        self.client.close()


def connect(target: Target, options: ConnectOptions, say: Callable[[str], None] = lambda m: None) -> Remote:
    """Connect and log in, checking the host key; a RemoteError (exit 4) says what went wrong."""
    paramiko = _paramiko()
    pkey = load_key(options.key_file) if options.key_file else None
    password = getpass.getpass(f"password for {target}: ") if options.password_prompt else None
    known_hosts = options.known_hosts_file
    client = paramiko.SSHClient()
    for path in (SYSTEM_KNOWN_HOSTS, known_hosts):
        if os.path.isfile(path):
            try:
                client.load_system_host_keys(path)  # read only: paramiko never rewrites these
            except (OSError, paramiko.SSHException) as exc:
                raise UsageError(f"{path}: cannot read the known hosts ({exc})") from None
    client.set_missing_host_key_policy(_HostKeyPolicy(target, known_hosts, options.accept_new_host_key, say))
    try:
        client.connect(target.host, port=target.port, username=target.user, pkey=pkey, password=password,
                       timeout=options.timeout, banner_timeout=options.timeout, auth_timeout=options.timeout,
                       allow_agent=True, look_for_keys=True)
    except RemoteError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise RemoteError(
            f"{target.address}: the host key has CHANGED: it is {fingerprint(exc.key)}, {known_hosts} or "
            f"{SYSTEM_KNOWN_HOSTS} records {fingerprint(exc.expected_key)}. Someone may be intercepting the "
            f"connection; if the machine was reinstalled, check the new key with its administrator and remove the "
            f"old one: ssh-keygen -R '{_known_name(target)}' -f {known_hosts}") from None
    except paramiko.AuthenticationException:
        client.close()
        raise RemoteError(f"{target}: authentication failed (tried {_tried(options, pkey, password)}). "
                          f"Give the key that is authorised there with --key FILE or load it into the ssh agent, "
                          f"or use --password-prompt if the server accepts passwords") from None
    except (socket.timeout, TimeoutError):
        client.close()
        raise RemoteError(f"cannot reach {target.address}: no answer within {options.timeout:g} s (is the machine up, "
                          f"and is port {target.port} open to this machine?)") from None
    except socket.gaierror as exc:
        client.close()
        raise RemoteError(f"cannot reach {target.address}: unknown host {target.host!r} ({exc.strerror})") from None
    except OSError as exc:
        client.close()
        reason = exc.strerror or str(exc)
        if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
            reason = "; ".join(sorted({e.strerror or str(e) for e in exc.errors.values()}))
        raise RemoteError(f"cannot reach {target.address}: {reason} (is the machine up, and is its SSH server "
                          f"listening on port {target.port}?)") from None
    except paramiko.SSHException as exc:
        client.close()
        if "No authentication methods available" in str(exc):
            raise RemoteError(f"{target}: no key to log in with (no --key, no ssh agent, no ~/.ssh/id_* key). Give the "
                              f"key that is authorised there with --key FILE, or use --password-prompt") from None
        raise RemoteError(f"{target.address}: SSH failed: {exc}") from None
    finally:
        password = None
    client.get_transport().set_keepalive(10)  # a dead peer is noticed even while only waiting
    return Remote(client, target)


def _known_name(target: Target) -> str:
    return target.host if target.port == 22 else f"[{target.host}]:{target.port}"


def _tried(options: ConnectOptions, pkey, password) -> str:
    tried = []
    if pkey is not None:
        tried.append(f"the key {options.key_file}")
    if os.environ.get("SSH_AUTH_SOCK"):
        tried.append("the ssh agent's keys")
    defaults = [f"~/.ssh/{name}" for name in DEFAULT_KEYS if os.path.isfile(os.path.expanduser(f"~/.ssh/{name}"))]
    if defaults:
        tried.append(", ".join(defaults))
    if password is not None:
        tried.append("a password")
    return "; ".join(tried) or "nothing: no key, agent or password"


class _HostKeyPolicy:
    """Called by paramiko for a host key that no known-hosts file has."""

    _lock = threading.Lock()

    def __init__(self, target: Target, known_hosts: str, accept_new: bool, say: Callable[[str], None]) -> None:
        self.target, self.known_hosts, self.accept_new, self.say = target, known_hosts, accept_new, say

    def missing_host_key(self, client, hostname: str, key) -> None:
        if not self.accept_new:
            raise RemoteError(
                f"{self.target.address}: unknown host key {fingerprint(key)} (not in {self.known_hosts}); refused. "
                f"Check it against the machine's own (ssh-keygen -lf /etc/ssh/ssh_host_{_short(key)}_key.pub there), "
                f"then run again with --accept-new-host-key to record it")
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        with self._lock:
            directory = os.path.dirname(self.known_hosts)
            if not os.path.isdir(directory):
                os.makedirs(directory, mode=0o700, exist_ok=True)
            fd = os.open(self.known_hosts, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a+") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() > 0:  # keep the last line whole when the file lacks a final newline
                    handle.seek(handle.tell() - 1)
                    if handle.read(1) != "\n":
                        line = "\n" + line
                handle.write(line)
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.say(f"recorded the new host key of {self.target.address} ({fingerprint(key)}) in {self.known_hosts}")


def _short(key) -> str:
    name = key.get_name()
    if "ed25519" in name:
        return "ed25519"
    if "ecdsa" in name:
        return "ecdsa"
    return "rsa"
