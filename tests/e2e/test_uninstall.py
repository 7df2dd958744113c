"""``appstack uninstall`` on a cluster of its own (it deletes the CRDs, which the other
tests share): install (the generated objects; the operator as a local process under the
generated ServiceAccount, with its Deployment's arguments), an AppStack with managed
middleware and an AppService, then uninstall — after which nothing with our labels and no
CRD of our group is left, and nothing is stuck Terminating; another operator's CRD, made
with the SDK (even labelled part-of=appstack), and its objects are left alone.

There is no kubelet here, so when uninstall deletes the operator's Deployment the test
stops the local operator process, as the kubelet would stop the pod.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from lightkube import codecs
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from appstack.api.namespaces import ENABLED
from appstack.cli.uninstall import CRD, INSTALLED, SELECTOR, uninstall
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.util.meta import CHILD_SELECTOR
from appstack.manifests.install import install
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    POD,
    PVC,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    STATEFUL_SET,
)
from appstack.sdk.crds import crd
from appstack.sdk.kind import CustomObject, custom_kind
from appstack.sdk.model import KubeModel
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.waiting import condition_status
from tests.e2e.conftest import is_ready, until
from tests.e2e.installed import admin_client, apply_install, running_operator

LEFTOVER_KINDS = [
    DEPLOYMENT,
    STATEFUL_SET,
    POD,
    PVC,
    SERVICE,
    CONFIG_MAP,
    SECRET,
    SERVICE_ACCOUNT,
    *INSTALLED.values(),
]


def _stack(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": namespace},
        "spec": {
            "middleware": [{"name": "db", "type": "postgres", "managed": {}}],
            "components": [{"name": "api", "image": "api:1", "uses": ["db"]}],
        },
    }


def _app(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "blog", "namespace": namespace},
        "spec": {"image": "blog:1", "ports": [{"port": 80}]},
    }


def _kept_data(kind: str, obj: dict[str, Any]) -> bool:
    """A managed database's credentials Secret, kept (unowned) exactly as long as its
    retained volume, like the PersistentVolumeClaim itself (docs/security.md); another
    operator's CRD is not ours to remove."""
    meta = obj["metadata"]
    if kind == "CustomResourceDefinition":  # another operator's, whatever its labels
        return obj["spec"]["group"] != "appstack.dev"
    return (
        kind == "Secret"
        and meta["name"].endswith("-credentials")
        and not meta.get("ownerReferences")
    )


async def _leftovers(client: Client) -> list[str]:
    """Everything with our labels, any CRD of our group, anything Terminating."""
    found = []
    for resource in LEFTOVER_KINDS:
        for selector in (SELECTOR, CHILD_SELECTOR):
            items, _ = await client.list(resource, label_selector=selector)
            found += [
                f"{resource.kind} {i['metadata']['name']}"
                for i in items
                if not _kept_data(resource.kind, i)
            ]
    crds, _ = await client.list(CRD)
    found += [c["metadata"]["name"] for c in crds if c["spec"]["group"] == "appstack.dev"]
    for resource in (*LEFTOVER_KINDS, PVC):
        items, _ = await client.list(resource)
        found += [
            f"Terminating {resource.kind} {i['metadata']['name']}"
            for i in items
            if i["metadata"].get("deletionTimestamp")
        ]
    return found


