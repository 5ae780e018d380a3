"""The commit a benchmark's results were made with: one place for the scripts that stamp it."""

from __future__ import annotations

import subprocess
from typing import Optional


def commit(directory: str, rev: str = "HEAD") -> Optional[str]:
    """`rev` of the git checkout `directory` is in, as a 12-digit short hash; None outside a
    checkout or for a revision git does not know."""
    try:
        out = subprocess.run(["git", "-C", directory, "rev-parse", "--short=12", "--verify", "--quiet",
                              f"{rev}^{{commit}}"], capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() or None
