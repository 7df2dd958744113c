"""Poll until a check holds or a deadline passes: the one wait of the tests.

``await eventually(probe, check, timeout=..., what=...)`` calls ``probe`` (sync or async)
every ``interval`` seconds until ``check(value)`` holds and returns that value; an exception
listed in ``retry_on`` counts as "not yet" (any other propagates at once). On timeout it fails
with :class:`Timeout` (an ``AssertionError``) naming what was awaited and the last value or
exception seen, plus what ``diagnose()`` says (a log tail, say), so a failing test explains
itself. :func:`eventually_sync` is the same for tests that are not async.

Used by the e2e and integration tests (``until`` in tests/e2e/conftest.py is the common case:
one object until a check holds). The test bed's own ``wait_for``/``wait_until``
(appstack_testbed.waiting) are part of its public API and stay as they are.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


class Timeout(AssertionError):
    """The awaited check did not hold in time (a test failure)."""


class _Watch:
    """The deadline and the last thing seen, shared by the async and the sync loop."""

    def __init__(self, timeout: float, what: str, diagnose: Callable[[], object] | None) -> None:
        self.timeout, self.what, self.diagnose = timeout, what, diagnose
        self.deadline = time.monotonic() + timeout
        self.last: object = "nothing (the probe never returned)"

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def failure(self) -> Timeout:
        shown = repr(self.last)
        message = (
            f"timed out after {self.timeout:g}s waiting for {self.what}; last seen: {shown[:2000]}"
        )
        if self.diagnose is not None:
            message += f"\n{self.diagnose()}"
        error = Timeout(message)
        if isinstance(self.last, BaseException):
            error.__cause__ = self.last
        return error


def _truthy(value: object) -> bool:
    return bool(value)


@overload
async def eventually(
    probe: Callable[[], Awaitable[T]],
    check: Callable[[T], object] = ...,
    *,
    timeout: float,
    what: str,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    diagnose: Callable[[], object] | None = ...,
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T],
    check: Callable[[T], object] = ...,
    *,
    timeout: float,
    what: str,
    interval: float = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
    diagnose: Callable[[], object] | None = ...,
) -> T: ...


async def eventually(
    probe: Callable[[], Any],
    check: Callable[[Any], object] = _truthy,
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = (),
    diagnose: Callable[[], object] | None = None,
) -> Any:
    """``probe()`` (awaited if it returns an awaitable) until ``check(value)`` holds; that
    value. Between polls the event loop runs, so code under test in this process goes on."""
    watch = _Watch(timeout, what, diagnose)
    while True:
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
        except retry_on as error:
            watch.last = error
        else:
            if check(value):
                return value
            watch.last = value
        left = watch.remaining()
        if left <= 0:
            raise watch.failure()
        await asyncio.sleep(min(interval, left))


def eventually_sync(
    probe: Callable[[], T],
    check: Callable[[T], object] = _truthy,
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = (),
    diagnose: Callable[[], object] | None = None,
) -> T:
    """:func:`eventually` for a test that is not async (it blocks between polls)."""
    watch = _Watch(timeout, what, diagnose)
    while True:
        try:
            value = probe()
        except retry_on as error:
            watch.last = error
        else:
            if check(value):
                return value
            watch.last = value
        left = watch.remaining()
        if left <= 0:
            raise watch.failure()
        time.sleep(min(interval, left))


__all__ = ["Timeout", "eventually", "eventually_sync"]
