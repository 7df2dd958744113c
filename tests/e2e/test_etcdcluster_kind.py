"""EtcdCluster at admission and its fixed children, on the plain test bed (kwok nodes: the
member pods never run here; tests/e2e/test_etcdcluster.py runs them as real etcd)."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.resources import PDB
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import POD, PVC, SERVICE
from tests.e2e.conftest import RunningOperator, until


def seed(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """The seed's example, apiVersion changed."""
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 3, "storage": "10Gi", **spec},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"replicas": 4}, "spec.replicas: Invalid value: replicas must be odd"),
        ({"replicas": 11}, "spec.replicas: Invalid value: 11: spec.replicas in body should be"),
        ({"version": "3.4.1"}, 'spec.version: Invalid value: "3.4.1"'),
        ({"storage": "ten"}, 'spec.storage: Invalid value: "ten"'),
        ({"storageClassName": "Not_Valid"}, "spec.storageClassName: Invalid value"),
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
