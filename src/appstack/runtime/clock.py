"""Time, injectable: the real monotonic clock, and a fake one that tests step by hand.

The workqueue's backoff and delayed adds, the informer's list/watch backoff, the client's
retries and leader election read time and sleep only through a :class:`Clock`, so unit tests
run in microseconds with :class:`FakeClock` (or a recording clock) instead of sleeping.
"""

from __future__ import annotations

import asyncio
import datetime
import heapq
import itertools
import time
from collections.abc import Awaitable
from typing import Protocol, TypeVar

T = TypeVar("T")


def micro_time() -> str:
    """Wall-clock now as a Kubernetes MicroTime (``2026-11-23T02:00:00.123456Z``), for the
    timestamps we write into Leases and Events."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable``'s result, or :class:`asyncio.TimeoutError` after ``seconds`` (it is
    cancelled then, and waited for) — :func:`asyncio.wait_for` without its flaw before
    Python 3.12: a cancellation of the caller that arrives as ``awaitable`` completes is
    not lost (3.11's ``wait_for`` returns the result instead, and the cancelled task runs
    on). Leader election and the shard coordinator wait with it: after a SIGSTOP every
    reply and timer of a process is due at once, and its shutdown's cancellation of a Lease
    attempt was swallowed, so the process never exited."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})
        raise
    if not done:
        task.cancel()
        await asyncio.wait({task})
        if task.cancelled():
            raise asyncio.TimeoutError
    return task.result()


class Clock(Protocol):
    """Where runtime code reads time and sleeps: :class:`RealClock` in production,
    :class:`FakeClock` in tests."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` have passed on this clock."""


class RealClock:
    """The process's monotonic clock and ``asyncio.sleep``."""

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock."""
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when :meth:`advance` is called."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward, wake every sleeper that is due, and let them run."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
        for _ in range(5):  # let woken tasks run their follow-up steps
            await asyncio.sleep(0)
