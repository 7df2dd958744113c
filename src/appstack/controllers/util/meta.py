"""Metadata of the children a custom resource owns (pure).

Every child carries ``app.kubernetes.io/managed-by=appstack`` (the operator's caches only
hold objects with this label: :data:`CHILD_SELECTOR`) and a controller ownerReference to
its owner, so the garbage collector deletes it with the owner and the owner's controller
is woken when it changes.
"""

from __future__ import annotations

from typing import Any

from appstack.api.kind import GROUP
from appstack.controllers.util.kubeobject import KubeObject
from appstack.controllers.util.parts import ChildMeta, OwnerReference

MANAGED_BY = {"app.kubernetes.io/managed-by": "appstack"}
CHILD_SELECTOR = "app.kubernetes.io/managed-by=appstack"

#: The label naming who maintains an EndpointSlice, and our value of it.
SLICE_MANAGER_LABEL = "endpointslice.kubernetes.io/managed-by"
SLICE_MANAGER = GROUP


def child_selector(kind: str) -> str:
    """The label selector of the cache of a child kind: :data:`CHILD_SELECTOR` — and for
    EndpointSlices also ours by :data:`SLICE_MANAGER_LABEL`, as the endpoint controller
    copies a Service's labels (ours too) onto each slice it maintains for it."""
    if kind == "EndpointSlice":
        return f"{CHILD_SELECTOR},{SLICE_MANAGER_LABEL}={SLICE_MANAGER}"
    return CHILD_SELECTOR


INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"


def label_selector(labels: dict[str, str]) -> str:
    """``labels`` as a label selector string (``k=v,...``, sorted), as the scale subresource
    reports its pods' and a list request asks for them."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def instance_labels(name: str) -> dict[str, str]:
    """The selector labels of an owner's pods: ``app.kubernetes.io/{name,instance}``."""
    return {"app.kubernetes.io/name": name, INSTANCE_LABEL: name}


def child_labels(name: str, component: str) -> dict[str, str]:
    """The labels of every child of owner ``name``: instance, managed-by and component."""
    return {**instance_labels(name), **MANAGED_BY, COMPONENT_LABEL: component}


def owner_reference(owner: KubeObject) -> OwnerReference:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_metadata(owner: KubeObject, name: str, labels: dict[str, str]) -> ChildMeta:
    """``metadata`` of a child ``name`` in the owner's namespace, controlled by the owner."""
    return {
        "name": name,
        "namespace": owner["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [owner_reference(owner)],
    }


def controlled_by(obj: dict[str, Any], owner: KubeObject) -> bool:
    uid = owner["metadata"]["uid"]
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in obj["metadata"].get("ownerReferences") or []
    )
