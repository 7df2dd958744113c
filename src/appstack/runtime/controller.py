"""The reconcile loop: N workers take keys from a workqueue and call a reconciler.

``Reconciler.reconcile(Request) -> Result | None`` gets only ``namespace/name``: it reads
the current state from informer caches (level-based), never from the event that woke it.
Outcomes, as in controller-runtime:

* returns ``None`` / ``Result()``          → success: the key's backoff is forgotten;
* ``Result(requeue_after=s)``               → success, look again in ``s`` seconds;
* ``Result(requeue=True)``                  → retry with the key's backoff;
* raises                                    → logged with the object reference, counted in
  ``controller_runtime_reconcile_errors_total``, retried with backoff; other keys go on;
* raises while the API server is unavailable (:mod:`.availability`: unreachable, 429,
  503 — or any 5xx during such an outage) → as above, and the key is also *parked*: the
  moment the server answers again, parked keys are re-enqueued with their backoff
  forgotten (at most once per :data:`RECOVERY_INTERVAL`), so convergence after an outage
  does not wait out a backoff that grew while nothing could succeed;
* raises :class:`~appstack.runtime.errors.TerminalError` → logged and counted (also in
  ``controller_runtime_terminal_reconcile_errors_total``) but *not* retried: the key's
  backoff is forgotten and only a later event or resync reconciles it again.

A key is never reconciled by two workers at once (the workqueue guarantees it). Optional
periodic resync re-enqueues every cached object. Every log line inside a reconcile carries
``controller``, ``object`` (namespace/name) and a ``reconcile_id``.
Built by :mod:`appstack.runtime.builder`, run by :mod:`appstack.runtime.manager`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import structlog

from appstack.runtime import logging as rt_logging
from appstack.runtime.availability import Availability, is_outage
from appstack.runtime.errors import ApiError, TerminalError, TransportError
from appstack.runtime.metrics import Metrics
from appstack.runtime.workqueue import WorkQueue

log = structlog.get_logger(__name__)

# Parked keys are re-enqueued at most this often (seconds), however often the server's
# availability flaps.
RECOVERY_INTERVAL = 5.0


@dataclass(frozen=True, order=True)
class Request:
    """What to reconcile: the namespace (None for cluster-scoped kinds) and name of an object."""

    namespace: str | None
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class Result:
    """How a successful reconcile wants to be called again: not at all (the default), after
    ``requeue_after`` seconds, or with the key's backoff (``requeue=True``)."""

    requeue: bool = False
    requeue_after: float | None = None


class Reconciler(Protocol):
    """Anything with ``async reconcile(request) -> Result | None``: drive the object named by
    ``request`` towards its desired state, reading current state from the cache."""

    async def reconcile(self, request: Request) -> Result | None: ...


class Controller:
    """A workqueue of :class:`Request` keys and ``concurrency`` workers calling a reconciler.

    Usually built by :class:`~appstack.runtime.builder.Builder` and started by the manager.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        concurrency: int = 1,
        metrics: Metrics | None = None,
        resync_period: float | None = None,
        resync_source: Callable[[], Iterable[Request]] | None = None,
        availability: Availability | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.concurrency = concurrency
        self.metrics = metrics or Metrics()
        self.queue: WorkQueue[Request] = WorkQueue(metrics=self.metrics.queue(name))
        self.resync_period = resync_period
        self.resync_source = resync_source
        self._workers: list[asyncio.Task[None]] = []
        self._resync: asyncio.Task[None] | None = None
        self._active = self.metrics.active_workers.labels(name)
        self.metrics.max_concurrent.labels(name).set(concurrency)
        self.availability = availability or Availability()
        self.availability.on_recovered(self._retry_parked)
        self._parked: set[Request] = set()
        self._last_recovery = float("-inf")

    def enqueue(self, request: Request) -> None:
        """Ask for ``request`` to be reconciled (de-duplicated with pending requests)."""
        self.queue.add(request)

    async def start(self) -> None:
        """Start the workers (and the resync timer); returns at once."""
        self._workers = [
            asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
            for i in range(self.concurrency)
        ]
        if self.resync_period and self.resync_source:
            self._resync = asyncio.create_task(
                self._resync_loop(self.resync_period, self.resync_source)
            )

    async def stop(self, timeout: float | None = None) -> None:
        """Stop handing out keys; in-flight reconciles may finish within ``timeout`` s.

        None: no limit; 0: none. Whatever still runs then is cancelled."""
        self.queue.shutdown()
        if self._resync:
            self._resync.cancel()
        if timeout is None or timeout > 0:
            try:
                await asyncio.wait_for(self.queue.drain(), timeout)
            except asyncio.TimeoutError:
                log.warning("drain timed out: cancelling reconciles", controller=self.name)
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    async def _resync_loop(self, period: float, source: Callable[[], Iterable[Request]]) -> None:
        while True:
            await asyncio.sleep(period)
            for request in source():
                self.queue.add(request)

    async def _worker(self) -> None:
        while (request := await self.queue.get()) is not None:
            try:
                await self._reconcile_one(request)
            finally:
                self.queue.done(request)

    async def _reconcile_one(self, request: Request) -> None:
        tokens = rt_logging.bind(
            controller=self.name, object=request.key, reconcile_id=uuid.uuid4().hex[:12]
        )
        self._active.inc()
        started = time.perf_counter()
        try:
            result = await self.reconciler.reconcile(request) or Result()
        except asyncio.CancelledError:
            raise
        except TerminalError as error:
            self.metrics.reconcile_errors.labels(self.name).inc()
            self.metrics.terminal_reconcile_errors.labels(self.name).inc()
            self.metrics.reconcile_total.labels(self.name, "error").inc()
            log.error("reconcile failed terminally, not retrying", error=str(error))
            self.queue.forget(request)
            return
        except Exception as error:
            self.metrics.reconcile_errors.labels(self.name).inc()
            self.metrics.reconcile_total.labels(self.name, "error").inc()
            retries = self.queue.num_requeues(request)
            # the API server's answer, or none, says what happened: a traceback only for what
            # no request explains (a bug)
            answered = isinstance(error, (ApiError, TransportError))
            log.error(
                "reconcile failed",
                error=str(error),
                error_type=type(error).__name__,
                retries=retries,
                exc_info=None if answered else error,
            )
            self.queue.add_rate_limited(request)
            if is_outage(error) and not self.availability.available:
                self._parked.add(request)
            return
        finally:
            self.metrics.reconcile_time.labels(self.name).observe(time.perf_counter() - started)
            self._active.dec()
            rt_logging.reset(tokens)
        if result.requeue_after:
            self.metrics.reconcile_total.labels(self.name, "requeue_after").inc()
            self.queue.forget(request)
            self.queue.add_after(request, result.requeue_after)
        elif result.requeue:
            self.metrics.reconcile_total.labels(self.name, "requeue").inc()
            self.queue.add_rate_limited(request)
        else:
            self.metrics.reconcile_total.labels(self.name, "success").inc()
            self.queue.forget(request)
        self._parked.discard(request)

    def _retry_parked(self) -> None:
        """The API server answers again: re-enqueue the keys that failed while it did not."""
        now = self.queue.clock.now()
        at = max(now, self._last_recovery + RECOVERY_INTERVAL)
        self._last_recovery = at
        for request in self._parked:
            self.queue.forget(request)
            self.queue.add_after(request, at - now)
        self._parked.clear()
