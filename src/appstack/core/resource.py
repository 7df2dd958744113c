"""Resource kinds as plain descriptors, and the URL paths that address them (no I/O).

A :class:`Resource` names a kind the way the API server routes it (group, version,
plural, scope). The client, the informers and the controllers take one of these instead of
generated model classes: the hot path works on plain dicts. It sits below every other
package (``appstack.api`` declares its custom kinds with it, ``appstack.runtime`` routes
requests with it); well-known kinds are in :mod:`appstack.runtime.resources`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """A kind as the API server routes it: ``/apis/<group>/<version>/<plural>``."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    #: Listed and watched as metadata only (``PartialObjectMetadata``: no data, no spec —
    #: controller-runtime's ``OnlyMetadata``): for objects only watched for their changes,
    #: a user's Secrets above all. A cache of its own, apart from the full kind's.
    only_metadata: bool = False

    def metadata_only(self) -> Resource:
        """This kind, listed and watched as metadata only."""
        return replace(self, only_metadata=True)

    @property
    def api_version(self) -> str:
        """``group/version`` (``v1`` for the core group), as in an object's apiVersion."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """``/api/v1/namespaces/ns/pods/name/status`` and friends.

        Without a namespace, a namespaced resource's path lists across all namespaces.
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        name = f"{self.plural}.{self.group}" if self.group else self.plural
        return f"{name} (metadata)" if self.only_metadata else name


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects): the cache and queue key.

    Interned: an owner and its children of the same name (an AppService, its Deployment and
    its Service) are kept in three stores under one string, not three equal ones."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return sys.intern(f"{namespace}/{meta['name']}" if namespace else str(meta["name"]))


def split_key(key: str) -> tuple[str | None, str]:
    """``(namespace, name)`` of a key :func:`object_key` made (namespace None if none)."""
    namespace, _, name = key.rpartition("/")
    return (namespace or None), name
