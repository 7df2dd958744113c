"""Read your own writes: what this process last wrote, until the informer shows it again.

A reconcile that creates a child, or patches its owner's status, is often followed by
another reconcile of the same owner before the watch has delivered that write (the
child's creation wakes the owner, and so does the status patch). Reading only the cache,
that second reconcile would find the child missing (and ask the API server about it) or
the status stale (and patch it again). :class:`RecentWrites` keeps the object each write
returned, keyed by kind and ``namespace/name``, and forgets it as soon as the informer
reports *any* event for that object — from then on the cache is at least as new — so it
never hides a later change made by someone else (an edit, a deletion). Like the cache,
it holds of ``managedFields`` only our own apply's entry. Used by
:class:`~appstack.controllers.children.ChildWriter` and
:class:`~appstack.controllers.util.reconciler.KindReconciler`.
"""

from __future__ import annotations

from collections import OrderedDict

from appstack.runtime.cache import Cache
from appstack.runtime.informer import FuncHandler, keep_applied_by
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

    def follow(self, resource: Resource) -> None:
        """Forget a remembered object of ``resource`` on any informer event about it."""
        if resource in self._followed:
            return
        self._followed.add(resource)

        def forget(obj: Obj) -> None:
            self._objects.pop((resource, object_key(obj)), None)

        self.cache.add_handler(
            resource, FuncHandler(add=forget, update=lambda _old, new: forget(new), delete=forget)
        )

    def remember(self, resource: Resource, obj: Obj) -> None:
        """Keep the object a write of ``resource`` returned (until its watch event)."""
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
