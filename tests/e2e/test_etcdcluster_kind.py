"""EtcdCluster at admission and its fixed children, on the plain test bed (kwok nodes: the
member pods never run here; tests/e2e/test_etcdcluster.py runs them as real etcd)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from appstack.controllers.etcdcluster import ETCD_CLUSTER, desired
from appstack.controllers.etcdcluster.resources import PDB
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import POD, PVC, SERVICE
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, until


def seed(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """The seed's example, apiVersion changed."""
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 3, "storage": "10Gi", **spec},
    }


TOLERATION = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
ZONES = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"replicas": 4}, "spec.replicas: Invalid value: replicas must be odd"),
        ({"replicas": 11}, "spec.replicas: Invalid value: 11: spec.replicas in body should be"),
        ({"version": "3.4.1"}, 'spec.version: Invalid value: "3.4.1"'),
        ({"storage": "ten"}, 'spec.storage: Invalid value: "ten"'),
        ({"storageClassName": "Not_Valid"}, "spec.storageClassName: Invalid value"),
        (
            {"disasterRecovery": {"enabled": True}},
            "spec.disasterRecovery.enabled: Invalid value: disasterRecovery.enabled needs backup",
        ),
        ({"disasterRecovery": {"after": "soon"}}, "spec.disasterRecovery.after: Invalid value"),
        # PodScheduling's bounds, as for every kind: 32 tolerations at most
        ({"tolerations": [TOLERATION] * 33}, "spec.tolerations: Too many: 33: must have at most"),
        (
            {"topologySpreadConstraints": [{**ZONES, "whenUnsatisfiable": "Never"}]},
            'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never"',
        ),
    ],
)
@pytest.mark.usefixtures("operator_kubeconfig")  # installs the CRDs
async def test_admission_refuses_with_field_level_messages(
    client: Client, namespace: str, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.Invalid) as refused:
        await client.create(ETCD_CLUSTER, seed("bad", namespace, **spec))
    # Kubernetes 1.30 writes a CEL rule's refusal as 'Invalid value: "object": <message>',
    # later releases as 'Invalid value: <message>': the field and the message, either way.
    said = refused.value.message.replace('Invalid value: "object": ', "Invalid value: ")
    assert message in said


@pytest.mark.usefixtures("operator_kubeconfig")
async def test_even_replicas_when_asked(client: Client, namespace: str) -> None:
    created = await client.create(
        ETCD_CLUSTER, seed("even", namespace, replicas=2, allowEvenReplicas=True)
    )
    assert created["spec"]["version"] == "3.6.16"  # defaulted
    assert created["spec"]["replicas"] == 2


