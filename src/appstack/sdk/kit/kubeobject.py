"""The shape of the custom resource a controller reconciles, as its pure functions read it
(:class:`KubeObject`, :class:`ObjectMeta`): a misspelt ``metadata`` key or a field read
with the wrong type is a type error. The object itself is the dict the cache holds
(:func:`as_object` says so once, where a reconcile reads it); its ``spec`` and ``status``
are read through the kind's Pydantic models or as the API server stored them.
Used by every controller, the kit and the helpers.
"""

from __future__ import annotations

from typing import Any, cast

from typing_extensions import Required, TypedDict


class ObjectMeta(TypedDict, total=False):
    """The metadata fields the controllers read of an object they reconcile."""

    name: Required[str]
    namespace: str
    uid: str
    generation: int
    resourceVersion: str
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    finalizers: list[str]
    ownerReferences: list[dict[str, Any]]


class KubeObject(TypedDict, total=False):
    """A custom resource as the API server serves it: its spec and status are read through
    the kind's models (:mod:`appstack.api`) or as stored."""

    apiVersion: str
    kind: str
    metadata: Required[ObjectMeta]
    spec: dict[str, Any]
    status: dict[str, Any]


def as_object(raw: dict[str, Any]) -> KubeObject:
    """``raw`` (an object as read from the API server or the cache) as a
    :class:`KubeObject`: every object served has its metadata with a name."""
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ValueError("not an object of the API: no metadata.name")
    return cast(KubeObject, raw)
