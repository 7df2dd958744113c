"""EtcdCluster backups to a real S3-compatible object store (the test bed's Versity S3
Gateway, in the test's namespace on the real node): appstack's own S3 client against it
(single and multipart uploads byte for byte, listing, S3's errors), snapshots taken on
schedule and on demand landing in the bucket with retention applied, a new cluster
restored from the newest object with every key, and the faults: a bucket that does not
exist, wrong credentials, the store gone — each a Warning Event, ``Degraded=True`` reason
``BackupFailed`` with S3's own words, the cluster untouched and nothing listed as taken."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.etcdcluster import ETCD_CLUSTER, objectstore
from appstack.controllers.etcdcluster.backup import REQUEST
from appstack.controllers.etcdcluster.etcdapi import EtcdClient
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT, POD, PVC, SECRET
from appstack_testbed.objectstore import ObjectStore, S3Server
from appstack_testbed.pytest_plugin import RealNodeHandle
from tests.e2e.conftest import RunningOperator, events_of, events_until, until
from tests.e2e.etcd_load import retry, wait_healthy
from tests.e2e.test_etcdcluster import client_endpoint, report, seed

NAME = "my-etcd-cluster"
BUCKET = "etcd-snapshots"


def store_from_host(server: S3Server, real_node: RealNodeHandle, bucket: str) -> objectstore.Store:
    host, port = real_node.service_address(server.namespace, server.service, server.port)
    endpoint = f"http://{host}:{port}"
    return objectstore.Store(endpoint, bucket, server.region, server.access_key, server.secret_key)


def test_appstacks_s3_client_against_a_real_server(
    s3_server: S3Server,
    s3_client: ObjectStore,
    real_node: RealNodeHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3_client.create_bucket(BUCKET)
    store = store_from_host(s3_server, real_node, BUCKET)
    small = tmp_path / "small.db"
    small.write_bytes(bytes(range(256)) * 1001)
    assert store.put_file("etcd/e-1.db", small) == small.stat().st_size
    monkeypatch.setattr(objectstore, "MULTIPART_ABOVE", 6 << 20)
    monkeypatch.setattr(objectstore, "PART_SIZE", 5 << 20)
    large = tmp_path / "large.db"
    large.write_bytes(b"".join(i.to_bytes(4, "big") for i in range(3 << 20)))  # 12 MiB
    store.put_file("etcd/e-2.db", large)
    assert s3_client.get_object(BUCKET, "etcd/e-2.db") == large.read_bytes()
    assert [k for k, _, _ in store.list("etcd/")] == ["etcd/e-1.db", "etcd/e-2.db"]
    back = tmp_path / "back.db"
    store.get_file("etcd/e-1.db", back)
    assert back.read_bytes() == small.read_bytes()
    store.delete("etcd/e-1.db")
    assert [k for k, _, _ in store.list("etcd/")] == ["etcd/e-2.db"]
    with pytest.raises(objectstore.ObjectStoreError) as missing:
        store_from_host(s3_server, real_node, "no-such-bucket").put_file("x.db", small)
    assert missing.value.code == "NoSuchBucket"
    wrong = objectstore.Store(store.endpoint, BUCKET, "us-east-1", "AKWRONG", "wrong-secret")
    with pytest.raises(objectstore.ObjectStoreError) as refused:
        wrong.list("etcd/")
    assert refused.value.status == 403


async def credentials(client: Client, namespace: str, server: S3Server) -> None:
    await client.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "etcd-s3", "namespace": namespace},
            "stringData": {
                "AWS_ACCESS_KEY_ID": server.access_key,
                "AWS_SECRET_ACCESS_KEY": server.secret_key,
            },
        },
    )


def s3_target(server: S3Server, bucket: str = BUCKET) -> dict[str, Any]:
    return {
        "endpoint": server.endpoint,
        "bucket": bucket,
        "prefix": "etcd/prod/",
        "credentialsSecretName": "etcd-s3",
    }


async def ask_for_backup(client: Client, namespace: str, token: str) -> dict[str, Any]:
    patch = {"metadata": {"annotations": {REQUEST: token}}}
    await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace)
    return await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("backupRequest") == token,
        180,
        f"backup request {token} handled",
    )


async def test_snapshots_land_in_s3_with_retention_and_a_new_cluster_restores_from_one(
    client: Client,
    *,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    s3_server: S3Server,
    s3_client: ObjectStore,
    operator_image: str,
) -> None:
    s3_client.create_bucket(BUCKET)
    await credentials(client, namespace, s3_server)
    backup = {"intervalMinutes": 600, "s3": s3_target(s3_server), "retention": 2}
    await client.create(ETCD_CLUSTER, seed(namespace, backup=backup))
    await wait_healthy(client, NAME, namespace, 3)
    first = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("backupsTaken") == 1,
        180,
        "the first scheduled snapshot",
    )
    assert first["status"]["backups"][0]["location"].startswith(f"s3://{BUCKET}/etcd/prod/")
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient(timeout=5) as etcd:
        for i in range(50):
            await retry(lambda i=i: etcd.put(endpoint, f"key-{i}", f"value-{i}"))
    start = time.monotonic()
    done = await ask_for_backup(client, namespace, "one")
    report("on-demand snapshot to S3 (request -> recorded)", time.monotonic() - start)
    newest = done["status"]["backups"][0]
    assert newest["requested"] is True
    assert done["status"]["lastBackup"] == newest["name"]
    await ask_for_backup(client, namespace, "two")
    taken = (await client.get(ETCD_CLUSTER, NAME, namespace))["status"]
    assert taken["backupsTaken"] == 3
    listed = sorted(s3_client.list_objects(BUCKET, "etcd/prod/"))
    assert listed == sorted(b["name"] for b in taken["backups"][:2])  # retention: 2
    await events_until(
        client,
        namespace,
        lambda events: sum(e["reason"] == "BackupTaken" for e in events) >= 3,
        "3 BackupTaken Events",
    )

    source = {**s3_target(s3_server), "key": newest["name"]}
    restored = seed(namespace, name="restored", restore={"s3": source})
    start = time.monotonic()
    await client.create(ETCD_CLUSTER, restored)
    await wait_healthy(client, "restored", namespace, 3, timeout=240)
    report("a new cluster restored from the S3 snapshot", time.monotonic() - start)
    other = client_endpoint(real_node, namespace, "restored")
    async with EtcdClient(timeout=5) as etcd:
        values = [await retry(lambda i=i: etcd.get(other, f"key-{i}")) for i in range(50)]
    assert values == [f"value-{i}" for i in range(50)]


def _failed(words: str) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        said = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        degraded = said.get("Degraded") or {}
        return degraded.get("reason") == "BackupFailed" and words in degraded.get("message", "")

    return check


async def test_a_missing_bucket_wrong_keys_or_a_gone_store_fail_the_backup_and_nothing_else(
    client: Client,
    *,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    s3_server: S3Server,
    s3_client: ObjectStore,
    operator_image: str,
) -> None:
    await credentials(client, namespace, s3_server)
    backup = {"intervalMinutes": 600, "s3": s3_target(s3_server, bucket="missing-bucket")}
    await client.create(ETCD_CLUSTER, seed(namespace, backup=backup))
    await wait_healthy(client, NAME, namespace, 3)
    failed = await until(
        client, ETCD_CLUSTER, NAME, namespace, _failed("NoSuchBucket"), 180, "NoSuchBucket"
    )
    status = failed["status"]
    assert "backups" not in status  # nothing listed as taken
    assert {c["type"]: c["status"] for c in status["conditions"]}["Available"] == "True"
    warned = [e.get("note", "") for e in await events_of(client, namespace, "BackupFailed")]
    assert "NoSuchBucket" in warned[0]
    # the bucket made: a request is tried at once (no waiting out the retry pause)
    s3_client.create_bucket("missing-bucket")
    healed = await ask_for_backup(client, namespace, "after-the-bucket")
    assert healed["status"]["lastBackupError"] == ""
    assert len(s3_client.list_objects("missing-bucket", "etcd/prod/")) == 1
    # wrong keys
    await client.patch(
        SECRET, "etcd-s3", {"stringData": {"AWS_SECRET_ACCESS_KEY": "wrong"}}, namespace=namespace
    )
    await ask_for_backup(client, namespace, "wrong-keys")
    await until(client, ETCD_CLUSTER, NAME, namespace, _failed("SignatureDoesNotMatch"), 60, "403")
    # the store gone (scaled to zero): unreachable, and nothing new listed
    await client.patch(
        SECRET,
        "etcd-s3",
        {"stringData": {"AWS_SECRET_ACCESS_KEY": s3_server.secret_key}},
        namespace=namespace,
    )
    await client.patch(
        DEPLOYMENT, s3_server.service, {"spec": {"replicas": 0}}, namespace=namespace
    )
    before = (await client.get(ETCD_CLUSTER, NAME, namespace))["status"]["backups"]
    await ask_for_backup(client, namespace, "store-gone")
    gone = await until(
        client, ETCD_CLUSTER, NAME, namespace, _failed("Unreachable"), 60, "unreachable"
    )
    assert gone["status"]["backups"] == before


async def test_disaster_recovery_rebuilds_from_the_newest_object_in_the_store(
    client: Client,
    *,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    s3_server: S3Server,
    s3_client: ObjectStore,
    operator_image: str,
) -> None:
    s3_client.create_bucket(BUCKET)
    await credentials(client, namespace, s3_server)
    spec = {
        "backup": {"intervalMinutes": 600, "s3": s3_target(s3_server)},
        "disasterRecovery": {"enabled": True, "after": "5s"},
    }
    await client.create(ETCD_CLUSTER, seed(namespace, **spec))
    await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient(timeout=5) as etcd:
        await retry(lambda: etcd.put(endpoint, "saved", "in the store"))
    taken = await ask_for_backup(client, namespace, "before-the-loss")
    newest = taken["status"]["backups"][0]["name"]
    old_id = taken["status"]["clusterID"]
    for member in (f"{NAME}-1", f"{NAME}-2"):  # two members lost with their data
        await client.delete(PVC, f"data-{member}", namespace)
    for member in (f"{NAME}-1", f"{NAME}-2"):
        await client.delete(POD, member, namespace)
    start = time.monotonic()
    await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: ((o.get("status") or {}).get("recovery") or {}).get("phase") == "Recovered",
        300,
        "the recovery from the store",
    )
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    report(
        "disaster recovery from the S3 snapshot: loss -> 3 healthy members",
        time.monotonic() - start,
    )
    assert cluster["status"]["recovery"]["snapshot"] == newest
    assert cluster["status"]["clusterID"] != old_id
    async with EtcdClient(timeout=5) as etcd:
        assert await retry(lambda: etcd.get(endpoint, "saved")) == "in the store"
