"""The cache's one table (:func:`appstack.sdk.kit.caching.cache_policy`, issue #40): derived
from the controllers' declarations — label selectors of what they own or watch, whose
children are kept in full, what is read whole — with one transform per kind from the
operator's own table; two controllers asking for different selectors of a kind fail at
start-up naming both. Kinds of a tutorial's own, not appstack's."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from appstack.runtime.cache import NAMESPACES, ByObject
from appstack.runtime.controller import Result
from appstack.runtime.resources import CONFIG_MAP, POD, SECRET, SERVICE, Resource
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    Problem,
    Registration,
    custom_kind,
)
from appstack.sdk.kit.caching import bounded_metadata, cache_policy
from appstack.sdk.kit.meta import child_selector
from appstack.sdk.kit.namespaces import outside_enabled

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")
OURS = child_selector("ConfigMap", IDENTITY)


class BookSpec(KubeModel):
    title: str = Field(min_length=1)


class BookStatus(KubeModel):
    shelved: bool | None = None


@custom_kind(group="webapp.example.com", plural="books")
class Book(CustomObject):
    spec: BookSpec
    status: BookStatus | None = None


@custom_kind(group="webapp.example.com", plural="shelves")
class Shelf(CustomObject):
    spec: BookSpec
    status: BookStatus | None = None


def _pod_owner(pod: dict[str, Any]) -> list[Any]:
    return []


class Unused(KindReconciler[BookSpec]):
    """Never instantiated: the table is read from the classes' declarations."""

    def invalid_status(self, obj: KubeObject, problem: Problem) -> KubeModel:
        raise NotImplementedError

    async def apply(self, obj: KubeObject, spec: BookSpec) -> Result | None:
        raise NotImplementedError


class BookReconciler(Unused):
    kind = Book.KIND
    owns = (CONFIG_MAP, SERVICE)
    watches = ((POD, _pod_owner),)
    references = (SECRET.metadata_only(),)


class ShelfReconciler(Unused):
    kind = Shelf.KIND
    owns = (SERVICE, POD)


class NarrowShelfReconciler(ShelfReconciler):
    selectors = {SERVICE: "webapp.example.com/shelf=yes"}  # noqa: RUF012


BOOKS = Registration("books", BookReconciler)
SHELVES = Registration("shelves", ShelfReconciler)


def _keep(obj: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": obj["metadata"]}


def test_the_table_is_derived_from_what_the_controllers_declare() -> None:
    table = cache_policy([BOOKS, SHELVES], IDENTITY, transforms={POD: _keep}, cluster_wide=False)
    assert table[CONFIG_MAP] == ByObject(label_selector=OURS, owners=(Book.KIND.resource,))
    # owned by both: only the children of either kept in full
    assert table[SERVICE].owners == (Book.KIND.resource, Shelf.KIND.resource)
    # watched by one (it reads pods it does not control): every one in full, transformed
    assert table[POD] == ByObject(label_selector=OURS, transform=_keep, owners=None)
    # a user's Secrets a spec names: not labelled ours, so no selector; read whole
    assert table[SECRET.metadata_only()] == ByObject()
    assert NAMESPACES not in table  # a namespaced cache asks the API server instead


def test_cluster_wide_the_enabled_namespaces_are_in_the_table() -> None:
    table = cache_policy([BOOKS], IDENTITY)
    assert table[NAMESPACES].label_selector == f"{IDENTITY.enabled_label}=true"
    everywhere = cache_policy([BOOKS], IDENTITY, enable_all_namespaces=True)
    assert everywhere[NAMESPACES].label_selector is None
    assert everywhere[NAMESPACES].transform is not None  # names and labels only


def test_two_controllers_asking_different_selectors_of_a_kind_fail_naming_both() -> None:
    narrow = Registration("narrow-shelves", NarrowShelfReconciler)
    assert cache_policy([narrow], IDENTITY)[SERVICE].label_selector == (
        "webapp.example.com/shelf=yes"
    )
    with pytest.raises(ValueError, match="books and narrow-shelves") as refused:
        cache_policy([BOOKS, narrow], IDENTITY)
    assert "services" in str(refused.value)


def test_a_transform_for_a_kind_no_controller_reads_is_kept_as_given() -> None:
    other = Resource("example.com", "v1", "Widget", "widgets")
    table = cache_policy([BOOKS], IDENTITY, transforms={other: _keep}, cluster_wide=False)
    assert table[other] == ByObject(transform=_keep)


def test_cluster_wide_a_users_objects_and_ours_are_kept_in_full_only_where_enabled() -> None:
    """Issue #46: a tenant of a namespace not enabled, holding no right of ours, filled the
    cache with ConfigMaps of 1.3 MB of labels; one allowed to create our kinds there, with
    labelled objects of them. A kind a spec refers to is kept only in the enabled
    namespaces (an informer each); our own kinds everywhere, but outside them only as
    outside_enabled keeps them."""
    enabled = f"{IDENTITY.enabled_label}=true"
    table = cache_policy([BOOKS, SHELVES], IDENTITY)
    assert table[SECRET.metadata_only()] == ByObject(namespaces=enabled)
    for primary in (Book.KIND.resource, Shelf.KIND.resource):
        assert table[primary] == ByObject(namespaces=enabled, elsewhere=outside_enabled)
    assert table[CONFIG_MAP].namespaces is None  # children: labelled ours, cut to metadata
    for everywhere in (
        cache_policy([BOOKS], IDENTITY, enable_all_namespaces=True),
        cache_policy([BOOKS], IDENTITY, cluster_wide=False),  # its namespaces are the ones
    ):
        assert everywhere[SECRET.metadata_only()] == ByObject()
        assert everywhere[Book.KIND.resource] == ByObject()


def test_outside_the_enabled_namespaces_an_object_of_ours_keeps_its_name_and_status() -> None:
    big = {f"tenant.example/{i:05d}": "x" * 63 for i in range(2000)}
    obj = {
        "apiVersion": "webapp.example.com/v1",
        "kind": "Book",
        "metadata": {
            "name": "b",
            "namespace": "closed",
            "uid": "u",
            "resourceVersion": "7",
            "generation": 3,
            "finalizers": ["webapp.example.com/teardown"],
            "labels": big,
            "annotations": big,
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"title": "t" * 100_000},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    kept = outside_enabled(obj)
    assert kept == {
        "apiVersion": "webapp.example.com/v1",
        "kind": "Book",
        "metadata": {
            "name": "b",
            "namespace": "closed",
            "uid": "u",
            "resourceVersion": "7",
            "generation": 3,
            "finalizers": ["webapp.example.com/teardown"],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_bounded_metadata_keeps_only_a_few_labels_and_annotations_under_the_prefixes() -> None:
    transform = bounded_metadata(
        ("app.kubernetes.io/", "webapp.example.com/"), ("webapp.example.com/",)
    )
    labels = {f"webapp.example.com/x{i:05d}": "v" for i in range(5000)}
    labels |= {"app.kubernetes.io/name": "n", "tenant.example/big": "v"}
    obj = {
        "metadata": {
            "name": "b",
            "labels": labels,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        },
        "spec": {"title": "t"},
    }
    kept = transform(obj)
    assert kept["spec"] == {"title": "t"}
    assert "annotations" not in kept["metadata"]
    assert len(kept["metadata"]["labels"]) == 32
    assert kept["metadata"]["labels"]["app.kubernetes.io/name"] == "n"  # first by key
    assert "tenant.example/big" not in kept["metadata"]["labels"]
