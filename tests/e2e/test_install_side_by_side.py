"""Two namespaced installs side by side (``ops1`` watching ``team-a``, ``ops2`` watching
``team-b``), on a cluster of their own: their cluster-scoped objects are named after their
namespaces, so applying the second overwrites nothing of the first; ``appstack uninstall
--namespace ops1`` removes ops1's install and the custom resources in team-a, and leaves
ops2's objects, the CRDs and ops2's operator working.

As in test_uninstall.py, the test stops the local operator process of ops1 when uninstall
deletes its Deployment (no kubelet here to stop the pod).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from lightkube import codecs
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from appstack.api.namespaces import ENABLED
from appstack.cli.uninstall import CRD, INSTALLED, uninstall
from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests.install import Install, InstallOptions, install
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT
from appstack_testbed.cluster import LocalCluster
from tests.e2e.conftest import is_ready, until
from tests.e2e.installed import admin_client, apply_install, running_operator
from tests.e2e.replicas import app_service


async def _existing(client: Client, parts: Install) -> list[str]:
    """The objects of ``parts`` (CRDs aside) that exist, as ``Kind ns/name``."""
    found = []
    for obj in parts.objects():
        if obj["kind"] == "CustomResourceDefinition":
            continue
        meta = obj["metadata"]
        with contextlib.suppress(errors.NotFound):
            await client.get(INSTALLED[obj["kind"]], meta["name"], meta.get("namespace"))
            found.append(f"{obj['kind']} {meta.get('namespace') or ''}/{meta['name']}")
    return found


async def test_two_namespaced_installs_side_by_side_and_uninstalling_one(
    fresh_cluster: LocalCluster, tmp_path: Path
) -> None:
    light = admin_client(fresh_cluster.kubeconfig)
    for name in ("team-a", "team-b"):
        light.create(Namespace(metadata=ObjectMeta(name=name, labels={ENABLED: "true"})))
    one = install(InstallOptions(namespace="ops1", watch_namespaces=("team-a",)))
    two = install(InstallOptions(namespace="ops2", watch_namespaces=("team-b",)))
    for parts in (one, two):
        apply_install(light, parts)
        light.apply(codecs.from_dict(parts.deployment), force=True)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    said: list[str] = []

    async with await Client.connect(str(fresh_cluster.kubeconfig)) as client:
        expected_two = sorted(await _existing(client, two))
        assert len(expected_two) == len(two.objects()) - len(two.crds)
        assert sorted(await _existing(client, one)) != expected_two
        with (
            running_operator(light, fresh_cluster.kubeconfig, two, tmp_path / "two"),
            running_operator(light, fresh_cluster.kubeconfig, one, tmp_path / "one") as first,
        ):
            await client.create(APP_SERVICE, app_service("web", "team-a"))
            await client.create(APP_SERVICE, app_service("web", "team-b"))
            for namespace in ("team-a", "team-b"):
                await until(client, APP_SERVICE, "web", namespace, is_ready, 60, "web Ready")

            def say(line: str) -> None:
                said.append(line)
                if line.startswith("deleted Deployment ops1/appstack-operator"):
                    first.terminate()  # the kubelet would stop the pod now

            await uninstall(client, say, timeout=120, namespace="ops1")
            assert first.wait(timeout=30) == 0

            # ops1 is gone, its AppService (and its children) with it; ops2 is untouched
            assert await _existing(client, one) == []
            assert sorted(await _existing(client, two)) == expected_two
            for crd in two.crds:
                await client.get(CRD, crd["metadata"]["name"])
            assert not (await client.list(APP_SERVICE, "team-a"))[0]
            assert (await client.list(APP_SERVICE, "team-b"))[0]
            # ... and ops2's operator still reconciles
            await client.create(APP_SERVICE, app_service("after", "team-b"))
            await until(client, APP_SERVICE, "after", "team-b", is_ready, 60, "after Ready")
            await client.get(DEPLOYMENT, "after", "team-b")
    assert any(line.startswith("other installs stay (namespaces ops2)") for line in said)
    assert not any("CustomResourceDefinition" in line or "ops2" in line for line in said[1:])
