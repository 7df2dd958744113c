"""Background tasks (runtime/tasks.py) and the manager's extra probes: a one-off runs once,
a periodic one again after each wait, a failing one is logged and retried with a doubling
backoff, a cancelled one stops; a manager runs its tasks after the caches synced and
cancels them at shutdown, then runs their cleanups (one failing or hanging does not stop
the others); a failing readiness or health check answers 503 with its name.
Leader-only tasks on two replicas against the real API server:
tests/e2e/test_manager_tasks.py."""

from __future__ import annotations

import asyncio

import pytest
import structlog
from aiohttp import ClientSession

from appstack.runtime import Client, Manager, Task
from appstack.runtime.tasks import clean_up, supervise
from tests.support.scripted_transport import ScriptedTransport


class _Sleeps:
    def __init__(self, stop_after: int) -> None:
        self.slept: list[float] = []
        self.stop_after = stop_after

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        if len(self.slept) >= self.stop_after:
            raise asyncio.CancelledError


async def test_a_one_off_runs_once_and_a_periodic_one_after_each_wait() -> None:
    runs: list[str] = []

    async def once() -> None:
        runs.append("once")

    await supervise(Task("once", once), sleep=_Sleeps(99))
    assert runs == ["once"]

    async def tick() -> None:
        runs.append("tick")

    sleeps = _Sleeps(3)
    with pytest.raises(asyncio.CancelledError):
        await supervise(Task("tick", tick, every=5.0, initial_delay=2.0), sleep=sleeps)
    assert sleeps.slept == [2.0, 5.0, 5.0]
    assert runs == ["once", "tick", "tick"]


async def test_a_failing_task_is_logged_and_retried_with_backoff() -> None:
    attempts: list[int] = []

    async def flaky() -> None:
        attempts.append(1)
        if len(attempts) < 4:
            raise RuntimeError("not yet")

    sleeps = _Sleeps(99)
    with structlog.testing.capture_logs() as logs:
        await supervise(Task("flaky", flaky), sleep=sleeps, retry=(1.0, 3.0))
    assert len(attempts) == 4
    assert sleeps.slept == [1.0, 2.0, 3.0]
    failures = [log for log in logs if log["event"] == "task failed"]
    assert [f["retry_in"] for f in failures] == [1.0, 2.0, 3.0]
    assert failures[0]["task"] == "flaky"


def test_a_task_that_cannot_be_scheduled_is_refused() -> None:
    async def nothing() -> None:
        return None

    with pytest.raises(ValueError, match="every must be more than 0"):
        Task("t", nothing, every=0)
    with pytest.raises(ValueError, match="initial_delay"):
        Task("t", nothing, initial_delay=-1)


async def test_the_manager_runs_its_tasks_serves_its_checks_and_cancels_at_shutdown() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def daemon() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    manager = Manager(Client(ScriptedTransport()), health_address="127.0.0.1:0")
    manager.add_task(Task("daemon", daemon))
    with pytest.raises(ValueError, match="already added"):
        manager.add_task(Task("daemon", daemon))
    healthy = {"db": True}
    manager.add_readiness_check("db", lambda: healthy["db"])

    async def alive() -> bool:
        return True

    manager.add_health_check("loop", alive)
    running = asyncio.create_task(manager.run())
    await asyncio.wait_for(started.wait(), 10)  # no Lease asked for: leader-only runs too
    url = f"http://127.0.0.1:{manager.bound['health']}"
    async with ClientSession() as session:
        async with session.get(f"{url}/readyz") as ready:
            assert ready.status == 200
        healthy["db"] = False
        async with session.get(f"{url}/readyz") as ready:
            assert ready.status == 503
            assert await ready.text() == "check db failed"
        async with session.get(f"{url}/healthz") as health:
            assert health.status == 200
    manager.stop()
    await asyncio.wait_for(running, 10)
    assert cancelled.is_set()


async def test_a_started_tasks_cleanup_runs_at_shutdown_after_it_is_cancelled() -> None:
    said: list[str] = []

    async def daemon() -> None:
        said.append("started")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            said.append("cancelled")
            raise

    async def cleanup() -> None:
        said.append("cleanup")

    manager = Manager(Client(ScriptedTransport()))
    manager.add_task(Task("daemon", daemon, cleanup=cleanup))
    running = asyncio.create_task(manager.run())
    await asyncio.sleep(0.1)
    assert said == ["started"]
    manager.stop()
    await asyncio.wait_for(running, 10)
    assert said == ["started", "cancelled", "cleanup"]


async def test_a_cleanup_that_fails_or_hangs_is_logged_and_the_others_still_run() -> None:
    ran: list[str] = []

    async def fails() -> None:
        raise RuntimeError("boom")

    async def hangs() -> None:
        await asyncio.Event().wait()

    async def fine() -> None:
        ran.append("fine")

    async def nothing() -> None:
        pass

    tasks = [Task("a", nothing, cleanup=fails), Task("b", nothing, cleanup=hangs)]
    with structlog.testing.capture_logs() as logs:
        await clean_up([*tasks, Task("c", nothing, cleanup=fine)], timeout=0.1)
    assert ran == ["fine"]
    assert [(e["event"], e["task"]) for e in logs] == [
        ("task cleanup failed", "a"),
        ("task cleanup timed out", "b"),
    ]
