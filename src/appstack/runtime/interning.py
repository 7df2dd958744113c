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
"""

from __future__ import annotations

import sys
from typing import Any

#: Strings longer than this are left alone (messages, certificates, JSON in annotations).
MAX_LENGTH = 64

#: Keys whose values are unique per object or per version: interning them shares nothing.
UNIQUE_KEYS = frozenset({"uid", "resourceVersion"})


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
