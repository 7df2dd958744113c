"""MongoDBCommunity end to end, Kubernetes side (mongod does not run on the test bed: kwok
marks the member pods ready): seed 004's sample as ``examples/mongodbcommunity.yaml`` has
it — first without its password Secret (``Ready=False`` naming it, a Warning Event, the
replica set built anyway), then with it (the user's connection-string Secret, ``Running``);
the members in the image's legacy shell for 4.2.6; ``kubectl scale mdbc``; what admission
refuses; and cascading delete."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.cli.status_kinds import collect, render
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodbcommunity import MONGODB_COMMUNITY
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    EVENT,
    PDB,
    POD,
    PVC,
    SECRET,
    SERVICE,
    STATEFUL_SET,
)
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_of, until

ROOT = Path(__file__).resolve().parents[2]
NAME = "example-mongodb"
CONNECTION = "example-mongodb-admin-my-user"


def _sample(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    secret, mdbc = yaml.safe_load_all((ROOT / "examples/mongodbcommunity.yaml").read_text())
    for obj in (secret, mdbc):
        obj["metadata"]["namespace"] = namespace
    return secret, mdbc


def _ready(obj: dict[str, Any]) -> tuple[str, str, str]:
    (ready,) = [
        c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"
    ]
    return ready["status"], ready["reason"], ready["message"]


def _has_ready(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" for c in (obj.get("status") or {}).get("conditions") or [])


async def _members(client: Client, namespace: str) -> list[str]:
    cm = await client.get(CONFIG_MAP, f"{NAME}-replicaset", namespace)
    return [m["host"] for m in json.loads(cm["data"][boot.CONFIG_KEY])["members"]]


def _hosts(namespace: str, n: int) -> list[str]:
    return [f"{NAME}-{i}.{NAME}-svc.{namespace}.svc:27017" for i in range(n)]


async def _waits_for_its_secret(client: Client, namespace: str) -> None:
    # Without the password Secret: Ready=False naming it, a Warning Event, members built.
    waiting = await until(
        client,
        MONGODB_COMMUNITY,
        NAME,
        namespace,
        lambda o: _has_ready(o) and _ready(o)[1] == "PasswordSecretNotFound",
        60,
        "PasswordSecretNotFound",
    )
    state, _, message = _ready(waiting)
    assert state == "False"
    assert "spec.users[0] (my-user)" in message
    assert "Secret my-user-password not found" in message
    assert waiting["status"]["phase"] == "Failed"
    await events_of(client, namespace, "PasswordSecretNotFound", about=NAME, type_="Warning")
    sts = await client.get(STATEFUL_SET, NAME, namespace)
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["serviceName"] == f"{NAME}-svc"
    pod = sts["spec"]["template"]["spec"]
    mongod, sidecar = pod["containers"]
    assert mongod["image"] == "mongo:4.2.6"
    assert mongod["readinessProbe"]["exec"]["command"][0] == "mongo"  # 4.2 has no mongosh
    assert "mongo --nodb" in sidecar["command"][-1]
    user_volume = next(v for v in pod["volumes"] if v["name"] == "user-0")
    assert user_volume["secret"]["secretName"] == "my-user-password"
    assert user_volume["secret"]["optional"] is True
    headless = await client.get(SERVICE, f"{NAME}-svc", namespace)
    assert headless["spec"]["clusterIP"] == "None"
    assert (await client.get(PDB, NAME, namespace))["spec"]["minAvailable"] == 2
    assert await _members(client, namespace) == _hosts(namespace, 3)
    with pytest.raises(errors.NotFound):
        await client.get(SECRET, CONNECTION, namespace)


async def _runs_with_its_secret(client: Client, namespace: str, secret: dict[str, Any]) -> None:
    # The Secret appears: the object is woken (watched, not retried) and runs.
    await client.create(SECRET, secret)
    running = await until(
        client,
        MONGODB_COMMUNITY,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("phase") == "Running",
        120,
        "Running",
    )
    assert _ready(running)[:2] == ("True", "Running")
    status = running["status"]
    assert (status["members"], status["replicas"]) == (3, 3)
    assert status["observedGeneration"] == running["metadata"]["generation"]
    assert status["users"] == [
        {"name": "my-user", "db": "admin", "connectionStringSecretName": CONNECTION}
    ]
    connection = await client.get(SECRET, CONNECTION, namespace)
    data = {k: base64.b64decode(v).decode() for k, v in connection["data"].items()}
    password = secret["stringData"]["password"]
    assert data["username"] == "my-user"
    assert data["password"] == password
    assert data["connectionString.standard"] == (
        f"mongodb://my-user:{password}@{','.join(_hosts(namespace, 3))}"
        f"/admin?replicaSet={NAME}&ssl=false"
    )
    assert data["connectionString.standardSrv"].startswith("mongodb+srv://my-user:")
    scram = await client.get(SECRET, "my-scram-scram-credentials", namespace)
    assert {"sha256-salt", "sha256-stored-key", "sha256-server-key"} <= set(scram["data"])
    # The password is in that Secret only: not in status, the pod template, the ConfigMap,
    # nor an Event.
    cm = await client.get(CONFIG_MAP, f"{NAME}-replicaset", namespace)
    sts = await client.get(STATEFUL_SET, NAME, namespace)
    events, _ = await client.list(EVENT, namespace)
    assert password not in json.dumps([running, cm, sts, events, scram])
    # appstack status mdbc/NAME: the phase, ready members and each member pod.
    view = render(await collect(client, MONGODB_COMMUNITY, NAME, namespace)).splitlines()
    assert view[1].startswith(f"MongoDBCommunity/{NAME}")
    assert "3/3" in view[1]
    assert "phase Running" in view[1]
    assert [line.split()[1] for line in view[2:]] == [f"Pod/{NAME}-{i}" for i in range(3)]


async def _scales(kube_cluster: ClusterHandle, client: Client, namespace: str) -> None:
    # kubectl scale, through the scale subresource: members, ConfigMap and Secret follow.
    local = kube_cluster.require_local()
    await asyncio.to_thread(
        local.kubectl, "scale", "mdbc", NAME, "--replicas=5", f"--namespace={namespace}"
    )
    scaled = await until(
        client,
        MONGODB_COMMUNITY,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("members") == 5 and o["status"]["phase"] == "Running",
        120,
        "5 members Running",
    )
    assert scaled["spec"]["members"] == 5
    assert scaled["status"]["selector"] == (
        f"app.kubernetes.io/component=mongodb,app.kubernetes.io/instance={NAME},"
        f"app.kubernetes.io/name={NAME}"
    )
    assert await _members(client, namespace) == _hosts(namespace, 5)
    assert (await client.get(PDB, NAME, namespace))["spec"]["minAvailable"] == 3
    connection = await client.get(SECRET, CONNECTION, namespace)
    standard = base64.b64decode(connection["data"]["connectionString.standard"]).decode()
    assert ",".join(_hosts(namespace, 5)) in standard


async def _goes_with_its_children(client: Client, namespace: str) -> None:
    # Deleting it takes every child with it (owned; the claims go with the StatefulSet).
    await client.delete(MONGODB_COMMUNITY, NAME, namespace)

    async def left() -> list[str]:
        children = [
            o["metadata"]["name"]
            for resource in (STATEFUL_SET, SERVICE, CONFIG_MAP, PDB)
            for o in (await client.list(resource, namespace))[0]
            if o["metadata"]["name"].startswith(NAME)
        ]
        secrets, _ = await client.list(SECRET, namespace)
        return children + [
            s["metadata"]["name"]
            for s in secrets
            if s["metadata"]["name"].startswith((NAME, "my-scram"))
        ]

    await eventually(
        left,
        lambda names: not names,
        timeout=120,  # generous: shared CPU
        what="its children deleted with the MongoDBCommunity",
    )
    assert await client.get(SECRET, "my-user-password", namespace)  # the user's own: kept


async def test_the_seed_sample_waits_for_its_secret_runs_scales_and_goes_with_its_children(
    kube_cluster: ClusterHandle, client: Client, namespace: str, operator: RunningOperator
) -> None:
    secret, mdbc = _sample(namespace)
    await client.create(MONGODB_COMMUNITY, mdbc)
    await _waits_for_its_secret(client, namespace)
    await _runs_with_its_secret(client, namespace, secret)
    await _scales(kube_cluster, client, namespace)
    await _goes_with_its_children(client, namespace)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"type": "ShardedCluster"}, "spec.type", 'supported values: "ReplicaSet"'),
        ({"version": "4.0.18"}, "spec.version", "4.0 and older are not supported"),
        ({"version": "latest"}, "spec.version", "from 4.2 to 8.x"),
        ({"members": 8}, "spec.members", "less than or equal to 7"),
        (
            {
                "users": [
                    {
                        "name": "appstack-admin",
                        "passwordSecretRef": {"name": "s"},
                        "roles": [{"name": "root", "db": "admin"}],
                    }
                ]
            },
            "spec.users[0].name",
            "bootstrap administrator",
        ),
        (
            {"security": {"authentication": {"modes": ["X509"]}}},
            "spec.security.authentication.modes[0]",
            "SCRAM",
        ),
    ],
)
async def test_what_is_not_served_is_refused_at_admission_with_the_field_named(
    client: Client, namespace: str, change: dict[str, Any], field: str, message: str
) -> None:
    _, mdbc = _sample(namespace)
    mdbc["spec"].update(change)
    with pytest.raises(errors.Invalid) as caught:
        await client.create(MONGODB_COMMUNITY, mdbc)
    assert field in caught.value.message, caught.value.message
    assert message in caught.value.message, caught.value.message


async def test_a_secret_without_the_key_then_a_changed_password_are_followed(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    secret, mdbc = _sample(namespace)
    secret["stringData"] = {"pass": "first-password"}  # not the key the user names
    await client.create(SECRET, secret)
    mdbc["spec"]["members"] = 1
    await client.create(MONGODB_COMMUNITY, mdbc)
    keyless = await until(
        client,
        MONGODB_COMMUNITY,
        NAME,
        namespace,
        lambda o: _has_ready(o) and _ready(o)[1] == "PasswordSecretKeyNotFound",
        60,
        "PasswordSecretKeyNotFound",
    )
    assert "Secret my-user-password has no key password" in _ready(keyless)[2]

    def password_is(value: str) -> Any:
        def check(s: dict[str, Any]) -> bool:
            return base64.b64decode(s["data"]["password"]).decode() == value

        return check

    # The key added, then the password changed: each change of the watched Secret is followed.
    await client.patch(
        SECRET, "my-user-password", {"stringData": {"password": "one"}}, namespace=namespace
    )
    await until(client, SECRET, CONNECTION, namespace, password_is("one"), 60, "password one")
    await until(
        client,
        MONGODB_COMMUNITY,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("phase") == "Running",
        60,
        "Running",
    )
    await client.patch(
        SECRET, "my-user-password", {"stringData": {"password": "two"}}, namespace=namespace
    )
    await until(client, SECRET, CONNECTION, namespace, password_is("two"), 60, "password two")


# Seed 004's own claims, created before the replica set (its pvc-demo.yaml, in the test's
# namespace; the seed binds them to NFS volumes, which do not matter here).
SEED_CLAIMS = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-volume-example-mongodb-0
spec:
  accessModes:
    - ReadWriteMany
  volumeMode: Filesystem
  resources:
    requests:
      storage: 500Mi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-volume-example-mongodb-1
spec:
  accessModes:
    - ReadWriteMany
  volumeMode: Filesystem
  resources:
    requests:
      storage: 500Mi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-volume-example-mongodb-2
spec:
  accessModes:
    - ReadWriteMany
  volumeMode: Filesystem
  resources:
    requests:
      storage: 500M
"""


