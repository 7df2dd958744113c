"""The in-memory API server (runtime/fake.py) through the real client: what it keeps as the
API server does — versions, generation, conflicts, server-side apply's field ownership,
the status subresource, finalizers, the garbage collector, watches with selectors,
discovery — and what it refuses rather than pretends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from appstack.runtime import (
    CONFIG_MAP,
    DEPLOYMENT,
    NAMESPACE,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    FakeApiServer,
    NotFound,
    Resource,
    unserved,
)

WIDGET = Resource("example.com", "v1", "Widget", "widgets")


async def _client(*kinds: Resource) -> Client:
    client = Client(FakeApiServer(kinds), field_manager="me")
    await client.create(NAMESPACE, {"metadata": {"name": "ns"}})
    return client


def _cm(name: str = "a", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": data,
    }


async def test_objects_get_identity_versions_and_conflicts() -> None:
    client = await _client()
    made = await client.create(CONFIG_MAP, _cm(x="1"))
    meta = made["metadata"]
    assert meta["uid"]
    assert meta["generation"] == 1
    assert meta["creationTimestamp"].endswith("Z")
    with pytest.raises(AlreadyExists):
        await client.create(CONFIG_MAP, _cm(x="2"))
    with pytest.raises(NotFound, match="namespaces"):
        await client.create(CONFIG_MAP, {**_cm(), "metadata": {"name": "a", "namespace": "no"}})
    stale = {**made, "data": {"x": "2"}}
    await client.update(CONFIG_MAP, stale)
    with pytest.raises(Conflict):
        await client.update(CONFIG_MAP, stale)  # its resourceVersion is old now
    got = await client.get(CONFIG_MAP, "a", "ns")
    assert got["metadata"]["generation"] == 2
    assert int(got["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])


async def test_server_side_apply_owns_fields_per_manager() -> None:
    client = await _client()
    await client.apply(CONFIG_MAP, _cm(mine="1", gone="1"))
    await client.patch(CONFIG_MAP, "a", {"data": {"theirs": "1"}}, namespace="ns")  # me too
    other = Client(client.transport, field_manager="someone")
    await other.patch(CONFIG_MAP, "a", {"data": {"kept": "1"}}, namespace="ns")
    await client.apply(CONFIG_MAP, _cm(mine="2"))  # no longer sets gone nor theirs
    got = await client.get(CONFIG_MAP, "a", "ns")
    # what this manager applied and stopped applying is removed; what it (or another)
    # set by a patch stays: applying manages only the applied set
    assert got["data"] == {"mine": "2", "kept": "1", "theirs": "1"}
    before = got["metadata"]["resourceVersion"]
    again = await client.apply(CONFIG_MAP, _cm(mine="2"))
    assert again["metadata"]["resourceVersion"] == before  # nothing changed: no new version
    with pytest.raises(Conflict, match=r'conflict with "me": \.data\.mine'):
        await other.apply(CONFIG_MAP, _cm(mine="3"), force=False)
    await other.apply(CONFIG_MAP, _cm(mine="3"))  # force: taken over
    assert (await client.get(CONFIG_MAP, "a", "ns"))["data"]["mine"] == "3"


async def test_the_status_subresource_is_apart_and_generation_counts_the_spec() -> None:
    client = await _client(WIDGET)
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"size": 1},
        "status": {"ignored": True},
    }
    made = await client.create(WIDGET, widget)
    assert "status" not in made
    await client.patch_status(WIDGET, "w", {"ready": True}, namespace="ns")
    await client.patch(WIDGET, "w", {"status": {"ready": False}}, namespace="ns")
    got = await client.get(WIDGET, "w", "ns")
    assert got["status"] == {"ready": True}
    assert got["metadata"]["generation"] == 1  # a status is not a spec change
    await client.patch(WIDGET, "w", {"spec": {"size": 2}}, namespace="ns")
    assert (await client.get(WIDGET, "w", "ns"))["metadata"]["generation"] == 2


async def test_finalizers_hold_deletion_and_the_garbage_collector_follows_owners() -> None:
    client = await _client()
    owner = await client.create(
        CONFIG_MAP, {**_cm("owner"), "metadata": {**_cm("owner")["metadata"], "finalizers": ["f"]}}
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    child = _cm("child")
    child["metadata"]["ownerReferences"] = [ref]
    await client.create(CONFIG_MAP, child)
    with pytest.raises(Conflict):
        await client.delete(CONFIG_MAP, "owner", "ns", uid="not-its-uid")
    await client.delete(CONFIG_MAP, "owner", "ns")
    held = await client.get(CONFIG_MAP, "owner", "ns")
    assert held["metadata"]["deletionTimestamp"]
    await client.get(CONFIG_MAP, "child", "ns")  # not yet: its owner is still there
    await client.patch(CONFIG_MAP, "owner", {"metadata": {"finalizers": None}}, namespace="ns")
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAP, "owner", "ns")
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAP, "child", "ns")


async def test_lists_and_watches_follow_label_selectors() -> None:
    client = await _client()
    labelled = _cm("in")
    labelled["metadata"]["labels"] = {"pick": "yes"}
    await client.create(CONFIG_MAP, labelled)
    await client.create(CONFIG_MAP, _cm("out"))
    items, version = await client.list(CONFIG_MAP, "ns", label_selector="pick=yes")
    assert [o["metadata"]["name"] for o in items] == ["in"]
    events: list[tuple[str, str]] = []

    async def watch() -> None:
        stream = client.watch(CONFIG_MAP, "ns", resource_version=version, label_selector="pick")
        async for event in stream:
            events.append((event["type"], event["object"]["metadata"]["name"]))
            if len(events) == 3:
                return

    watching = asyncio.create_task(watch())
    await client.patch(CONFIG_MAP, "out", {"metadata": {"labels": {"pick": "now"}}}, namespace="ns")
    await client.patch(CONFIG_MAP, "in", {"data": {"x": "1"}}, namespace="ns")
    await client.patch(CONFIG_MAP, "in", {"metadata": {"labels": None}}, namespace="ns")
    await asyncio.wait_for(watching, 5)
    assert events == [("ADDED", "out"), ("MODIFIED", "in"), ("DELETED", "in")]


async def test_discovery_says_what_is_served() -> None:
    client = await _client()
    assert await unserved(client, [CONFIG_MAP, DEPLOYMENT, WIDGET]) == [WIDGET]
    assert isinstance(client.transport, FakeApiServer)
    client.transport.serve(WIDGET)  # its CRD installed
    assert await unserved(client, [WIDGET]) == []


async def test_what_it_does_not_do_is_refused_by_name() -> None:
    client = await _client()
    await client.create(CONFIG_MAP, _cm())
    with pytest.raises(ApiError, match="not in the fake API") as refused:
        await client.patch(CONFIG_MAP, "a", [{"op": "remove", "path": "/data"}], namespace="ns",
                           patch_type="json")  # fmt: skip
    assert refused.value.code == 501
    with pytest.raises(NotFound):
        await client.get(WIDGET, "w", "ns")  # not served
