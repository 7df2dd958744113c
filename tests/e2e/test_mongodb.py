"""Managed mongodb end to end, Kubernetes side (mongod itself does not run on the test bed:
kwok marks pods ready): the replica set's objects, consumers started after every member is
ready with the connection string injected, scaling 3 -> 5 -> 3 without touching the pods'
template, volumes kept after a scale-down and after deletion, generated Secrets stable,
and what admission refuses."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from appstack.controllers.appstack import APP_STACK
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    PDB,
    PVC,
    SECRET,
    SERVICE,
    STATEFUL_SET,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, until
from tests.e2e.test_appstack import Timeline, _ready, _stack

SECRETS = ("shop-orders-credentials", "shop-orders-keyfile")


def _spec(replicas: int) -> dict[str, Any]:
    return {
        "middleware": [{"name": "orders", "type": "mongodb", "managed": {"replicas": replicas}}],
        "components": [{"name": "api", "image": "api:1", "uses": ["orders"]}],
    }


async def _scale(client: Client, namespace: str, replicas: int) -> dict[str, Any]:
    await client.patch(APP_STACK, "shop", namespace=namespace, patch={"spec": _spec(replicas)})
    return await until(
        client,
        STATEFUL_SET,
        "shop-orders",
        namespace,
        lambda s: (
            s["spec"]["replicas"] == replicas
            and (s.get("status") or {}).get("readyReplicas") == replicas
            and s["status"].get("updatedReplicas") == replicas
        ),
        180,
        f"{replicas} members ready",
    )


async def _members(client: Client, namespace: str) -> list[str]:
    cm = await client.get(CONFIG_MAP, "shop-orders-replicaset", namespace)
    return [m["host"] for m in json.loads(cm["data"][boot.CONFIG_KEY])["members"]]


async def _claims(client: Client, namespace: str) -> list[str]:
    claims, _ = await client.list(PVC, namespace)
    return sorted(c["metadata"]["name"] for c in claims)


async def _secrets(client: Client, namespace: str) -> dict[str, tuple[str, str]]:
    out = {}
    for name in SECRETS:
        meta = (await client.get(SECRET, name, namespace))["metadata"]
        out[name] = (meta["uid"], meta["resourceVersion"])
    return out


def _hosts(namespace: str, n: int) -> list[str]:
    return [f"shop-orders-{i}.shop-orders-hl.{namespace}.svc:27017" for i in range(n)]


def _uri_lists(namespace: str, n: int) -> Any:
    hosts = ",".join(_hosts(namespace, n))

    def check(deployment: dict[str, Any]) -> bool:
        env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        uri = next(e["value"] for e in env if e["name"] == "ORDERS_URI")
        return f"@{hosts}/" in str(uri)

    return check


async def _check_objects(client: Client, namespace: str, stack: dict[str, Any]) -> dict[str, Any]:
    """The replica set's objects; Secrets only referenced, never copied. The StatefulSet."""
    sts = await client.get(STATEFUL_SET, "shop-orders", namespace)
    assert sts["spec"]["serviceName"] == "shop-orders-hl"
    headless = await client.get(SERVICE, "shop-orders-hl", namespace)
    assert headless["spec"]["clusterIP"] == "None"
    assert await _claims(client, namespace) == [f"data-shop-orders-{i}" for i in range(3)]
    assert await _members(client, namespace) == _hosts(namespace, 3)

    # Secrets: generated, referenced, never copied into the pod template or the status.
    credentials = await client.get(SECRET, SECRETS[0], namespace)
    keyfile = await client.get(SECRET, SECRETS[1], namespace)
    visible = json.dumps([sts, stack.get("status")])
    for secret in (credentials, keyfile):
        for key, value in secret["data"].items():
            if key == "username":  # "app": not a secret
                continue
            assert value not in visible, key
            assert len(value) > 16, key
    api = await client.get(DEPLOYMENT, "shop-api", namespace)
    env = {e["name"]: e for e in api["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ORDERS_USERNAME"]["valueFrom"]["secretKeyRef"]["name"] == SECRETS[0]
    assert env["ORDERS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "password"
    assert env["ORDERS_URI"]["value"] == (
        "mongodb://$(ORDERS_USERNAME):$(ORDERS_PASSWORD)@"
        + ",".join(_hosts(namespace, 3))
        + "/app?replicaSet=shop-orders&authSource=admin"
    )
    return sts


def _majority(n: int) -> Callable[[dict[str, Any]], bool]:
    """The replica set's PodDisruptionBudget keeps ``n`` members through node drains."""
    return lambda budget: budget["spec"]["minAvailable"] == n


async def test_a_mongodb_replica_set_starts_before_its_consumers_scales_and_keeps_its_data(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    timeline = Timeline(client, namespace)
    await asyncio.gather(*(i.wait_synced() for i in timeline.informers))
    await client.create(APP_STACK, _stack("shop", namespace, **_spec(3)))
    done = await until(client, APP_STACK, "shop", namespace, _ready, 180, "all members Ready")
    await timeline.stop()

    # Ordering: the consumer's Deployment appears only once all three members are ready.
    assert "orders" in timeline.ready_when_added["api"]
    orders = next(m for m in done["status"]["members"] if m["name"] == "orders")
    assert (orders["kind"], orders["ready"]) == ("Middleware/mongodb", "3/3")

    sts = await _check_objects(client, namespace, done)
    secrets = await _secrets(client, namespace)

    # Scaling: the members' list follows, the pods' template (hence the running members) not.
    revision = sts["status"]["updateRevision"]
    five = await _scale(client, namespace, 5)
    assert five["status"]["updateRevision"] == revision
    assert await _members(client, namespace) == _hosts(namespace, 5)
    assert await _claims(client, namespace) == [f"data-shop-orders-{i}" for i in range(5)]
    # Consumers follow once the new members are ready (drivers find the members from any
    # one of them; the list keeps the URI honest).
    await until(client, DEPLOYMENT, "shop-api", namespace, _uri_lists(namespace, 5), 60, "URI")
    await until(client, PDB, "shop-orders", namespace, _majority(3), 60, "a budget of 3 of 5")

    three = await _scale(client, namespace, 3)
    assert three["status"]["updateRevision"] == revision
    assert await _members(client, namespace) == _hosts(namespace, 3)
    await until(client, DEPLOYMENT, "shop-api", namespace, _uri_lists(namespace, 3), 60, "URI")
    # Scaled-down members' volumes stay (whenScaled: Retain): scaling up again reuses them.
    assert await _claims(client, namespace) == [f"data-shop-orders-{i}" for i in range(5)]
    await until(client, APP_STACK, "shop", namespace, _ready, 120, "Ready at 3 members")
    await until(client, PDB, "shop-orders", namespace, _majority(2), 60, "a budget of 2 of 3")
    assert await _secrets(client, namespace) == secrets  # generated once, never rewritten

    # Shrinking below a majority in one change is refused, with the field named.
    with pytest.raises(errors.Invalid) as caught:
        await client.patch(APP_STACK, "shop", namespace=namespace, patch={"spec": _spec(1)})
    assert "spec.middleware[0].managed.replicas" in caught.value.message
    assert "more than half of its members" in caught.value.message

    # Deleting the stack keeps every member's volume and the Secrets that open them.
    await client.delete(APP_STACK, "shop", namespace)

    async def left() -> list[dict[str, Any]]:
        sets, _ = await client.list(STATEFUL_SET, namespace)
        stacks, _ = await client.list(APP_STACK, namespace)
        return sets + stacks

    await eventually(
        left,
        lambda objects: not objects,
        timeout=120,  # generous: shared CPU
        what="the stack and its StatefulSet deleted",
    )
    assert await _claims(client, namespace) == [f"data-shop-orders-{i}" for i in range(5)]
    assert await _secrets(client, namespace) == secrets

    # A re-created stack adopts them as they are.
    await client.create(APP_STACK, _stack("shop", namespace, **_spec(3)))
    await until(client, APP_STACK, "shop", namespace, _ready, 180, "Ready again")
    assert await _secrets(client, namespace) == secrets


@pytest.mark.parametrize(
    ("middleware", "field", "message"),
    [
        (
            {"name": "db", "type": "mysql", "managed": {"replicas": 3}},
            "spec.middleware[0].managed.replicas",
            "only mongodb forms a cluster in this catalog",
        ),
        (
            {"name": "cache", "type": "redis", "managed": {"replicas": 2}},
            "spec.middleware[0].managed.replicas",
            "set replicas to 1",
        ),
        (
            {"name": "db", "type": "mongodb", "managed": {"replicas": 8}},
            "spec.middleware[0].managed.replicas",
            "less than or equal to 7",
        ),
        (
            {"name": "db", "type": "mongodb", "managed": {"initScriptsConfigMap": "seed"}},
            "spec.middleware[0].managed.initScriptsConfigMap",
            "not supported for mongodb",
        ),
        (
            {"name": "db", "type": "postgres", "managed": {"configFiles": {"pg.conf": "x"}}},
            "spec.middleware[0].managed.configFiles",
            "mysql only",
        ),
        (
            {"name": "db", "type": "mysql", "managed": {"configFiles": {"my.conf": "[mysqld]"}}},
            "spec.middleware[0].managed.configFiles",
            "each named *.cnf",
        ),
    ],
)
async def test_what_an_engine_does_not_support_is_refused_at_admission(
    client: Client, namespace: str, middleware: dict[str, Any], field: str, message: str
) -> None:
    spec = {"middleware": [middleware], "components": [{"name": "app", "image": "web:1"}]}
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_STACK, _stack("bad", namespace, **spec))
    assert field in caught.value.message, caught.value.message
    assert message in caught.value.message, caught.value.message
