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
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

import orjson

#: Strings longer than this are left alone (messages, certificates, JSON in annotations).
MAX_LENGTH = 64

#: Keys whose values are unique per object or per version: interning them shares nothing.
UNIQUE_KEYS = frozenset({"uid", "resourceVersion"})

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


def intern_strings(node: Any, _intern: Any = sys.intern) -> Any:
    """Replace every short string value in ``node`` (nested dicts and lists) by its
    interned copy, in place; returns ``node``."""
    if type(node) is dict:
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                if len(value) <= MAX_LENGTH and key not in UNIQUE_KEYS:
                    node[key] = _intern(value)
            elif kind is dict or kind is list:
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
    objects' (they name fields, not values: the same for every child of one shape), but for
    ``f:ownerReferences``, keyed by the owner's uid."""
    return {
        key: (
            shared_fields(value)
            if key == "f:metadata" and isinstance(value, dict)
            else value
            if key == "f:ownerReferences"
            else shared_tree(value)
        )
        for key, value in fields.items()
    }
