"""An informer: a local, indexed cache of one kind, kept current by LIST then WATCH.

The reflector is an explicit state machine (after kube-rs's watcher)::

    LIST ──ok──▶ WATCH ──stream ends (server timeout)──▶ WATCH (from the last resourceVersion)
     ▲  └─error: backoff, LIST again     │
     └──────────── 410 Gone ─────────────┘   other errors / stalled stream: backoff, WATCH again

* LIST is paginated (``limit``/``continue``) and gives the resourceVersion to watch from.
  A re-list (after ``410 Gone``: our resourceVersion was compacted away) is compared with
  the cache and the *difference* is delivered — adds, updates and deletes — so nothing that
  changed while we could not watch is missed.
* WATCH asks for bookmarks, so the resourceVersion keeps moving even when nothing changes,
  and ends after the server's ``timeoutSeconds``; a client inactivity timeout detects a
  stream that silently stopped (see :class:`appstack.runtime.client.WatchStalled`).
* Errors back off exponentially (0.5 s → 30 s, jittered) and are logged, never raised.

Before an object is cached, ``metadata.managedFields`` and any other declared paths are
dropped (memory). Handlers (:class:`EventHandler`) are called synchronously on each change
and must be cheap — controllers only enqueue keys. Shared per kind through the manager.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import structlog

from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.errors import TransportError
from appstack.runtime.resources import Resource, object_key
from appstack.runtime.store import IndexFunc, Obj, Store

log = structlog.get_logger("appstack.informer")

DEFAULT_DROP: tuple[tuple[str, ...], ...] = (("metadata", "managedFields"),)


class EventHandler(Protocol):
    """Told about every change of an informer's cache; must be cheap (enqueue, do not work)."""

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


@dataclass
class FuncHandler:
    """An :class:`EventHandler` from plain functions (any may be omitted)."""

    add: Callable[[Obj], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj) -> None:
        if self.add:
            self.add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self.delete:
            self.delete(obj)


class State(Enum):
    LIST = "list"
    WATCH = "watch"


class Backoff:
    def __init__(self, initial: float = 0.5, cap: float = 30.0) -> None:
        self.initial, self.cap, self._next = initial, cap, initial

    def next(self) -> float:
        delay = self._next
        self._next = min(self.cap, self._next * 2)
        return delay * random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not security

    def reset(self) -> None:
        self._next = self.initial


class Informer:
    """A local cache of one kind (optionally one namespace or label selector) kept current by
    LIST then WATCH, telling its handlers about every change. Run with :meth:`run`."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        drop: Sequence[Sequence[str]] = DEFAULT_DROP,
        page_size: int = 500,
        watch_timeout: int = 290,
        inactivity_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.drop = [tuple(path) for path in drop]
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout or watch_timeout + 60.0
        self.store = Store()
        self.resource_version = ""
        self.state = State.LIST
        self.relists = 0
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()

    # ------------------------------------------------------------------------- public
    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; it is first told about every object already cached."""
        self._handlers.append(handler)
        for obj in self.store.objects():
            _call(handler.on_add, obj)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self.store.add_indexer(name, func)

    def drop_fields(self, paths: Iterable[Sequence[str]]) -> None:
        """Also drop these paths before caching (a controller declares what it never reads)."""
        for path in paths:
            if tuple(path) not in self.drop:
                self.drop.append(tuple(path))

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        """Run until cancelled. Restarting after a cancel resumes from the cached state."""
        backoff = Backoff()
        self.state = State.WATCH if self.resource_version else State.LIST
        while True:
            try:
                if self.state is State.LIST:
                    await self._list()
                    backoff.reset()
                elif not await self._watch(backoff):
                    # The stream ended at once with nothing in it: do not spin on it.
                    await asyncio.sleep(backoff.next())
            except errors.Gone as error:
                log.info(
                    "resourceVersion expired, re-listing",
                    resource=str(self.resource),
                    resource_version=self.resource_version,
                    reason=error.message,
                )
                self.relists += 1
                self.state = State.LIST
            except (TransportError, errors.ApiError) as error:
                delay = backoff.next()
                log.warning(
                    "list/watch failed, retrying",
                    resource=str(self.resource),
                    state=self.state.value,
                    error=str(error),
                    retry_in=round(delay, 2),
                )
                await asyncio.sleep(delay)
            except Exception:  # a bug or a malformed event must not end the informer
                delay = backoff.next()
                log.exception(
                    "informer failed, re-listing",
                    resource=str(self.resource),
                    retry_in=round(delay, 2),
                )
                self.state = State.LIST
                await asyncio.sleep(delay)

    # ---------------------------------------------------------------------- internals
    async def _list(self) -> None:
        items, resource_version = await self.client.list(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            page_size=self.page_size,
        )
        self._replace(items)
        self.resource_version = resource_version
        self.state = State.WATCH
        self._synced.set()

    async def _watch(self, backoff: Backoff) -> bool:
        """Follow one watch stream until it ends; False if it ended at once and empty."""
        started = asyncio.get_running_loop().time()
        seen = False
        stream = self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=self.watch_timeout,
            inactivity_timeout=self.inactivity_timeout,
        )
        async for event in stream:
            self._apply(event)
            seen = True
            backoff.reset()
        return seen or asyncio.get_running_loop().time() - started > 1.0

    def _apply(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise errors.from_response(int(obj.get("code") or 500), obj)
        resource_version = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.resource_version = resource_version or self.resource_version
            return
        obj = self._strip(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.upsert(obj)
            self._dispatch_upsert(old, obj)
        elif kind == "DELETED":
            self.store.delete(object_key(obj))
            self._dispatch("on_delete", obj)
        self.resource_version = resource_version or self.resource_version

    def _replace(self, items: list[Obj]) -> None:
        """Make the cache equal to a fresh list, delivering only the differences."""
        seen: set[str] = set()
        for item in items:
            obj = self._strip(item)
            seen.add(object_key(obj))
            old = self.store.upsert(obj)
            if old is None or _rv(old) != _rv(obj):
                self._dispatch_upsert(old, obj)
        for key in [k for k in self.store if k not in seen]:
            gone = self.store.delete(key)
            if gone is not None:
                self._dispatch("on_delete", gone)

    def _dispatch_upsert(self, old: Obj | None, new: Obj) -> None:
        for handler in self._handlers:
            if old is None:
                _call(handler.on_add, new)
            else:
                _call(handler.on_update, old, new)

    def _dispatch(self, method: str, obj: Obj) -> None:
        for handler in self._handlers:
            _call(getattr(handler, method), obj)

    def _strip(self, obj: Obj) -> Obj:
        for path in self.drop:
            parent: Any = obj
            for part in path[:-1]:
                parent = parent.get(part) if isinstance(parent, dict) else None
                if parent is None:
                    break
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
        return obj


def _rv(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


def _call(func: Callable[..., None], *args: Obj) -> None:
    try:
        func(*args)
    except Exception:  # a broken handler must not stop the informer
        log.exception("event handler failed", handler=getattr(func, "__qualname__", repr(func)))
