"""EtcdCluster end to end with real etcd: its member pods run as etcd containers on the
test bed's real node (the image gcr.io/etcd-development/etcd:v<version>, built locally).
Bootstrap, a key through the client Service, scaling 3 → 5 → 3 under writes, a lost pod, a
lost volume, and an upgrade 3.5 → 3.6 under writes. Timings are printed (``-s``) and
recorded in docs/performance.md."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.etcdapi import EtcdClient
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import POD, PVC
from appstack_testbed.etcd_releases import ETCD_PREVIOUS
from appstack_testbed.pytest_plugin import RealNodeHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_of, events_until, until
from tests.e2e.etcd_load import (
    Writer,
    alive_pod_names,
    first_snapshot,
    retry,
    snapshot_claim,
    wait_healthy,
)

NAME = "my-etcd-cluster"


def seed(namespace: str, name: str = NAME, **spec: Any) -> dict[str, Any]:
    """The seed's example (apiVersion changed): its members run as real etcd containers on
    the test bed's real node (the tests' namespaces place them there)."""
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 3, "storage": "10Gi", **spec},
    }


def client_endpoint(real_node: RealNodeHandle, namespace: str, name: str = NAME) -> str:
    host, port = real_node.service_address(namespace, f"{name}-client", 2379)
    return f"http://{host}:{port}"


async def members_of(client: Client, namespace: str, pod: str) -> list[Any]:
    """The member list as the member in ``pod`` reports it (asked at its pod IP)."""
    ip = (await client.get(POD, pod, namespace))["status"]["podIP"]
    async with EtcdClient() as etcd:
        _, members = await etcd.members(f"http://{ip}:2379")
    return members


def is_pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def report(what: str, seconds: float) -> None:
    print(f"\n[etcd e2e] {what}: {seconds:.2f} s")


async def scale(client: Client, namespace: str, replicas: int) -> float:
    """As ``kubectl scale etcd/NAME --replicas=N`` does: through the scale subresource."""
    patch = {"spec": {"replicas": replicas}}
    scaled = await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace, subresource="scale")
    assert scaled["kind"] == "Scale"
    _, took = await wait_healthy(client, NAME, namespace, replicas)
    return took


async def test_seed_example_is_three_real_members_serving_the_client_service(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    start = time.monotonic()
    await client.create(ETCD_CLUSTER, seed(namespace))
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    report("bootstrap of 3 members", time.monotonic() - start)
    status = cluster["status"]
    names = sorted(m["name"] for m in status["members"])
    assert names == [f"{NAME}-{i}" for i in range(3)]
    assert sum(m["isLeader"] for m in status["members"]) == 1
    assert status["leader"] in names
    assert status["version"] == "3.6.16"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"Available": "True", "Progressing": "False", "Degraded": "False"}
    members = await members_of(client, namespace, f"{NAME}-1")
    assert sorted(m.name for m in members) == names
    assert {f"{m.id:x}" for m in members} == {m["id"] for m in status["members"]}
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient() as etcd:
        # the Service's EndpointSlice follows the pods' readiness a moment later
        await retry(lambda: etcd.put(endpoint, "greeting", "hello from the seed"))
        assert await etcd.get(endpoint, "greeting") == "hello from the seed"


async def test_scale_3_5_3_under_writes_loses_nothing(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(ETCD_CLUSTER, seed(namespace))
    await wait_healthy(client, NAME, namespace, 3)
    writer = Writer(client_endpoint(real_node, namespace)).start()
    await until(client, ETCD_CLUSTER, NAME, namespace, lambda _: writer.acked > 20)
    up = await scale(client, namespace, 5)
    stall_up, writer.longest_stall = writer.longest_stall, 0.0
    down = await scale(client, namespace, 3)
    status = (await client.get(ETCD_CLUSTER, NAME, namespace))["status"]
    assert status["replicas"] == 3
    assert "app.kubernetes.io/instance=" in status["selector"]
    await writer.stop()
    report("scale 3 -> 5", up)
    report("scale 5 -> 3", down)
    report("longest write stall while scaling up", stall_up)
    report("longest write stall while scaling down", writer.longest_stall)
    print(f"[etcd e2e] writes acknowledged: {writer.acked}, failed attempts: {writer.failures}")
    assert writer.acked > 50
    assert await writer.lost() == []
    members = await members_of(client, namespace, f"{NAME}-0")
    assert len(members) == 3
    assert all(m.started and not m.is_learner for m in members)
    pods, _ = await client.list(POD, namespace)
    # a removed member's pod on the real node may still be terminating
    assert sorted(alive_pod_names(pods)) == sorted(m.name for m in members)
    claims, _ = await client.list(PVC, namespace)
    assert sorted(c["metadata"]["name"] for c in claims) == sorted(
        f"data-{m.name}" for m in members
    )
    assert max(stall_up, writer.longest_stall) < 10

    def said(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(e["reason"], e.get("note", "")) for e in events if e["regarding"]["name"] == NAME]

    def told(events: list[dict[str, Any]]) -> bool:
        reasons = [r for r, _ in said(events)]
        return all(
            reasons.count(r) >= 2 for r in ("MemberAdded", "MemberPromoted", "MemberRemoved")
        )

    notes = said(await events_until(client, namespace, told, "two members' Events"))
    added = [n for r, n in notes if r == "MemberAdded"]
    assert len(added) == 2
    assert all(n.startswith("Added learner") for n in added)  # added as learners ...
    assert sum(r == "MemberPromoted" for r, _ in notes) == 2  # ... then promoted
    assert sum(r == "MemberRemoved" for r, _ in notes) == 2  # removed before their pods


async def test_lost_pod_rejoins_with_its_data_lost_volume_is_replaced_fresh(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(ETCD_CLUSTER, seed(namespace))
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    endpoint = client_endpoint(real_node, namespace)
    async with EtcdClient() as etcd:
        await retry(lambda: etcd.put(endpoint, "kept", "across restarts"))
    victim = next(m for m in cluster["status"]["members"] if not m["isLeader"])
    old_uid = (await client.get(POD, victim["name"], namespace))["metadata"]["uid"]
    await client.delete(POD, victim["name"], namespace)
    start = time.monotonic()
    await until(
        client,
        POD,
        victim["name"],
        namespace,
        lambda p: p["metadata"]["uid"] != old_uid and is_pod_ready(p),
        60,
        "the member's new pod to be ready",
    )
    cluster, _ = await wait_healthy(client, NAME, namespace, 3)
    report("deleted pod back and healthy", time.monotonic() - start)
    again = next(m for m in cluster["status"]["members"] if m["name"] == victim["name"])
    assert again["id"] == victim["id"]  # the same member, with its data
    ip = (await client.get(POD, victim["name"], namespace))["status"]["podIP"]
    async with EtcdClient() as etcd:
        assert await etcd.get(f"http://{ip}:2379", "kept") == "across restarts"

    lost = next(m for m in cluster["status"]["members"] if not m["isLeader"])
    start = time.monotonic()
    await client.delete(PVC, f"data-{lost['name']}", namespace)
    await client.delete(POD, lost["name"], namespace)
    cluster = await until(
        client,
        ETCD_CLUSTER,
        NAME,
        namespace,
        lambda o: (
            lost["name"] not in {m["name"] for m in o["status"]["members"]}
            and len(o["status"]["members"]) == 3
            and all(m["healthy"] and not m["isLearner"] for m in o["status"]["members"])
            and o["status"]["phase"] == "Done"
        ),
        180,
        "a fresh member in place of the lost one",
    )
    report("lost volume: member replaced", time.monotonic() - start)
    fresh = next(m for m in cluster["status"]["members"] if m["id"] not in {lost["id"]})
    assert lost["id"] not in {m["id"] for m in cluster["status"]["members"]}
    assert fresh
    members = await members_of(client, namespace, cluster["status"]["leader"])
    assert len(members) == 3
    assert lost["name"] not in {m.name for m in members}  # no stale member
    try:
        await client.get(POD, lost["name"], namespace)
        raise AssertionError(f"pod {lost['name']} is back though its volume is gone")
    except errors.NotFound:
        pass
    async with EtcdClient() as etcd:
        assert await etcd.get(endpoint, "kept") == "across restarts"


async def test_upgrade_3_5_to_3_6_member_by_member_under_writes(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    real_node: RealNodeHandle,
    previous_etcd_image: str,
) -> None:
    old = ETCD_PREVIOUS.removeprefix("v")
    await client.create(ETCD_CLUSTER, seed(namespace, version=old))
    await wait_healthy(client, NAME, namespace, 3, version=old)
    writer = Writer(client_endpoint(real_node, namespace)).start()
    await until(client, ETCD_CLUSTER, NAME, namespace, lambda _: writer.acked > 20)
    patch = {"spec": {"version": "3.6.16"}}
    await client.patch(ETCD_CLUSTER, NAME, patch, namespace=namespace)
    cluster, took = await wait_healthy(client, NAME, namespace, 3, timeout=300, version="3.6.16")
    await writer.stop()
    report(f"upgrade {old} -> 3.6.16 (3 members)", took)
    report("longest write stall while upgrading", writer.longest_stall)
    assert await writer.lost() == []
    assert cluster["status"]["version"] == "3.6.16"
    assert writer.longest_stall < 10


async def test_quorum_loss_is_reported_never_forced(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(ETCD_CLUSTER, seed(namespace))
    await wait_healthy(client, NAME, namespace, 3)
    before, _ = await client.list(POD, namespace)
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in before}
    lost = (f"{NAME}-1", f"{NAME}-2")
    for member in lost:  # claims first: they go once their pods are gone
        await client.delete(PVC, f"data-{member}", namespace)
    await asyncio.gather(*(client.delete(POD, member, namespace) for member in lost))

    def quorum_lost(obj: dict[str, Any]) -> bool:
        conditions = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        degraded = conditions.get("Degraded") or {}
        return degraded.get("reason") == "QuorumLost"

    cluster = await until(client, ETCD_CLUSTER, NAME, namespace, quorum_lost, 120, "QuorumLost")
    conditions = {c["type"]: c for c in cluster["status"]["conditions"]}
    # 3 members, or 2 if the operator already removed the first lost member (its volume
    # gone, quorum still held) before the second loss: either way 2 are needed.
    message = conditions["Degraded"]["message"]
    assert re.search(r"\b1 of [23] members answer, 2 are needed", message), message
    assert conditions["Available"]["status"] == "False"

    def recreated(pods: list[dict[str, Any]]) -> list[str]:
        """Member pods that are not the originals (a lost one may still be terminating)."""
        return [
            meta["name"]
            for meta in (p["metadata"] for p in pods)
            if meta["uid"] != uids.get(meta["name"])
            or (meta["name"] in lost and not meta.get("deletionTimestamp"))
        ]

    async def lost_pods_gone() -> bool:
        pods, _ = await client.list(POD, namespace)
        assert not recreated(pods)
        return [p["metadata"]["name"] for p in pods] == [f"{NAME}-0"]

    await eventually(lost_pods_gone, timeout=120, what="the lost members' pods to go")
    pods, _ = await client.list(POD, namespace)
    assert [p["metadata"]["name"] for p in pods] == [f"{NAME}-0"]  # nothing re-created
    await events_of(client, namespace, "QuorumLost", type_="Warning")


async def test_backup_delete_and_restore_into_a_new_cluster(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    await client.create(PVC, snapshot_claim(namespace))
    await client.create(ETCD_CLUSTER, seed(namespace))
    await wait_healthy(client, NAME, namespace, 3)
    async with EtcdClient() as etcd:
        await retry(lambda: etcd.put(client_endpoint(real_node, namespace), "saved", "yes"))
    backup = {"intervalMinutes": 60, "pvcName": "snapshots", "retention": 2}
    cluster, took = await first_snapshot(client, NAME, namespace, backup)
    report("scheduled snapshot (a Job on the real node)", took)
    assert cluster["status"]["lastBackup"] == f"{NAME}-0.db"
    source_id = cluster["status"]["clusterID"]

    await client.delete(ETCD_CLUSTER, NAME, namespace)

    async def members_gone() -> bool:
        pods, _ = await client.list(POD, namespace)
        return not [p for p in pods if p["metadata"]["name"].startswith(f"{NAME}-")]

    await eventually(members_gone, timeout=120, what="the old members to go", interval=0.2)
    start = time.monotonic()
    restore = {"restore": {"pvcName": "snapshots", "path": f"{NAME}-0.db"}}
    await client.create(ETCD_CLUSTER, seed(namespace, "restored", **restore))
    restored, _ = await wait_healthy(client, "restored", namespace, 3)
    report("restore into a new 3-member cluster", time.monotonic() - start)
    assert restored["status"]["clusterID"] != source_id
    endpoint = client_endpoint(real_node, namespace, "restored")
    async with EtcdClient() as etcd:
        assert await retry(lambda: etcd.get(endpoint, "saved")) == "yes"


async def test_scale_down_deletes_the_removed_members_retained_volumes(
    client: Client, namespace: str, operator: RunningOperator, real_node: RealNodeHandle
) -> None:
    """``retainOnDelete`` keeps volumes when the cluster is deleted; a member removed by a
    scale-down is gone from etcd, so its volume goes (made the cluster's again first: the
    writes policy lets the operator delete only what it controls)."""
    await client.create(ETCD_CLUSTER, seed(namespace, retainOnDelete=True))
    await wait_healthy(client, NAME, namespace, 3)
    await scale(client, namespace, 1)
    (member,) = (await client.get(ETCD_CLUSTER, NAME, namespace))["status"]["members"]

    async def one_volume_left() -> bool:  # the remaining member's (never the leader goes)
        claims, _ = await client.list(PVC, namespace)
        return [c["metadata"]["name"] for c in claims] == [f"data-{member['name']}"]

    await eventually(
        one_volume_left, timeout=120, what="the removed members' volumes to go", interval=0.2
    )
    kept = await client.get(PVC, f"data-{member['name']}", namespace)
    assert not kept["metadata"].get("ownerReferences")  # the remaining one still retained
