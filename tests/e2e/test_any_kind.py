"""A controller of a CRD the project does not own (issue #48): the operator starts, not
ready, while that CRD is not installed (only its own kinds are required), then — once a
test installs the CRD — becomes ready and reconciles its objects. When the CRD is deleted
the operator goes on (ready, its other controller working, the kind's cache emptied and
reported, no loop of failing requests) and when it comes back its objects are reconciled
again. The Secret-copier of docs/any-kind.md (built-in kinds, filters, RBAC) runs in
tests/e2e/test_tutorial.py."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession
from lightkube import Client as LightClient
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from appstack.controllers.appstack import APP_STACK
from appstack.runtime import (
    CONFIG_MAP,
    NAMESPACE,
    Client,
    Forbidden,
    Manager,
    NotFound,
    Resource,
    Result,
    crd_serves,
    wait_served,
)
from appstack.sdk import (
    ObjectReconciler,
    OperatorIdentity,
    OperatorOptions,
    Registration,
    assemble,
    binding,
    cluster_role,
    manager_rules,
    object_rules,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import apply_objects, service_account_kubeconfig

IDENTITY = OperatorIdentity(project="stamper", domain="stamper.example.com")
GROUP = "foreign.example.com"
GADGET = Resource(GROUP, "v1", "Gadget", "gadgets")
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
STAMP = "stamper.example.com/seen"


class Stamper(ObjectReconciler):
    """Annotates every Gadget it sees with its generation: a controller of someone else's
    kind."""

    primary = GADGET
    writes = (GADGET,)

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        seen = str(meta.get("generation"))
        if (meta.get("annotations") or {}).get(STAMP) != seen:
            patch = {"metadata": {"annotations": {STAMP: seen}}}
            await self.client.patch(GADGET, meta["name"], patch, namespace=meta["namespace"])
        return None


class NoteStamper(ObjectReconciler):
    """Annotates the labelled ConfigMaps: the operator's other controller, of a built-in
    kind, which must go on while the Gadget CRD is gone."""

    primary = CONFIG_MAP
    writes = (CONFIG_MAP,)
    selector = "stamper.example.com/stamp=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        if (meta.get("annotations") or {}).get(STAMP) != "yes":
            patch = {"metadata": {"annotations": {STAMP: "yes"}}}
            await self.client.patch(CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"])
        return None


def gadget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


async def _ready(url: str, probe: str = "readyz") -> int:
    async with ClientSession() as session, session.get(f"{url}/{probe}") as answer:
        return answer.status


def _gadget(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1},
    }


def _note(name: str, namespace: str) -> dict[str, Any]:
    labels = {"stamper.example.com/stamp": "yes"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def _sample(manager: Manager, name: str, **labels: str) -> float:
    """The sum of the samples of metric ``name`` whose labels include ``labels``."""
    return sum(
        sample.value
        for metric in manager.metrics.registry.collect()
        for sample in metric.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


async def test_a_controller_of_someone_elses_crd_waits_for_it_and_outlives_its_deletion(
    kubeconfig: Path, namespace: str
) -> None:
    async with await Client.connect(str(kubeconfig), field_manager="crd-owner") as admin:
        await admin.delete(CRD, f"gadgets.{GROUP}")  # left by an earlier run, if any
        await eventually(lambda: _absent(admin), timeout=60, what="no Gadget CRD")
        enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
        await admin.patch(NAMESPACE, namespace, enable)
        assembled = await assemble(
            [
                Registration(name="stamper", reconciler=Stamper),
                Registration(name="notes", reconciler=NoteStamper),
            ],
            IDENTITY,
            OperatorOptions(
                kubeconfig=str(kubeconfig),
                metrics_address=None,
                health_address="127.0.0.1:0",
                metrics_auth=False,
            ),
        )
        running = asyncio.create_task(assembled.run())
        try:
            manager = assembled.manager
            await eventually(lambda: "health" in manager.bound, timeout=30, what="probes")
            url = f"http://127.0.0.1:{manager.bound['health']}"
            for _ in range(3):  # not ready, and not failed, while the CRD is missing
                assert await _ready(url) == 503
                assert not running.done()
                await asyncio.sleep(1)
            await admin.apply(CRD, gadget_crd())
            await eventually(lambda: _ready(url), lambda s: s == 200, timeout=90, what="ready")
            await admin.create(GADGET, _gadget("g", namespace))

            async def stamped(resource: Resource, name: str, value: str) -> bool:
                try:
                    got = await admin.get(resource, name, namespace)
                except NotFound:
                    return False
                return (got["metadata"].get("annotations") or {}).get(STAMP) == value

            await eventually(lambda: stamped(GADGET, "g", "1"), timeout=60, what="g stamped")
            await admin.create(CONFIG_MAP, _note("before", namespace))
            await eventually(
                lambda: stamped(CONFIG_MAP, "before", "yes"), timeout=60, what="a note stamped"
            )

            # The CRD goes (and its Gadgets with it): the kind is reported not served, its
            # cache emptied; the operator runs on, ready, its other controller working.
            served = {"resource": str(GADGET)}
            await admin.delete(CRD, f"gadgets.{GROUP}")
            await eventually(lambda: _absent(admin), timeout=60, what="the CRD deleted")
            await eventually(
                manager.cache.unserved, lambda u: u == [GADGET], timeout=60, what="reported"
            )
            assert manager.cache.keys(GADGET) == []
            assert _sample(manager, "stamper_informer_kind_served", **served) == 0
            not_found = _sample(manager, "rest_client_requests_total", code="404")
            await admin.create(CONFIG_MAP, _note("meanwhile", namespace))
            await eventually(
                lambda: stamped(CONFIG_MAP, "meanwhile", "yes"), timeout=60, what="noted"
            )
            await asyncio.sleep(3)  # a window to see that nothing is retried in a loop
            assert _sample(manager, "rest_client_requests_total", code="404") - not_found <= 2
            assert (await _ready(url), await _ready(url, "healthz")) == (200, 200)
            assert not running.done()

            # It comes back: listed afresh, its objects reconciled again.
            await admin.apply(CRD, gadget_crd())
            await eventually(manager.cache.unserved, lambda u: u == [], timeout=60, what="served")
            assert _sample(manager, "stamper_informer_kind_served", **served) == 1

            await eventually(  # the API server may take a moment to take Gadgets again
                lambda: admin.apply(GADGET, _gadget("g2", namespace)),
                timeout=30,
                what="a Gadget created again",
                retry_on=(NotFound,),
            )
            await eventually(lambda: stamped(GADGET, "g2", "1"), timeout=60, what="g2 stamped")
        finally:
            assembled.manager.stop()
            await asyncio.wait_for(running, 30)
            await admin.delete(CRD, f"gadgets.{GROUP}")


async def _absent(client: Client) -> bool:
    try:
        await client.get(CRD, f"gadgets.{GROUP}")
    except NotFound:
        return True
    return False


async def test_the_operators_token_reads_the_crds_of_its_kinds_by_name_only(
    operator_kubeconfig: Path,
) -> None:
    """appstack's install grants its token the CRDs of its kinds by name (what lets an
    informer whose CRD was deleted wait on a watch of that one CRD): one of them is read
    through a ``metadata.name`` field selector; another CRD, or all of them, are refused."""
    async with await Client.connect(str(operator_kubeconfig)) as operator:
        selector = "metadata.name=appstacks.appstack.dev"
        items, _, _ = await operator.list_page(CRD, field_selector=selector, limit=1)
        assert crd_serves(items[0], APP_STACK)
        for other in ("metadata.name=gadgets.foreign.example.com", None):
            with pytest.raises(Forbidden):
                await operator.list_page(CRD, field_selector=other, limit=1)


async def test_a_derived_role_lets_the_informer_wait_on_its_foreign_crd(
    client: Client, kube: LightClient, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    """A project's manager role, derived from a controller of another project's kind,
    grants the watch of that kind's CRD by name: under that role alone, ``wait_served``
    waits on the watch and answers True the moment the CRD serves the kind (without the
    grant it gives up at once and the informer falls back to listing now and then)."""
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    widget = Resource(group, "v1", "Gadget", "gadgets")

    class Watcher(ObjectReconciler):
        primary = widget

    name = f"stamper-{namespace}"
    role = cluster_role(name, manager_rules(object_rules(Watcher), IDENTITY.domain))
    grant = binding(name, role, (namespace, "default"))
    crd = gadget_crd()
    crd["metadata"]["name"] = f"gadgets.{group}"
    crd["spec"]["group"] = group
    apply_objects(kube, [role, grant])
    try:
        path = service_account_kubeconfig(kube, kubeconfig, namespace, tmp_path / "k", "default")
        async with await Client.connect(str(path)) as scoped:
            waiting = asyncio.create_task(wait_served(scoped, widget, recheck=120))
            await asyncio.sleep(1)  # it is waiting on the watch, not answering at once
            assert not waiting.done()
            await client.create(CRD, crd)
            assert await asyncio.wait_for(waiting, 60) is True
    finally:
        with contextlib.suppress(NotFound):
            await client.delete(CRD, crd["metadata"]["name"])
        kube.delete(ClusterRole, name)
        kube.delete(ClusterRoleBinding, name)
