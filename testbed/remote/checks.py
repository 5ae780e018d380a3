"""What a remote machine must offer before anything is uploaded or started there: the testbed
command, and root (directly, or through sudo without a password). Missing either is exit 3, as a
missing tool or kernel feature is for local runs."""

from __future__ import annotations

import shlex
from typing import Callable, Optional, Tuple

from ..errors import CapabilityError
from .connection import Remote

INSTALL = ("copy this repository there (git clone, or rsync -a ./ HOST:testbed/) and run, in it: sudo ./setup.sh "
           "(it installs everything and links /usr/local/bin/testbed)")


def find_testbed(remote: Remote, path: Optional[str] = None) -> Tuple[str, str]:
    """The remote testbed command (an absolute path) and its version."""
    where = remote.target.address
    if path:
        command = f"command -v {shlex.quote(path)}"
    else:
        # /usr/local/bin is where setup.sh links it, should a login's PATH lack it
        command = "command -v testbed || { test -x /usr/local/bin/testbed && echo /usr/local/bin/testbed; }"
    status, out, _ = remote.run(command)
    found = out.strip().splitlines()[-1] if status == 0 and out.strip() else ""
    if not found.startswith("/"):
        what = f"no executable {path}" if path else f"no 'testbed' command on {remote.target.user}'s PATH"
        raise CapabilityError(f"the testbed is not installed on {where} ({what}). To install it, {INSTALL}; "
                              f"or name the command there with --remote-testbed PATH")
    status, out, err = remote.run(f"{shlex.quote(found)} --version")
    if status != 0:
        detail = (err.strip() or out.strip()).splitlines()[-1:] or ["no output"]
        raise CapabilityError(f"{where}: {found} is there but does not run ({detail[0]}); run sudo ./setup.sh there "
                              f"again")
    return found, out.strip().rpartition(" ")[2]


def become_root(remote: Remote, required: bool, say: Callable[[str], None] = lambda m: None) -> None:
    """Root, or passwordless sudo (then remote.sudo prefixes the commands that need it)."""
    target = remote.target
    status, out, _ = remote.run("id -u")
    uid = out.strip()
    if status == 0 and uid == "0":
        return
    if remote.run("sudo -n true")[0] == 0:
        remote.sudo = "sudo -n "
        say(f"{target.user} is not root on {target.address}; using sudo there")
        return
    if required:
        raise CapabilityError(f"{target}: {target.user} is not root there (uid {uid or '?'}) and cannot use sudo without "
                              f"a password, and the testbed needs root. Log in as root (root@{target.address}), or give "
                              f"{target.user} passwordless sudo (as the Vagrant box's vagrant user has)")
