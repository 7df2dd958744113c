"""EtcdCluster disaster recovery (issue #25) with real etcd on the test bed's real node, in a
namespace that enforces the ``restricted`` Pod Security level (issue #28 P1.6: the backup
Job and the restore init container are admitted there, and a backup completes).

A 3-member cluster with backups (and retained volumes) takes a snapshot after ``saved``
is written; ``lost`` is written after it. Two members are lost with their volumes (pods
and PVCs deleted: the fault the plan never repairs, it only reports it). Without
``disasterRecovery`` the cluster stays Degraded (QuorumLost, saying recovery is opt-in)
and nothing is re-created; once it is enabled, the cluster is rebuilt from the snapshot:
``saved`` is there, ``lost`` is not, and status says which snapshot and how old it was.
The time to recover is printed (``-s``) and recorded in docs/reliability.md. A cluster
whose backup never took a snapshot reports that recovery is impossible."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.backup_schedule import parse_time
from appstack.controllers.etcdcluster.etcdapi import EtcdClient
from appstack.runtime.client import Client
from appstack.runtime.resources import NAMESPACE, POD, PVC
from appstack_testbed.pytest_plugin import RealNodeHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_of, events_until, until
from tests.e2e.etcd_load import alive_pod_names, retry, snapshot_claim, wait_healthy
from tests.e2e.test_etcdcluster import client_endpoint, report, seed

NAME = "dr"
BACKUP = {"intervalMinutes": 60, "pvcName": "snapshots", "retention": 2}


async def restricted(client: Client, namespace: str) -> None:
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
    }
    await client.patch(NAMESPACE, namespace, {"metadata": {"labels": labels}})


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


async def lose_quorum(client: Client, namespace: str) -> None:
    """Members 1 and 2 lost with their data: volumes first (they go once their pods do)."""
    lost = (f"{NAME}-1", f"{NAME}-2")
    for member in lost:
        await client.delete(PVC, f"data-{member}", namespace)
    await asyncio.gather(*(client.delete(POD, member, namespace) for member in lost))


async def snapshot(client: Client, namespace: str) -> dict[str, Any]:
    """Backups on: the cluster once its first snapshot is taken."""
    patch = {"spec": {"backup": BACKUP}}
    await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace)
    return await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (o.get("status") or {}).get("backupsTaken") == 1,
        120,
        "the snapshot (a Job admitted in a restricted namespace)",
    )


async def test_a_lost_quorum_is_rebuilt_from_the_newest_snapshot_only_when_opted_in(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await restricted(client, namespace)
    await client.create(PVC, snapshot_claim(namespace))
    # retained volumes: the recovery deletes them all the same (made ours again first)
    await client.create(ETCD_CLUSTER, seed(namespace, NAME, retainOnDelete=True))
    await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace, NAME)
    async with EtcdClient() as etcd:
        await retry(lambda: etcd.put(endpoint, "saved", "before the snapshot"))
    snapped = await snapshot(client, namespace)
    snapshot_time = snapped["status"]["lastBackupTime"]
    async with EtcdClient() as etcd:
        await retry(lambda: etcd.put(endpoint, "lost", "after the snapshot"))
    old_id = snapped["status"]["clusterID"]

    await lose_quorum(client, namespace)
    lost = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (
            conditions(o).get("Degraded", {}).get("reason") == "QuorumLost"
            and bool(o["status"].get("quorumLostSince"))
        ),
        120,
        "QuorumLost",
    )
    assert "opt-in" in conditions(lost)["Degraded"]["message"]
    since = parse_time(lost["status"]["quorumLostSince"])

    async def lost_for_20s_and_nothing_forced() -> bool:
        obj = await client.get(ETCD_CLUSTER, NAME, namespace)
        assert "recovery" not in obj["status"]
        pods, _ = await client.list(POD, namespace)
        assert alive_pod_names(pods) == [f"{NAME}-0"]  # nothing re-created, nothing torn down
        return time.time() - since.timestamp() > 20

    await eventually(
        lost_for_20s_and_nothing_forced, timeout=60, what="20 s of quorum loss", interval=0.2
    )

    start = time.monotonic()
    opt_in = {"spec": {"disasterRecovery": {"enabled": True, "after": "10s"}}}
    await client.patch(ETCD_CLUSTER, NAME, opt_in, namespace=namespace)

    def recovered(obj: dict[str, Any]) -> bool:
        record = (obj.get("status") or {}).get("recovery") or {}
        return record.get("phase") == "Recovered"

    await until(client, ETCD_CLUSTER, NAME, namespace, recovered, 300, "the recovery")
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    took = time.monotonic() - start
    record = cluster["status"]["recovery"]
    report("disaster recovery: opt-in to 3 healthy members", took)
    report("disaster recovery: status.recovery.secondsToRecover", record["secondsToRecover"])
    print(f"[etcd e2e] recovery record: {record}")
    assert record["snapshot"] == f"{NAME}-0.db"
    assert record["snapshotTime"] == snapshot_time
    assert record["dataLossSeconds"] >= 20  # the snapshot was older than the loss
    assert record["count"] == 1
    assert cluster["status"]["clusterID"] != old_id  # a new cluster, from the snapshot
    assert "quorumLostSince" not in cluster["status"]
    await rebuilt(client, namespace, endpoint)


async def rebuilt(client: Client, namespace: str, endpoint: str) -> None:
    """The rebuilt cluster: retained volumes again, the snapshot's data, both Events."""
    claims, _ = await client.list(PVC, namespace)
    members = [c for c in claims if c["metadata"]["name"].startswith(f"data-{NAME}-")]
    assert len(members) == 3
    assert all(not c["metadata"].get("ownerReferences") for c in members)  # still retained
    async with EtcdClient() as etcd:
        assert await retry(lambda: etcd.get(endpoint, "saved")) == "before the snapshot"
        assert await etcd.get(endpoint, "lost") is None  # written after the snapshot

    def said(events: list[dict[str, Any]]) -> dict[str, str]:
        return {e["reason"]: e.get("note", "") for e in events if e["regarding"]["name"] == NAME}

    events = await events_until(
        client, namespace, lambda es: {"DisasterRecovery", "Recovered"} <= said(es).keys(), "Events"
    )
    notes = said(events)
    assert f"rebuilding from snapshot {NAME}-0.db" in notes["DisasterRecovery"]
    assert "Recovered" in notes


