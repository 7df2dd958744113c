"""The runtime client against the real API server: verbs, pagination, SSA, typed errors."""

from __future__ import annotations

import pytest

from appstack.runtime import errors
from appstack.runtime.client import Client, WatchStalled
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, Resource


def _cm(name: str, namespace: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


async def test_create_get_and_a_paginated_list_return_plain_dicts(
    client: Client, namespace: str
) -> None:
    for i in range(7):
        await client.create(CONFIG_MAP, _cm(f"cm-{i}", namespace, index=str(i)))

    got = await client.get(CONFIG_MAP, "cm-3", namespace)
    items, resource_version = await client.list(CONFIG_MAP, namespace, page_size=3)

    assert got["data"] == {"index": "3"}
    assert isinstance(got, dict)
    names = sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("cm-"))
    assert names == [f"cm-{i}" for i in range(7)]
    assert int(resource_version) > 0


async def test_errors_are_typed_and_invalid_objects_name_the_field(
    client: Client, namespace: str
) -> None:
    with pytest.raises(errors.NotFound):
        await client.get(CONFIG_MAP, "missing", namespace)

    await client.create(CONFIG_MAP, _cm("twice", namespace))
    with pytest.raises(errors.AlreadyExists):
        await client.create(CONFIG_MAP, _cm("twice", namespace))

    with pytest.raises(errors.Invalid) as caught:
        await client.create(CONFIG_MAP, _cm("Not_A_Valid_Name", namespace))
    assert [c.field for c in caught.value.causes] == ["metadata.name"]

    with pytest.raises(errors.Invalid) as caught:
        await client.create(
            DEPLOYMENT,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "bad", "namespace": namespace},
                "spec": {
                    "replicas": -1,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            },
        )
    assert "spec.replicas" in {c.field for c in caught.value.causes}


async def test_server_side_apply_owns_fields_conflicts_and_forces(
    client: Client, namespace: str
) -> None:
    applied = await client.apply(CONFIG_MAP, _cm("ssa", namespace, key="ours"))
    managers = {m["manager"] for m in applied["metadata"]["managedFields"]}
    assert managers == {"appstack"}

    with pytest.raises(errors.Conflict) as caught:
        await client.apply(
            CONFIG_MAP, _cm("ssa", namespace, key="theirs"), force=False, field_manager="other"
        )
    assert "appstack" in caught.value.message

    taken = await client.apply(
        CONFIG_MAP, _cm("ssa", namespace, key="theirs"), field_manager="other"
    )
    assert taken["data"] == {"key": "theirs"}


async def test_status_is_patched_through_the_status_subresource_only(
    client: Client, namespace: str, widget_crd: Resource
) -> None:
    widget = {
        "apiVersion": widget_crd.api_version,
        "kind": widget_crd.kind,
        "metadata": {"name": "w", "namespace": namespace},
        "spec": {"min": 1, "max": 2},
        "status": {"phase": "ignored-on-create"},
    }
    created = await client.create(widget_crd, widget)
    assert "status" not in created

    patched = await client.patch_status(widget_crd, "w", {"phase": "Ready"}, namespace=namespace)

    assert patched["status"] == {"phase": "Ready"}
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]


async def test_delete_reports_whether_something_was_deleted(client: Client, namespace: str) -> None:
    created = await client.create(CONFIG_MAP, _cm("gone", namespace))
    with pytest.raises(errors.Conflict):  # a precondition on another uid protects a successor
        await client.delete(
            CONFIG_MAP, "gone", namespace, uid="00000000-0000-0000-0000-000000000000"
        )

    assert await client.delete(CONFIG_MAP, "gone", namespace, uid=created["metadata"]["uid"])
    assert not await client.delete(CONFIG_MAP, "gone", namespace)

    # Foreground: the object stays (finalizer foregroundDeletion) until the GC is done.
    await client.create(CONFIG_MAP, _cm("foreground", namespace))
    assert await client.delete(CONFIG_MAP, "foreground", namespace, propagation="Foreground")


async def test_a_watch_that_stays_silent_past_the_inactivity_timeout_is_reported_stalled(
    client: Client, namespace: str
) -> None:
    _, resource_version = await client.list(CONFIG_MAP, namespace)
    with pytest.raises(WatchStalled):
        async for _event in client.watch(
            CONFIG_MAP,
            namespace,
            resource_version=resource_version,
            timeout_seconds=60,
            inactivity_timeout=1.0,
        ):
            pass


async def test_requests_are_counted_by_code_and_method(client: Client, namespace: str) -> None:
    await client.create(CONFIG_MAP, _cm("counted", namespace))
    with pytest.raises(errors.NotFound):
        await client.get(CONFIG_MAP, "nope", namespace)

    text = client.metrics.exposition().decode()
    assert 'rest_client_requests_total{code="201",host=' in text
    assert 'code="404"' in text
    assert 'method="GET"' in text
