"""Where the operator may act: :class:`NamespaceGate`, one per operator process, asked by
every reconcile (:mod:`.reconciler`) before it reads a spec.

A namespace is enabled when a platform team labelled it with the operator's enabled label
(``<domain>/enabled=true``, :attr:`appstack.sdk.identity.OperatorIdentity.enabled_label`),
or when the installer enabled every namespace. The gate also tells each namespace's labels
(e.g. the Pod Security level pods are created at) and whether a namespace exists (e.g. an
address check). Two ways to know, by how the operator is installed:

* **cluster-wide** (no ``--namespace``): a metadata-only informer of the enabled namespaces
  (label selector; of every namespace with ``enable_all``), so labelling a namespace wakes
  every object of ours in it at once (:meth:`NamespaceGate.mapper`) — RBAC ``list`` and
  ``watch`` on namespaces;
* **namespaced** (``--namespace`` given, Roles only: a namespace can be read by name only):
  a GET per namespace kept :data:`TTL` seconds, and an object in a namespace not enabled is
  looked at again after that long (:attr:`NamespaceGate.requeue_after`).

Existence (:meth:`NamespaceGate.exists`) is always a GET, kept :data:`TTL` seconds in a
cache of at most :data:`MAX_REMEMBERED` names that forgets the least recently used (a
tenant naming made-up namespaces cannot grow it).
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from appstack.core.resource import Resource, split_key
from appstack.runtime import errors
from appstack.runtime.builder import Mapper
from appstack.runtime.cache import NAMESPACES, ByObject, Cache, namespace_metadata
from appstack.runtime.client import Client
from appstack.runtime.controller import Request
from appstack.runtime.resources import NAMESPACE

TTL = 30.0
MAX_REMEMBERED = 4096
log = structlog.get_logger(__name__)

Labels = dict[str, str]

#: What is kept of an object of the operator's kinds in a namespace not enabled
#: (:func:`outside_enabled`): enough to say so in its status, and to let it go.
_OUTSIDE = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "finalizers",
)


def enabled_selector(label: str, enable_all: bool = False) -> str | None:
    """The label selector of the enabled namespaces (None: every namespace)."""
    return None if enable_all else f"{label}=true"


def namespace_cache(label: str, enable_all: bool = False) -> ByObject:
    """What a watching gate's cache keeps of the Namespaces (the operator's cache table,
    :mod:`.caching`): the enabled ones (``label=true``; every one with ``enable_all``),
    their name, version and labels only."""
    return ByObject(
        label_selector=enabled_selector(label, enable_all), transform=namespace_metadata
    )


def outside_enabled(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of an object of the operator's kinds in a namespace not enabled
    (issue #46): its name, versions, finalizers and status — no spec, labels or annotations,
    which anyone allowed to create it there could make large. Enough to say in its status
    that the namespace is not enabled and to let it go when deleted; read in full again
    once the namespace is enabled (:meth:`appstack.runtime.cache.Cache.is_cut`)."""
    meta = obj.get("metadata") or {}
    kept: dict[str, Any] = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    kept["metadata"] = {k: meta[k] for k in _OUTSIDE if k in meta}
    if "status" in obj:
        kept["status"] = obj["status"]
    return kept


class _Remembered:
    """A bounded, time-limited memory of GETs: name -> (when, value)."""

    def __init__(self, now: Callable[[], float], ttl: float, size: int) -> None:
        self.now, self.ttl, self.size = now, ttl, size
        self._seen: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def get(self, name: str) -> tuple[bool, Any]:
        seen = self._seen.get(name)
        if seen is None or self.now() - seen[0] >= self.ttl:
            return False, None
        self._seen.move_to_end(name)
        return True, seen[1]

    def put(self, name: str, value: Any) -> None:
        self._seen[name] = (self.now(), value)
        self._seen.move_to_end(name)
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._seen)


