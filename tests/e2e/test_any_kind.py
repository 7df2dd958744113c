"""A controller of a CRD the project does not own (issue #48): the operator starts, not
ready, while that CRD is not installed (only its own kinds are required), then — once a
test installs the CRD — becomes ready and reconciles its objects. The Secret-copier of
docs/any-kind.md (built-in kinds, filters, RBAC) runs in tests/e2e/test_tutorial.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from appstack.runtime import NAMESPACE, Client, NotFound, Resource, Result
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


async def _ready(url: str) -> int:
    async with ClientSession() as session, session.get(f"{url}/readyz") as answer:
        return answer.status


async def test_a_controller_of_someone_elses_crd_waits_for_it_then_reconciles(
    kubeconfig: Path, namespace: str
) -> None:
    async with await Client.connect(str(kubeconfig), field_manager="crd-owner") as admin:
        await admin.delete(CRD, f"gadgets.{GROUP}")  # left by an earlier run, if any
        await eventually(lambda: _absent(admin), timeout=60, what="no Gadget CRD")
        enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
        await admin.patch(NAMESPACE, namespace, enable)
        assembled = await assemble(
            [Registration(name="stamper", reconciler=Stamper)],
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
            await admin.create(
                GADGET,
                {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "g", "namespace": namespace},
                    "spec": {"size": 1},
                },
            )

            async def stamped() -> bool:
                got = await admin.get(GADGET, "g", namespace)
                return (got["metadata"].get("annotations") or {}).get(STAMP) == "1"

            await eventually(stamped, timeout=60, what="the Gadget stamped")
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
