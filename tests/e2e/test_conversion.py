"""A kind of two versions converted by the operator's webhook (issue #49), through the real
API server: ``v1alpha1`` (``size``) and ``v1`` (``replicas``, renamed, and ``tier``, which
v1alpha1 lacks), ``v1`` the storage version (the hub). An operator run in this process
(``OperatorRunner``) serves ``/convert`` in developer mode (the API server on this machine reaches
``https://127.0.0.1:<port>``; the operator points the CRD's conversion webhook there with
its self-signed CA). An object created as v1alpha1 is read as v1 and back, updated through
either, stored as v1 (``status.storedVersions``), reconciled as the hub, keeps its ``tier``
through a v1alpha1 round trip (an annotation), and one v1alpha1 cannot express is refused
on read with the conversion's own message. The deprecated version's warning reaches kubectl
and the runtime's client (``Client.warnings``). An object made while the first release's CRD
(v1alpha1 alone) was installed is read at both versions with the same data, and the
operator migrates its storage: v1 in etcd, ``status.storedVersions`` ``[v1]``.

The CRD is cluster-wide and named after this module's own group (a uuid), its objects only
in the test's namespace."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime import NAMESPACE, ApiError, Client, Resource, Result
from appstack.sdk import (
    ConversionRefused,
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
    stash,
    unstash,
    versioned_kind,
)
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually

SUFFIX = uuid.uuid4().hex[:6]
GROUP = f"conv{SUFFIX}.example.com"
IDENTITY = OperatorIdentity(project=f"conv{SUFFIX}", domain=GROUP)
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
LARGEST = 1000  # the largest size v1alpha1 can say


class WidgetStatus(KubeModel):
    seen: bool | None = None


class WidgetSpecV1alpha1(KubeModel):
    size: int = 1


@custom_kind(group=GROUP, plural="widgets", version="v1alpha1", kind="Widget")
class WidgetV1alpha1(CustomObject):
    spec: WidgetSpecV1alpha1
    status: WidgetStatus | None = None


#: the first release's CRD: v1alpha1 alone, stored (seed 000's AppService started there)
FIRST_RELEASE = crd(WidgetV1alpha1.KIND)


class WidgetSpec(KubeModel):
    replicas: int = 1
    tier: str | None = None


@custom_kind(group=GROUP, plural="widgets")
class Widget(CustomObject):
    spec: WidgetSpec
    status: WidgetStatus | None = None


def to_hub(old: WidgetV1alpha1) -> Widget:
    tier = unstash(old, "tier")
    return Widget(
        metadata=old.metadata,
        spec=WidgetSpec(replicas=old.spec.size, tier=tier),
        status=old.status,
    )


def from_hub(hub: Widget) -> WidgetV1alpha1:
    if hub.spec.replicas > LARGEST:
        raise ConversionRefused(
            f"replicas {hub.spec.replicas} cannot be said as v1alpha1's size (at most {LARGEST})"
        )
    old = WidgetV1alpha1(
        metadata=hub.metadata, spec=WidgetSpecV1alpha1(size=hub.spec.replicas), status=hub.status
    )
    stash(old, "tier", hub.spec.tier)
    return old


WIDGET = versioned_kind(
    Version(Widget, storage=True),
    Version(
        WidgetV1alpha1,
        deprecated=True,
        warning="v1alpha1 Widget is deprecated: use v1",
        to_hub=to_hub,
        from_hub=from_hub,
    ),
)
V1 = WIDGET.resource
V1ALPHA1 = WidgetV1alpha1.KIND.resource
RECONCILED: list[tuple[str, int]] = []  # (name, spec.replicas) as the controller saw them


class WidgetReconciler(KindReconciler[WidgetSpec]):
    kind = WIDGET

    def status(self, obj: KubeObject, problem: Problem | None) -> WidgetStatus:
        return WidgetStatus(seen=True)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> WidgetStatus:
        return WidgetStatus(seen=False)

    async def apply(self, obj: KubeObject, spec: WidgetSpec) -> Result | None:
        RECONCILED.append((obj["metadata"]["name"], spec.replicas))
        await self.writer.write_status(obj, self.status(obj, None))
        return None


REGISTRATION = Registration(name="widgets", reconciler=WidgetReconciler)


def _stored(local: Any, namespace: str, name: str) -> str:
    """The apiVersion of a Widget as etcd holds it."""
    raw = local.etcdctl(
        "get", f"/registry/{GROUP}/widgets/{namespace}/{name}", "--print-value-only"
    )
    return str(json.loads(raw)["apiVersion"])


async def _served(client: Client, resource: Resource) -> bool:
    try:
        await client.list_page(resource, "default", limit=1)
    except ApiError:
        return False
    return True


@pytest.fixture
async def widget_crd(kubeconfig: Path, namespace: str, kube_cluster: ClusterHandle) -> Any:
    """The Widget CRD as two releases install it: first v1alpha1 alone, stored, and an
    object made then (``before``, size 5); then both versions, v1 the storage version."""
    # the URL is the operator's to set (developer mode); until then nothing converts
    manifest = crd(WIDGET, conversion={"url": "https://127.0.0.1:9/convert"})
    async with await Client.connect(str(kubeconfig), field_manager="conversion-test") as admin:
        await admin.apply(CRD, FIRST_RELEASE)
        try:
            await eventually(
                lambda: _served(admin, V1ALPHA1), timeout=60, what="the first Widget CRD served"
            )
            await admin.create(V1ALPHA1, {
                "apiVersion": V1ALPHA1.api_version, "kind": "Widget",
                "metadata": {"name": "before", "namespace": namespace}, "spec": {"size": 5},
            })  # fmt: skip
            await admin.apply(CRD, manifest)
            await eventually(lambda: _served(admin, V1), timeout=60, what="the Widget CRD served")
            # stored as it was written until something rewrites it (the operator, below)
            local = kube_cluster.require_local()
            assert _stored(local, namespace, "before") == f"{GROUP}/v1alpha1"
            yield admin
        finally:
            await admin.delete(CRD, WIDGET.crd_name)


async def test_an_object_is_read_and_written_at_both_versions_stored_as_the_hub(
    kubeconfig: Path, namespace: str, widget_crd: Client, kube_cluster: ClusterHandle
) -> None:
    admin = widget_crd
    local = kube_cluster.require_local()
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    async with OperatorRunner([REGISTRATION], IDENTITY, kubeconfig=str(kubeconfig)) as running:
        # ready: the CRD pointed at this operator's server, with its CA
        installed = await admin.get(CRD, WIDGET.crd_name)
        client_config = installed["spec"]["conversion"]["webhook"]["clientConfig"]
        port = running.webhook_port
        assert client_config["url"] == f"https://127.0.0.1:{port}/convert"
        assert running.webhook_ca is not None
        assert client_config["caBundle"] == base64.b64encode(running.webhook_ca).decode()

        # made while v1alpha1 alone was stored: read at both versions with the same data
        assert (await admin.get(V1, "before", namespace))["spec"] == {"replicas": 5}
        assert (await admin.get(V1ALPHA1, "before", namespace))["spec"] == {"size": 5}
        # its storage migrated by the operator: v1 in etcd, storedVersions trimmed to [v1]

        async def migrated() -> bool:
            got = await admin.get(CRD, WIDGET.crd_name)
            return bool(got["status"]["storedVersions"] == ["v1"])

        await eventually(migrated, timeout=30, what="storedVersions trimmed to [v1]")
        assert _stored(local, namespace, "before") == f"{GROUP}/v1"

        # created as v1alpha1, stored as v1 (the hub), read at both
        old = {
            "apiVersion": V1ALPHA1.api_version,
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": namespace},
            "spec": {"size": 2},
        }
        await admin.create(V1ALPHA1, old)
        assert (await admin.get(V1, "w", namespace))["spec"] == {"replicas": 2}
        assert (await admin.get(V1ALPHA1, "w", namespace))["spec"] == {"size": 2}
        crd_status = (await admin.get(CRD, WIDGET.crd_name))["status"]
        assert crd_status["storedVersions"] == ["v1"]

        # the controller reconciles the hub; its status reads at v1alpha1 too
        await eventually(lambda: ("w", 2) in RECONCILED, timeout=30, what="reconciled as v1")

        async def seen() -> Any:
            return (await admin.get(V1ALPHA1, "w", namespace)).get("status", {}).get("seen")

        await eventually(seen, timeout=30, what="status.seen read at v1alpha1")

        # updated through v1 with what v1alpha1 lacks, read as v1alpha1
        await admin.patch(V1, "w", {"spec": {"replicas": 3, "tier": "gold"}}, namespace=namespace)
        spoke = await admin.get(V1ALPHA1, "w", namespace)
        assert spoke["spec"] == {"size": 3}
        assert spoke["metadata"]["annotations"] == {f"conversion.{GROUP}/tier": '"gold"'}

        # written back at v1alpha1 (a PUT of what was read): the tier survives, the hub
        # carries no annotation of it
        spoke["spec"]["size"] = 4
        await admin.update(V1ALPHA1, spoke)
        hub = await admin.get(V1, "w", namespace)
        assert hub["spec"] == {"replicas": 4, "tier": "gold"}
        assert "annotations" not in hub["metadata"]

        # the deprecated version warns kubectl's user
        got = await asyncio.to_thread(
            local.kubectl, "get", f"widgets.v1alpha1.{GROUP}", "w", "-n", namespace
        )
        assert "Warning: v1alpha1 Widget is deprecated: use v1" in got.stderr
        # and the runtime's client: gathered for the call, counted, logged once
        with admin.warnings() as said:
            await admin.get(V1ALPHA1, "w", namespace)
            await admin.get(V1, "w", namespace)
        assert said == ["v1alpha1 Widget is deprecated: use v1"]
        assert "rest_client_warnings_total{" in admin.metrics.exposition().decode()

        # what v1alpha1 cannot say is refused on read, with the conversion's message
        big = {"spec": {"replicas": LARGEST + 1}}
        await admin.patch(V1, "w", big, namespace=namespace)
        with pytest.raises(ApiError) as refused:
            await admin.get(V1ALPHA1, "w", namespace)
        assert f"cannot be said as v1alpha1's size (at most {LARGEST})" in str(refused.value)

        exposition = running.manager.metrics.exposition().decode().splitlines()
        assert any(
            line.startswith("controller_runtime_webhook_requests_total{")
            and 'webhook="convert"' in line
            for line in exposition
        )
    await _pointed_back_at_the_service(admin, kubeconfig)


async def _pointed_back_at_the_service(admin: Client, kubeconfig: Path) -> None:
    """The operator stopped: the CRD points at its Service again, as a generated CRD says (no
    URL of a server gone, no developer's CA), so ``make install`` merges it in cleanly."""
    service = {"namespace": IDENTITY.namespace, "name": f"{IDENTITY.project}-webhook-service"}
    generated = crd(WIDGET, conversion={"service": service})
    installed = (await admin.get(CRD, WIDGET.crd_name))["spec"]["conversion"]
    installed["webhook"]["clientConfig"]["service"].pop("port")  # the API server's default
    assert installed == generated["spec"]["conversion"]
    async with await Client.connect(str(kubeconfig), field_manager="kubectl") as kubectl:
        await kubectl.apply(CRD, generated, force=True)
