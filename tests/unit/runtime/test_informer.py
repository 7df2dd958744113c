"""What the informer caches, and what a LIST costs on the way (issue #34, "a tenant can OOM
the operator"): its strip and transform run on each object as its page (or watch event)
arrives, so a LIST of many pages never holds more than one page of objects as the server
sent them; and an informer told whose children it keeps caches any other object — one
anybody labelled as ours — as metadata only.

A client whose ``list_page`` serves fresh objects that can be weakly referenced counts, each
time the transform runs and each time a page is asked for, the objects the server sent
that are still alive with their data.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from appstack.runtime.client import Client
from appstack.runtime.informer import (
    FOREIGN_KEPT,
    FOREIGN_METADATA,
    FuncHandler,
    Informer,
    foreign_metadata,
)
from appstack.runtime.resources import CONFIG_MAP, Obj, Resource
from appstack.runtime.watcher import Applied, Restarted
from tests.support.scripted_transport import ScriptedTransport, event

OWNER = Resource("example.com", "v1", "Widget", "widgets")
BLOB = "x" * 4096  # an object's data, as large as the test needs it to be


class Served(dict[str, Any]):
    """An object as the server sent it: a dict that can be weakly referenced."""


class PagedClient(Client):
    """Serves ``pages`` (lists of names) of fresh ConfigMaps with data; remembers each
    object it served, weakly, and how many of them were alive with their data when each
    page was asked for."""

    def __init__(self, pages: list[list[str]], owner: dict[str, Any] | None = None) -> None:
        super().__init__(ScriptedTransport())
        self.pages = pages
        self.owner = owner
        self.served: list[weakref.ref[Served]] = []
        self.held_when_asked: list[int] = []

    def untransformed(self) -> int:
        """Objects served and alive that still carry their data."""
        return sum(1 for ref in self.served if (obj := ref()) is not None and "data" in obj)

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
        token: str | None = None,
    ) -> tuple[list[Obj], str, str | None]:
        self.held_when_asked.append(self.untransformed())
        index = int(token or 0)
        page: list[Obj] = []
        for name in self.pages[index]:
            obj = Served(_config_map(name, owner=self.owner))
            self.served.append(weakref.ref(obj))
            page.append(obj)
        more = index + 1 < len(self.pages)
        return page, "7", str(index + 1) if more else None


def _config_map(name: str, *, owner: dict[str, Any] | None = None, rv: str = "7") -> Obj:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": rv,
        "labels": {"app.kubernetes.io/managed-by": "appstack"},
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"blob": BLOB}}


def _ref(api_version: str = "example.com/v1", kind: str = "Widget", **more: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": "w", "uid": "uid-w", **more}


CONTROLLER = _ref(controller=True)


async def _list(informer: Informer) -> None:
    """Run ``informer`` until its first LIST is delivered."""
    task = asyncio.ensure_future(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), timeout=5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _drop_data(seen: list[int], client: PagedClient) -> Callable[[Obj], Obj]:
    """A transform that drops an object's data, noting how many served objects still had
    theirs when it was called."""

    def transform(obj: Obj) -> Obj:
        seen.append(client.untransformed())
        obj.pop("data", None)
        return obj

    return transform


PAGES = [[f"cm-{p}-{i}" for i in range(3)] for p in range(4)]  # 4 pages of 3


async def test_a_list_holds_at_most_one_page_of_untransformed_objects() -> None:
    client = PagedClient(PAGES, owner=CONTROLLER)
    seen: list[int] = []
    informer = Informer(client, CONFIG_MAP, transform=_drop_data(seen, client), page_size=3)

    await _list(informer)

    assert len(informer.store) == 12
    assert len(seen) == 12  # each object transformed once, not twice
    assert max(seen) <= 3  # never more than the page being prepared
    assert client.held_when_asked == [0, 0, 0, 0]  # nothing untransformed between pages
    assert "data" not in (informer.store.get("ns/cm-3-2") or {"data": 1})


async def test_a_list_of_objects_kept_as_metadata_only_frees_each_page_before_the_next() -> None:
    client = PagedClient(PAGES)  # no owner: foreign
    informer = Informer(client, CONFIG_MAP, page_size=3)
    informer.keep_children_of(OWNER)

    await _list(informer)

    assert len(informer.store) == 12
    assert client.held_when_asked == [0, 0, 0, 0]
    assert client.untransformed() == 0  # none of what was served is held
    stored = informer.store.get("ns/cm-0-0")
    assert stored is not None
    assert "data" not in stored


def test_an_object_not_controlled_by_an_owner_kind_is_kept_as_metadata_only() -> None:
    client = PagedClient([])
    informer = Informer(client, CONFIG_MAP, managed_by="appstack")
    informer.keep_children_of(OWNER)
    informer.keep_children_of(Resource("other.org", "v2", "Gadget", "gadgets"))
    annotated = _config_map("a")
    annotated["metadata"].update(
        generation=3,
        creationTimestamp="2026-01-01T00:00:00Z",
        deletionTimestamp="2026-01-02T00:00:00Z",
        finalizers=["x/y"],
        annotations={
            "example.com/cluster-uid": "u1",
            "other.org/kept": "too",
            "kubectl.kubernetes.io/last-applied-configuration": BLOB,
            "example.community/not": "a prefix of ours",
        },
    )

    kept = informer._prepare(annotated)

    assert kept == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "uid-a",
            "resourceVersion": "7",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-02T00:00:00Z",
            "labels": {"app.kubernetes.io/managed-by": "appstack"},
            "annotations": {"example.com/cluster-uid": "u1", "other.org/kept": "too"},
        },
    }
    assert set(kept["metadata"]) <= {*FOREIGN_METADATA, "labels", "annotations"}
    not_ours = [
        _ref(),  # an owner, not the controller
        _ref("example.com/v2", controller=True),  # another version is another kind
        _ref("apps/v1", "ReplicaSet", controller=True),
        _ref("other.org/v2", "Widget", controller=True),
    ]
    for ref in not_ours:
        obj = informer._prepare(_config_map("b", owner=ref))
        assert "data" not in obj, ref
        assert obj["metadata"]["ownerReferences"] == [ref]  # who owns it stays known
    for ref in (CONTROLLER, _ref("other.org/v2", "Gadget", controller=True)):
        full = informer._prepare(_config_map("c", owner=ref))
        assert full["data"] == {"blob": BLOB}
        assert "managedFields" not in full["metadata"]  # stripped as any kept object


def test_foreign_metadata_keeps_no_annotation_without_a_prefix() -> None:
    obj = _config_map("a")
    obj["metadata"]["annotations"] = {"a": "b"}
    assert foreign_metadata(obj)["metadata"].keys() == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "labels",
    }
    assert obj["data"] == {"blob": BLOB}  # the object itself is left as it was


def test_foreign_metadata_keeps_few_labels_and_only_under_the_known_prefixes() -> None:
    """Issue #46: a tenant's ConfigMap labelled as ours with 1.3 MB of labels was kept
    whole in the cache (its labels): now at most FOREIGN_KEPT of them, under the
    recommended prefix or the owners' groups (what adopting a kept child compares)."""
    obj = _config_map("a")
    stuffed = {f"example.com/x{i:05d}": "v" * 63 for i in range(10_000)}
    obj["metadata"]["labels"] |= stuffed | {"tenant.example/y": "z"}
    obj["metadata"]["annotations"] = stuffed | {"kubectl.kubernetes.io/last-applied": "{}"}
    kept = foreign_metadata(obj, ["example.com/"])["metadata"]
    assert len(kept["labels"]) == FOREIGN_KEPT
    assert kept["labels"]["app.kubernetes.io/managed-by"] == "appstack"
    assert "tenant.example/y" not in kept["labels"]
    assert len(kept["annotations"]) == FOREIGN_KEPT
    assert all(key.startswith("example.com/") for key in kept["annotations"])


