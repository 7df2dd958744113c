"""Per-object timers — kopf's ``@kopf.timer``: a reconciler's method called for each of its
objects every ``every`` seconds, declared on the reconciler class::

    class GreetingReconciler(KindReconciler[GreetingSpec]):
        timers = (Timer("refresh", every=30, initial_delay=5, idle=10),)

        async def refresh(self, obj: KubeObject) -> None: ...

A timer runs inside the object's reconcile, after :meth:`apply`: so it never runs at the
same time as another reconcile of the same object (the workqueue's guarantee), only where
the controllers run — on the leader — and only while the object exists, is not being
deleted and is in an enabled namespace; the reconcile asks to be called again when the next
timer is due (``requeue_after``). ``initial_delay`` waits after the object is first seen;
``idle`` waits until the object has not changed (its ``resourceVersion``) for that long.
A timer that raises fails the reconcile (retried with the key's backoff, with an Event
when the reconciler reports it). Used by :class:`~appstack.sdk.kit.reconciler.KindReconciler`
and :class:`~appstack.sdk.kit.objects.ObjectReconciler`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from appstack.core.resource import Resource
from appstack.runtime.cache import Cache
from appstack.runtime.controller import Request, Result
from appstack.sdk.kit.kubeobject import as_object
from appstack.sdk.kit.namespaces import NamespaceGate

#: At most this many objects' timer times are remembered per reconciler (the oldest go).
MAX_TRACKED = 100_000


@dataclass(frozen=True)
class Timer:
    """``method`` (a method of the reconciler taking the object) every ``every`` seconds,
    the first time ``initial_delay`` seconds after the object is first seen, and only once
    it has not changed for ``idle`` seconds."""

    method: str
    every: float
    initial_delay: float = 0.0
    idle: float = 0.0

    def __post_init__(self) -> None:
        if self.every <= 0:
            raise ValueError(f"timer {self.method}: every must be more than 0 seconds")
        if self.initial_delay < 0 or self.idle < 0:
            raise ValueError(f"timer {self.method}: initial_delay and idle cannot be negative")


@dataclass
class _Seen:
    uid: str
    version: str
    changed: float
    due: dict[str, float]


class Timers:
    """The timer times of one reconciler's objects, by key (``namespace/name``)."""

    def __init__(
        self, timers: tuple[Timer, ...], now: Callable[[], float] = time.monotonic
    ) -> None:
        self.timers = timers
        self.now = now
        self._seen: dict[str, _Seen] = {}

    def forget(self, key: str) -> None:
        """The object is gone (or going): its times too."""
        self._seen.pop(key, None)

    async def run_due(
        self, key: str, obj: Mapping[str, Any], call: Callable[[str], Awaitable[None]]
    ) -> float | None:
        """Call (``call(method)``) every timer of ``obj`` that is due; the seconds until the
        next one is (None: no timers)."""
        if not self.timers:
            return None
        meta = obj["metadata"]
        uid, version = str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))
        now = self.now()
        seen = self._seen.get(key)
        if seen is None or seen.uid != uid:  # first seen, or a new object of that name
            if seen is None and len(self._seen) >= MAX_TRACKED:
                self._seen.pop(next(iter(self._seen)))
            due = {t.method: now + t.initial_delay for t in self.timers}
            seen = self._seen[key] = _Seen(uid, version, now, due)
        elif seen.version != version:
            seen.version, seen.changed = version, now
        for timer in self.timers:
            ready_at = max(seen.due[timer.method], seen.changed + timer.idle)
            if now >= ready_at:
                await call(timer.method)
                seen.due[timer.method] = self.now() + timer.every
        later = min(max(seen.due[t.method], seen.changed + t.idle) for t in self.timers)
        return max(0.0, later - self.now())


class _Timed(Protocol):
    """What :func:`run_timers` reads of a reconciler."""

    cache: Cache
    resource: Resource
    namespaces: NamespaceGate


def timer_state(reconciler: object, timers: tuple[Timer, ...]) -> Timers:
    """The timers of ``reconciler``, each naming one of its methods (a TypeError at
    start-up if not)."""
    for timer in timers:
        if not callable(getattr(reconciler, timer.method, None)):
            raise TypeError(
                f"{type(reconciler).__name__}: timer {timer.method!r} is not one of its methods"
            )
    return Timers(timers)


async def run_timers(
    reconciler: _Timed, timers: Timers, request: Request, result: Result | None
) -> Result | None:
    """After a reconcile of ``request``: its object's due timers, when it exists, is not
    being deleted and is in an enabled namespace; ``result`` asking to be called again by
    the next one."""
    if not timers.timers:
        return result
    raw = reconciler.cache.get(reconciler.resource, request.key)
    if raw is None or raw["metadata"].get("deletionTimestamp"):
        timers.forget(request.key)
        return result
    namespace = raw["metadata"].get("namespace")
    if namespace and not await reconciler.namespaces.enabled(namespace):
        return result
    obj = as_object(raw)

    async def call(method: str) -> None:
        await getattr(reconciler, method)(obj)

    return sooner(result, await timers.run_due(request.key, raw, call))


def sooner(result: Result | None, seconds: float | None) -> Result | None:
    """``result``, asking to be called again within ``seconds`` (if given) too."""
    if seconds is None:
        return result
    if result is None:
        return Result(requeue_after=seconds)
    if result.requeue:
        return result
    after = seconds if result.requeue_after is None else min(result.requeue_after, seconds)
    return Result(requeue_after=after)
