"""Retiring a version (issue #49, docs/versions.md "Retiring a version"): objects stored
while their kind's storage version was v1alpha1; the CRD's storage moved to v1; the
operator, started, rewrites each in v1 — read from etcd itself, as the API server stored
it — and trims the CRD's ``storedVersions`` to ``[v1]``; run again over objects already
stored in v1, it changes no resourceVersion. On the real API server and etcd of the local
cluster."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from appstack.runtime import NAMESPACE, Client, NotFound, Resource, Result
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    Version,
    crd,
    custom_kind,
    versioned_kind,
)
from appstack.sdk.kit.storage import migrate_storage
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually

GROUP = f"m{uuid.uuid4().hex[:6]}.storage.example.com"
IDENTITY = OperatorIdentity(project="migrator", domain="storage.example.com")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


class GizmoSpec(KubeModel):
    size: int = 1


class GizmoStatus(KubeModel):
    seen: int | None = None


@custom_kind(group=GROUP, plural="gizmos", version="v1alpha1", kind="Gizmo")
class GizmoV1alpha1(CustomObject):
    spec: GizmoSpec
    status: GizmoStatus | None = None


@custom_kind(group=GROUP, plural="gizmos", version="v1")
class Gizmo(CustomObject):
    spec: GizmoSpec
    status: GizmoStatus | None = None


OLD_CRD = crd(GizmoV1alpha1.KIND)  # the first release: v1alpha1 alone, stored
GIZMOS = versioned_kind(Version(Gizmo, storage=True), Version(GizmoV1alpha1, deprecated=True))


class GizmoReconciler(KindReconciler[GizmoSpec]):
    kind = GIZMOS

    def invalid_status(self, obj: KubeObject, problem: Problem) -> GizmoStatus:
        return GizmoStatus()

    async def apply(self, obj: KubeObject, spec: GizmoSpec) -> Result | None:
        return None


def _stored(cluster: ClusterHandle, namespace: str, name: str) -> str:
    """The apiVersion of the object as etcd holds it."""
    key = f"/registry/{GROUP}/gizmos/{namespace}/{name}"
    raw = cluster.require_local().etcdctl("get", key, "--print-value-only")
    return str(json.loads(raw)["apiVersion"])


async def test_the_operator_rewrites_old_versions_storage_and_trims_stored_versions(
    kubeconfig: Path, namespace: str, kube_cluster: ClusterHandle
) -> None:
    old = GizmoV1alpha1.KIND.resource
    names = [f"g{i}" for i in range(5)]
    async with await Client.connect(str(kubeconfig), field_manager="storage-test") as client:
        await client.apply(CRDS, OLD_CRD)
        try:
            await eventually(
                lambda: client.list(old, namespace),
                timeout=30,
                what="the v1alpha1 CRD served",
                retry_on=(NotFound,),
            )
            for name in names:
                body = {"metadata": {"name": name, "namespace": namespace}, "spec": {"size": 2}}
                await client.create(old, {"apiVersion": old.api_version, "kind": "Gizmo", **body})
            # the next release: v1 stored, v1alpha1 deprecated (same schema: no webhook)
            await client.apply(CRDS, crd(GIZMOS))
            got = await client.get(CRDS, GIZMOS.crd_name)
            assert got["status"]["storedVersions"] == ["v1alpha1", "v1"]
            assert {_stored(kube_cluster, namespace, n) for n in names} == {f"{GROUP}/v1alpha1"}

            enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
            await client.patch(NAMESPACE, namespace, enable)
            registration = Registration(name="gizmos", reconciler=GizmoReconciler)
            async with OperatorRunner(
                [registration], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace]
            ) as running:

                async def trimmed() -> bool:
                    crd_now = await client.get(CRDS, GIZMOS.crd_name)
                    return bool(crd_now["status"]["storedVersions"] == ["v1"])

                await running.until(trimmed, timeout=30, interval=0.2)
            assert {_stored(kube_cluster, namespace, n) for n in names} == {f"{GROUP}/v1"}

            # level-based: with the old version listed again, every object is written back
            # and the API server, finding it stored as it would store it, writes nothing
            relisted = {"status": {"storedVersions": ["v1alpha1", "v1"]}}
            await client.patch(CRDS, GIZMOS.crd_name, relisted, subresource="status")
            before = await _versions(client, namespace, names)
            assert await migrate_storage(client, GIZMOS) == len(names)
            assert await _versions(client, namespace, names) == before
            got = await client.get(CRDS, GIZMOS.crd_name)
            assert got["status"]["storedVersions"] == ["v1"]
            assert await migrate_storage(client, GIZMOS) == 0  # trimmed: one GET
        finally:
            await client.delete(CRDS, GIZMOS.crd_name)


async def _versions(client: Client, namespace: str, names: list[str]) -> dict[str, str]:
    """Each object's resourceVersion: a write changes it."""
    out: dict[str, str] = {}
    for name in names:
        got = await client.get(GIZMOS.resource, name, namespace)
        out[name] = got["metadata"]["resourceVersion"]
    return out