async def test_the_seeds_pre_created_claims_are_the_ones_the_members_use(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    made = {}
    for claim in yaml.safe_load_all(SEED_CLAIMS):
        claim["metadata"]["namespace"] = namespace
        created = await client.create(PVC, claim)
        made[created["metadata"]["name"]] = created["metadata"]["uid"]
    secret, mdbc = _sample(namespace)
    await client.create(SECRET, secret)
    await client.create(MONGODB_COMMUNITY, mdbc)

    async def member_claims() -> dict[str, str]:
        pods, _ = await client.list(POD, namespace)
        return {
            p["metadata"]["name"]: v["persistentVolumeClaim"]["claimName"]
            for p in pods
            if p["metadata"]["name"].startswith(f"{NAME}-")
            for v in p["spec"].get("volumes") or []
            if "persistentVolumeClaim" in v
        }

    claims = await eventually(
        member_claims, lambda c: len(c) == 3, timeout=120, what="three member pods"
    )
    assert claims == {f"{NAME}-{i}": f"data-volume-{NAME}-{i}" for i in range(3)}
    sts = await client.get(STATEFUL_SET, NAME, namespace)
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data-volume"
    listed, _ = await client.list(PVC, namespace)
    # the seed's claims, the same objects: none made anew, no other
    assert {c["metadata"]["name"]: c["metadata"]["uid"] for c in listed} == made
