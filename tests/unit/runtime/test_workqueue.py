"""The workqueue de-duplicates, never hands a key to two workers, backs off, delays and drains."""

from __future__ import annotations

import asyncio

from appstack.runtime.clock import FakeClock
from appstack.runtime.ratelimit import ItemExponentialBackoff, MaxOf, TokenBucket
from appstack.runtime.workqueue import WorkQueue


def _queue(clock: FakeClock) -> WorkQueue[str]:
    return WorkQueue(
        clock=clock, rate_limiter=MaxOf(ItemExponentialBackoff(), TokenBucket(clock, 10, 100))
    )


async def _nothing_available(queue: WorkQueue[str]) -> bool:
    task = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    available = task.done()
    task.cancel()
    return not available


async def test_a_key_added_many_times_is_processed_once() -> None:
    queue = _queue(FakeClock())
    for key in ["a", "b", "a", "a", "b"]:
        queue.add(key)

    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    assert await _nothing_available(queue)


async def test_a_key_being_processed_is_not_given_to_another_worker_but_runs_again_after() -> None:
    queue = _queue(FakeClock())
    queue.add("a")
    assert await queue.get() == "a"

    queue.add("a")  # changed while a worker holds it
    assert await _nothing_available(queue)

    queue.done("a")
    assert await queue.get() == "a"
    queue.done("a")
    assert await _nothing_available(queue)


async def test_concurrent_workers_never_hold_the_same_key() -> None:
    queue = _queue(FakeClock())
    holding: set[str] = set()
    overlaps = 0
    processed = 0

    async def worker() -> None:
        nonlocal overlaps, processed
        while (key := await queue.get()) is not None:
            if key in holding:
                overlaps += 1
            holding.add(key)
            await asyncio.sleep(0)
            queue.add(key if processed < 200 else "done")  # keep re-adding while busy
            holding.discard(key)
            processed += 1
            queue.done(key)

    for key in "abcde":
        queue.add(key)
    workers = [asyncio.ensure_future(worker()) for _ in range(4)]
    while processed < 300:
        await asyncio.sleep(0)
    queue.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == 0


async def test_delayed_adds_become_available_when_due_and_the_earliest_wins() -> None:
    clock = FakeClock()
    queue = _queue(clock)
    queue.add_after("a", 10)
    queue.add_after("a", 30)  # later: ignored, 10 s still stands
    queue.add_after("b", 5)

    await clock.advance(4.9)
    assert len(queue) == 0
    await clock.advance(0.2)
    assert await queue.get() == "b"
    assert len(queue) == 0
    await clock.advance(5)
    assert await queue.get() == "a"
    await clock.advance(100)
    assert len(queue) == 0  # the 30 s entry was superseded


async def test_rate_limited_adds_back_off_exponentially() -> None:
    clock = FakeClock()
    queue = _queue(clock)
    queue.add_rate_limited("a")  # 5 ms
    queue.add_rate_limited("a")  # 10 ms, but the 5 ms entry is earlier and stands
    await clock.advance(0.004)
    assert len(queue) == 0
    await clock.advance(0.002)
    assert await queue.get() == "a"
    assert queue.num_requeues("a") == 2
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_shutdown_wakes_waiting_workers_and_drain_waits_for_work_in_progress() -> None:
    queue = _queue(FakeClock())
    queue.add("busy")
    assert await queue.get() == "busy"
    waiting = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)

    queue.shutdown()
    assert await waiting is None
    queue.add("late")
    assert len(queue) == 0

    drained = asyncio.ensure_future(queue.drain())
    await asyncio.sleep(0)
    assert not drained.done()
    queue.done("busy")
    await asyncio.wait_for(drained, 1)
