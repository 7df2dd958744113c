"""Time, injectable (runtime/clock.py): the fake clock moves only when advanced and wakes
its sleepers in time order as they fall due; the real one is the monotonic clock; the
timestamps written into Leases and Events are Kubernetes MicroTimes; and ``within`` times
an awaitable out without ever losing its caller's cancellation."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from appstack.runtime.clock import FakeClock, RealClock, micro_time, within


async def test_the_fake_clock_moves_only_when_advanced() -> None:
    clock = FakeClock(start=50.0)
    assert clock.now() == 50.0
    await asyncio.sleep(0.01)
    assert clock.now() == 50.0
    await clock.advance(2.5)
    assert clock.now() == 52.5


async def test_sleepers_wake_in_time_order_once_due_and_not_before() -> None:
    clock = FakeClock()
    woken: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woken.append(name)

    tasks = [
        asyncio.create_task(sleeper(name, seconds))
        for name, seconds in (("late", 10.0), ("early", 1.0), ("middle", 5.0), ("tie", 5.0))
    ]
    await asyncio.sleep(0)
    await clock.advance(0.5)
    assert woken == []
    await clock.advance(0.5)  # exactly due
    assert woken == ["early"]
    await clock.advance(20)  # several due at once: in time order, ties as they slept
    assert woken == ["early", "middle", "tie", "late"]
    await asyncio.gather(*tasks)


async def test_a_sleep_of_nothing_returns_without_the_clock_moving() -> None:
    clock = FakeClock()
    await asyncio.wait_for(clock.sleep(0), 1)
    await asyncio.wait_for(clock.sleep(-3), 1)
    assert clock.now() == 1000.0


async def test_a_cancelled_sleeper_does_not_stop_the_others_waking() -> None:
    clock = FakeClock()
    cancelled = asyncio.create_task(clock.sleep(1))
    kept = asyncio.create_task(clock.sleep(2))
    await asyncio.sleep(0)
    cancelled.cancel()
    await clock.advance(3)
    assert kept.done()
    with pytest.raises(asyncio.CancelledError):
        await cancelled


async def test_the_real_clock_is_monotonic_and_sleeps_no_less_than_asked() -> None:
    clock = RealClock()
    before = clock.now()
    assert abs(before - time.monotonic()) < 1
    await clock.sleep(0.02)
    assert clock.now() - before >= 0.02
    await asyncio.wait_for(clock.sleep(-1), 1)  # a negative wait is none


def test_micro_time_is_utc_to_the_microsecond() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", micro_time())


async def test_within_returns_the_result_or_times_out_and_cancels() -> None:
    assert await within(asyncio.sleep(0, result="done"), 1.0) == "done"
    slow = asyncio.ensure_future(asyncio.sleep(10))
    with pytest.raises(asyncio.TimeoutError):
        await within(slow, 0.01)
    assert slow.cancelled()
    with pytest.raises(ValueError, match="boom"):
        await within(_fail(), 1.0)


async def _fail() -> None:
    raise ValueError("boom")


async def test_within_never_loses_a_cancellation_that_arrives_as_the_awaitable_completes() -> None:
    """The same step completes the awaited future and cancels its waiter (what a SIGSTOPped
    process sees once continued: every reply and timer due at once). asyncio.wait_for of
    Python 3.11 returns the result and the task runs on; ``within`` raises CancelledError."""
    reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    ran_on: list[str] = []

    async def attempt() -> None:
        ran_on.append(await within(reply, 10.0))

    task = asyncio.create_task(attempt())
    await asyncio.sleep(0)  # the task now waits in within()
    reply.set_result("renewed")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ran_on == []
