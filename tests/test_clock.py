"""The agent clock (agents/clock.py): virtual time, the lateness of every wake-up, periodic tasks
that skip what they missed, and the `fidelity` event's fields. A fake clock that moves only when a
task sleeps (or when the test says work took time) drives the schedules exactly; a real event
loop shows the lateness of real sleeps. The real path, agents writing `fidelity` events in a run
on Mininet, is tested in tests/test_fidelity.py."""

from __future__ import annotations

import asyncio
import math
import random
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.clock import LATE_FLOOR_S, LATE_SHARE, Clock, Monitor, bucket_of, bucket_upper_us

from .helpers import FakeClock


def _clock(fake: FakeClock, dilation: float = 1.0, origin_ns=None) -> Clock:
    return Clock(dilation, origin_ns, monitor=Monitor(cpu=lambda: 0.0), monotonic=fake.time,
                 realtime_ns=fake.realtime_ns, wall_sleep=fake.sleep)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "2", None])
def test_a_dilation_that_is_not_a_finite_positive_number_is_refused(bad):
    with pytest.raises(ValueError, match="time dilation"):
        Clock(bad)


def test_virtual_time_runs_k_times_slower_and_all_nodes_agree_from_the_common_origin():
    fake = FakeClock()
    origin = fake.realtime_ns()
    a, b = _clock(fake, 4.0, origin), _clock(fake, 4.0, origin)
    start_v, start_ns = a.time(), a.now_ns()
    assert start_ns == origin
    asyncio.run(a.sleep(2.0))  # two virtual seconds
    assert fake.sleeps == [8.0], "a virtual second is k wall seconds"
    assert a.time() - start_v == pytest.approx(2.0)
    assert a.now_ns() - origin == pytest.approx(2e9) and b.now_ns() == a.now_ns()
    undilated = _clock(fake)
    assert undilated.now_ns() == fake.realtime_ns(), "k = 1: the wall clock itself"
    assert a.wall(1.5) == 6.0


def test_a_sleep_that_wakes_late_is_measured_against_its_period():
    fake = FakeClock()
    clock = _clock(fake)

    async def late_sleep():
        deadline = clock.time() + 0.1
        fake.now += 0.15  # the task was busy past its deadline
        await clock.sleep_until(deadline, period=0.1)

    asyncio.run(late_sleep())
    assert fake.sleeps == [0.0], "a passed deadline is not waited for (but the loop gets a turn)"
    asyncio.run(clock.sleep(0.2, period=1.0))  # on time
    w = clock.monitor.window()
    assert w["wakeups"] == 2 and w["periodic"] == 2 and w["late_periodic"] == 1
    asyncio.run(clock.sleep_until(clock.time() - 0.0015, period=0.005))  # 30% of a 5 ms period, but 1.5 ms
    assert clock.monitor.window()["late_periodic"] == 0, "within the loop's millisecond granularity: on time"
    assert w["late_max_us"] == pytest.approx(50_000, abs=1) and w["late_p50_us"] == pytest.approx(25_000, abs=1)
    assert clock.monitor.window()["wakeups"] == 0, "each window starts empty"


@settings(max_examples=60, deadline=None)
@given(period=st.floats(0.01, 5.0), offset=st.floats(0.0, 5.0), dilation=st.sampled_from([1.0, 2.0, 4.0, 10.0]),
       costs=st.lists(st.floats(0.0, 3.0), min_size=1, max_size=40), resume_after=st.floats(0.0, 20.0),
       seed=st.integers(0, 2**16))
