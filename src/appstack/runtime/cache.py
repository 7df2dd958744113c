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

The informers list one page at a time, all kinds together (``pages_at_once``): what a LIST
holds before its objects are cut down is one page, however many kinds someone fills with big
objects at once — of metadata only too.

A cluster-wide cache can keep a kind only in the namespaces a label selects (``ByObject``'s
``namespaces``: an operator's enabled namespaces), followed through its metadata-only
informer of Namespaces: an informer per selected namespace, started and stopped as
namespaces come and go — or one informer for all, the objects elsewhere cut down to what
``elsewhere`` keeps (their name and status, say) and read again in full when their namespace
is selected (:meth:`Cache.is_cut` tells which are cut down).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import structlog

from appstack.runtime.client import Client
from appstack.runtime.informer import EventHandler, FuncHandler, Informer
from appstack.runtime.resources import NAMESPACE, Obj, Resource, split_key
from appstack.runtime.store import IndexFunc

#: What a kind's cache keeps of each object (the informer calls it on every object).
Transform = Callable[[Obj], Obj]
#: The Namespaces, metadata only: what a cache follows to keep a kind only in some of them.
NAMESPACES = NAMESPACE.metadata_only()


def _keeping_labels(transform: Transform, labels: tuple[str, ...]) -> Transform:
    """``transform``, then the object's labels ``labels`` put back if it dropped them."""

    def kept(obj: Obj) -> Obj:
        found = {
            k: v
            for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items()
            if k in labels
        }
        out = transform(obj)
        if found:
            meta = out.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **found}
        return out

    return kept