async def test_recovery_without_a_snapshot_is_reported_impossible(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(PVC, snapshot_claim(namespace))
    never = {"schedule": "0 0 1 1 *", "pvcName": "snapshots"}  # next New Year: no snapshot
    recovery = {"enabled": True, "after": "10s"}
    await client.create(
        ETCD_CLUSTER, seed(namespace, NAME, backup=never, disasterRecovery=recovery)
    )
    await wait_healthy(client, NAME, namespace, 3)
    survivor = (await client.get(POD, f"{NAME}-0", namespace))["metadata"]["uid"]
    await lose_quorum(client, namespace)
    hopeless = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: conditions(o).get("Available", {}).get("reason") == "RecoveryImpossible",
        120,
        "RecoveryImpossible",
    )
    said = conditions(hopeless)
    assert said["Available"]["status"] == "False"
    assert said["Degraded"]["reason"] == "RecoveryImpossible"
    assert "no snapshot has been taken" in said["Degraded"]["message"]
    await events_of(client, namespace, "RecoveryImpossible", type_="Warning")
    assert "recovery" not in hopeless["status"]
    assert (await client.get(POD, f"{NAME}-0", namespace))["metadata"]["uid"] == survivor
    pods, _ = await client.list(POD, namespace)
    assert alive_pod_names(pods) == [f"{NAME}-0"]  # nothing torn down, nothing forced
