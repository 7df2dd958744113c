"""Metadata of the children a custom resource owns (pure): their labels, their controller
ownerReference, the label selector their cache is filled by.

Every child carries its operator's ``app.kubernetes.io/managed-by`` label
(:attr:`~appstack.sdk.identity.OperatorIdentity.managed_by`: the caches of child kinds hold
only objects with it, :func:`child_selector`) and a controller ownerReference to its owner,
so the garbage collector deletes it with the owner and the owner's controller is woken when
it changes. Used by the controller kit and by every controller's desired state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.kit.parts import ChildMeta, OwnerReference

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: The label naming who maintains an EndpointSlice (the operator's domain, for its own).
SLICE_MANAGER_LABEL = "endpointslice.kubernetes.io/managed-by"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"


def selector_of(labels: Mapping[str, str]) -> str:
    """``labels`` as an equality label selector, in their order."""
    return ",".join(f"{k}={v}" for k, v in labels.items())


def child_selector(kind: str, identity: OperatorIdentity) -> str:
    """The label selector of the cache of a child kind: the operator's managed-by label —
    and for EndpointSlices also its own by :data:`SLICE_MANAGER_LABEL` (its domain), as the
    endpoint controller copies a Service's labels (ours too) onto each slice it maintains
    for it."""
    selector = selector_of(identity.managed_by)
    if kind == "EndpointSlice":
        return f"{selector},{SLICE_MANAGER_LABEL}={identity.domain}"
    return selector


def label_selector(labels: dict[str, str]) -> str:
    """``labels`` as a label selector string (``k=v,...``, sorted), as the scale subresource
    reports its pods' and a list request asks for them."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def instance_labels(name: str) -> dict[str, str]:
    """The selector labels of an owner's pods: ``app.kubernetes.io/{name,instance}``."""
    return {"app.kubernetes.io/name": name, INSTANCE_LABEL: name}


def child_labels(name: str, component: str, managed_by: Mapping[str, str]) -> dict[str, str]:
    """The labels of every child of owner ``name``: instance, ``managed_by`` (the operator's
    label) and component."""
    return {**instance_labels(name), **managed_by, COMPONENT_LABEL: component}


def owner_reference(owner: KubeObject) -> OwnerReference:
    """A controller ownerReference to ``owner`` (blocking its deletion until the child is
    gone, for foreground deletion)."""
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
    """Whether ``obj``'s controller ownerReference is ``owner`` (by UID, not by name)."""
    uid = owner["metadata"]["uid"]
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in obj["metadata"].get("ownerReferences") or []
    )