def namespace_metadata(obj: Obj) -> Obj:
    """What the cache keeps of a namespace it follows: its name, uid, version and labels."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": kept}


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
    #: A cluster-wide cache: only in the namespaces matching this label selector (followed
    #: through the cache's informer of :data:`NAMESPACES`, which selects the same), an
    #: informer per namespace, started as one comes to match, stopped (its objects
    #: forgotten, the handlers not told) as it stops. Ignored by a cache of some namespaces.
    namespaces: str | None = None
    #: With ``namespaces``: one informer for all namespaces instead, an object outside the
    #: selected ones kept only as this makes it (e.g. its name and status), read again in
    #: full when its namespace comes to match, cut down again when it stops.
    elsewhere: Transform | None = None

    def __post_init__(self) -> None:
        if self.page_size is not None and self.page_size < 1:
            raise ValueError(f"a page of {self.page_size} objects")
        if self.elsewhere is not None and self.namespaces is None:
            raise ValueError("elsewhere is what is kept outside the selected namespaces: name them")


log = structlog.get_logger(__name__)


class Cache:
    """The shared informers of one manager: read objects by kind and key or index.

    ``get(resource, "ns/name")``, ``objects(resource)``, ``by_index(resource, index, value)``
    read the local cache (never the API server); a kind's informers start on first use.
    ``by_object`` says what is kept of each kind (:class:`ByObject`; may be given later,
    once, with :meth:`configure`). Its informers ask for at most ``pages_at_once`` LIST
    pages at a time (each held until its objects are transformed).
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
        # Kinds kept only in selected namespaces: their handlers and indexers (for the
        # informers to come), each informer's task, the namespaces selected, per selector.
        self._handlers: dict[Resource, list[EventHandler]] = {}
        self._indexers: dict[Resource, dict[str, IndexFunc]] = {}
        self._scoped_tasks: dict[tuple[Resource, str], asyncio.Task[None]] = {}
        self._selected: set[str] = set()
        self._followed: list[Resource] = []
        # Kinds selected further (a sharded operator's primaries: only this shard's).
        self._restricted: dict[Resource, tuple[str, tuple[str, ...]]] = {}

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
        """What the cache keeps of ``resource`` (everything, if it was not declared), with
        its :meth:`restrict` selector added to the declared one."""
        policy = self._by_object.get(resource) or ByObject()
        restricted = self._restricted.get(resource)
        if restricted is None:
            return policy
        extra, labels = restricted
        chosen = f"{policy.label_selector},{extra}" if policy.label_selector else extra
        transform = policy.transform
        if transform is not None and labels:
            transform = _keeping_labels(transform, labels)
        return replace(policy, label_selector=chosen, transform=transform)

    def restrict(self, resource: Resource, selector: str, keep: tuple[str, ...] = ()) -> None:
        """Keep of ``resource`` only the objects that also match ``selector`` (whatever its
        declaration says; a sharded operator's primaries: only those labelled to this
        shard), with their labels ``keep`` whatever its transform drops (the shard labels,
        which a transform keeping only the operator's own would). Before its informers
        exist."""
        if resource in self._informers:
            raise RuntimeError(f"the informers of {resource} already exist")
        self._restricted[resource] = (selector, keep)

    def informers(self, resource: Resource) -> dict[str | None, Informer]:
        """The informers of ``resource`` (created on first use; started with the cache):
        by namespace, or one (``None``) for all."""
        existing = self._informers.get(resource)
        if existing is not None:
            return existing
        policy = self.by_object(resource)
        followed = bool(policy.namespaces) and resource.namespaced and not self.namespaces
        if followed and policy.elsewhere is None:
            self._informers[resource] = {}  # one per selected namespace, as they come
            self._follow(resource, policy)
            for namespace in sorted(self._selected):
                self._start_scope(resource, namespace)
            return self._informers[resource]
        scopes: list[str | None] = (
            list(self.namespaces) if resource.namespaced and self.namespaces else [None]
        )
        created = {ns: self._informer(resource, ns) for ns in scopes}
        if followed and policy.elsewhere is not None:
            (informer,) = created.values()
            namespaces = self._follow(resource, policy)
            informer.partition(
                self._selected.__contains__,
                policy.elsewhere,
                after=namespaces.wait_synced,
            )
        self._informers[resource] = created
        if self._started:
            for informer in created.values():
                self._tasks.append(asyncio.create_task(informer.run()))
        return created

    def _informer(self, resource: Resource, namespace: str | None) -> Informer:
        policy = self.by_object(resource)
        informer = Informer(
            self.client,
            resource,
            namespace=namespace,
            label_selector=policy.label_selector,
            transform=policy.transform,
            managed_by=self.client.field_manager,
            page_size=policy.page_size,
            list_gate=self._list_gate,
        )
        for owner in policy.owners or ():
            informer.keep_children_of(owner)
        return informer

    # ------------------------------------------------------- kinds in selected namespaces
    def _follow(self, resource: Resource, policy: ByObject) -> Informer:
        """Follow the namespaces ``policy`` selects for ``resource``: the cache's informer of
        Namespaces, declared with that selector here if the table has none."""
        if NAMESPACES not in self._by_object and NAMESPACES not in self._informers:
            self.configure(
                {
                    NAMESPACES: ByObject(
                        label_selector=policy.namespaces, transform=namespace_metadata
                    )
                }
            )
        selects = self.by_object(NAMESPACES).label_selector
        if selects != policy.namespaces:
            raise ValueError(
                f"{resource} is cached in the namespaces {policy.namespaces!r}, but the cache's "
                f"Namespaces are those {selects!r}: one selection per cache"
            )
        (namespaces,) = self.informers(NAMESPACES).values()
        if not self._followed:
            namespaces.add_handler(
                FuncHandler(add=self._namespace_selected, delete=self._namespace_left)
            )
        self._followed.append(resource)
        return namespaces

    def _namespace_selected(self, obj: Obj) -> None:
        namespace = str(obj["metadata"]["name"])
        self._selected.add(namespace)
        for resource in self._followed:
            group = self._informers.get(resource) or {}
            if None in group:  # one informer, partitioned: read that namespace in full
                if self._started:
                    self._tasks.append(
                        asyncio.create_task(self._refresh(resource, group[None], namespace))
                    )
            else:
                self._start_scope(resource, namespace)

    def _namespace_left(self, obj: Obj) -> None:
        namespace = str(obj["metadata"]["name"])
        self._selected.discard(namespace)
        for resource in self._followed:
            group = self._informers.get(resource) or {}
            if None in group:
                group[None].cut(namespace)
                continue
            group.pop(namespace, None)
            task = self._scoped_tasks.pop((resource, namespace), None)
            if task is not None:
                task.cancel()

    def _start_scope(self, resource: Resource, namespace: str) -> None:
        group = self._informers[resource]
        if namespace in group:
            return
        informer = group[namespace] = self._informer(resource, namespace)
        for name, func in self._indexers.get(resource, {}).items():
            informer.add_indexer(name, func)
        for handler in self._handlers.get(resource, []):
            informer.add_handler(handler)
        if self._started:
            self._scoped_tasks[resource, namespace] = asyncio.create_task(informer.run())

    async def _refresh(self, resource: Resource, informer: Informer, namespace: str) -> None:
        try:
            await informer.refresh(namespace)
        except Exception as error:  # what is cut down stays so; is_cut tells the readers
            log.warning(
                "could not read a namespace's objects again",
                resource=str(resource),
                namespace=namespace,
                error=str(error),
            )

    def is_cut(self, resource: Resource, key: str) -> bool:
        """Whether the cached ``namespace/name`` is cut down to what its :class:`ByObject`'s
        ``elsewhere`` keeps (its namespace not selected, or not read again yet): read it
        from the server when its content is needed."""
        informer = self.informers(resource).get(None)
        return informer is not None and informer.is_cut(key)

    # ------------------------------------------------------------------------- readers
    def add_handler(self, resource: Resource, handler: EventHandler) -> None:
        """Call ``handler`` on every add/update/delete of ``resource`` (all watched namespaces)."""
        self._handlers.setdefault(resource, []).append(handler)
        for informer in self.informers(resource).values():
            informer.add_handler(handler)

    def add_indexer(self, resource: Resource, name: str, func: IndexFunc) -> None:
        """Index ``resource`` by ``func(obj) -> values``; query it with :meth:`by_index`."""
        self._indexers.setdefault(resource, {})[name] = func
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
        return [k for i in list(self.informers(resource).values()) for k in i.store]

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
            o
            for i in list(self.informers(resource).values())
            for o in i.store.by_index(index, value)
        ]

    def has_synced(self) -> bool:
        """True once every informer has completed its first LIST."""
        return all(
            i.has_synced() for group in list(self._informers.values()) for i in group.values()
        )

    def unserved(self) -> list[Resource]:
        """The kinds the API server does not serve now (a LIST answered 404: their CRD
        deleted, or not installed): their informers hold nothing and wait for them to be
        served again (:attr:`~appstack.runtime.informer.Informer.served`)."""
        return [
            resource
            for resource, group in list(self._informers.items())
            if any(informer.served is False for informer in group.values())
        ]

    async def start(self) -> None:
        """Start every informer created so far (the manager calls this)."""
        self._started = True
        for resource, group in self._informers.items():
            for namespace, informer in group.items():
                task = asyncio.create_task(informer.run())
                if namespace is not None and resource in self._followed:
                    self._scoped_tasks[resource, namespace] = task
                else:
                    self._tasks.append(task)

    async def wait_synced(self) -> None:
        """Return once every informer has completed its first LIST (those of a namespace
        selected meanwhile too)."""
        while not self.has_synced():  # informers may be added while we wait
            await asyncio.gather(
                *(i.wait_synced() for g in list(self._informers.values()) for i in g.values())
            )

    async def stop(self) -> None:
        """Stop every informer."""
        tasks = [*self._tasks, *self._scoped_tasks.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._scoped_tasks.clear()
