"""The cache's one table (:func:`appstack.sdk.kit.caching.cache_policy`, issue #40): derived
from the controllers' declarations — label selectors of what they own or watch, whose
children are kept in full, what is read whole — with one transform per kind from the
operator's own table; two controllers asking for different selectors of a kind fail at
start-up naming both. Kinds of a tutorial's own, not appstack's."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from appstack.runtime.cache import ByObject
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
from appstack.sdk.kit.caching import cache_policy
from appstack.sdk.kit.meta import child_selector
from appstack.sdk.kit.namespaces import NAMESPACES

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
