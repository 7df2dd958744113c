"""LIST then WATCH as a state machine, after kube-rs's ``watcher``: the informer's protocol.

States carry their data, and :func:`step` makes one transition — at most one request or one
watch event — returning the events to deliver and the next state::

    Empty ─page─▶ Listing(token, items) ─last page─▶ Watching(rv) ─open─▶ Streaming(rv, stream)
      ▲  (one page: straight to Watching)              ▲     ▲            │ event / bookmark:
      │                                                │     │            │ Streaming(newer rv)
      │                                                │     └─ ended ────┤
      │                                                └── error, stalled, ended at once ─┤
      └──────────────── 410 Gone (re-list), malformed event ─────────────────────────────┘
      ▲                                                                404 on a watch ─┘
      └── the kind served again ── Unserved ◀── 404 on a LIST page (Restarted, empty)

* LIST is paginated (``limit``/``continue``); the last page yields :class:`Restarted` with
  every object, and the informer makes its cache equal to it. A ``410`` on a ``continue``
  token or on a watch (the resourceVersion was compacted) starts over from :class:`Empty`.
* Each object is handed to the query's ``prepare`` (the informer's strip and transform) as
  its page or its watch event arrives, before anything else is read: a LIST holds at most
  one page of objects as the server sent them (:attr:`ListWatch.page_size` of them,
  :data:`PAGE_SIZE` by default: the pages before it are already cut to what the cache
  keeps), and a ``prepare`` that fails
  is a fault of the data — list again, after backoff. The query's ``gate``, shared by the
  informers of a cache, bounds how many such pages they hold together.
* WATCH asks for bookmarks (:class:`Bookmarked`), so the resourceVersion moves even when
  nothing changes; the client raises :class:`~appstack.runtime.errors.WatchStalled` when a
  stream goes silent. A stream that ends at once and empty is an error (:class:`EmptyWatch`):
  reopening it at once would spin.
* A ``404`` on a LIST means the API server does not serve the kind (its CRD deleted, or not
  installed yet): the step yields an empty :class:`Restarted` — the cache is emptied and
  nothing stale is served — and goes :class:`Unserved`, backed off; a ``404`` opening a
  watch lists again to find out. The informer waits in :class:`Unserved` until the kind is
  served (:func:`~appstack.runtime.discovery.wait_served`), then lists as from
  :class:`Empty`.
* A step that failed in a way that could repeat at once says ``backoff=True``;
  :class:`StepBackoff` is the wrapper that then waits (exponential, jittered, on a
  :class:`~appstack.runtime.clock.Clock`) before the next step, and resets on progress.

No sleeping and no randomness here. Used by :class:`appstack.runtime.informer.Informer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from appstack.runtime import errors
from appstack.runtime.client import STALL_TIMEOUT, Client
from appstack.runtime.clock import Clock
from appstack.runtime.ratelimit import ItemExponentialBackoff, Jittered, RateLimiter
from appstack.runtime.resources import Obj, Resource

EMPTY_STREAM_WINDOW = 1.0  # a stream that ends sooner than this with nothing in it is an error

#: Objects per LIST page, whatever the kind. A page is held whole, as the bytes it came in
#: and then decoded, until its objects are prepared: measured, a page costs about three
#: times its size at its peak (72 MiB for 25 ConfigMaps of 0.9 MB, 135 MiB for 50, 265 for
#: 100; tests/e2e/test_tenant_memory.py). An object may be up to ≈ 1.5 MiB (etcd's request
#: limit) — of metadata only too: anyone may write 1.3 MB of labels on their own ConfigMap
#: (issue #46) — so 25 of them stay ≈ 110 MiB. Smaller pages cost requests: 10,000 small
#: objects are listed in ≈ 1 s more than in pages of 500.
PAGE_SIZE = 25


class EmptyWatch(Exception):
    """The watch stream ended at once without a single event or bookmark."""


class MalformedEvent(ValueError):
    """A watch event or listed object the informer cannot use (no type, no metadata.name)."""


@dataclass(frozen=True)
class ListWatch:
    """What to list and watch, and how; ``prepare`` (if given) makes each listed or watched
    object what the events carry — called once per object, as soon as it is decoded (it may
    change the object in place or return another one); ``gate`` (if given) is held for each
    page, from the request until its objects are prepared."""

    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    page_size: int = PAGE_SIZE
    watch_timeout: int = 290
    inactivity_timeout: float = STALL_TIMEOUT
    prepare: Callable[[Obj], Obj] | None = None
    #: Held from asking for a page until it is prepared: shared by the informers of a
    #: cache, so that they hold that many pages as sent at most, all together.
    gate: asyncio.Semaphore | None = None


# ------------------------------------------------------------------------------ states
@dataclass(frozen=True)
class Empty:
    """Nothing listed yet, or the list must start over."""


@dataclass(frozen=True)
class Listing:
    """A paginated LIST under way: the next page's token and the objects so far."""

    continue_token: str
    items: list[Obj] = field(default_factory=list)


