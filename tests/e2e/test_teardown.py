"""Deletion and data (issue #11, section 3): generated credentials live as long as the
volume they open; teardown waits for a consumer's pods before deleting what it uses; a
child that cannot be deleted backs off and is named in the stack's status."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from appstack.controllers.appstack import APP_STACK
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import PVC, SECRET, STATEFUL_SET
from tests.e2e.conftest import RunningOperator, until


def _stack(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _ready(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def _until_gone(
    client: Client, resource: Any, name: str, namespace: str, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await client.get(resource, name, namespace)
        except errors.NotFound:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{resource.kind} {name} was not deleted within {timeout}s")


async def test_a_recreated_stack_gets_the_original_credentials_of_its_retained_volume(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    spec = {
        "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
        "components": [{"name": "app", "image": "app:1", "uses": ["db"]}],
    }
    await client.create(APP_STACK, _stack("keep", namespace, **spec))
    await until(client, APP_STACK, "keep", namespace, _ready, 120, "the stack")
    original = await client.get(SECRET, "keep-db-credentials", namespace)
    (claim,) = (await client.list(PVC, namespace))[0]

    await client.delete(APP_STACK, "keep", namespace)
    await _until_gone(client, STATEFUL_SET, "keep-db", namespace)
    await _until_gone(client, APP_STACK, "keep", namespace)
    kept = await client.get(SECRET, "keep-db-credentials", namespace)
    assert kept["metadata"]["uid"] == original["metadata"]["uid"]  # not garbage-collected

    await client.create(APP_STACK, _stack("keep", namespace, **spec))
    await until(client, APP_STACK, "keep", namespace, _ready, 120, "the re-created stack")
    again = await client.get(SECRET, "keep-db-credentials", namespace)
    assert again["metadata"]["uid"] == original["metadata"]["uid"]
    assert again["data"] == original["data"]  # the database's password is unchanged
    (same_claim,) = (await client.list(PVC, namespace))[0]
    assert same_claim["metadata"]["uid"] == claim["metadata"]["uid"]
    sts = await client.get(STATEFUL_SET, "keep-db", namespace)
    env = sts["spec"]["template"]["spec"]["containers"][0]["env"]
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in env if "valueFrom" in e}
    assert refs == {"keep-db-credentials"}