async def test_uninstall_removes_resources_then_operator_then_crds_leaving_nothing(
    fresh_cluster: LocalCluster, tmp_path: Path
) -> None:
    light = admin_client(fresh_cluster.kubeconfig)
    parts = install()
    apply_install(light, parts)
    light.apply(codecs.from_dict(parts.deployment), force=True)  # kwok "runs" its pods
    namespace = "shop"
    light.create(Namespace(metadata=ObjectMeta(name=namespace, labels={ENABLED: "true"})))
    said: list[str] = []

    async with await Client.connect(str(fresh_cluster.kubeconfig)) as client:
        with running_operator(light, fresh_cluster.kubeconfig, parts, tmp_path) as operator:
            await client.create(APP_STACK, _stack(namespace))
            await client.create(APP_SERVICE, _app(namespace))
            await until(client, APP_STACK, "shop", namespace, is_ready, 120, "shop Ready")
            await until(client, APP_SERVICE, "blog", namespace, is_ready, 60, "blog Ready")
            assert (await client.list(STATEFUL_SET, namespace))[0]  # managed middleware

            def say(line: str) -> None:
                said.append(line)
                if line.startswith("deleted Deployment appstack-system/appstack-operator"):
                    operator.terminate()  # the kubelet would stop the pod now

            # Another operator's kind, declared with the SDK — its CRD even labelled
            # part-of=appstack, as the SDK's crd() used to label every CRD (issue #35)
            greeting = await _other_operators_kind(client, namespace)
            await uninstall(client, say, timeout=120)
            assert operator.wait(timeout=30) == 0

        assert await _leftovers(client) == []
        kept = await client.get(CRD, Greeting.KIND.crd_name)
        assert kept["metadata"]["uid"] == greeting["crd"]
        hello = await client.get(Greeting.KIND.resource, "hello", namespace)
        assert hello["metadata"]["uid"] == greeting["object"]
    custom = [line for line in said if line.startswith(("deleted AppStack", "deleted AppService"))]
    first_operator_object = next(i for i, line in enumerate(said) if "appstack-operator" in line)
    assert len(custom) == 2
    assert said.index(custom[-1]) < first_operator_object
    deleted = [line for line in said if line.startswith("deleted ")]
    assert deleted[-1].startswith("deleted Namespace appstack-system")


class GreetingSpec(KubeModel):
    message: str


class GreetingStatus(KubeModel):
    said: str | None = None


@custom_kind(group="tutorial.example.com", plural="greetings")
class Greeting(CustomObject):
    """Another operator's kind (the tutorial's, docs/runtime.md)."""

    spec: GreetingSpec
    status: GreetingStatus | None = None


async def _other_operators_kind(client: Client, namespace: str) -> dict[str, str]:
    """Install the other operator's CRD (labelled like ours) and one object of it."""
    definition = crd(Greeting.KIND, {"app.kubernetes.io/part-of": "appstack"})
    created = await client.create(CRD, definition)
    await until(
        client,
        CRD,
        Greeting.KIND.crd_name,
        "",
        lambda c: condition_status(c, "Established") == "True",
        30,
        "the other CRD established",
    )
    resource = Greeting.KIND.resource
    obj = {
        "apiVersion": resource.api_version,
        "kind": "Greeting",
        "metadata": {"name": "hello", "namespace": namespace},
        "spec": {"message": "hello"},
    }
    hello = await client.create(resource, obj)
    return {"crd": created["metadata"]["uid"], "object": hello["metadata"]["uid"]}


async def test_uninstall_without_a_running_operator_stops_before_removing_it(
    fresh_cluster: LocalCluster,
) -> None:
    """No operator: a finalizer cannot be removed, so the operator and CRDs stay."""
    light = admin_client(fresh_cluster.kubeconfig)
    parts = install()
    apply_install(light, parts)
    namespace = f"stuck-{uuid.uuid4().hex[:6]}"
    light.create(Namespace(metadata=ObjectMeta(name=namespace, labels={ENABLED: "true"})))
    async with await Client.connect(str(fresh_cluster.kubeconfig)) as client:
        app = _app(namespace)
        app["metadata"]["finalizers"] = ["appstack.dev/test-held"]
        await client.create(APP_SERVICE, app)
        said: list[str] = []
        with pytest.raises(Exception, match="the operator and the CRDs were left in place"):
            await uninstall(client, said.append, timeout=3, progress_every=1)
        # While it waits it says what for, and how many remain (not silent for minutes).
        waiting = [line for line in said if line.startswith("waiting for")]
        assert len(waiting) >= 2, said
        assert waiting[0].startswith("waiting for 1 AppService to go (")
        assert waiting[0].endswith(f"s of 3s): {namespace}/blog"), waiting
        assert (await client.get(CRD, "appservices.appstack.dev"))["metadata"]["name"]
        assert await client.get(
            SERVICE_ACCOUNT, parts.service_account["metadata"]["name"], "appstack-system"
        )
        await client.patch(
            APP_SERVICE, "blog", {"metadata": {"finalizers": None}}, namespace=namespace
        )
        await uninstall(client, lambda _: None, timeout=60)
        assert await _leftovers(client) == []
    await asyncio.to_thread(light.delete, Namespace, namespace)
