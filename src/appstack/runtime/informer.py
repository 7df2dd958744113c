"""An informer: a local, indexed cache of one kind, kept current by LIST then WATCH.

The protocol is the state machine of :mod:`appstack.runtime.watcher`; this module runs it
(:meth:`Informer.run`: one :func:`~appstack.runtime.watcher.step` after another, through
:class:`~appstack.runtime.watcher.StepBackoff`) and applies the events it yields:

* a complete (re-)LIST (:class:`~appstack.runtime.watcher.Restarted`) is compared with the
  cache and only the *difference* is delivered — adds, updates and deletes — so nothing that
  changed while we could not watch (e.g. before a ``410 Gone``) is missed;
* watch events update the cache and are delivered as they come; bookmarks only move the
  resourceVersion;
* a kind the API server stops serving (a LIST answered ``404``: its CRD deleted, or not
  installed yet) is an empty LIST — the cache is emptied, the handlers told of each object
  gone, the informer counts as synced — and the informer waits, without retrying in a loop,
  until the kind is served again (``until_served``, by default
  :func:`~appstack.runtime.discovery.wait_served`: a watch of its CRD), then lists it
  afresh (every object an add). :attr:`Informer.served` and the gauge
  ``<prefix>_informer_kind_served{resource}`` say which (a warning when it goes, a line
  when it is back).

Errors are logged, never raised, and backed off (0.5 s → 30 s, jittered) on the injected
:class:`~appstack.runtime.clock.Clock`. Before an object is cached,
``metadata.managedFields`` (but for one field manager's own apply entry, if ``managed_by``
names it: :mod:`appstack.runtime.managedfields`) and any other declared paths are
dropped, and a ``transform`` (if given) keeps only what the controllers read, as
controller-runtime's cache transforms do (memory: a pod's spec is most of it); the store
keeps it packed (:mod:`appstack.runtime.packing`). This is the watcher's ``prepare``
(:class:`~appstack.runtime.watcher.ListWatch`): it runs on each object as its LIST page or
watch event arrives, so a LIST never holds more than one page of objects as the server
sent them. An informer told whose children it keeps (:meth:`Informer.keep_children_of`)
caches any other object as :func:`foreign_metadata` only — what a label selector lets in
is anyone's to label. Handlers
(:class:`EventHandler`) are called synchronously on each change and must be cheap —
controllers only enqueue keys. Shared per kind through :class:`~appstack.runtime.cache.Cache`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from appstack.runtime import errors
from appstack.runtime.client import STALL_TIMEOUT, Client
from appstack.runtime.clock import Clock, RealClock
from appstack.runtime.discovery import wait_served
from appstack.runtime.managedfields import MANAGED_FIELDS, keep_applied_by
from appstack.runtime.ratelimit import RateLimiter
from appstack.runtime.resources import Obj, Resource, object_key
from appstack.runtime.store import IndexFunc, Store
from appstack.runtime.watcher import (
    PAGE_SIZE,
    Applied,
    Deleted,
    Empty,
    ListWatch,
    Restarted,
    State,
    Step,
    StepBackoff,
    Streaming,
    Unserved,
    WatchEvent,
    Watching,
)

log = structlog.get_logger(__name__)

#: What an informer drops of each object by default: the managed fields (but for its
#: manager's own apply entry: :func:`~appstack.runtime.managedfields.keep_applied_by`).
DEFAULT_DROP: tuple[tuple[str, ...], ...] = (MANAGED_FIELDS,)


#: What :func:`foreign_metadata` keeps of an object's ``metadata`` (and some of its labels).
FOREIGN_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
)
#: The label prefixes a foreign object keeps besides its owners' groups (the recommended
#: labels an operator writes on its children: what adopting one compares).
FOREIGN_LABEL_PREFIXES = ("app.kubernetes.io/",)
#: At most this many labels and annotations of a foreign object are kept (in key order):
#: anyone may write 1.3 MB of them on their own object (issue #46).
FOREIGN_KEPT = 32


def foreign_metadata(obj: Obj, annotations: Iterable[str] = ()) -> Obj:
    """What is cached of an object the informer does not keep in full: its ``apiVersion``,
    ``kind`` and of its metadata :data:`FOREIGN_METADATA`, the labels under
    :data:`FOREIGN_LABEL_PREFIXES` or one of the ``annotations`` prefixes (e.g.
    ``example.com/``, the owners' groups) and the annotations under the latter — at most
    :data:`FOREIGN_KEPT` of each — no data, no spec, no status. A new object: ``obj`` is
    left as it is."""
    meta = obj.get("metadata") or {}
    kept: Obj = {key: meta[key] for key in FOREIGN_METADATA if key in meta}
    prefixes = tuple(annotations)
    for field, under in (
        ("labels", (*FOREIGN_LABEL_PREFIXES, *prefixes)),
        ("annotations", prefixes),
    ):
        some = prefixed(meta.get(field), under)
        if some:
            kept[field] = some
    head: Obj = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    return {**head, "metadata": kept}


def prefixed(entries: Any, prefixes: tuple[str, ...], limit: int = FOREIGN_KEPT) -> dict[str, Any]:
    """Of a labels or annotations map, the first ``limit`` entries (by key) whose key starts
    with one of ``prefixes``: what a cache keeps of maps anyone may make large."""
    if not prefixes or not isinstance(entries, dict):
        return {}
    keys = sorted(key for key in entries if isinstance(key, str) and key.startswith(prefixes))
    return {key: entries[key] for key in keys[:limit]}


def controlled_by_kind(obj: Obj, kinds: Collection[tuple[str, str]]) -> bool:
    """Whether ``obj`` has a controller ownerReference whose ``(apiVersion, kind)`` is one of
    ``kinds`` (exactly: another version of the group is another kind)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return (ref.get("apiVersion"), ref.get("kind")) in kinds
    return False


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


class Informer:
    """A local cache of one kind (optionally one namespace or label selector) kept current by
    LIST then WATCH, telling its handlers about every change. Run with :meth:`run`.

    ``page_size`` objects per LIST page (default :data:`~appstack.runtime.watcher.PAGE_SIZE`,
    25, whatever the kind); ``list_gate``, if given, is held
    for each page until its objects are prepared (the :class:`~appstack.runtime.cache.Cache`
    shares one among its informers); ``until_served`` is awaited while the API server does
    not serve the kind (default :func:`~appstack.runtime.discovery.wait_served`), True when
    it came to be served (list at once; else after the backoff)."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        drop: Sequence[Sequence[str]] = DEFAULT_DROP,
        transform: Callable[[Obj], Obj] | None = None,
        managed_by: str | None = None,
        page_size: int | None = None,
        watch_timeout: int = 290,
        inactivity_timeout: float | None = None,
        clock: Clock | None = None,
        backoff: Callable[[], RateLimiter] | None = None,
        list_gate: asyncio.Semaphore | None = None,
        until_served: Callable[[Client, Resource], Awaitable[bool]] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.query = ListWatch(
            resource,
            namespace,
            label_selector,
            page_size or PAGE_SIZE,
            watch_timeout,
            inactivity_timeout or STALL_TIMEOUT,
            prepare=self._prepare,
            gate=list_gate,
        )
        self.drop = tuple(tuple(path) for path in drop)
        self.transform = transform
        self.managed_by = managed_by
        # (apiVersion, kind) of the owners whose children are kept in full (None: every
        # object), and the annotation prefixes a foreign object keeps (their groups')
        self.owners: frozenset[tuple[str, str]] | None = None
        self._foreign_annotations: tuple[str, ...] = ()
        self.clock = clock or RealClock()
        self.backoff = backoff
        self.store = Store()
        self.state: State = Empty()
        self.relists = 0  # 410 Gone: listed afresh
        self.stalls = 0  # a watch quiet past its inactivity timeout, opened again
        self.until_served = until_served or wait_served
        #: Whether the API server serves the kind: None until a LIST is answered, False
        #: while it answers 404 (nothing cached; waiting for it to be served again).
        self.served: bool | None = None
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        # Partitioned by namespace (:meth:`partition`): which are kept in full, what is kept
        # of the others, the keys kept so, and what to await before the first LIST.
        self._inside: Callable[[str], bool] | None = None
        self._elsewhere: Callable[[Obj], Obj] | None = None
        self._cut: set[str] = set()
        self._after: Callable[[], Awaitable[None]] | None = None

    # ------------------------------------------------------------------------- public
    @property
    def resource_version(self) -> str:
        """The version the cache is in sync with ("" until listed, and while re-listing)."""
        return self.state.resource_version if isinstance(self.state, (Watching, Streaming)) else ""

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; it is first told about every object already cached."""
        self._handlers.append(handler)
        for obj in self.store.iter_objects():
            _call(handler.on_add, obj)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Index the cache by ``func`` under ``name`` (existing objects included)."""
        self.store.add_indexer(name, func)

    def keep_children_of(self, owner: Resource) -> None:
        """Keep in full (stripped and transformed) only the objects controlled by an
        ``owner`` — a controller ownerReference with its exact ``apiVersion`` and ``kind`` —
        or by an owner kind given before; cache every other one as :func:`foreign_metadata`,
        keeping its annotations under the owners' API groups (``<group>/``: what their
        controllers write on an object they keep without owning it). Not called: every
        object kept in full (the cache calls it for the owners its table names). Call before
        the informer runs."""
        self._before_listing()
        self.owners = (self.owners or frozenset()) | {(owner.api_version, owner.kind)}
        if owner.group and f"{owner.group}/" not in self._foreign_annotations:
            self._foreign_annotations += (f"{owner.group}/",)

    def partition(
        self,
        inside: Callable[[str], bool],
        elsewhere: Callable[[Obj], Obj],
        *,
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Keep in full only the objects of the namespaces ``inside`` admits; of any other
        only what ``elsewhere`` makes of it (say, its name and status: :meth:`is_cut` tells
        which are so). A namespace admitted later is read again in full
        (:meth:`refresh`); one no longer admitted has its objects cut down (:meth:`cut`).
        ``after`` is awaited before the first LIST (e.g. until the namespaces are known).
        Call before the informer runs."""
        self._before_listing()
        self._inside, self._elsewhere, self._after = inside, elsewhere, after

    def is_cut(self, key: str) -> bool:
        """Whether the object ``key`` is cached only as :meth:`partition`'s ``elsewhere``
        made it (its namespace not admitted, or not read again yet)."""
        return key in self._cut

    async def refresh(self, namespace: str) -> None:
        """Read the objects of ``namespace`` (now admitted) again and keep them in full,
        telling the handlers (an update each); the pages through the list gate, as a LIST.
        Raises what the LIST raises (the objects stay cut down)."""
        token: str | None = None
        while True:
            async with self.query.gate or contextlib.nullcontext():
                page, _, token = await self.client.list_page(
                    self.resource,
                    namespace,
                    label_selector=self.query.label_selector,
                    limit=self.query.page_size,
                    token=token,
                )
                for index, obj in enumerate(page):
                    page[index] = {}  # each one's bytes go as it is prepared
                    if object_key(obj) not in self._cut:
                        continue  # kept in full already (a watch event came first)
                    prepared = self._prepare(obj)
                    self._dispatch_upsert(self.store.upsert(prepared), prepared)
            if not token:
                return

    def cut(self, namespace: str) -> None:
        """Cut the objects of ``namespace`` (no longer admitted) down to what
        :meth:`partition`'s ``elsewhere`` keeps; the handlers are not told (nothing of
        what they see changed)."""
        if self._elsewhere is None:
            return
        for obj in self.store.by_index("namespace", namespace):
            key = object_key(obj)
            if key not in self._cut:
                self.store.upsert(self._elsewhere(obj))
                self._cut.add(key)

    def _before_listing(self) -> None:
        if not isinstance(self.state, Empty) or self.has_synced():
            raise RuntimeError(f"the informer of {self.resource} has listed already")

    def has_synced(self) -> bool:
        """True once the first LIST has been delivered."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Return once :meth:`has_synced`."""
        await self._synced.wait()

    async def run(self) -> None:
        """Run until cancelled. Restarting after a cancel resumes from the cached state."""
        stepper = StepBackoff(self.clock, self.backoff() if self.backoff else None)
        if self._after is not None and not self.has_synced():
            await self._after()
        try:
            while True:
                if isinstance(self.state, Unserved) and await self.until_served(
                    self.client, self.resource
                ):
                    stepper.reset()  # the CRD serves it now: list at once
                # a helper's locals: a LIST's decoded objects are not held while watching
                self._take(await stepper.step(self.state, self.client, self.query), stepper)
        finally:
            if isinstance(self.state, Streaming):  # cancelled mid-stream: resume with a watch
                stream, self.state = (
                    self.state.stream,
                    Watching(self.state.resource_version),
                )
                with contextlib.suppress(Exception):
                    await stream.aclose()

    # ---------------------------------------------------------------------- internals
    def _take(self, result: Step, stepper: StepBackoff) -> None:
        self.state = result.state
        if result.error is not None:
            self._report(result, stepper.delay)
        try:
            for event in result.events:
                self._deliver(event)
        except Exception:  # a bug must not end the informer: list afresh, later
            log.exception("informer failed, re-listing", resource=str(self.resource))
            self.state = Empty()
            stepper.failed()
        listed = any(isinstance(event, Restarted) for event in result.events)
        if listed:
            self._set_served(not isinstance(result.state, Unserved))

    def _set_served(self, served: bool) -> None:
        if served and self.served is False:
            log.info("kind served again, listed", resource=str(self.resource))
        self.served = served
        self.client.metrics.informer_kind_served.labels(str(self.resource)).set(int(served))

    def _report(self, result: Step, retry_in: float) -> None:
        error = result.error
        if isinstance(error, errors.Gone):
            self.relists += 1
            log.info(
                "resourceVersion expired, re-listing",
                resource=str(self.resource),
                reason=error.message,
            )
        elif isinstance(error, errors.NotFound):
            if not isinstance(result.state, Unserved):  # a watch: a LIST tells
                log.info("watch answered 404, listing", resource=str(self.resource))
            elif self.served is not False:
                log.warning(
                    "kind not served (its CRD deleted or not installed): cache emptied, "
                    "waiting for it to be served",
                    resource=str(self.resource),
                    namespace=self.query.namespace,
                )
            else:
                log.debug("kind still not served", resource=str(self.resource))
        elif isinstance(error, errors.WatchStalled):
            # Routine, not a fault: a server may send no bookmark for a resource nobody has
            # changed since it started (seen on Kubernetes 1.30), and a half-open connection
            # looks the same. Either way the watch is opened again from the same
            # resourceVersion (no re-list); a failure to do so is reported below.
            self.stalls += 1
            log.debug(
                "watch quiet, opened again",
                resource=str(self.resource),
                error=str(error),
                retry_in=round(retry_in, 2),
            )
        elif isinstance(result.state, Empty):
            log.error(
                "unusable list/watch data, re-listing",
                resource=str(self.resource),
                error=repr(error),
                retry_in=round(retry_in, 2),
            )
        else:
            log.warning(
                "list/watch failed, retrying",
                resource=str(self.resource),
                state=type(result.state).__name__,
                error=str(error),
                retry_in=round(retry_in, 2),
            )

    def _deliver(self, event: WatchEvent) -> None:
        if isinstance(event, Restarted):
            self._replace(event.objects)
            self._synced.set()
        elif isinstance(event, Applied):
            self._dispatch_upsert(self.store.upsert(event.obj), event.obj)
        elif isinstance(event, Deleted):
            key = object_key(event.obj)
            self.store.delete(key)
            self._cut.discard(key)
            self._dispatch("on_delete", event.obj)

    def _replace(self, items: list[Obj]) -> None:
        """Make the cache equal to a fresh list, delivering only the differences."""
        seen: set[str] = set()
        for obj in items:
            seen.add(object_key(obj))
            old = self.store.upsert(obj)
            if old is None or _rv(old) != _rv(obj):
                self._dispatch_upsert(old, obj)
        for key in [k for k in self.store if k not in seen]:
            gone = self.store.delete(key)
            self._cut.discard(key)
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

    def _prepare(self, obj: Obj) -> Obj:
        """What is cached of ``obj`` (the watcher calls this once per listed or watched
        object, as it arrives): what :meth:`partition`'s ``elsewhere`` keeps of an object
        outside the namespaces it admits, :func:`foreign_metadata` of an object none of
        :attr:`owners` controls, else ``obj`` stripped and transformed."""
        if self._inside is not None and self._elsewhere is not None:
            key = object_key(obj)
            if not self._inside(str(obj["metadata"].get("namespace") or "")):
                self._cut.add(key)
                return self._elsewhere(obj)
            self._cut.discard(key)
        if self.owners is not None and not controlled_by_kind(obj, self.owners):
            return foreign_metadata(obj, self._foreign_annotations)
        return self._strip(obj)

    def _strip(self, obj: Obj) -> Obj:
        for path in self.drop:
            if path == MANAGED_FIELDS:  # but for our own apply entry
                keep_applied_by(obj, self.managed_by)
                continue
            parent: Any = obj
            for part in path[:-1]:
                parent = parent.get(part) if isinstance(parent, dict) else None
                if parent is None:
                    break
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
        return self.transform(obj) if self.transform is not None else obj


def _rv(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


def _call(func: Callable[..., None], *args: Obj) -> None:
    try:
        func(*args)
    except Exception:  # a broken handler must not stop the informer
        log.exception("event handler failed", handler=getattr(func, "__qualname__", repr(func)))
