"""Deletion and data (issue #11, section 3): generated credentials live as long as the
volume they open; teardown waits for a consumer's pods before deleting what it uses; a
child that cannot be deleted backs off and is named in the stack's status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from appstack.api.namespaces import ENABLED
from appstack.controllers.appstack import APP_STACK
from appstack.runtime.client import Client
from appstack.runtime.informer import FuncHandler, Informer
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    EVENT,
    NAMESPACE,
    POD,
    PVC,
    SECRET,
    STATEFUL_SET,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import (
    RunningOperator,
    absent,
    events_of,
    start_operator,
    until,
)
from tests.e2e.test_appstack import _stack


def _ready(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def _until_gone(
    client: Client, resource: Any, name: str, namespace: str, timeout: float = 120
) -> None:
    """Wait until ``resource`` ``namespace/name`` is deleted."""
    await eventually(
        lambda: absent(client, resource, name, namespace),
        timeout=timeout,
        what=f"{resource.kind} {name} deleted",
        interval=0.2,
    )


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
    refs = {
        e["valueFrom"]["secretKeyRef"]["name"]
        for e in env
        if "secretKeyRef" in e.get("valueFrom", {})  # not POD_IP (fieldRef)
    }
    assert refs == {"keep-db-credentials"}


def _owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or []]


async def test_flipping_retain_on_delete_moves_the_credentials_with_the_volumes(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """Issue #28 P1.6: the credentials (and mongodb's keyfile) follow ``retainOnDelete`` when
    it flips — owned by the stack exactly while its volumes go with the StatefulSet — with no
    ``SecretConflict`` and the password unchanged; deleting the stack then takes them."""

    def spec(retain: bool) -> dict[str, Any]:
        storage = {"storage": {"retainOnDelete": retain}}
        return {
            "middleware": [{"name": "db", "type": "mongodb", "managed": storage}],
            "components": [{"name": "app", "image": "app:1", "uses": ["db"]}],
        }

    await client.create(APP_STACK, _stack("flip", namespace, **spec(True)))
    stack = await until(client, APP_STACK, "flip", namespace, _ready, 120, "the stack")
    uid = stack["metadata"]["uid"]
    names = ("flip-db-credentials", "flip-db-keyfile")
    original = {n: await client.get(SECRET, n, namespace) for n in names}
    assert all(_owner_uids(s) == [] for s in original.values())

    async def secrets_owned(owned: bool) -> None:
        for name in names:
            await until(
                client,
                SECRET,
                name,
                namespace,
                lambda s: _owner_uids(s) == ([uid] if owned else []),
                60,
                f"{name} {'owned by' if owned else 'apart from'} the stack",
            )
        policy = "Delete" if owned else "Retain"
        await until(
            client,
            STATEFUL_SET,
            "flip-db",
            namespace,
            lambda s: s["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == policy,
            60,
            f"the volumes' policy {policy}",
        )

    for retain in (False, True, False):
        await client.patch(APP_STACK, "flip", {"spec": spec(retain)}, namespace=namespace)
        await secrets_owned(not retain)
        stack = await until(client, APP_STACK, "flip", namespace, _ready, 60, "Ready again")
    for name, before in original.items():
        after = await client.get(SECRET, name, namespace)
        assert after["data"] == before["data"]  # the same password, the same key
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
    events, _ = await client.list(EVENT, namespace)
    assert not [e for e in events if e.get("reason") == "SecretConflict"]
    await client.delete(APP_STACK, "flip", namespace)
    for name in names:
        await _until_gone(client, SECRET, name, namespace)


HOLD = "test.appstack.dev/hold"


def _ready_reason(obj: dict[str, Any]) -> tuple[str, str]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready":
            return c["reason"], c["message"]
    return "", ""


async def _set_finalizers(client: Client, resource: Any, obj: dict[str, Any], f: list[str]) -> None:
    meta = obj["metadata"]
    await client.patch(
        resource, meta["name"], {"metadata": {"finalizers": f}}, namespace=meta["namespace"]
    )


async def test_teardown_waits_for_a_consumers_pods_before_deleting_what_it_uses(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    spec = {
        "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
        "components": [{"name": "app", "image": "app:1", "replicas": 2, "uses": ["db"]}],
    }
    await client.create(APP_STACK, _stack("order", namespace, **spec))
    await until(client, APP_STACK, "order", namespace, _ready, 120, "the stack")
    pods, _ = await client.list(POD, namespace, label_selector="appstack.dev/member=app")
    assert len(pods) == 2
    for pod in pods:  # the app's pods take their time to go
        await _set_finalizers(client, POD, pod, [HOLD])
    timeline = PodTimeline(client, namespace)
    await timeline.informer.wait_synced()

    await client.delete(APP_STACK, "order", namespace)
    stack = await until(
        client,
        APP_STACK,
        "order",
        namespace,
        lambda s: _ready_reason(s)[0] == "DeletionBlocked",
        90,
        "the teardown to report what it waits for",
    )
    assert "Deployment order-app" in _ready_reason(stack)[1]
    sts = await client.get(STATEFUL_SET, "order-db", namespace)
    assert "deletionTimestamp" not in sts["metadata"]  # the db waits for the app's pods

    for pod in pods:
        await _set_finalizers(
            client, POD, await client.get(POD, pod["metadata"]["name"], namespace), []
        )
    await _until_gone(client, APP_STACK, "order", namespace)
    await timeline.stop()
    assert len(timeline.app_pods_gone) == 2
    assert timeline.db_deleting is not None
    assert timeline.app_pods_when_db_deleting == 0  # the db went only once the pods were gone


class PodTimeline:
    """When the app's pods were deleted, when the db StatefulSet began to go, and how many
    of the app's pods the API still held at that moment (a read made right after the
    StatefulSet's change arrives: two watches deliver in no common order, so their arrival
    times alone cannot say which came first)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.app_pods_gone: list[float] = []
        self.db_deleting: float | None = None
        self.app_pods_when_db_deleting: int | None = None
        self.reads: list[asyncio.Future[None]] = []
        self.informer = Informer(client, POD, namespace=namespace)
        self.informer.add_handler(FuncHandler(delete=self._pod_gone))
        self.sets = Informer(client, STATEFUL_SET, namespace=namespace)
        self.sets.add_handler(
            FuncHandler(update=lambda _o, n: self._set(n), delete=lambda o: self._set(o, True))
        )
        self.tasks = [asyncio.ensure_future(i.run()) for i in (self.informer, self.sets)]

    def _pod_gone(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("labels", {}).get("appstack.dev/member") == "app":
            self.app_pods_gone.append(time.monotonic())

    def _set(self, sts: dict[str, Any], deleted: bool = False) -> None:
        if (deleted or sts["metadata"].get("deletionTimestamp")) and self.db_deleting is None:
            self.db_deleting = time.monotonic()
            self.reads.append(asyncio.ensure_future(self._count_app_pods()))

    async def _count_app_pods(self) -> None:
        pods, _ = await self.client.list(
            POD, self.namespace, label_selector="appstack.dev/member=app"
        )
        self.app_pods_when_db_deleting = len(pods)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.reads)


