"""Background tasks of a manager — controller-runtime's ``Runnable`` (with or without
leader election), kopf's ``@kopf.daemon`` and ``@kopf.timer`` at the operator's level.

A :class:`Task` is a coroutine function the manager runs beside its controllers: once (a
daemon: it runs until cancelled) or ``every`` so many seconds (after ``initial_delay``).
With ``leader_only`` (the default) it starts only once this process holds the Lease, and
stops with it; without, it starts as soon as the caches have synced, on every replica —
and writes through the manager's client are then refused while not leading (the client's
write fence), so such a task reads, or writes with a client of its own. A task that raises
is logged with its traceback and started again after a backoff (1 s doubling to 60 s),
never taking the operator down; at shutdown every task is cancelled before the controllers
drain. A task's ``cleanup`` (kopf's ``@kopf.on.cleanup``) runs once at a graceful shutdown
if the task was started: after the controllers have drained and before the Lease is
released — so its writes still pass the fence — bounded by :data:`CLEANUP_TIMEOUT`;
when leadership was lost, a leader-only task's cleanup is skipped (its writes would be
refused). Used by :class:`~appstack.runtime.manager.Manager` (``add_task``) and the SDK's
assembly (``operator_command(..., tasks=...)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

log = structlog.get_logger(__name__)

#: Waits before a failed task runs again: doubling from the first to the last.
FIRST_RETRY, LAST_RETRY = 1.0, 60.0
#: How long a task's cleanup may take at shutdown (then it is cancelled, and logged).
CLEANUP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Task:
    """``run`` under a ``name`` (in logs): once, or ``every`` seconds after
    ``initial_delay``; only while leading when ``leader_only``; ``cleanup`` once at a
    graceful shutdown, if it was started."""

    name: str
    run: Callable[[], Awaitable[None]]
    every: float | None = None
    leader_only: bool = True
    initial_delay: float = 0.0
    cleanup: Callable[[], Awaitable[None]] | None = None

    def __post_init__(self) -> None:
        if self.every is not None and self.every <= 0:
            raise ValueError(f"task {self.name}: every must be more than 0 seconds")
        if self.initial_delay < 0:
            raise ValueError(f"task {self.name}: initial_delay cannot be negative")


async def supervise(
    task: Task,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    retry: tuple[float, float] = (FIRST_RETRY, LAST_RETRY),
) -> None:
    """Run ``task`` until it is done (a one-off that returned) or cancelled: periodic ones
    again every ``every`` seconds from the end of the last run; a failure logged and tried
    again after the backoff (``retry``: the first wait, doubling up to the second)."""
    first, last = retry
    backoff = first
    if task.initial_delay:
        await sleep(task.initial_delay)
    while True:
        try:
            await task.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("task failed", task=task.name, retry_in=backoff)
            await sleep(backoff)
            backoff = min(backoff * 2, last)
            continue
        backoff = first
        if task.every is None:
            return
        await sleep(task.every)


async def clean_up(tasks: list[Task], *, timeout: float = CLEANUP_TIMEOUT) -> None:
    """Run the ``cleanup`` of each of ``tasks``, in order, each within ``timeout`` seconds;
    one that fails or runs late is logged and the others still run."""
    for task in tasks:
        if task.cleanup is None:
            continue
        try:
            await asyncio.wait_for(task.cleanup(), timeout)
        except asyncio.TimeoutError:
            log.error("task cleanup timed out", task=task.name, timeout=timeout)
        except Exception:
            log.exception("task cleanup failed", task=task.name)
