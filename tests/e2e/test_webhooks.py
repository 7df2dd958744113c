"""Admission webhooks served by the operator (issue #49), through the real API server: an
operator run in this process declares a validating and a mutating webhook of a kind of its
own (a throw-away CRD) and serves them in developer mode (the API server on this machine
reaches ``https://127.0.0.1:<port>``; the operator applies its configurations with its
self-signed certificate as the CA bundle). An invalid object is refused with the handler's
field-level message; the mutating handler's change is stored; a server-side dry run reaches
the handler with ``dryRun``; a warning reaches kubectl; the configurations are gone once
the operator stops.

The configurations are cluster-wide: they are named after this module's own project (a
uuid), match only its own kind, and only in namespaces labelled enabled for that project —
the test's namespace alone — so no other test running beside it is ever refused."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import ClientSession

from appstack.runtime import NAMESPACE, ApiError, Client, NotFound, Resource, Result, allow, deny
from appstack.runtime.webhook import Verdict
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    Mutator,
    OperatorIdentity,
    OperatorOptions,
    Problem,
    Registration,
    Validator,
    WebhookReview,
    assemble,
    crd,
    custom_kind,
)
from appstack.sdk.kit.webhooks import MUTATING, VALIDATING
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually

SUFFIX = uuid.uuid4().hex[:6]
GROUP = f"hooks{SUFFIX}.example.com"
IDENTITY = OperatorIdentity(project=f"hooks{SUFFIX}", domain=GROUP)
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
CONFIGURATIONS = {
    VALIDATING: f"{IDENTITY.project}-validating-webhooks",
    MUTATING: f"{IDENTITY.project}-mutating-webhooks",
}


class GadgetSpec(KubeModel):
    size: int = 1
    tier: str | None = None


class GadgetStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group=GROUP, plural="gadgets")
class Gadget(CustomObject):
    spec: GadgetSpec
    status: GadgetStatus | None = None


GADGET = Gadget.KIND.resource
ASKED: list[tuple[str, bool]] = []  # (object name, dryRun) as the validator was asked


def check(review: WebhookReview) -> Verdict:
    assert isinstance(review.object, Gadget)
    ASKED.append((review.request.name, review.dry_run))
    size = review.object.spec.size
    if size > 3:
        return deny(f"{size} is too large: at most 3", field="spec.size")
    if size == 3:
        return allow("size 3 is the largest there is")
    return allow()


def default(review: WebhookReview) -> dict[str, Any] | None:
    obj = review.raw
    assert obj is not None
    obj["spec"].setdefault("tier", "standard")
    obj["metadata"].setdefault("labels", {})["hooks.example.com/defaulted"] = "true"
    return obj


class GadgetReconciler(KindReconciler[GadgetSpec]):
    kind = Gadget.KIND

    def status(self, obj: KubeObject, problem: Problem | None) -> GadgetStatus:
        return GadgetStatus(seen=True)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> GadgetStatus:
        return GadgetStatus(seen=False)

    async def apply(self, obj: KubeObject, spec: GadgetSpec) -> Result | None:
        return None


REGISTRATION = Registration(
    name="gadgets",
    reconciler=GadgetReconciler,
    webhooks=(Validator(check), Mutator(default)),
)


def _gadget(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": Gadget.KIND.api_version,
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def _ready(url: str) -> bool:
    async with ClientSession() as http, http.get(f"{url}/readyz") as response:
        return response.status == 200


async def _gone(client: Client, resource: Resource, name: str) -> bool:
    try:
        await client.get(resource, name)
    except NotFound:
        return True
    return False


async def _served(client: Client) -> bool:
    try:
        await client.list_page(GADGET, "default", limit=1)
    except ApiError:
        return False
    return True


@pytest.fixture
async def gadget_crd(kubeconfig: Path) -> Any:
    async with await Client.connect(str(kubeconfig), field_manager="hooks-test") as admin:
        await admin.create(CRD, crd(Gadget.KIND))
        try:
            await eventually(lambda: _served(admin), timeout=60, what="the Gadget CRD served")
            yield admin
        finally:
            for resource, name in CONFIGURATIONS.items():  # whatever happened to the operator
                await admin.delete(resource, name)
            await admin.delete(CRD, Gadget.KIND.crd_name)


async def test_the_operators_webhooks_refuse_default_and_warn_through_the_api_server(
    kubeconfig: Path, namespace: str, gadget_crd: Client, kube_cluster: ClusterHandle
) -> None:
    admin = gadget_crd
    local = kube_cluster.require_local()
    enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
    await admin.patch(NAMESPACE, namespace, enable)
    assembled = await assemble(
        [REGISTRATION],
        IDENTITY,
        OperatorOptions(
            kubeconfig=str(kubeconfig),
            metrics_address=None,
            health_address="127.0.0.1:0",
            metrics_auth=False,
            webhook_address="127.0.0.1:0",
            webhook_host="127.0.0.1",
        ),
    )
    running = asyncio.create_task(assembled.run())
    try:
        manager = assembled.manager
        await eventually(lambda: "health" in manager.bound, timeout=30, what="probes")
        url = f"http://127.0.0.1:{manager.bound['health']}"
        await eventually(lambda: _ready(url), timeout=60, what="ready, webhooks configured")
        validating = await admin.get(VALIDATING, CONFIGURATIONS[VALIDATING])
        # only this test's namespace is ever sent to it
        selector = validating["webhooks"][0]["namespaceSelector"]
        assert selector["matchLabels"] == {IDENTITY.enabled_label: "true"}

        # refused, the field named, with the handler's message
        with pytest.raises(ApiError) as refused:
            await admin.create(GADGET, _gadget("big", namespace, size=5))
        assert refused.value.code == 422
        assert "denied the request: spec.size: 5 is too large: at most 3" in str(refused.value)
        assert ("big", False) in ASKED

        # defaulted by the mutating webhook, as stored
        await admin.create(GADGET, _gadget("plain", namespace, size=1))
        stored = await admin.get(GADGET, "plain", namespace)
        assert stored["spec"]["tier"] == "standard"
        assert stored["metadata"]["labels"]["hooks.example.com/defaulted"] == "true"

        # a server-side dry run reaches the handler with dryRun, and stores nothing
        manifest = yaml.safe_dump(_gadget("dry", namespace, size=2))
        await asyncio.to_thread(
            local.kubectl, "create", "--dry-run=server", "-f", "-", stdin=manifest
        )
        assert ("dry", True) in ASKED
        with pytest.raises(NotFound):
            await admin.get(GADGET, "dry", namespace)

        # a warning reaches the client
        manifest = yaml.safe_dump(_gadget("largest", namespace, size=3))
        created = await asyncio.to_thread(local.kubectl, "create", "-f", "-", stdin=manifest)
        assert "Warning: size 3 is the largest there is" in created.stderr

        exposition = manager.metrics.exposition().decode()
        assert "controller_runtime_webhook_requests_total{" in exposition
    finally:
        assembled.manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(running, 60)
    # developer mode: the operator deletes what it applied when it stops
    for resource, name in CONFIGURATIONS.items():
        assert await _gone(admin, resource, name)
