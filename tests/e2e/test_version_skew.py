"""A CRD newer than the operator (issue #24 item 3): an object using a field this operator
does not know is reconciled all the same, the field ignored and named in a Warning Event
(``UnknownFields``), instead of the whole object turned ``InvalidSpec`` — as after a
rollback of the operator, or during an upgrade, while the newer CRD is served."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client as LightClient
from lightkube import codecs
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests import crds
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT
from appstack_testbed.waiting import eventually_sync
from tests.e2e.conftest import RunningOperator, events_of, is_ready, until

# Serial (alone on the cluster): it replaces the AppService CRD every test shares.
pytestmark = pytest.mark.serial

FUTURE = {"type": "string", "description": "A field of a later appstack."}


def _newer(crd: dict[str, Any]) -> dict[str, Any]:
    newer = copy.deepcopy(crd)
    spec = newer["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["rolloutStrategy"] = FUTURE
    return newer


@pytest.fixture
def newer_appservice_crd(kube: LightClient, operator_kubeconfig: Any) -> Iterator[None]:
    """The AppService CRD with one more field, for this test; today's CRD again after."""
    (current,) = [c for c in crds.all_crds() if c["spec"]["names"]["kind"] == "AppService"]
    kube.apply(codecs.from_dict(_newer(current)), force=True)
    name = current["metadata"]["name"]

    def served() -> bool:
        crd = kube.get(CustomResourceDefinition, name)
        schema = crd.to_dict()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        return "rolloutStrategy" in schema["properties"]["spec"]["properties"]

    eventually_sync(served, timeout=30, what="the newer CRD")
    try:
        yield
    finally:
        kube.apply(codecs.from_dict(current), force=True)


async def test_a_field_of_a_newer_crd_is_ignored_not_fatal(
    client: Client, namespace: str, newer_appservice_crd: None, operator: RunningOperator
) -> None:
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "skew", "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 1, "rolloutStrategy": "Canary"},
    }
    created = await client.create(APP_SERVICE, app)
    assert created["spec"]["rolloutStrategy"] == "Canary"  # kept by the (newer) API server
    await until(client, APP_SERVICE, "skew", namespace, is_ready, 60, "Ready despite the field")
    await client.get(DEPLOYMENT, "skew", namespace)
    said = [e["note"] for e in await events_of(client, namespace, "UnknownFields")]
    assert said == [
        "spec.rolloutStrategy not known to this operator (the CRD is newer): ignored"
    ], said