def test_every_keeps_its_phase_counts_lateness_and_skips_exactly_the_missed_ticks(period, offset, dilation, costs,
                                                                                  resume_after, seed):
    """Whatever an action costs (in units of the period), each call happens at a tick of the
    schedule first + n·period, never twice at one tick, in order; a call late by more than a
    period skips the ticks it missed and the monitor counts them; lateness is virtual."""
    fake = FakeClock()
    clock = _clock(fake, dilation)
    first = clock.time() + offset
    calls: List[float] = []
    rng = random.Random(seed)

    def action():
        calls.append(clock.time())
        fake.now += clock.wall(rng.choice(costs) * period)  # the action's own cost
        if len(calls) == 40:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(clock.every(period, action, first))
    ticks = [(t - first) / period for t in calls]
    index = [math.floor(x + 1e-6) for x in ticks]
    assert index[0] == 0 and all(b > a for a, b in zip(index, index[1:]))
    skipped = sum(b - a - 1 for a, b in zip(index, index[1:]))
    w = clock.monitor.window()
    assert w["skipped"] == skipped and w["wakeups"] == w["periodic"] == len(calls)
    late = [(t - (first + n * period)) for t, n in zip(calls, index)]
    assert all(-1e-6 <= x < period + 1e-6 for x in late), "never a period late: it would have skipped"
    assert w["late_periodic"] == sum(1 for x in late if x > max(LATE_SHARE * period, LATE_FLOOR_S) + 1e-9)
    assert w["late_max_us"] == pytest.approx(max(late) * 1e6, abs=2)
    # restarted after a pause: the next call is the next tick still to come, on the same phase
    fake.now += clock.wall(resume_after)
    paused_at = clock.time()
    more: List[float] = []

    def again():
        more.append(clock.time())
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(clock.every(period, again, first, resume=True))
    n = (more[0] - first) / period
    assert abs(n - round(n)) < 1e-6 and more[0] > paused_at - 1e-9 and more[0] - paused_at <= period + 1e-9


def test_an_action_that_raises_goes_to_on_error_and_the_schedule_goes_on():
    fake = FakeClock()
    clock = _clock(fake)
    failed, calls = [], []

    def action():
        calls.append(clock.time())
        if len(calls) == 2:
            raise RuntimeError("one bad tick")
        if len(calls) == 4:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(clock.every(1.0, action, clock.time(), on_error=lambda a, e: failed.append(str(e))))
    assert failed == ["one bad tick"] and len(calls) == 4


@given(st.floats(0, 1e8))
def test_each_lateness_falls_in_its_histogram_bucket(late_us):
    b = bucket_of(late_us)
    assert late_us < bucket_upper_us(b) * (1 + 1e-12)
    assert b == 0 or bucket_upper_us(b - 1) <= late_us * (1 + 1e-12)


def test_the_window_quantiles_and_histogram_describe_every_wake_up():
    monitor = Monitor(cpu=iter([0.0, 0.25, 0.25]).__next__)
    values = [i / 1000 for i in range(101)]  # 0 .. 100 ms
    for v in values:
        monitor.woke(v)
    monitor.woke(-0.5)  # early (a coarse clock): counted as on time
    monitor.loop_lag(0.003)
    monitor.loop_lag(0.001)
    w = monitor.window()
    assert w["wakeups"] == 102 and w["periodic"] == 0 and w["late_max_us"] == 100_000
    import numpy as np

    every = [0.0] + [v * 1e6 for v in values]
    assert w["late_p50_us"] == round(np.quantile(every, 0.5)) and w["late_p99_us"] == round(np.quantile(every, 0.99))
    assert sum(w["late_hist"].values()) == 102 and w["late_hist"]["0"] == 2
    # the loop ran a timer 100 ms late: that is its lag, whether the probe or a role's timer saw it
    assert w["loop_lag_us"] == 100_000 and w["cpu_us"] == 250_000
    monitor.loop_lag(0.003)
    monitor.loop_lag(0.001)
    monitor.woke(0.002)
    assert monitor.window()["loop_lag_us"] == 3000, "the probe's lag, when it is the largest"


def test_real_sleeps_on_an_idle_loop_are_late_by_little():
    """On a real event loop a sleep wakes within a few milliseconds of its deadline."""
    clock = Clock()

    async def go():
        for _ in range(20):
            await clock.sleep(0.01, period=0.01)

    asyncio.run(go())
    w = clock.monitor.window()
    assert w["wakeups"] == 20 and 0 <= w["late_p50_us"] < 5_000
