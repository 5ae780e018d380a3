"""The agent's clock: the time a role lives in, and how late the machine lets it wake.

Roles take every time from `agent.clock`, never from `time` or `asyncio` directly:

- `now_ns()`: the emulated world's CLOCK_REALTIME in nanoseconds, the same on every node of a run
  (for timestamps that travel in messages and are compared on another node);
- `time()`: a monotonic clock in seconds, for schedules and timeouts within the node;
- `sleep(s)`, `sleep_until(t)`, `every(period, action, first)` and `call_later(s, f)`.

**Time dilation.** Under `dilation` k (the scenario's `time_dilation`), the emulated world runs k
times slower than the wall clock: a role that sleeps one second sleeps k seconds of wall time,
and `now_ns()` advances one nanosecond for every k of the wall clock, from the run's common origin
(`origin_ns`, the same for every node), so that nodes keep agreeing on it. With k = 1 (the default)
`now_ns()` is the wall clock itself. The event log keeps wall-clock stamps, the clock the packet
captures use; the analysis turns durations into virtual time (docs/EVENTS.md, docs/RUNDIR.md).

**Fidelity.** Each wake-up of a timer is compared with the time it was meant for; the difference
(its lateness, in virtual time) goes to the `Monitor`, with the period of the task when it has
one (a wake-up late by more than a tenth of it, and by more than 2 ms, is late), and a periodic task that fell more than a period behind counts the ticks it skipped. The
runtime writes what the monitor gathered as a `fidelity` event every second (agents/runtime.py):
a machine that cannot keep up shows as timers late by a large part of their period.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence

#: histogram buckets of lateness: 4 per doubling of microseconds, bucket b holding
#: [2^(b/4), 2^((b+1)/4)) µs; bucket 0 also holds everything under 1 µs
BUCKETS_PER_OCTAVE = 4
#: a wake-up late by more than this share of its task's period counts as late (`late_periodic`),
#: if it is also later than LATE_FLOOR_S: asyncio's timers wake up to a millisecond late on an
#: idle machine (epoll's timeout is in whole milliseconds, rounded up), the agent's own
#: granularity wherever it runs, not the machine falling behind
LATE_SHARE = 0.1
LATE_FLOOR_S = 0.002


def bucket_of(late_us: float) -> int:
    return 0 if late_us < 1 else int(math.floor(math.log2(late_us) * BUCKETS_PER_OCTAVE))


def bucket_upper_us(bucket: int) -> float:
    return 2.0 ** ((bucket + 1) / BUCKETS_PER_OCTAVE)


class Monitor:
    """Gathers the wake-ups of one window: their lateness, whether they were late by more than a
    tenth of their period, the ticks periodic tasks skipped; `window()` returns the fields of the
    `fidelity` event and starts the next window."""

    def __init__(self, cpu: Callable[[], float] = time.process_time) -> None:
        self._cpu = cpu
        self._cpu_at = cpu()
        #: wake-ups since the start (not per window): the runtime reads it to tell a busy agent
        self.wakeups = 0
        self._reset()

    def _reset(self) -> None:
        self._late_us: List[float] = []
        self.periodic = 0
        self.late_periodic = 0
        self.skipped = 0
        self.loop_lag_us = 0.0

    def woke(self, late_s: float, period_s: Optional[float] = None) -> None:
        """A timer woke `late_s` virtual seconds after it was meant to (0 or more)."""
        late_s = max(late_s, 0.0)
        self.wakeups += 1
        late_us = late_s * 1e6
        self._late_us.append(late_us)
        if late_us > self.loop_lag_us:  # the loop ran this timer that late: its lag, as a probe's
            self.loop_lag_us = late_us
        if period_s is not None and period_s > 0:
            self.periodic += 1
            if late_s > max(LATE_SHARE * period_s, LATE_FLOOR_S):
                self.late_periodic += 1

    def skip(self, ticks: int) -> None:
        self.skipped += ticks

    def loop_lag(self, late_s: float) -> None:
        """The event loop's lag: how late the runtime's own probe woke (a role's timer that woke
        counts as well, in `woke`)."""
        self.loop_lag_us = max(self.loop_lag_us, late_s * 1e6)

    def window(self) -> Dict[str, Any]:
        """The `fidelity` event's fields for the window now ending (integers: microseconds)."""
        late = sorted(self._late_us)
        cpu = self._cpu()
        fields: Dict[str, Any] = {
            "wakeups": len(late),
            "late_p50_us": int(round(quantile(late, 0.5))) if late else 0,
            "late_p99_us": int(round(quantile(late, 0.99))) if late else 0,
            "late_max_us": int(round(late[-1])) if late else 0,
            "periodic": self.periodic,
            "late_periodic": self.late_periodic,
            "skipped": self.skipped,
            "loop_lag_us": int(round(self.loop_lag_us)),
            "cpu_us": int(round((cpu - self._cpu_at) * 1e6)),
        }
        histogram: Dict[str, int] = {}
        for value in late:
            key = str(bucket_of(value))
            histogram[key] = histogram.get(key, 0) + 1
        fields["late_hist"] = histogram
        self._cpu_at = cpu
        self._reset()
        return fields


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) of a sorted list (the
    analysis's fidelity section takes its loop-lag quantiles the same way)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Clock:
    """Virtual time at 1/`dilation` of the wall clock, with every wake-up reported to `monitor`.

    The time sources are seams for tests (a fake clock that moves only when a task sleeps)."""

    def __init__(self, dilation: float = 1.0, origin_ns: Optional[int] = None, monitor: Optional[Monitor] = None,
                 monotonic: Callable[[], float] = time.monotonic, realtime_ns: Callable[[], int] = time.time_ns,
                 wall_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, granularity: float = 0.0) -> None:
        if not (isinstance(dilation, (int, float)) and math.isfinite(dilation) and dilation > 0):
            raise ValueError(f"time dilation must be a finite number above 0, not {dilation!r}")
        self.dilation = float(dilation)
        self._monotonic = monotonic
        self._realtime_ns = realtime_ns
        self._wall_sleep = wall_sleep
        #: the event loop's timer granularity (wall seconds): a loop that counts time in whole
        #: milliseconds (uvloop) may wake a sleep early, so sleeps are rounded up to it and a
        #: sleep that still woke early sleeps again for the rest (agents/speedups.py)
        self.granularity = float(granularity)
        self.origin_ns = realtime_ns() if origin_ns is None else int(origin_ns)
        self.monitor = monitor if monitor is not None else Monitor()

    # -- reading the time -------------------------------------------------------------------------

    def now_ns(self) -> int:
        """The emulated world's CLOCK_REALTIME (ns): the same on every node with the same origin."""
        wall = self._realtime_ns()
        if self.dilation == 1.0:
            return wall
        return self.origin_ns + int((wall - self.origin_ns) / self.dilation)

    def time(self) -> float:
        """Monotonic virtual seconds (an arbitrary origin: use differences)."""
        return self._monotonic() / self.dilation

    def wall(self, seconds: float) -> float:
        """Virtual seconds as wall-clock seconds."""
        return seconds * self.dilation

    def virtual(self, wall_seconds: float) -> float:
        """Wall-clock seconds as virtual seconds."""
        return wall_seconds / self.dilation

    # -- waiting ----------------------------------------------------------------------------------

    async def sleep(self, seconds: float, period: Optional[float] = None) -> None:
        """Sleep `seconds` of virtual time; `period`, when the sleep paces a task, is what its
        lateness is judged against (a random inter-send time's mean, say)."""
        await self.sleep_until(self.time() + max(seconds, 0.0), period)

    async def sleep_until(self, deadline: float, period: Optional[float] = None) -> None:
        """Sleep until virtual time `deadline` (`time()`'s clock); at once when it has passed, but
        the loop gets a turn. Never wakes before the deadline. The wake-up's lateness goes to the
        monitor."""
        delay = (deadline - self.time()) * self.dilation
        grain = self.granularity
        while True:
            if grain and delay > 0:
                delay = math.ceil(delay / grain) * grain
            await self._wall_sleep(max(delay, 0.0))
            late = self.time() - deadline
            if late > -1e-9:  # on time or late (a nanosecond's rounding is not early)
                break
            delay = -late * self.dilation  # woke early (the loop's coarser clock): the rest
        self.monitor.woke(late, period)

    async def every(self, period: float, action: Callable[[], Any], first: float, resume: bool = False,
                    on_error: Optional[Callable[[Callable[[], Any], BaseException], None]] = None) -> None:
        """Call `action` at `first`, `first + period`, `first + 2 period`, ... (virtual `time()`),
        until cancelled. A tick that comes more than a period late makes the task skip the ticks
        it missed rather than burst them (counted by the monitor as skipped). `resume`: the
        schedule restarts after a pause and keeps its phase: the first call is the next tick still
        to come. An exception of `action` goes to `on_error` and the schedule goes on."""
        n = math.floor((self.time() - first) / period) + 1 if resume else 0
        n = max(n, 0)
        while True:
            await self.sleep_until(first + n * period, period)
            try:
                action()
            except Exception as exc:
                if on_error is None:
                    raise
                on_error(action, exc)
            due = max(n + 1, math.floor((self.time() - first) / period) + 1)
            if due > n + 1:
                self.monitor.skip(due - n - 1)
            n = due

    def call_later(self, seconds: float, callback: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        """loop.call_later in virtual seconds (timeouts: their lateness is not a task's)."""
        return asyncio.get_event_loop().call_later(max(seconds, 0.0) * self.dilation, callback, *args)