def test_watch_events_are_kept_in_full_once_controlled_and_handlers_see_both() -> None:
    client = PagedClient([])
    informer = Informer(client, CONFIG_MAP)
    informer.keep_children_of(OWNER)
    updates: list[tuple[Obj, Obj]] = []
    informer.add_handler(FuncHandler(update=lambda old, new: updates.append((old, new))))
    informer._deliver(Restarted([informer._prepare(_config_map("a"))], "7"))
    adopted = _config_map("a", owner=CONTROLLER, rv="8")
    informer._deliver(Applied(informer._prepare(adopted)))

    ((before, after),) = updates
    assert "data" not in before
    assert after["data"] == {"blob": BLOB}


async def test_watched_objects_are_prepared_as_each_event_arrives() -> None:
    client = PagedClient([["a"]])
    transport = client.transport
    assert isinstance(transport, ScriptedTransport)
    transport.stream(event("ADDED", _config_map("b", rv="8")), hold=True)
    informer = Informer(client, CONFIG_MAP, page_size=3)
    informer.keep_children_of(OWNER)
    task = asyncio.ensure_future(informer.run())
    for _ in range(1000):
        if "ns/b" in informer.store:
            break
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    stored = informer.store.get("ns/b")
    assert stored is not None
    assert "data" not in stored


def test_every_object_is_kept_in_full_by_default_and_owners_are_told_before_the_first_list() -> (
    None
):
    informer = Informer(PagedClient([]), CONFIG_MAP)
    assert informer.owners is None  # by default: every object in full
    assert informer._prepare(_config_map("a"))["data"] == {"blob": BLOB}
    informer._deliver(Restarted([], "7"))
    with pytest.raises(RuntimeError):
        informer.keep_children_of(OWNER)
