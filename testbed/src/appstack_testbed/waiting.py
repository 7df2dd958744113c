"""Wait for a condition with a timeout, instead of sleeping a fixed time.

``wait_for(probe, timeout=..., what=...)`` calls ``probe`` until it returns something
truthy and returns that value. A probe that raises a "not found" API error counts as
"not yet". On timeout the error says what was awaited and the last value or error seen,
so a failing e2e test explains itself. Used by the pytest plugin and the e2e tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lightkube import ApiError

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The awaited condition did not hold in time (an assertion failure in tests)."""


def wait_for(
    probe: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = probe()
        except ApiError as error:
            if error.status.code != 404:
                raise
            last = f"NotFound: {error.status.message}"
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            shown = repr(last)
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: {shown[:2000]}"
            )
        time.sleep(interval)


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


async def wait_until(
    probe: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Async :func:`wait_for` for a cheap synchronous probe: yields to the event loop between
    polls, so the code under test (informers, controllers) keeps running."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: {value!r:.2000}"
            )
        await asyncio.sleep(interval)
