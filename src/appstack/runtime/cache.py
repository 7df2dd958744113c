"""Shared informers: one per resource kind (per watched namespace), for all controllers.

The manager owns one :class:`Cache`. Controllers ask it for a kind's objects by key or
index, and the builder registers event handlers on it. When the manager is scoped to some
namespaces, a namespaced kind gets one informer per namespace and lookups are routed by
the key's namespace; cluster-scoped kinds always get a single informer. Of each object's
``managedFields`` the cache keeps only our client's own apply entry (what our last apply
set; the children we write: :mod:`appstack.runtime.managedfields`).

What the cache keeps of each kind is one table, declared once before the cache is used:
:class:`ByObject` per resource (as controller-runtime's ``cache.Options.ByObject``) — a
label selector, a transform keeping only what the controllers read, the LIST page size
(by default 25 full objects or 500 of metadata only,
:func:`~appstack.runtime.watcher.page_size_for`), and whose children it keeps in full
(``owners``: the kinds whose controllers own it; any other object there — anyone may put a
label on their own object — is cached as metadata only). A kind of metadata only is its
own resource (:meth:`~appstack.runtime.resources.Resource.metadata_only`). An operator's
assembly derives the table from its controllers' declarations and gives it to the manager;
a kind not in it is cached whole (but its managed fields).

The informers list full objects one page at a time, all kinds together (``pages_at_once``):
what a LIST holds before its objects are cut down is one page, however many kinds someone
fills with big objects at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from appstack.runtime.client import Client
from appstack.runtime.informer import EventHandler, Informer
from appstack.runtime.resources import Obj, Resource, split_key
from appstack.runtime.store import IndexFunc

#: What a kind's cache keeps of each object (the informer calls it on every object).
Transform = Callable[[Obj], Obj]


@dataclass(frozen=True)
class ByObject:
    """How the cache keeps the objects of one resource.

    ``label_selector``: only the objects matching it are cached. ``transform``: what is
    kept of each (only the fields the controllers read). ``page_size``: objects per LIST
    page — a page is held decoded until its objects are transformed: the default is 25
    full objects (≈ 110 MiB at its peak if each is as large as etcd takes, ≈ 1.5 MiB) and
    500 of metadata only. ``owners``: keep in full (transformed) only the objects
    controlled by one of these kinds (a controller ownerReference with its exact
    apiVersion and kind); every other one as metadata only
    (:func:`~appstack.runtime.informer.foreign_metadata`: name, uid, versions, times,
    labels, owners, and the annotations under the owners' API groups). None: every object
    in full, whoever controls it."""

    label_selector: str | None = None
    transform: Transform | None = None
    page_size: int | None = None
    owners: tuple[Resource, ...] | None = None

    def __post_init__(self) -> None:
        if self.page_size is not None and self.page_size < 1:
            raise ValueError(f"a page of {self.page_size} objects")


class Cache:
    """The shared informers of one manager: read objects by kind and key or index.

    ``get(resource, "ns/name")``, ``objects(resource)``, ``by_index(resource, index, value)``
    read the local cache (never the API server); a kind's informers start on first use.
    ``by_object`` says what is kept of each kind (:class:`ByObject`; may be given later,
    once, with :meth:`configure`). Its informers ask for at most ``pages_at_once`` LIST
    pages of full objects at a time (each held until its objects are transformed); pages
    of metadata only are not counted.
    """

    def __init__(
        self,
        client: Client,
        namespaces: Sequence[str] | None = None,
        *,
        by_object: Mapping[Resource, ByObject] | None = None,
        pages_at_once: int = 1,
    ) -> None:
        self.client = client
        self.namespaces = list(namespaces) if namespaces else None
        self._list_gate = asyncio.Semaphore(pages_at_once)
        self._informers: dict[Resource, dict[str | None, Informer]] = {}
        self._by_object: dict[Resource, ByObject] = dict(by_object or {})
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    def configure(self, by_object: Mapping[Resource, ByObject]) -> None:
        """Declare what is kept of each kind in ``by_object`` (before its informers exist;
        a kind already declared otherwise is an error: one declaration per kind)."""
        for resource, policy in by_object.items():
            if self._by_object.get(resource, policy) != policy:
                raise RuntimeError(f"the cache of {resource} is declared twice, differently")
            if resource in self._informers and resource not in self._by_object:
                raise RuntimeError(f"the informers of {resource} already exist")
        self._by_object.update(by_object)

    def by_object(self, resource: Resource) -> ByObject:
        """What the cache keeps of ``resource`` (everything, if it was not declared)."""
        return self._by_object.get(resource) or ByObject()

    def informers(self, resource: Resource) -> dict[str | None, Informer]:
        """The informers of ``resource`` (created on first use; started with the cache)."""
        existing = self._informers.get(resource)
        if existing is not None:
            return existing
        scopes: list[str | None] = (
            list(self.namespaces) if resource.namespaced and self.namespaces else [None]
        )
        policy = self.by_object(resource)
        created = {
            ns: Informer(
                self.client,
                resource,
                namespace=ns,
                label_selector=policy.label_selector,
                transform=policy.transform,
                managed_by=self.client.field_manager,
                page_size=policy.page_size,
                list_gate=None if resource.only_metadata else self._list_gate,
            )
            for ns in scopes
        }
        for owner in policy.owners or ():
            for informer in created.values():
                informer.keep_children_of(owner)
        self._informers[resource] = created
        if self._started:
            for informer in created.values():
                self._tasks.append(asyncio.create_task(informer.run()))
        return created

    def add_handler(self, resource: Resource, handler: EventHandler) -> None:
        """Call ``handler`` on every add/update/delete of ``resource`` (all watched namespaces)."""
        for informer in self.informers(resource).values():
            informer.add_handler(handler)

    def add_indexer(self, resource: Resource, name: str, func: IndexFunc) -> None:
        """Index ``resource`` by ``func(obj) -> values``; query it with :meth:`by_index`."""
        for informer in self.informers(resource).values():
            informer.add_indexer(name, func)

    def get(self, resource: Resource, key: str) -> Obj | None:
        """The cached object ``namespace/name`` (or ``name``) or None; never asks the server."""
        namespace, _ = split_key(key)
        informers = self.informers(resource)
        informer = informers.get(namespace) or informers.get(None)
        return informer.store.get(key) if informer else None

    def keys(self, resource: Resource) -> list[str]:
        """The key of every cached object of ``resource`` (no object unpacked)."""
        return [k for i in self.informers(resource).values() for k in i.store]

    def objects(self, resource: Resource) -> list[Obj]:
        """Every cached object of ``resource``."""
        return list(self.iter_objects(resource))

    def iter_objects(self, resource: Resource) -> Iterator[Obj]:
        """Every cached object of ``resource``, each unpacked only when reached: what a
        reader of all of them (a metrics scrape) should use, so it never holds the whole
        cache decoded at once."""
        for informer in list(self.informers(resource).values()):
            yield from informer.store.iter_objects()

    def by_index(self, resource: Resource, index: str, value: str) -> list[Obj]:
        """The cached objects whose index ``index`` maps to ``value``."""
        return [
            o for i in self.informers(resource).values() for o in i.store.by_index(index, value)
        ]

    def has_synced(self) -> bool:
        """True once every informer has completed its first LIST."""
        return all(i.has_synced() for group in self._informers.values() for i in group.values())

    async def start(self) -> None:
        """Start every informer created so far (the manager calls this)."""
        self._started = True
        for group in self._informers.values():
            for informer in group.values():
                self._tasks.append(asyncio.create_task(informer.run()))

    async def wait_synced(self) -> None:
        """Return once every informer has completed its first LIST."""
        while not self.has_synced():  # informers may be added while we wait
            await asyncio.gather(
                *(i.wait_synced() for g in list(self._informers.values()) for i in g.values())
            )

    async def stop(self) -> None:
        """Stop every informer."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