class NamespaceGate:
    """Whether the operator may act in a namespace, and that namespace's labels."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        *,
        label: str = "",
        enable_all: bool = False,
        watch: bool | None = None,
        now: Callable[[], float] = time.monotonic,
        ttl: float = TTL,
        max_remembered: int = MAX_REMEMBERED,
    ) -> None:
        if not label and not enable_all:
            raise ValueError("a namespace gate needs the enabled label, or enable_all")
        self.client = client
        self.cache = cache
        #: The namespace label (``=true``) that enables the operator there.
        self.label = label
        self.enable_all = enable_all
        #: Cluster-wide: namespaces come from an informer (else from GETs). The default is
        #: by the cache's scope: a cache of some namespaces cannot list namespaces.
        self.watching = not cache.namespaces if watch is None else watch
        self._labels = _Remembered(now, ttl, max_remembered)
        self._exists = _Remembered(now, ttl, max_remembered)
        self._ttl = ttl

    @property
    def requeue_after(self) -> float | None:
        """After how long an object in a namespace not enabled is looked at again (None:
        when its namespace is labelled, the informer says so)."""
        return None if self.watching else self._ttl

    async def labels(self, namespace: str) -> Labels | None:
        """The labels of an enabled ``namespace`` (None: not enabled, or gone)."""
        if self.watching:
            obj = self.cache.get(NAMESPACES, namespace)
            found = None if obj is None else dict(obj["metadata"].get("labels") or {})
            return (
                found if found is not None or not self.enable_all else await self._read(namespace)
            )
        found = await self._read(namespace)
        return found if self.enable_all or (found or {}).get(self.label) == "true" else None

    def names(self) -> list[str]:
        """The namespaces the operator may act in, sorted: the enabled ones its namespace
        informer holds (cluster-wide; every namespace with ``enable_all``), or, for an
        operator of some namespaces, those of its cache that are enabled as far as last
        read (:meth:`enabled` reads each)."""
        if self.watching:
            return sorted(split_key(key)[1] for key in self.cache.keys(NAMESPACES))
        return sorted(self.cache.namespaces or ())

    async def enabled(self, namespace: str) -> bool:
        """Whether the operator may act in ``namespace``."""
        return self.enable_all or await self.labels(namespace) is not None

    async def exists(self, namespace: str) -> bool | None:
        """Whether ``namespace`` exists (None: not readable with the operator's rights, as
        in a namespaced install for a namespace it does not watch)."""
        known, found = self._exists.get(namespace)
        if known:
            return found  # type: ignore[no-any-return]
        await self._read(namespace)
        return self._exists.get(namespace)[1]  # type: ignore[no-any-return]

    def mapper(self, primary: Resource) -> Mapper:
        """A namespace's change -> every cached object of ``primary`` in it."""

        def mapper(obj: dict[str, Any]) -> Iterable[Request]:
            name = obj["metadata"]["name"]
            return [
                Request(namespace, key_name)
                for namespace, key_name in map(split_key, self.cache.keys(primary))
                if namespace == name
            ]

        return mapper

    async def _read(self, namespace: str) -> Labels | None:
        """The namespace's labels by GET (remembered :data:`TTL` seconds); None when it
        cannot be read."""
        known, remembered = self._labels.get(namespace)
        if known:
            return remembered  # type: ignore[no-any-return]
        found: bool | None = True
        labels: Labels | None
        try:
            obj = await self.client.get(NAMESPACE, namespace)
            labels = dict((obj.get("metadata") or {}).get("labels") or {})
        except (errors.Forbidden, errors.NotFound) as error:
            log.debug("namespace not readable", namespace=namespace, error=str(error))
            found = False if isinstance(error, errors.NotFound) else None
            labels = None
        self._labels.put(namespace, labels)
        self._exists.put(namespace, found)
        return labels


_SHARED: weakref.WeakKeyDictionary[Cache, NamespaceGate] = weakref.WeakKeyDictionary()


def shared_gate(
    client: Client, cache: Cache, *, label: str, enable_all: bool = False
) -> NamespaceGate:
    """The one gate of the controllers sharing ``cache`` (one namespace informer)."""
    gate = _SHARED.get(cache)
    if gate is None:
        gate = _SHARED[cache] = NamespaceGate(client, cache, label=label, enable_all=enable_all)
    elif gate.enable_all != enable_all:
        raise ValueError("the controllers of one cache disagree on enable_all")
    return gate
