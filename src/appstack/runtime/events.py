"""Kubernetes Events (``events.k8s.io/v1``) about the objects we reconcile: de-duplicated, and
sent in the background so that they never hold a reconcile up.

:meth:`EventRecorder.record` returns at once: the Event is queued and sent by at most
``senders`` background tasks (started when there is something to send, gone when there is
not). During a wave of thousands of reconciles the API server's capacity then goes first to
the writes that converge objects, and the Events follow as it allows — as client-go's event
broadcaster does. While ``busy()`` says reconciles are waiting (the operator passes
:meth:`~appstack.runtime.manager.Manager.backlog`), Events yield further: one sender, one
Event per ``busy_interval`` seconds (without the pause once half of ``max_pending`` wait, so
that none is dropped for it), so a wave's Events mostly follow its writes instead of
competing with them; at full speed again once the queues are empty. At most ``max_pending``
Events wait; beyond that new ones are dropped (counted in ``<prefix>_events_dropped_total``,
one warning per burst): Events are best-effort in Kubernetes. :meth:`EventRecorder.event`
records and waits until everything queued so far is sent; :meth:`~EventRecorder.flush` waits
for the queue; :meth:`~EventRecorder.close` flushes within a deadline at shutdown.

The first occurrence of an event (same object, type, reason, action and note) creates an
Event; repeats within ``series_window`` update that Event's ``series`` (count and last
observed time) instead of creating new objects — a reconcile that fails every few seconds
leaves one Event with a growing count, not thousands; repeats while the first is still
queued only raise the count it is created with. Notes are truncated to the API's 1 kB limit.
Callers must never put secret values in a note. Sending never fails a reconcile: API errors
are logged and swallowed. Created once per process, shared by the controllers; the Events
name who reports them (``reportingController``, ``reportingInstance``) as the recorder is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.clock import micro_time
from appstack.runtime.errors import TransportError
from appstack.runtime.program import program_name
from appstack.runtime.resources import EVENT

log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]
_NOTE_LIMIT = 1024
_INSTANCE_LIMIT = 128  # the API's limit on reportingInstance


@dataclass
class _Seen:
    """One Event (and its repeats): what to create, and how much of it was sent."""

    namespace: str
    regarding: dict[str, Any]
    type: str
    reason: str
    action: str
    note: str
    first: float
    event_time: str
    name: str = ""
    count: int = 1
    sent: int = 0  # the count the API server was last told
    busy: bool = False  # a create or series update of it is queued or in flight


class EventRecorder:
    """Records Kubernetes Events about an object, in the background, folding repeats into
    one Event's series.

    ``recorder.record(obj, "Warning", "InvalidSpec", "spec.image is empty")`` queues it and
    returns; ``await recorder.event(...)`` also waits until it is sent. Never raises for
    the API server's answers (failures are logged).

    ``controller`` is the Events' ``reportingController`` (a qualified name, e.g.
    ``example.com/widget-operator``; default: the program's name,
    :func:`~appstack.runtime.program.program_name`), ``instance`` their
    ``reportingInstance`` (default: ``<controller>-<host name>``, as client-go's).
    """

    def __init__(
        self,
        client: Client,
        *,
        controller: str | None = None,
        instance: str | None = None,
        series_window: float = 1800.0,
        max_tracked: int = 4096,
        senders: int = 4,
        max_pending: int = 4096,
        busy: Callable[[], bool] | None = None,
        busy_interval: float = 0.2,
    ) -> None:
        self.client = client
        self.controller = controller or program_name()
        self.instance = instance or f"{self.controller}-{socket.gethostname()}"[:_INSTANCE_LIMIT]
        self.series_window = series_window
        self.max_tracked = max_tracked
        self.senders = senders
        self.max_pending = max_pending
        self.busy = busy
        self.busy_interval = busy_interval
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._queue: deque[_Seen] = deque()
        self._active = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._drained = asyncio.Event()
        self._drained.set()
        self._dropping = False

    # ------------------------------------------------------------------------- public
    def record(
        self,
        regarding: Mapping[str, Any],
        type_: EventType,
        reason: str,
        note: str,
        *,
        action: str = "Reconcile",
    ) -> None:
        """Queue a ``Normal``/``Warning`` Event about ``regarding`` (a repeat of the same
        Event within the series window raises its count instead); returns at once. Must be
        called from a running event loop."""
        meta = regarding["metadata"]
        note = note if len(note) <= _NOTE_LIMIT else note[: _NOTE_LIMIT - 3] + "..."
        key = (meta.get("uid", ""), type_, reason, action, note)
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen.first < self.series_window:
            seen.count += 1
            self._seen.move_to_end(key)
            if not seen.busy:
                self._enqueue(seen)
            return
        seen = _Seen(
            namespace=meta.get("namespace") or "default",
            regarding={
                "apiVersion": regarding.get("apiVersion"),
                "kind": regarding.get("kind"),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            type=type_,
            reason=reason,
            action=action,
            note=note,
            first=now,
            event_time=micro_time(),
        )
        if self._enqueue(seen):
            self._seen[key] = seen
            while len(self._seen) > self.max_tracked:
                self._seen.popitem(last=False)

    async def event(
        self,
        regarding: Mapping[str, Any],
        type_: EventType,
        reason: str,
        note: str,
        *,
        action: str = "Reconcile",
    ) -> None:
        """:meth:`record`, then wait until every queued Event (this one too) is sent."""
        self.record(regarding, type_, reason, note, action=action)
        await self.flush()

    async def flush(self) -> None:
        """Wait until no Event is queued or being sent."""
        await self._drained.wait()

    async def close(self, timeout: float = 5.0) -> None:
        """Send what is queued, for at most ``timeout`` seconds, then stop sending."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.flush(), timeout)
        self._queue.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---------------------------------------------------------------------- internals
    def _enqueue(self, seen: _Seen) -> bool:
        if len(self._queue) >= self.max_pending:
            self.client.metrics.events_dropped.inc()
            if not self._dropping:  # one warning per burst
                log.warning("too many events waiting, dropping", pending=len(self._queue))
            self._dropping = True
            return False
        self._dropping = False
        seen.busy = True
        self._queue.append(seen)
        self._drained.clear()
        if self._active < (1 if self._yielding() else self.senders):
            self._active += 1
            # a context of its own: not the reconcile's that happened to start it (its
            # log fields, the key a sharded operator's write fence checks)
            loop = asyncio.get_running_loop()
            task = contextvars.Context().run(loop.create_task, self._send_loop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return True

    def _yielding(self) -> bool:
        """Whether reconciles are waiting, so Events give way to their writes."""
        return self.busy is not None and self.busy()

    async def _send_loop(self) -> None:
        try:
            while self._queue:
                if self._yielding():
                    if self._active > 1:
                        return  # one sender is enough while reconciles wait
                    if len(self._queue) < self.max_pending // 2:  # else: none is lost
                        await asyncio.sleep(self.busy_interval)
                    if not self._queue:  # closed meanwhile
                        break
                await self._send(self._queue.popleft())
        finally:
            self._active -= 1
            if not self._active and not self._queue:
                self._drained.set()

    async def _send(self, seen: _Seen) -> None:
        try:
            if not seen.name:
                await self._create(seen)
            else:
                await self._update(seen)
        except (errors.ApiError, TransportError) as error:
            log.warning("could not record event", reason=seen.reason, error=str(error))
        except Exception:  # never end a sender (nor leave `busy`) on a surprise
            log.exception("could not record event", reason=seen.reason)
        seen.busy = False
        if seen.count > seen.sent:  # repeated while being sent
            self._enqueue(seen)

    async def _create(self, seen: _Seen) -> None:
        seen.name = f"{seen.regarding['name']}.{uuid.uuid4().hex[:16]}"
        seen.sent = seen.count
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": seen.name, "namespace": seen.namespace},
            "eventTime": seen.event_time,
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": seen.action,
            "reason": seen.reason,
            "note": seen.note,
            "type": seen.type,
            "regarding": seen.regarding,
        }
        if seen.count > 1:  # repeated before it was first sent
            body["series"] = {"count": seen.count, "lastObservedTime": micro_time()}
        await self.client.create(EVENT, body)

    async def _update(self, seen: _Seen) -> None:
        seen.sent = seen.count
        series = {"count": seen.count, "lastObservedTime": micro_time()}
        try:
            await self.client.patch(
                EVENT, seen.name, namespace=seen.namespace, patch={"series": series}
            )
        except errors.NotFound:  # the Event expired (TTL): record a new one
            seen.count, seen.first, seen.event_time = 1, time.monotonic(), micro_time()
            await self._create(seen)
