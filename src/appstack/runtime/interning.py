"""One copy of each repeated string in the informer's cache.

Every cached Kubernetes object repeats the same short strings — ``apps/v1``,
``Deployment``, its namespace, label keys and values, ``RollingUpdate``, ``TCP``,
``True``, condition types and reasons, owner kinds, timestamps of a wave — and JSON
decoding gives each its own ``str`` object (49 bytes + its length). Interning them shares
one copy: 25-40 % less memory per cached AppService, Deployment, Service or pod (measured
in docs/performance.md). Dict keys need nothing: orjson already shares the keys it decodes.

Values that are unique per object (``uid``, ``resourceVersion``) and long strings (the
interpreter's interning table would only grow) are left as they are. Interned strings are
freed when no object uses them any more. Used by :class:`~appstack.runtime.informer.Informer`
on every object before it is cached.

:func:`shared_tree` does the same for whole read-only trees that repeat across objects, and
:func:`shared_fields` applies it to the ``fieldsV1`` of our own server-side apply entry
(kept in the cache to see fields a new apply would remove): it names fields, not values,
so it is the same for every child of one shape (but for the owner's uid in
``f:ownerReferences``) — 7 KiB of a cached Deployment and 4 KiB of a Service, once
instead of per object.

:func:`shared_value` shares parts that repeat across objects of *different* kinds or many
objects (the labels, ownerReferences and selector a Deployment and its Service both carry,
the pod status of every healthy pod): one copy, kept while any cached object holds it.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, TypeVar

import orjson

#: Strings longer than this are left alone (messages, certificates, JSON in annotations).
MAX_LENGTH = 64

#: Keys whose values are unique per object or per version: interning them shares nothing.
UNIQUE_KEYS = frozenset({"uid", "resourceVersion"})

#: Keys whose values hold no string values to intern: a ``fieldsV1`` tree names fields in
#: its keys, its values are ``{}``.
NO_STRINGS = frozenset({"fieldsV1"})

#: Distinct trees :func:`shared_tree` remembers (the least recently seen are forgotten).
MAX_SHARED = 1024

_shared: OrderedDict[int, Any] = OrderedDict()


def shared_tree(tree: Any) -> Any:
    """The one copy of a JSON tree equal to ``tree`` seen lately (``tree`` itself if none),
    to be kept instead of ``tree``. Shared copies are read-only, as every cached object is."""
    key = hash(orjson.dumps(tree, option=orjson.OPT_SORT_KEYS))
    found = _shared.get(key)
    if found is not None and found == tree:
        _shared.move_to_end(key)
        return found
    _shared[key] = tree
    _shared.move_to_end(key)
    if len(_shared) > MAX_SHARED:
        _shared.popitem(last=False)
    return tree


class _Shared:
    """The one copy of each part :func:`shared_value` was given, by its hash; swept of the
    parts no cached object holds any more each time it has doubled."""

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.sweep_at = MAX_SHARED

    def share(self, tree: Any) -> tuple[Any, bool]:
        """The copy to keep, and whether it was held already."""
        key = hash(orjson.dumps(tree))
        found = self.values.get(key)
        if found is not None:
            return (found, True) if found == tree else (tree, False)
        self.values[key] = tree
        if len(self.values) >= self.sweep_at:
            self.sweep()
            self.sweep_at = max(MAX_SHARED, 2 * len(self.values))
        return tree, False

    def sweep(self) -> None:
        for key, value in list(self.values.items()):
            # held only by the registry, the list of items, ``value`` and getrefcount's argument
            if sys.getrefcount(value) <= 4:
                del self.values[key]


_values = _Shared()

T = TypeVar("T")


def shared_value(tree: T) -> T:
    """The one copy of a JSON tree equal to ``tree`` (same keys in the same order) that
    was shared before and is still held, else ``tree`` itself, to be kept instead of
    ``tree``. Unlike :func:`shared_tree` nothing held is forgotten: a part shared by an
    AppService's Deployment and Service is found again however many objects came between
    them (a LIST gives every Deployment, then every Service)."""
    shared: T = _values.share(tree)[0]
    return shared


def share_below(node: T) -> T:
    """``node`` with every dict and list below it (not ``node`` itself) the copy other
    cached objects hold (:func:`shared_value`), innermost first, in place; returns
    ``node``. For parts that repeat across objects: a Deployment's template labels, its
    container's ports and security context, a healthy pod's status. A part holding a part
    seen for the first time is most likely new itself (a Deployment's ``selector`` holding
    its app's labels): it is not remembered (a remembered part costs ≈ 90 bytes)."""
    _share_children(node)
    return node


def _share_children(node: Any) -> bool:
    """Share the dicts and lists in ``node``; True when every one was shared already."""
    seen = True
    items = list(node.items()) if type(node) is dict else list(enumerate(node))
    for key, value in items:
        if (type(value) is dict or type(value) is list) and value:
            if _share_children(value):
                shared, found = _values.share(value)
                node[key] = shared
                seen = seen and found
            else:
                seen = False
    return seen


def sweep_values() -> None:
    """Forget the shared parts no cached object holds any more (only the registry does)."""
    _values.sweep()


def intern_strings(node: Any, _intern: Any = sys.intern) -> Any:
    """Replace every short string value in ``node`` (nested dicts and lists) by its
    interned copy, in place; returns ``node``. ``fieldsV1`` trees are not walked: they hold
    no string values (half the dicts of a cached Deployment, for nothing)."""
    if type(node) is dict:
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                if len(value) <= MAX_LENGTH and key not in UNIQUE_KEYS:
                    node[key] = _intern(value)
            elif (kind is dict or kind is list) and key not in NO_STRINGS:
                intern_strings(value)
    elif type(node) is list:
        for index, value in enumerate(node):
            kind = type(value)
            if kind is str:
                if len(value) <= MAX_LENGTH:
                    node[index] = _intern(value)
            elif kind is dict or kind is list:
                intern_strings(value)
    return node


def shared_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A ``fieldsV1`` tree whose parts are the one shared copy of equal parts of other
    objects' (they name fields, not values: the same for every child of one shape);
    ``f:ownerReferences``, keyed by the owner's uid, and ``f:metadata`` holding it are
    shared by that owner's children of one shape (:func:`shared_value`)."""
    return {
        key: (
            shared_value(shared_fields(value))
            if key == "f:metadata" and isinstance(value, dict)
            else shared_value(value)
            if key == "f:ownerReferences"
            else shared_tree(value)
        )
        for key, value in fields.items()
    }


#: What of every cached object's metadata repeats across objects: a Deployment's labels
#: and owner are its Service's; the pods of one ReplicaSet share both.
SHARED_METADATA = ("labels", "ownerReferences")


def shared_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its labels and ownerReferences the copies other cached objects hold
    (:func:`shared_value`), and its metadata rebuilt to its size: a dict keeps
    the table it grew to when keys are dropped (a Deployment's metadata with 9 keys left
    of 12: 632 bytes, 272 rebuilt)."""
    meta = obj.get("metadata")
    if type(meta) is dict:
        for key in SHARED_METADATA:
            value = meta.get(key)
            if value:
                meta[key] = shared_value(value)
        obj["metadata"] = dict(meta.items())  # a compact copy
    return obj
