"""Showing a remote run here as it goes, and Ctrl-C while waiting for one.

The remote `testbed run` has no terminal, so it prints its progress as `[run] PHASE` lines on
stderr; here they become one status line again when stderr is a terminal (with the scenario
clock, counted locally from when the timeline began), and stay lines otherwise. Everything else
on its stderr is shown as it comes. Its stdout (the summary) is kept: the summary printed here is
the downloaded run directory's, with its local path.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Dict, Optional

PROGRESS_PREFIX = "[run] "


class Interrupts:
    """Counts Ctrl-C (and SIGTERM) instead of raising, so that a remote call is never cut in half
    and the loop that waits decides what an interrupt means."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: Dict[int, object] = {}

    def _handle(self, signum, frame) -> None:
        self.count += 1

    def __enter__(self) -> "Interrupts":
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class Relay:
    """Shows the remote run's output here: its progress lines as one status line on a terminal
    (with the scenario clock during the timeline), as lines otherwise; everything else as it comes."""

    def __init__(self, host: str, quiet: bool = False, duration_s: Optional[float] = None) -> None:
        self.host, self.quiet, self.duration_s = host, quiet, duration_s
        self.stdout = bytearray()  # the remote summary: shown only when nothing is downloaded
        self._partial = b""
        self._phase = ""
        self._phase_since = 0.0
        self._tty = sys.stderr.isatty()
        self._drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if self._tty and not quiet:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def out(self, data: bytes) -> None:
        self.stdout.extend(data)

    def err(self, data: bytes) -> None:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            line = raw.decode(errors="replace").rstrip("\r")
            if line.startswith(PROGRESS_PREFIX):
                self.phase(line[len(PROGRESS_PREFIX):])
            else:
                self._clear()
                print(line, file=sys.stderr, flush=True)

    def phase(self, phase: str) -> None:
        self._phase, self._phase_since = phase, time.monotonic()
        if self.quiet:
            return
        if self._tty:
            self._draw()
        else:
            print(f"{PROGRESS_PREFIX}{phase}", file=sys.stderr, flush=True)

    def note(self, message: str, always: bool = False) -> None:
        if self.quiet and not always:
            return
        self._clear()
        print(f"[remote] {message}", file=sys.stderr, flush=True)
        self._draw()

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            self._draw()

    def _draw(self) -> None:
        if not (self._tty and self._phase) or self.quiet:
            return
        text = f"[run {self.host}] {self._phase}"
        if self._phase == "timeline" and self.duration_s:
            text += f"  t~{min(time.monotonic() - self._phase_since, self.duration_s):5.1f}/{self.duration_s:g}s"
        with self._lock:
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()
            self._drawn = True

    def _clear(self) -> None:
        with self._lock:
            if self._drawn:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
                self._drawn = False

    def close(self) -> None:
        """The run has ended: no status line from now on (notes are still shown)."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self._partial:
            self.err(b"\n")
        self._phase = ""
        self._clear()


class StoppedWaiting(Exception):
    """The user stopped waiting for a remote run (which goes on there)."""
