"""A controller of a CRD the project does not own (issue #48): the operator starts, not
ready, while that CRD is not installed (only its own kinds are required), then — once a
test installs the CRD — becomes ready and reconciles its objects. When the CRD is deleted
the operator goes on (ready, its other controller working, the kind's cache emptied and
reported, no loop of failing requests) and when it comes back its objects are reconciled
again. The Secret-copier of docs/any-kind.md (built-in kinds, filters, RBAC) runs in
tests/e2e/test_tutorial.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from appstack.runtime import CONFIG_MAP, NAMESPACE, Client, Manager, NotFound, Resource, Result
from appstack.sdk import ObjectReconciler, OperatorIdentity, OperatorOptions, Registration, assemble
from appstack_testbed.waiting import eventually

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