@dataclass(frozen=True)
class Watching:
    """In sync up to ``resource_version``; the next step opens a watch from there."""

    resource_version: str


@dataclass(frozen=True)
class Streaming:
    """A watch stream is open; ``seen`` once anything arrived on it."""

    resource_version: str
    stream: AsyncGenerator[Obj, None]
    opened_at: float
    seen: bool = False


@dataclass(frozen=True)
class Unserved:
    """The API server does not serve the kind (a LIST was answered ``404``: its CRD is
    gone, or not installed): nothing is cached; the next step lists as :class:`Empty`
    does, once the informer has waited for the kind to be served."""


State = Empty | Listing | Watching | Streaming | Unserved


# ------------------------------------------------------------------------------ events
@dataclass(frozen=True)
class Restarted:
    """A complete LIST: the cache must now equal ``objects``."""

    objects: list[Obj]
    resource_version: str


@dataclass(frozen=True)
class Applied:
    """An object was added or modified."""

    obj: Obj


@dataclass(frozen=True)
class Deleted:
    """An object was deleted (its last state)."""

    obj: Obj


@dataclass(frozen=True)
class Bookmarked:
    """The server confirmed we are in sync up to ``resource_version``."""

    resource_version: str


WatchEvent = Restarted | Applied | Deleted | Bookmarked


@dataclass(frozen=True)
class Step:
    """One transition: the next state, the events to deliver, and what went wrong (if
    anything); ``backoff`` asks the caller to wait before the next step."""

    state: State
    events: tuple[WatchEvent, ...] = ()
    error: Exception | None = None
    backoff: bool = False


# ------------------------------------------------------------------------------- step
async def step(state: State, client: Client, query: ListWatch, clock: Clock) -> Step:
    """Make one transition from ``state``: one LIST page, or one watch event."""
    if isinstance(state, Streaming):
        return await _next_event(state, query, clock)
    if isinstance(state, Watching):
        stream = client.watch(
            query.resource,
            query.namespace,
            resource_version=state.resource_version,
            label_selector=query.label_selector,
            timeout_seconds=query.watch_timeout,
            inactivity_timeout=query.inactivity_timeout,
        )
        opened = Streaming(state.resource_version, stream, clock.now())
        return await _next_event(opened, query, clock)
    return await _list_page(Empty() if isinstance(state, Unserved) else state, client, query)


async def _list_page(state: Empty | Listing, client: Client, query: ListWatch) -> Step:
    async with query.gate or contextlib.nullcontext():
        return await _gated_list_page(state, client, query)


async def _gated_list_page(state: Empty | Listing, client: Client, query: ListWatch) -> Step:
    token = state.continue_token if isinstance(state, Listing) else None
    try:
        page, resource_version, next_token = await client.list_page(
            query.resource,
            query.namespace,
            label_selector=query.label_selector,
            limit=query.page_size,
            token=token,
        )
        for obj in page:
            _check(obj)
    except errors.Gone as error:  # the continue token expired: list from the start
        return Step(Empty(), error=error)
    except errors.NotFound as error:  # the kind is not served: there is none of it
        return Step(Unserved(), (Restarted([], ""),), error=error, backoff=True)
    except (errors.ApiError, errors.TransportError, MalformedEvent) as error:
        return Step(state, error=error, backoff=True)
    try:
        _prepare_all(page, query.prepare)
    except Exception as error:  # a bug in a transform must not end the informer
        return Step(Empty(), error=error, backoff=True)
    items = [*state.items, *page] if isinstance(state, Listing) else page
    if next_token:
        return Step(Listing(next_token, items))
    return Step(Watching(resource_version), (Restarted(items, resource_version),))


