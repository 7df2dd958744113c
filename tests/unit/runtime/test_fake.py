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
    SERVICE,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    FakeApiServer,
    NotFound,
    Resource,
    unserved,
)
from tests.support.ssa_scenarios import SCENARIOS, play

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


# --------------------------------------------- server-side apply of lists of type map
def _deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": list(containers)}}},
    }


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers


async def test_containers_env_and_ports_are_merged_by_their_keys_and_co_owned() -> None:
    client = await _client()
    other = Client(client.transport, field_manager="sidecar-injector")
    app = {
        "name": "app",
        "image": "app:1",
        "env": [{"name": "X", "value": "1"}],
        "ports": [{"containerPort": 80}],
    }
    await client.apply(DEPLOYMENT, _deployment(app))
    await other.apply(DEPLOYMENT, _deployment({"name": "sidecar", "image": "proxy:1"}))
    got = await client.get(DEPLOYMENT, "d", "ns")
    assert [c["name"] for c in _containers(got)] == ["app", "sidecar"]

    # the other manager adds to "app" (its env Z, its UDP port 80): no conflict, co-owned
    more = {
        "name": "app",
        "env": [{"name": "Z", "value": "3"}],
        "ports": [{"containerPort": 80, "protocol": "UDP"}],
    }
    await other.apply(DEPLOYMENT, _deployment(more, {"name": "sidecar", "image": "proxy:1"}))
    # this one changes its env (X gone, Y new) and states its port's default protocol
    app = {
        **app,
        "env": [{"name": "Y", "value": "2"}],
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
    }
    await client.apply(DEPLOYMENT, _deployment(app))
    (mine, sidecar) = _containers(await client.get(DEPLOYMENT, "d", "ns"))
    assert mine["image"] == "app:1"
    assert sorted(e["name"] for e in mine["env"]) == ["Y", "Z"]
    assert len(mine["ports"]) == 2  # 80/TCP once (TCP is the default), 80/UDP
    assert sidecar == {"name": "sidecar", "image": "proxy:1"}

    with pytest.raises(Conflict, match=r'\.spec\.template\.spec\.containers\[name="app"\]\.image'):
        await other.apply(DEPLOYMENT, _deployment({"name": "app", "image": "app:2"}), force=False)

    # the other stops applying its sidecar: gone; this one stops applying "app": its fields
    # go, the container stays with what the other still applies in it
    await other.apply(DEPLOYMENT, _deployment(more))
    await client.apply(DEPLOYMENT, _deployment({"name": "web", "image": "web:1"}))
    containers = _containers(await client.get(DEPLOYMENT, "d", "ns"))
    assert {c["name"]: c for c in containers} == {
        "app": {"name": "app", "env": [{"name": "Z", "value": "3"}], "ports": more["ports"]},
        "web": {"name": "web", "image": "web:1"},
    }


async def test_owner_references_are_merged_by_uid_for_every_kind() -> None:
    client = await _client(WIDGET)
    other = Client(client.transport, field_manager="someone")

    def widget(*uids: str) -> dict[str, Any]:
        refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": u, "uid": u} for u in uids]
        meta = {"name": "w", "namespace": "ns", "ownerReferences": refs}
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}

    await client.apply(WIDGET, widget("a"))
    await other.apply(WIDGET, widget("b"))
    got = await client.get(WIDGET, "w", "ns")
    assert [r["uid"] for r in got["metadata"]["ownerReferences"]] == ["a", "b"]
    await client.apply(WIDGET, widget())
    got = await client.get(WIDGET, "w", "ns")
    assert [r["uid"] for r in got["metadata"]["ownerReferences"]] == ["b"]


async def test_a_services_ports_are_keyed_by_port_and_protocol() -> None:
    client = await _client()
    other = Client(client.transport, field_manager="someone")

    def service(*ports: dict[str, Any]) -> dict[str, Any]:
        meta = {"name": "s", "namespace": "ns"}
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"ports": list(ports)},
        }

    await client.apply(SERVICE, service({"port": 53, "name": "dns"}))
    await other.apply(SERVICE, service({"port": 53, "protocol": "UDP", "name": "dns-udp"}))
    got = await client.get(SERVICE, "s", "ns")
    assert [p["name"] for p in got["spec"]["ports"]] == ["dns", "dns-udp"]


async def test_status_conditions_are_merged_by_type() -> None:
    client = await _client()
    other = Client(client.transport, field_manager="someone")
    await client.apply(DEPLOYMENT, _deployment({"name": "app", "image": "app:1"}))

    def status(*types: str) -> dict[str, Any]:
        conditions = [{"type": t, "status": "True"} for t in types]
        return {**_deployment(), "status": {"conditions": conditions}}

    await client.apply(DEPLOYMENT, status("Available"), subresource="status")
    await other.apply(DEPLOYMENT, status("Audited"), subresource="status")
    got = await client.get(DEPLOYMENT, "d", "ns")
    assert [c["type"] for c in got["status"]["conditions"]] == ["Available", "Audited"]


async def test_a_custom_kinds_lists_and_merge_patches_stay_atomic() -> None:
    client = await _client(WIDGET)
    other = Client(client.transport, field_manager="someone")

    def widget(*names: str) -> dict[str, Any]:
        spec = {"containers": [{"name": n} for n in names]}
        meta = {"name": "w", "namespace": "ns"}
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta, "spec": spec}

    await client.apply(WIDGET, widget("a"))
    with pytest.raises(Conflict, match=r"\.spec\.containers"):  # its schema is not known
        await other.apply(WIDGET, widget("b"), force=False)
    await client.apply(DEPLOYMENT, _deployment({"name": "app", "image": "app:1"}))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "new"}]}}}}
    await client.patch(DEPLOYMENT, "d", patch, namespace="ns")  # JSON merge patch: replaced
    assert _containers(await client.get(DEPLOYMENT, "d", "ns")) == [{"name": "new"}]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_server_side_apply_scenarios_end_as_on_the_api_server(name: str) -> None:
    """The same scenarios tests/e2e/test_fake_parity.py plays on the real API server."""
    scenario = SCENARIOS[name]
    client = await _client()
    assert await play(client, "ns", scenario) == scenario.expected