@pytest.fixture
async def slow_resync_operator(
    operator_kubeconfig: Path, namespace: str
) -> AsyncIterator[RunningOperator]:
    """The operator with its production options (the default sync period), so that every
    look at a stack is one it asked for."""
    running = await start_operator(operator_kubeconfig, namespace, controllers={})
    yield running
    await running.stop()


async def test_a_child_held_by_a_foreign_finalizer_is_named_and_polled_with_backoff(
    client: Client, namespace: str, slow_resync_operator: RunningOperator
) -> None:
    operator = slow_resync_operator
    spec = {"components": [{"name": "app", "image": "app:1"}]}
    await client.create(APP_STACK, _stack("held", namespace, **spec))
    await until(client, APP_STACK, "held", namespace, _ready, 60, "the stack")
    deployment = await client.get(DEPLOYMENT, "held-app", namespace)
    await _set_finalizers(client, DEPLOYMENT, deployment, [HOLD])

    await client.delete(APP_STACK, "held", namespace)
    stack = await until(
        client,
        APP_STACK,
        "held",
        namespace,
        lambda s: _ready_reason(s)[0] == "DeletionBlocked",
        90,
        "the stack to name what blocks its deletion",
    )
    assert _ready_reason(stack)[1] == (
        f"Deployment held-app (finalizers: {HOLD}) is marked for deletion but does not go"
    )
    await events_of(client, namespace, "DeletionBlocked", type_="Warning")
    # Blocked for 15 s already: the next looks are seconds apart (a quarter of the time
    # waited), not the half-second of a wave in progress. (The first look counted may be
    # the one our own status write triggered; after it, three scheduled looks.)
    first = operator.reconciles("appstack")
    await eventually(
        lambda: operator.reconciles("appstack") >= first + 1, timeout=60, what="a look"
    )
    start, looked = time.monotonic(), operator.reconciles("appstack")
    await eventually(
        lambda: operator.reconciles("appstack") >= looked + 3, timeout=90, what="3 looks"
    )
    assert time.monotonic() - start >= 6.0

    current = await client.get(DEPLOYMENT, "held-app", namespace)
    await _set_finalizers(client, DEPLOYMENT, current, [])
    await _until_gone(client, APP_STACK, "held", namespace)


async def test_an_object_elsewhere_naming_the_stack_as_owner_does_not_hold_its_teardown(
    client: Client, namespace: str, operator_kubeconfig: Path
) -> None:
    """Issue #28 P1.3: an object in another namespace (team-a), with a finalizer and an
    ownerReference naming this namespace's AppStack uid, is not the stack's child: deleting
    the stack (and so its namespace) is not held up by it."""
    other = f"{namespace[:40]}-other"
    await client.create(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": other, "labels": {ENABLED: "true"}},
        },
    )
    running = await start_operator(operator_kubeconfig, namespace, also_watch=(other,))
    decoy: dict[str, Any] = {}
    try:
        spec = {"components": [{"name": "app", "image": "app:1"}]}
        await client.create(APP_STACK, _stack("shop", namespace, **spec))
        stack = await until(client, APP_STACK, "shop", namespace, _ready, 60, "the stack")
        ref = {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppStack",
            "name": "shop",
            "uid": stack["metadata"]["uid"],
            "controller": True,
        }
        meta = {
            "name": "shop-app",
            "namespace": other,
            "finalizers": [HOLD],
            "ownerReferences": [ref],
        }
        decoy = await client.create(
            CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
        )
        await client.delete(APP_STACK, "shop", namespace)
        await _until_gone(client, APP_STACK, "shop", namespace)
    finally:
        await running.stop()
        if decoy:
            await _set_finalizers(client, CONFIG_MAP, decoy, [])
        await client.delete(NAMESPACE, other)
