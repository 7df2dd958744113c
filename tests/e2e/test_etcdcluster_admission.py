"""EtcdCluster changes refused at admission, on the plain test bed (no members needed): a
minor version downgrade or a skipped minor (CEL transition rules on ``.version``), and
``backup.schedule`` (five cron fields, exclusive with ``intervalMinutes``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client as LightClient
from lightkube import codecs
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from appstack.api.etcdcluster_version import DOWNGRADE, SKIP, VERSION_RULES
from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import Resource
from appstack_testbed.waiting import condition_status, eventually, eventually_sync
from tests.e2e.conftest import WIDGET_GROUP
from tests.e2e.test_etcdcluster_kind import seed

pytestmark = pytest.mark.usefixtures("operator_kubeconfig")  # installs the CRDs


def cluster(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """A one-member cluster (its members never run here: admission only)."""
    return seed(name, namespace, **{"replicas": 1, "storage": "1Gi", **spec})


def said(error: errors.Invalid) -> str:
    # Kubernetes 1.30 writes a CEL refusal as 'Invalid value: "object": <message>'.
    return error.message.replace('Invalid value: "object": ', "Invalid value: ")


async def change_version(client: Client, namespace: str, version: str) -> dict[str, Any]:
    patch = {"spec": {"version": version}}
    return await client.patch(ETCD_CLUSTER, "v", patch, namespace=namespace)


async def test_a_minor_downgrade_is_refused_a_patch_downgrade_and_an_upgrade_are_not(
    client: Client, namespace: str
) -> None:
    await client.create(ETCD_CLUSTER, cluster("v", namespace, version="3.5.21"))
    assert (await change_version(client, namespace, "3.6.16"))["spec"]["version"] == "3.6.16"
    assert (await change_version(client, namespace, "3.6.15"))["spec"]["version"] == "3.6.15"
    with pytest.raises(errors.Invalid) as refused:
        await change_version(client, namespace, "3.5.21")
    assert f"spec.version: Invalid value: {DOWNGRADE}" in said(refused.value)
    kept = await client.get(ETCD_CLUSTER, "v", namespace)
    assert kept["spec"]["version"] == "3.6.15"
    # A new cluster may start on any version the operator knows.
    created = await client.create(ETCD_CLUSTER, cluster("old", namespace, version="3.5.21"))
    assert created["spec"]["version"] == "3.5.21"


@pytest.fixture
def versioned_crd(kube: LightClient) -> Iterator[Resource]:
    """A CRD whose ``spec.version`` is any ``X.Y.Z`` and carries the EtcdCluster's version
    rules: the skipped-minor rule on a real API server (EtcdCluster's own pattern only
    admits 3.5 and 3.6, one minor apart)."""
    suffix = uuid.uuid4().hex[:6]
    plural, kind = f"versioned{suffix}", f"Versioned{suffix}"
    spec = {
        "type": "object",
        "properties": {"version": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+$"}},
        "x-kubernetes-validations": VERSION_RULES,
    }
    schema = {"type": "object", "properties": {"spec": spec}}
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{WIDGET_GROUP}"},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural, "kind": kind},
            "versions": [version],
        },
    }
    kube.create(codecs.from_dict(crd))
    eventually_sync(
        lambda: (
            condition_status(
                kube.get(CustomResourceDefinition, f"{plural}.{WIDGET_GROUP}"), "Established"
            )
            == "True"
        ),
        timeout=30,
        what=f"CRD {plural} to be established",
    )
    yield Resource(WIDGET_GROUP, "v1", kind, plural)
    kube.delete(CustomResourceDefinition, f"{plural}.{WIDGET_GROUP}")


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (("3.4.30", "3.6.16"), SKIP),
        (("3.6.16", "4.0.0"), SKIP),
        (("3.6.16", "3.5.21"), DOWNGRADE),
        (("3.6.16", "2.3.8"), DOWNGRADE),
        (("3.4.30", "3.5.0"), None),
        (("3.6.16", "3.6.2"), None),
        (("3.6.9", "3.7.0"), None),
    ],
)
async def test_version_rules_on_the_api_server(
    client: Client,
    namespace: str,
    versioned_crd: Resource,
    change: tuple[str, str],
    refusal: str | None,
) -> None:
    old, new = change
    obj = {
        "apiVersion": f"{WIDGET_GROUP}/v1",
        "kind": versioned_crd.kind,
        "metadata": {"name": "x", "namespace": namespace},
        "spec": {"version": old},
    }
    await eventually(  # the new CRD's resource is served (Established can come first)
        lambda: client.create(versioned_crd, obj),
        lambda _: True,
        timeout=10,
        what=f"{versioned_crd.plural} served",
        retry_on=(errors.NotFound,),
    )
    patch = {"spec": {"version": new}}
    if refusal is None:
        patched = await client.patch(versioned_crd, "x", patch, namespace=namespace)
        assert patched["spec"]["version"] == new
        return
    with pytest.raises(errors.Invalid) as refused:
        await client.patch(versioned_crd, "x", patch, namespace=namespace)
    assert f"spec.version: Invalid value: {refusal}" in said(refused.value)


@pytest.mark.parametrize(
    ("backup", "field", "message"),
    [
        ({"schedule": "* * * * * *"}, "schedule", "schedule takes five fields"),
        ({"schedule": "@every 1h"}, "schedule", "schedule takes five fields"),
        ({"schedule": "*/0 * * * *"}, "schedule", "schedule: a step /n must be a positive"),
        ({"schedule": "0 5-2 * * *"}, "schedule", "schedule hour: a range a-b must not run"),
        (
            {"schedule": "@hourly", "intervalMinutes": 60},
            "intervalMinutes",
            "intervalMinutes and schedule are mutually exclusive",
        ),
        ({}, "schedule", "backup needs a schedule"),
    ],
)
async def test_backup_schedule_is_checked_at_admission(
    client: Client, namespace: str, backup: dict[str, Any], field: str, message: str
) -> None:
    spec = {"backup": {"pvcName": "snapshots", **backup}}
    with pytest.raises(errors.Invalid) as refused:
        await client.create(ETCD_CLUSTER, cluster("b", namespace, **spec))
    assert f"spec.backup.{field}: Invalid value" in said(refused.value)
    assert message in said(refused.value)


async def test_a_valid_schedule_is_admitted_and_can_replace_the_interval(
    client: Client, namespace: str
) -> None:
    spec = {"backup": {"pvcName": "snapshots", "intervalMinutes": 60}}
    await client.create(ETCD_CLUSTER, cluster("b", namespace, **spec))
    patch = {"spec": {"backup": {"intervalMinutes": None, "schedule": "0 */6 * * MON-FRI"}}}
    patched = await client.patch(ETCD_CLUSTER, "b", patch, namespace=namespace)
    assert patched["spec"]["backup"] == {
        "pvcName": "snapshots",
        "schedule": "0 */6 * * MON-FRI",
        "retention": 3,
    }
