"""Objects a spec names but does not own — a user's ConfigMap or Secret — watched so that a
change (or a missing one being created) reconciles the objects naming them at once.

A reconciler declares the kinds it refers to (``KindReconciler.references``) and an index
of its own kind, :data:`REFERENCES`, from each object to the :func:`reference` keys of what
it names; :func:`referrers` maps an event of a referenced object to the objects whose
index names it (no scan). Referenced kinds are listed and watched as metadata only
(:meth:`Resource.metadata_only <appstack.core.resource.Resource.metadata_only>`: the server
sends no data), without a label selector — a user's objects are not labelled as ours — but
only in the namespaces the operator acts in (an informer per enabled namespace:
:func:`~appstack.sdk.kit.caching.cache_policy`), and cached as :func:`metadata_only` keeps
them (key and version only: :func:`secret_metadata`); the children we write of the same kind
are a cache of their own, in full, labelled as ours. Used by
:mod:`~appstack.sdk.kit.registration` and the AppStack controller.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from appstack.core.resource import Resource
from appstack.runtime.builder import Mapper, request_for
from appstack.runtime.cache import Cache, Transform
from appstack.runtime.controller import Request

#: The index, on the referring kind, of the objects each one names.
REFERENCES = "references"


# What is kept of a referenced object: enough to key and version it — nothing a tenant can
# make large (labels, annotations, managed fields: kubectl's last-applied-configuration
# repeats a Secret's data; anyone may write 1.3 MB of labels, issue #46).
_KEPT = ("name", "namespace", "uid", "resourceVersion")


def reference(kind: str, namespace: str | None, name: str) -> str:
    """The index value of one named object: ``Kind/namespace/name``."""
    return f"{kind}/{namespace or ''}/{name}"


def referrers(cache: Cache, referring: Resource, referenced: Resource) -> Mapper:
    """Map an object of ``referenced`` to the objects of ``referring`` that name it."""

    def mapper(obj: dict[str, Any]) -> Iterable[Request]:
        meta = obj["metadata"]
        key = reference(referenced.kind, meta.get("namespace"), meta["name"])
        return [request_for(o) for o in cache.by_index(referring, REFERENCES, key)]

    return mapper


def metadata_only(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj``'s kind, name, namespace, uid and resourceVersion: what is cached of an object
    only watched for its changes (what a referrer's mapper needs)."""
    meta = obj.get("metadata") or {}
    kept: dict[str, Any] = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    return {**kept, "metadata": {k: meta[k] for k in _KEPT if k in meta}}


#: A Secret is only ever cached as its metadata; its data is read by name when needed.
secret_metadata: Transform = metadata_only
