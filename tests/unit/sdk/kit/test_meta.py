"""Metadata of the children a custom resource owns (sdk/kit/meta.py): their labels, their
controller ownerReference (by UID), and the label selectors their caches and lists use."""

from __future__ import annotations

from typing import Any

from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.kit.meta import (
    COMPONENT_LABEL,
    INSTANCE_LABEL,
    MANAGED_BY_LABEL,
    SLICE_MANAGER_LABEL,
    child_labels,
    child_metadata,
    child_selector,
    controlled_by,
    instance_labels,
    label_selector,
    owner_reference,
    selector_of,
)

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")
OWNER: KubeObject = {
    "apiVersion": "webapp.example.com/v1",
    "kind": "Guestbook",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
}


def test_selectors_keep_the_labels_order_or_sort_them() -> None:
    labels = {"b": "2", "a": "1"}
    assert selector_of(labels) == "b=2,a=1"  # a cache's selector, as declared
    assert label_selector(labels) == "a=1,b=2"  # as the scale subresource reports it
    assert selector_of({}) == label_selector({}) == ""


def test_a_child_kinds_cache_selects_the_operators_label_and_slices_also_its_domain() -> None:
    assert child_selector("Deployment", IDENTITY) == f"{MANAGED_BY_LABEL}=guestbook"
    assert child_selector("EndpointSlice", IDENTITY) == (
        f"{MANAGED_BY_LABEL}=guestbook,{SLICE_MANAGER_LABEL}=webapp.example.com"
    )


def test_a_childs_labels_name_its_owner_the_operator_and_its_component() -> None:
    assert instance_labels("web") == {"app.kubernetes.io/name": "web", INSTANCE_LABEL: "web"}
    assert child_labels("web", "server", IDENTITY.managed_by) == {
        "app.kubernetes.io/name": "web",
        INSTANCE_LABEL: "web",
        MANAGED_BY_LABEL: "guestbook",
        COMPONENT_LABEL: "server",
    }


def test_a_child_is_controlled_by_its_owner_in_the_owners_namespace() -> None:
    ref = owner_reference(OWNER)
    assert ref == {
        "apiVersion": "webapp.example.com/v1",
        "kind": "Guestbook",
        "name": "web",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    meta = child_metadata(OWNER, "web-server", {"a": "b"})
    assert meta == {
        "name": "web-server",
        "namespace": "shop",
        "labels": {"a": "b"},
        "ownerReferences": [ref],
    }


def test_control_is_told_by_the_controller_references_uid_not_its_name() -> None:
    def child(*refs: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": "c", "ownerReferences": list(refs)}}

    ours = {"uid": "u-1", "name": "web", "controller": True}
    assert controlled_by(child(ours), OWNER)
    assert controlled_by(child({"uid": "other", "controller": True}, ours), OWNER)
    assert not controlled_by(child({**ours, "controller": False}), OWNER)  # owner, not controller
    assert not controlled_by(child({**ours, "uid": "u-2"}), OWNER)  # same name, another object
    assert not controlled_by({"metadata": {"name": "c"}}, OWNER)
