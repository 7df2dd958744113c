"""The controller workqueue: keys to reconcile, with the guarantees client-go's queue gives.

* **De-duplication**: a key added many times before a worker takes it is processed once.
* **Exclusivity**: a key being processed is never handed to a second worker; if it is
  added meanwhile it is marked dirty and queued again when the first worker calls
  :meth:`WorkQueue.done` — so the latest state is always reconciled once more.
* **Delays**: :meth:`add_after` (for ``requeue_after``) and :meth:`add_rate_limited`
  (per-item exponential backoff combined with an overall token bucket, see :mod:`.ratelimit`);
  :meth:`forget` resets an item's backoff after a success.
* **Draining shutdown**: :meth:`shutdown` stops handing out keys (``get`` returns None);
  :meth:`drain` waits until the keys already being processed are done.

Single event loop, no threads. Used by :class:`appstack.runtime.controller.Controller`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from appstack.runtime.clock import Clock, RealClock
from appstack.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)


class QueueObserver(Protocol):
    """What the queue reports as it works (:class:`appstack.runtime.metrics.WorkQueueMetrics`
    turns it into Prometheus metrics)."""

    def added(self) -> None: ...
    def depth(self, depth: int) -> None: ...
    def queued_for(self, seconds: float) -> None: ...
    def worked_for(self, seconds: float) -> None: ...
    def retried(self) -> None: ...


class _Unobserved:
    def added(self) -> None: ...
    def depth(self, depth: int) -> None: ...
    def queued_for(self, seconds: float) -> None: ...
    def worked_for(self, seconds: float) -> None: ...
    def retried(self) -> None: ...


class WorkQueue(Generic[T]):
    """Keys to process: de-duplicated, never handed to two workers at once, delayable."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
        metrics: QueueObserver | None = None,
    ) -> None:
        self.clock = clock or RealClock()
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(self.clock)
        self.metrics = metrics or _Unobserved()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._added_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle: asyncio.Event | None = None
        self._shutting_down = False
        # Delayed items: a heap of (ready_at, seq, item); _ready_at holds the earliest time.
        self._waiting: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._waiting_changed = asyncio.Event()
        self._delay_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------------- adding
    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self.metrics.added()
        self._dirty.add(item)
        self._added_at.setdefault(item, self.clock.now())
        if item in self._processing:
            return  # re-queued by done()
        self._push(item)

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self.clock.now() + delay
        if self._ready_at.get(item, float("inf")) <= ready_at:
            return  # already waiting for an earlier time
        self._ready_at[item] = ready_at
        heapq.heappush(self._waiting, (ready_at, next(self._seq), item))
        self._ensure_delay_loop()
        self._waiting_changed.set()

    def add_rate_limited(self, item: T) -> None:
        self.metrics.retried()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.retries(item)

    # ---------------------------------------------------------------------- consuming
    async def get(self) -> T | None:
        """The next key to process, or None once the queue is shutting down."""
        while not self._queue:
            if self._shutting_down:
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._getters:
                    self._getters.remove(waiter)
        if self._shutting_down:
            return None
        item = self._queue.popleft()
        self.metrics.depth(len(self._queue))
        now = self.clock.now()
        self.metrics.queued_for(now - self._added_at.pop(item, now))
        self._started_at[item] = now
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        started = self._started_at.pop(item, None)
        if started is not None:
            self.metrics.worked_for(self.clock.now() - started)
        if item in self._dirty and not self._shutting_down:
            self._push(item)
        if not self._processing and self._idle is not None:
            self._idle.set()

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # ----------------------------------------------------------------------- shutdown
    def shutdown(self) -> None:
        """Stop accepting and handing out keys; wakes every waiting ``get`` with None."""
        self._shutting_down = True
        for waiter in self._getters:
            if not waiter.done():
                waiter.set_result(None)
        if self._delay_task is not None:
            self._delay_task.cancel()

    async def drain(self) -> None:
        """Wait until the keys being processed are done (call after :meth:`shutdown`)."""
        while self._processing:
            self._idle = asyncio.Event()
            await self._idle.wait()

    # ---------------------------------------------------------------------- internals
    def _push(self, item: T) -> None:
        self._queue.append(item)
        self.metrics.depth(len(self._queue))
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break

    def _ensure_delay_loop(self) -> None:
        if self._delay_task is None or self._delay_task.done():
            self._delay_task = asyncio.get_running_loop().create_task(self._delay_loop())

    async def _delay_loop(self) -> None:
        changed = self._waiting_changed
        while not self._shutting_down:
            now = self.clock.now()
            while self._waiting and self._waiting[0][0] <= now:
                ready_at, _, item = heapq.heappop(self._waiting)
                if self._ready_at.get(item) == ready_at:
                    del self._ready_at[item]
                    self.add(item)
            changed.clear()
            if not self._waiting:
                await changed.wait()
                continue
            sleeper = asyncio.ensure_future(self.clock.sleep(self._waiting[0][0] - now))
            woken = asyncio.ensure_future(changed.wait())
            try:
                await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                woken.cancel()
