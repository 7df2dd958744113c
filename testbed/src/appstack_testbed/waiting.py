"""Wait for a condition with a timeout, instead of sleeping a fixed time: the one wait of the
test bed, its pytest plugin, appstack's tests and an operator author's.

``await eventually(probe, check, timeout=..., what=...)`` calls ``probe`` (sync or async)
every ``interval`` seconds until ``check(value)`` holds (default: the value is truthy) and
returns that value; between polls the event loop runs, so the code under test in the same
process (informers, controllers) goes on. :func:`eventually_sync` is the same for code that
is not async (it blocks between polls).

What counts as "not yet": an exception listed in ``retry_on``, and a lightkube
``ApiError`` 404 (the object is not there yet: waiting for an object to appear needs no
``retry_on``). Any other exception propagates at once. To wait for an object to go away,
the probe catches the 404 itself.

On timeout it fails with :class:`WaitTimeout` (an ``AssertionError``) naming what was awaited
and the last value or exception seen, plus what ``diagnose()`` returns (a log tail, say), so
a failing test explains itself. ``condition_status`` reads one condition of an object.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, overload

from lightkube import ApiError

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited check did not hold in time (an assertion failure in tests)."""


def _shown(last: object) -> str:
    if isinstance(last, ApiError):
        return f"ApiError {last.status.code} {last.status.reason}: {last.status.message}"
    return repr(last)


class _Watch:
    """The deadline and the last thing seen, shared by the async and the sync loop."""

    def __init__(self, timeout: float, what: str, diagnose: Callable[[], object] | None) -> None:
        self.timeout, self.what, self.diagnose = timeout, what, diagnose
        self.deadline = time.monotonic() + timeout
        self.last: object = "nothing (the probe never returned)"

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def failed(self, error: Exception, retry_on: tuple[type[BaseException], ...]) -> None:
        """The probe raised ``error``: "not yet" if it is one of ``retry_on`` or an API
        server's 404; anything else propagates."""
        not_found = isinstance(error, ApiError) and error.status.code == 404
        if not (isinstance(error, retry_on) or not_found):
            raise error
        self.last = error

    def held(self, value: Any, check: Callable[[Any], object]) -> bool:
        """Whether ``check(value)`` holds (else ``value`` is the last thing seen)."""
        if check(value):
            return True
        self.last = value
        return False

    def pause(self, interval: float) -> float:
        """How long to wait before the next poll; the failure once the time is up."""
        left = self.remaining()
        if left <= 0:
            raise self.failure()
        return min(interval, left)

    def failure(self) -> WaitTimeout:
        message = (
            f"timed out after {self.timeout:g}s waiting for {self.what}; "
            f"last seen: {_shown(self.last)[:2000]}"
        )
        if self.diagnose is not None:
            message += f"\n{self.diagnose()}"
        error = WaitTimeout(message)
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
        except Exception as error:  # judged by failed(): not yet, or raised again
            watch.failed(error, retry_on)
        else:
            if watch.held(value, check):
                return value
        await asyncio.sleep(watch.pause(interval))


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
    """:func:`eventually` for code that is not async (it blocks between polls)."""
    watch = _Watch(timeout, what, diagnose)
    while True:
        try:
            value = probe()
        except Exception as error:  # judged by failed(): not yet, or raised again
            watch.failed(error, retry_on)
        else:
            if watch.held(value, check):
                return value
        time.sleep(watch.pause(interval))


def condition_status(obj: Mapping[str, Any] | Any, kind: str) -> str | None:
    """``status.conditions[type=kind].status`` of a dict or a lightkube model, or None."""
    status = obj.get("status") if isinstance(obj, Mapping) else getattr(obj, "status", None)
    if status is None:
        return None
    conditions = status.get("conditions") if isinstance(status, Mapping) else status.conditions
    for condition in conditions or []:
        ctype = condition["type"] if isinstance(condition, Mapping) else condition.type
        if ctype == kind:
            return str(condition["status"] if isinstance(condition, Mapping) else condition.status)
    return None


__all__ = ["WaitTimeout", "condition_status", "eventually", "eventually_sync"]
