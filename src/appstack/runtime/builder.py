"""Wire a reconciler to the events that should wake it — a thin builder, as in controller-runtime::

    (Builder(manager, "appservice")
        .for_(APP_SERVICE)                  # the primary kind: its own events
        .owns(DEPLOYMENT).owns(SERVICE)     # children: mapped to their controller owner
        .watches(SECRET, secret_to_apps)    # anything else: a mapper returns requests
        .with_concurrency(4)                # each takes filter=: which events enqueue
        .complete(AppServiceReconciler(...)))

``owns`` follows the child's ``ownerReferences`` entry with ``controller: true`` whose
kind and API group are the primary's, so a deleted or hand-edited child wakes its owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from appstack.runtime.controller import Controller, Reconciler, Request
from appstack.runtime.filters import Filter
from appstack.runtime.informer import FuncHandler
from appstack.runtime.resources import Obj, Resource, split_key

if TYPE_CHECKING:
    from appstack.runtime.manager import Manager

Mapper = Callable[[Obj], Iterable[Request]]


def request_for(obj: Obj) -> Request:
    """The request that reconciles ``obj`` itself (its namespace and name): what a
    :data:`Mapper` returns for an object that names the one to reconcile."""
    meta = obj["metadata"]
    return Request(meta.get("namespace"), meta["name"])


def owner_mapper(owner: Resource) -> Mapper:
    """Map a child to the request of its controlling owner of kind ``owner``."""

    def mapper(obj: Obj) -> Iterable[Request]:
        for ref in obj["metadata"].get("ownerReferences") or []:
            group = ref.get("apiVersion", "").rpartition("/")[0]
            if ref.get("controller") and ref.get("kind") == owner.kind and group == owner.group:
                return [Request(obj["metadata"].get("namespace"), ref["name"])]
        return []

    return mapper


class Builder:
    """Declares which events wake a reconciler and registers the controller with the manager.

    ``for_`` the primary kind, ``owns`` children (mapped to their controlling owner),
    ``watches`` anything else through a mapper; :meth:`complete` returns the controller.
    """

    def __init__(self, manager: Manager, name: str | None = None) -> None:
        self.manager = manager
        self.name = name
        self._primary: Resource | None = None
        self._watches: list[tuple[Resource, Mapper, Filter | None]] = []
        self._filter: Filter | None = None
        self._concurrency = 1
        self._resync: float | None = None
        self._status_changes = True

    def for_(
        self, resource: Resource, *, status_changes: bool = True, filter: Filter | None = None
    ) -> Builder:
        """The primary kind: its own add/update/delete events enqueue the object itself;
        ``status_changes=False``: not an update that changed only its status (the
        reconciler's own status write, as controller-runtime's
        ``GenerationChangedPredicate`` with labels and annotations kept); ``filter``: only
        the events it lets through (:mod:`~appstack.runtime.filters`)."""
        self._primary = resource
        self._status_changes = status_changes
        self._filter = filter
        return self

    def owns(self, resource: Resource, *, filter: Filter | None = None) -> Builder:
        """A child kind: its events (those ``filter`` lets through) enqueue the owner named
        in its controller ownerReference."""
        if self._primary is None:
            raise ValueError("call for_() before owns()")
        self._watches.append((resource, owner_mapper(self._primary), filter))
        return self

    def watches(
        self, resource: Resource, mapper: Mapper, *, filter: Filter | None = None
    ) -> Builder:
        """Any other kind: ``mapper(obj)`` returns the requests an event about ``obj`` (one
        ``filter`` lets through) enqueues."""
        self._watches.append((resource, mapper, filter))
        return self

    def with_concurrency(self, workers: int) -> Builder:
        """Reconcile up to ``workers`` keys at once (never one key twice at once); default 1."""
        self._concurrency = max(1, workers)
        return self

    def with_resync(self, seconds: float | None) -> Builder:
        """Re-enqueue every cached primary object every ``seconds`` (None: never)."""
        self._resync = seconds
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Build the controller, register its handlers with the cache, add it to the manager."""
        primary = self._primary
        if primary is None:
            raise ValueError("a controller needs a primary kind: call for_()")
        cache = self.manager.cache
        shard = getattr(self.manager, "shard", None)
        if shard is not None:  # a sharded kind: only this shard's keys
            reconciler = shard.wrap(reconciler, primary)
        controller = Controller(
            self.name or primary.kind.lower(),
            reconciler,
            concurrency=self._concurrency,
            metrics=self.manager.metrics,
            resync_period=self._resync,
            resync_source=lambda: [Request(*split_key(k)) for k in cache.keys(primary)],
            availability=self.manager.client.availability,
        )
        skip = None if self._status_changes else only_status_changed
        cache.add_handler(
            primary, _enqueue(controller, lambda obj: [request_for(obj)], skip, self._filter)
        )
        for resource, mapper, filter_ in self._watches:
            cache.add_handler(resource, _enqueue(controller, mapper, filter=filter_))
        self.manager.add(controller)
        return controller


def only_status_changed(old: Obj, new: Obj) -> bool:
    """Whether an update changed nothing but ``status`` (and the resourceVersion)."""
    before, after = old["metadata"], new["metadata"]
    return (
        old.get("spec") == new.get("spec")
        and before.get("generation") == after.get("generation")
        and {k: v for k, v in before.items() if k != "resourceVersion"}
        == {k: v for k, v in after.items() if k != "resourceVersion"}
        and {k: v for k, v in old.items() if k not in ("metadata", "status")}
        == {k: v for k, v in new.items() if k not in ("metadata", "status")}
    )


def _enqueue(
    controller: Controller,
    mapper: Mapper,
    skip: Callable[[Obj, Obj], bool] | None = None,
    filter: Filter | None = None,
) -> FuncHandler:
    def one(obj: Obj) -> None:
        for request in mapper(obj):
            controller.enqueue(request)

    def created(obj: Obj) -> None:
        if filter is None or filter.created(obj):
            one(obj)

    def deleted(obj: Obj) -> None:
        if filter is None or filter.deleted(obj):
            one(obj)

    def both(old: Obj, new: Obj) -> None:
        if skip is not None and skip(old, new):
            return
        if filter is not None and not filter.updated(old, new):
            return
        requests = set(mapper(old)) | set(mapper(new))  # e.g. an owner reference changed
        for request in requests:
            controller.enqueue(request)

    return FuncHandler(add=created, update=both, delete=deleted)