async def test_seed_example_creates_services_budget_and_bootstrap_members(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(ETCD_CLUSTER, seed("my-etcd-cluster", namespace))
    headless = await until(client, SERVICE, "my-etcd-cluster", namespace, bool)
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    front = await until(client, SERVICE, "my-etcd-cluster-client", namespace, bool)
    assert front["spec"]["selector"]["appstack.dev/etcd-voter"] == "true"
    budget = await until(client, PDB, "my-etcd-cluster", namespace, bool)
    assert budget["spec"]["minAvailable"] == 2
    for i in range(3):
        pod = await until(client, POD, f"my-etcd-cluster-{i}", namespace, bool, timeout=30)
        claim = await client.get(PVC, f"data-my-etcd-cluster-{i}", namespace)
        assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
        assert pod["spec"]["hostname"] == f"my-etcd-cluster-{i}"
        assert pod["spec"]["subdomain"] == "my-etcd-cluster"
        args = pod["spec"]["containers"][0]["args"]
        assert "--initial-cluster-state=new" in args
        assert any(a.startswith("--initial-cluster=my-etcd-cluster-0=http://") for a in args)
    # kwok pods never run etcd: the cluster waits for a leader, and says so
    cluster = await until(
        client,
        ETCD_CLUSTER,
        "my-etcd-cluster",
        namespace,
        lambda o: (o.get("status") or {}).get("phase") == "Wait",
    )
    conditions = {c["type"]: c for c in cluster["status"]["conditions"]}
    assert conditions["Available"]["status"] == "False"
    assert conditions["Progressing"]["status"] == "True"


async def test_scheduling_fields_reach_the_members_beside_the_default_anti_affinity(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """``PodScheduling`` on the API server: 32 tolerations (every kind's bound, EtcdCluster's
    before) and a spread constraint (new to EtcdCluster) are admitted and reach the member
    pod, which keeps the default anti-affinity since ``affinity`` is unset."""
    tolerations = [{**TOLERATION, "key": f"dedicated-{i}"} for i in range(32)]
    spread = {
        **ZONES,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": desired.selector("placed")},
    }
    await client.create(
        ETCD_CLUSTER,
        seed(
            "placed",
            namespace,
            replicas=1,
            nodeSelector={"kubernetes.io/os": "linux"},
            tolerations=tolerations,
            topologySpreadConstraints=[spread],
        ),
    )
    pod = await until(client, POD, "placed-0", namespace, bool, timeout=30)
    # the namespace's admission plugins may add theirs (kwok nodes, not-ready/unreachable)
    assert pod["spec"]["nodeSelector"]["kubernetes.io/os"] == "linux"
    assert [t for t in pod["spec"]["tolerations"] if t in tolerations] == tolerations
    assert pod["spec"]["topologySpreadConstraints"] == [spread]
    assert pod["spec"]["affinity"] == desired.spread("placed")


async def test_a_member_name_taken_by_someone_elses_pod_or_volume_is_never_adopted(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """Issue #28 P1.4: an EtcdCluster named like another owner's StatefulSet (AppStack
    ``shop``'s redis ``cache`` is ``shop-cache``, its volume ``data-shop-cache-0``) finds its
    member names taken: it says so (Degraded, PersistentVolumeClaimConflict, one Warning
    Event), never mounts or deletes the other's volume, and does not retry every 0.2 s."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-shop-cache-0", "namespace": namespace},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    foreign = await client.create(PVC, claim)
    await client.create(ETCD_CLUSTER, seed("shop-cache", namespace))

    def conflict(obj: dict[str, Any]) -> bool:
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(
            c["type"] == "Degraded" and c["reason"] == "PersistentVolumeClaimConflict"
            for c in conditions
        )

    cluster = await until(client, ETCD_CLUSTER, "shop-cache", namespace, conflict, 30, "conflict")
    (degraded,) = [c for c in cluster["status"]["conditions"] if c["type"] == "Degraded"]
    assert "data-shop-cache-0 already exists and is not managed by" in degraded["message"]
    kept = await client.get(PVC, "data-shop-cache-0", namespace)
    assert kept["metadata"]["uid"] == foreign["metadata"]["uid"]
    assert not kept["metadata"].get("ownerReferences")
    with pytest.raises(errors.NotFound):
        await client.get(POD, "shop-cache-0", namespace)
    before = operator.reconciles("etcdcluster")
    await asyncio.sleep(4)  # measuring a rate over a span of time: nothing to wait on
    looks = operator.reconciles("etcdcluster") - before
    assert looks <= 3, f"{looks} reconciles in 4 s (a 0.2 s retry loop would be ~20)"


async def claims_of(client: Client, namespace: str, cluster: str) -> dict[str, dict[str, Any]]:
    claims, _ = await client.list(PVC, namespace)
    prefix = f"data-{cluster}-"
    return {c["metadata"]["name"]: c for c in claims if c["metadata"]["name"].startswith(prefix)}


async def test_member_volumes_go_with_the_cluster_unless_retain_on_delete(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    """Issue #28 P2: ``retainOnDelete`` (default false: today's behaviour) says what
    deleting the EtcdCluster does to its member volumes. ``kept`` has it from creation (its
    volumes are released as soon as they exist) and is switched off and on again (they are
    re-owned, then released); ``gone`` keeps the default."""
    created = await client.create(ETCD_CLUSTER, seed("kept", namespace, retainOnDelete=True))
    await client.create(ETCD_CLUSTER, seed("gone", namespace))
    kept_uid = created["metadata"]["uid"]

    def released(claim: dict[str, Any]) -> bool:
        annotations = claim["metadata"].get("annotations") or {}
        return not claim["metadata"].get("ownerReferences") and (
            annotations.get("appstack.dev/etcd-cluster-uid") == kept_uid
        )

    def owned_by(name: str) -> Any:
        return lambda c: [r["name"] for r in c["metadata"].get("ownerReferences") or []] == [name]

    for i in range(3):
        await until(client, PVC, f"data-gone-{i}", namespace, owned_by("gone"), 30)
        await until(client, PVC, f"data-kept-{i}", namespace, released, 30, "released")
    for value, check in ((False, owned_by("kept")), (True, released)):
        patch = {"spec": {"retainOnDelete": value}}
        await client.patch(ETCD_CLUSTER, "kept", patch, namespace=namespace)
        for i in range(3):
            await until(client, PVC, f"data-kept-{i}", namespace, check, 30, f"retain {value}")
    before = {
        n: c["metadata"]["uid"] for n, c in (await claims_of(client, namespace, "kept")).items()
    }

    await client.delete(ETCD_CLUSTER, "kept", namespace)
    await client.delete(ETCD_CLUSTER, "gone", namespace)

    async def collected() -> bool:  # the garbage collector took the members and gone's volumes
        pods, _ = await client.list(POD, namespace)
        return not pods and not await claims_of(client, namespace, "gone")

    await eventually(
        collected, timeout=90, what="the members and gone's volumes to be collected", interval=0.2
    )
    after = {
        n: c["metadata"]["uid"] for n, c in (await claims_of(client, namespace, "kept")).items()
    }
    assert after == before  # the same three volumes, kept
    assert len(after) == 3
