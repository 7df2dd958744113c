"""Read your own writes: what this process last wrote, until the informer shows it again.

A reconcile that creates a child, or patches its owner's status, is often followed by
another reconcile of the same owner before the watch has delivered that write (the
child's creation wakes the owner, and so does the status patch). Reading only the cache,
that second reconcile would find the child missing (and ask the API server about it) or
the status stale (and patch it again). :class:`RecentWrites` keeps the object each write
returned, keyed by kind and ``namespace/name``, and forgets it as soon as the informer
reports *any* event for that object — from then on the cache is at least as new — so it
never hides a later change made by someone else (an edit, a deletion). A write is kept
only if no event about that object arrived while it was in flight (:meth:`track`): under
load the watch can deliver our write, and the changes that followed it, before the write's
response is read, and keeping the response then would hide those changes for good (a
Deployment that became available would look as it did when created). Like the cache, it
holds of ``managedFields`` only our own apply's entry. Used by
:class:`~appstack.sdk.kit.children.ChildWriter` and
:class:`~appstack.sdk.kit.reconciler.KindReconciler`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable

from appstack.runtime.cache import Cache
from appstack.runtime.informer import FuncHandler
from appstack.runtime.managedfields import keep_applied_by
from appstack.runtime.resources import Obj, Resource, object_key

# Writes whose watch event never comes (an object outside the cache's label selector) must
# not accumulate: the oldest are forgotten past this many.
MAX_REMEMBERED = 4096


class RecentWrites:
    """The objects our writes returned, per kind, until the informer reports them."""

    def __init__(self, cache: Cache, *, limit: int = MAX_REMEMBERED) -> None:
        self.cache = cache
        self.limit = limit
        self._objects: OrderedDict[tuple[Resource, str], Obj] = OrderedDict()
        self._followed: set[Resource] = set()
        # Writes in flight: whether an informer event about that object came meanwhile.
        self._in_flight: dict[tuple[Resource, str], bool] = {}

    def follow(self, resource: Resource) -> None:
        """Forget a remembered object of ``resource`` on any informer event about it."""
        if resource in self._followed:
            return
        self._followed.add(resource)

        def forget(obj: Obj) -> None:
            key = (resource, object_key(obj))
            self._objects.pop(key, None)
            if key in self._in_flight:
                self._in_flight[key] = True

        self.cache.add_handler(
            resource, FuncHandler(add=forget, update=lambda _old, new: forget(new), delete=forget)
        )

    async def track(self, resource: Resource, key: str, write: Awaitable[Obj]) -> Obj:
        """Await ``write`` (of object ``key``) and :meth:`remember` what it returned, unless
        the informer reported that object while the write was in flight (the cache may then
        hold this version or a newer one). Returns what the write returned."""
        self.follow(resource)
        entry = (resource, key)
        self._in_flight[entry] = False
        try:
            obj = await write
        finally:
            overtaken = self._in_flight.pop(entry, True)  # two at once: neither is kept
        if not overtaken:
            self.remember(resource, obj)
        return obj

    def remember(self, resource: Resource, obj: Obj) -> None:
        """Keep the object a write of ``resource`` returned (until its watch event); only
        safe if no event about it can have come since the write was sent (see :meth:`track`)."""
        self.follow(resource)
        keep_applied_by(obj, self.cache.client.field_manager)
        key = (resource, object_key(obj))
        self._objects[key] = obj
        self._objects.move_to_end(key)
        while len(self._objects) > self.limit:
            self._objects.popitem(last=False)

    def get(self, resource: Resource, key: str) -> Obj | None:
        """The newest object ``key`` of ``resource``: our write if the cache has not yet
        seen it, else the cached one (None if neither has it)."""
        return self._objects.get((resource, key)) or self.cache.get(resource, key)

    def __len__(self) -> int:
        return len(self._objects)