def _prepare_all(page: list[Obj], prepare: Callable[[Obj], Obj] | None) -> None:
    """Replace each object of ``page`` by what ``prepare`` makes of it, one after the other:
    each one's dropped fields are freed before the next is looked at."""
    if prepare is not None:
        for index, obj in enumerate(page):
            page[index] = prepare(obj)


async def _next_event(state: Streaming, query: ListWatch, clock: Clock) -> Step:
    try:
        event = await anext(state.stream)
        delivered = _event(event, query.prepare)
    except Exception as error:  # sorted out below: the informer must go on
        return await _stream_failed(state, error, clock)
    resource_version = _resource_version(event.get("object")) or state.resource_version
    return Step(
        dataclasses.replace(state, resource_version=resource_version, seen=True),
        delivered,
    )


async def _stream_failed(state: Streaming, error: Exception, clock: Clock) -> Step:
    watching = Watching(state.resource_version)
    if isinstance(error, StopAsyncIteration):
        if not state.seen and clock.now() - state.opened_at < EMPTY_STREAM_WINDOW:
            return Step(
                watching,
                error=EmptyWatch("the watch ended at once, empty"),
                backoff=True,
            )
        return Step(watching)  # the server's timeoutSeconds: watch again from where we are
    if isinstance(error, errors.Gone):
        return Step(Empty(), error=error)
    if isinstance(error, errors.NotFound):  # the kind may be gone: a LIST tells
        return Step(Empty(), error=error, backoff=True)
    if isinstance(error, (errors.ApiError, errors.TransportError)):
        return Step(watching, error=error, backoff=True)
    await state.stream.aclose()  # a malformed event or line: start over from a fresh list
    return Step(Empty(), error=error, backoff=True)


def _event(
    event: Mapping[str, Any], prepare: Callable[[Obj], Obj] | None
) -> tuple[WatchEvent, ...]:
    kind, obj = event.get("type"), event.get("object")
    if kind == "BOOKMARK":
        return (Bookmarked(_resource_version(obj)),)
    if kind not in ("ADDED", "MODIFIED", "DELETED"):
        raise MalformedEvent(f"unknown watch event type {kind!r}")
    checked = _check(obj)
    prepared = prepare(checked) if prepare is not None else checked
    return (Deleted(prepared),) if kind == "DELETED" else (Applied(prepared),)


def _check(obj: Any) -> Obj:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise MalformedEvent(f"an object without metadata.name: {str(obj)[:200]}")
    return cast(Obj, obj)


def _resource_version(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""


# ---------------------------------------------------------------------------- backoff
class StepBackoff:
    """Wraps :func:`step`: after a step that asks for backoff, the next one waits first —
    0.5 s, 1 s, 2 s … 30 s, jittered ±20 % — and a watch event resets the delay.

    A ``410 Gone`` re-lists at once, but a second one before any watch event (the fresh
    list's resourceVersion was refused again) is backed off like an error: repeated 410s
    must not become a loop of full LISTs.
    """

    _KEY = "watch"

    def __init__(self, clock: Clock, limiter: RateLimiter | None = None) -> None:
        self.clock = clock
        self.limiter = limiter or Jittered(ItemExponentialBackoff(0.5, 30.0), spread=0.2)
        self.delay = 0.0  # to wait before the next step
        self._relisted = False  # a 410 sent us to re-list and no watch event came since

    def reset(self) -> None:
        """Take the next step at once, and back off from the first delay after it (the
        kind came to be served: list now)."""
        self.limiter.forget(self._KEY)
        self.delay = 0.0
        self._relisted = False

    async def step(self, state: State, client: Client, query: ListWatch) -> Step:
        if self.delay > 0:
            await self.clock.sleep(self.delay)
            self.delay = 0.0
        result = await step(state, client, query, self.clock)
        gone = isinstance(result.error, errors.Gone)
        if result.backoff or (gone and self._relisted):
            self.failed()
        elif any(not isinstance(event, Restarted) for event in result.events):
            self.limiter.forget(self._KEY)
            self._relisted = False
        self._relisted = self._relisted or gone
        return result

    def failed(self) -> None:
        """Back off before the next step (also for failures outside :func:`step`)."""
        self.delay = self.limiter.when(self._KEY)
