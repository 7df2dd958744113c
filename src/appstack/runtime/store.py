"""The informer's local cache: objects by ``namespace/name`` key, plus indexes.

An index maps each object to zero or more index values (``by_namespace``,
``by_controller_uid`` — ``namespace/uid`` of the object's controlling owner, looked up with
:func:`controller_key` — or any function a controller registers) so lookups such as "the
Deployments this AppService controls" do not scan the cache. Objects are kept packed
(:mod:`appstack.runtime.packing`: compressed JSON, ≈ 100-160 bytes for an operator's
child) and unpacked on every read: each reader gets an object of its own. The informer
strips fields nobody needs before they get here. Pure, single-threaded. Filled by
:mod:`appstack.runtime.informer`; controllers read it through the
:class:`~appstack.runtime.cache.Cache`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from appstack.runtime.packing import GROW_AT, Packer
from appstack.runtime.resources import Obj, object_key

IndexFunc = Callable[[Obj], Iterable[str]]


def by_namespace(obj: Obj) -> Iterable[str]:
    namespace = obj["metadata"].get("namespace")
    return [namespace] if namespace else []


def controller_key(namespace: str | None, uid: str) -> str:
    """The ``controller-uid`` index value of the objects an owner in ``namespace`` controls
    (interned: the index of each child kind keeps one string per owner, not one each)."""
    return sys.intern(f"{namespace or ''}/{uid}")


def by_controller_uid(obj: Obj) -> Iterable[str]:
    """``namespace/uid`` of the controlling owner. An ownerReference names an owner in the
    object's own namespace (or a cluster-scoped one): an object in team-a naming the uid of
    an owner in team-b is not that owner's child, and must not hold up its teardown
    (issue #28)."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return [controller_key(obj["metadata"].get("namespace"), ref["uid"])]
    return []


DEFAULT_INDEXERS: Mapping[str, IndexFunc] = {
    "namespace": by_namespace,
    "controller-uid": by_controller_uid,
}


class Store:
    """Objects of one kind by ``namespace/name`` key, with named indexes (not thread-safe).

    Reads return a new object each time (unpacked from the store's bytes)."""

    def __init__(
        self, indexers: Mapping[str, IndexFunc] | None = None, *, grow_at: Collection[int] = GROW_AT
    ) -> None:
        self._items: dict[str, bytes] = {}
        self._packer = Packer(grow_at)  # grow_at: when its dictionary grows (packing.py)
        self._indexers: dict[str, IndexFunc] = dict(DEFAULT_INDEXERS)
        self._indexers.update(indexers or {})
        # value -> the key of its one object, or the set of keys of several: most index
        # values (an owner's uid, an app's instance label) name one object, and a set of
        # one costs 216 bytes more than the key itself
        self._indices: dict[str, dict[str, str | set[str]]] = {n: {} for n in self._indexers}

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        """Register an index; existing objects are indexed at once."""
        if name in self._indexers:
            return
        self._indexers[name] = func
        self._indices[name] = {}
        for key, packed in self._items.items():
            self._index(name, key, self._packer.unpack(packed))

    # ------------------------------------------------------------------------ writing
    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace; returns the previous object (None if new). ``obj`` is packed:
        changing it afterwards does not change the store."""
        key = object_key(obj)
        packed = self._items.get(key)
        old = None if packed is None else self._packer.unpack(packed)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = self._packer.pack(obj)
        if self._packer.grow_due:
            self._items = self._packer.grow(self._items)
        for name in self._indexers:
            self._index(name, key, obj)
        return old

    def delete(self, key: str) -> Obj | None:
        packed = self._items.pop(key, None)
        if packed is None:
            return None
        old: Obj = self._packer.unpack(packed)
        self._unindex(key, old)
        return old

    # ------------------------------------------------------------------------ reading
    def get(self, key: str) -> Obj | None:
        packed = self._items.get(key)
        return None if packed is None else self._packer.unpack(packed)

    def keys(self) -> list[str]:
        return list(self._items)

    def objects(self) -> list[Obj]:
        return list(self.iter_objects())

    def iter_objects(self) -> Iterator[Obj]:
        """Every object, each unpacked only when reached: a reader of all of them holds one
        decoded object at a time, not the whole store decoded (:meth:`objects`). Objects
        stored or deleted after the call are not seen."""
        unpack = self._packer.unpacker()  # what is read was packed with today's dictionary
        for packed in list(self._items.values()):
            yield unpack(packed)

    def by_index(self, name: str, value: str) -> list[Obj]:
        keys = self._indices[name].get(value)
        if keys is None:
            return []
        unpack = self._packer.unpack
        if isinstance(keys, str):
            return [unpack(self._items[keys])]
        return [unpack(self._items[k]) for k in keys]

    def packed_bytes(self) -> int:
        """The bytes of every object as packed (what the objects themselves take; keys and
        indexes apart): for measuring."""
        return sum(len(packed) for packed in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        """Keys, as a snapshot: the store may change while the caller iterates."""
        return iter(list(self._items))

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # ---------------------------------------------------------------------- internals
    def _index(self, name: str, key: str, obj: Obj) -> None:
        index = self._indices[name]
        for value in self._indexers[name](obj):
            keys = index.get(value)
            if keys is None:
                index[value] = key
            elif isinstance(keys, str):
                if keys != key:
                    index[value] = {keys, key}
            else:
                keys.add(key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is None:
                    continue
                if isinstance(keys, str):
                    if keys == key:
                        del index[value]
                    continue
                keys.discard(key)
                if len(keys) == 1:
                    index[value] = next(iter(keys))
                elif not keys:
                    del index[value]
