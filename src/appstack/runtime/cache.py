"""Shared informers: one per resource kind (per watched namespace), for all controllers.

The manager owns one :class:`Cache`. Controllers ask it for a kind's objects by key or
index, and the builder registers event handlers on it. When the manager is scoped to some
namespaces, a namespaced kind gets one informer per namespace and lookups are routed by
the key's namespace; cluster-scoped kinds always get a single informer. Of each object's
``managedFields`` the cache keeps only our client's own apply entry (what our last apply
set; the children we write): the controllers compare it with what they want now.

What a kind's cache may cost is set per kind before it is used: a label selector, a
transform, the LIST page size (:meth:`Cache.set_page_size`; by default 25 full objects or
500 of metadata only, :func:`~appstack.runtime.watcher.page_size_for`), and whose children
it keeps in full (:meth:`Cache.keep_children_of`: the kinds a controller owns; any other
object there — anyone may put a label on their own object — is cached as metadata only).
The informers list full objects one page at a time, all kinds together (``pages_at_once``):
what a LIST holds before its objects are cut down is one page, however many kinds someone
fills with big objects at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence

from appstack.runtime.client import Client
from appstack.runtime.informer import EventHandler, Informer
from appstack.runtime.resources import Obj, Resource, split_key
from appstack.runtime.store import IndexFunc


class Cache:
    """The shared informers of one manager: read objects by kind and key or index.

    ``get(resource, "ns/name")``, ``objects(resource)``, ``by_index(resource, index, value)``
    read the local cache (never the API server); a kind's informers start on first use.
    Its informers ask for at most ``pages_at_once`` LIST pages of full objects at a time
    (each held until its objects are transformed); pages of metadata only are not counted.
    """

    def __init__(
        self, client: Client, namespaces: Sequence[str] | None = None, *, pages_at_once: int = 1
    ) -> None:
        self.client = client
        self.namespaces = list(namespaces) if namespaces else None
        self._list_gate = asyncio.Semaphore(pages_at_once)
        self._informers: dict[Resource, dict[str | None, Informer]] = {}
        self._selectors: dict[Resource, str] = {}
        self._transforms: dict[Resource, Callable[[Obj], Obj]] = {}
        self._page_sizes: dict[Resource, int] = {}
        self._owners: dict[Resource, list[Resource | None]] = {}  # None: every object
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    def set_label_selector(self, resource: Resource, selector: str) -> None:
        """Cache only the objects of ``resource`` matching ``selector`` (call before use)."""
        if self._selectors.get(resource) == selector:
            return
        if resource in self._informers:
            raise RuntimeError(f"the informers of {resource} already exist")
        self._selectors[resource] = selector

    def set_transform(self, resource: Resource, transform: Callable[[Obj], Obj]) -> None:
        """Cache ``transform(obj)`` of each object of ``resource`` — only the fields the
        controllers read (call before use; one transform per kind)."""
        if self._transforms.get(resource) is transform:
            return
        if resource in self._informers or resource in self._transforms:
            raise RuntimeError(f"the cache of {resource} already exists or is transformed")
        self._transforms[resource] = transform

    def set_page_size(self, resource: Resource, size: int) -> None:
        """List ``resource`` ``size`` objects a page (call before use). A page is held
        decoded until its objects are transformed: the default
        (:func:`~appstack.runtime.watcher.page_size_for`) is 25 full objects — ≈ 110 MiB at
        its peak if each is as large as etcd takes (≈ 1.5 MiB) — and 500 of metadata only."""
        if size < 1:
            raise ValueError(f"a page of {size} objects")
        if resource in self._informers and self._page_sizes.get(resource) != size:
            raise RuntimeError(f"the informers of {resource} already exist")
        self._page_sizes[resource] = size

    def keep_children_of(self, resource: Resource, owner: Resource) -> None:
        """Cache in full (transformed) only the objects of ``resource`` controlled by an
        ``owner`` (a controller ownerReference with its exact apiVersion and kind) or by
        another kind given here for ``resource``; every other one as metadata only
        (:func:`~appstack.runtime.informer.foreign_metadata`: name, uid, versions, times,
        labels, owners, and the annotations under the owners' API groups). A controller
        calls this for each kind it owns, before the cache starts."""
        for informer in self._informers.get(resource, {}).values():
            informer.keep_children_of(owner)  # raises once it has listed
        self._owners.setdefault(resource, []).append(owner)

    def keep_everything(self, resource: Resource) -> None:
        """Cache every object of ``resource`` in full, whoever controls it (for a kind a
        controller reads objects of that it does not control: the pods of its Deployments),
        whatever :meth:`keep_children_of` said."""
        for informer in self._informers.get(resource, {}).values():
            informer.keep_everything()
        self._owners.setdefault(resource, []).append(None)

    def informers(self, resource: Resource) -> dict[str | None, Informer]:
        """The informers of ``resource`` (created on first use; started with the cache)."""
        existing = self._informers.get(resource)
        if existing is not None:
            return existing
        scopes: list[str | None] = (
            list(self.namespaces) if resource.namespaced and self.namespaces else [None]
        )
        selector = self._selectors.get(resource)
        created = {
            ns: Informer(
                self.client,
                resource,
                namespace=ns,
                label_selector=selector,
                transform=self._transforms.get(resource),
                managed_by=self.client.field_manager,
                page_size=self._page_sizes.get(resource),
                list_gate=None if resource.only_metadata else self._list_gate,
            )
            for ns in scopes
        }
        for owner in self._owners.get(resource, []):
            for informer in created.values():
                if owner is None:
                    informer.keep_everything()
                else:
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
