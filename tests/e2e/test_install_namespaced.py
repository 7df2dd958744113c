"""A namespaced install (``appstack manifests --namespace OPS --watch-namespace A
--watch-namespace B``): the operator, run with the generated Deployment's arguments under
the generated ServiceAccount and Roles only, reconciles AppServices in A and B; in C it
has no rights and does nothing, without crashing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client as LightClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests.install import InstallOptions, install
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT
from appstack_testbed.pytest_plugin import ClusterHandle
from tests.e2e.conftest import is_ready, until
from tests.e2e.installed import apply_install, remove_install, running_operator


@pytest.fixture
def namespaces(kube: LightClient) -> Iterator[list[str]]:
    """ops, a, b, c — fresh, deleted afterwards (ops with the install: the test's)."""
    suffix = uuid.uuid4().hex[:6]
    names = [f"{n}-{suffix}" for n in ("ops", "team-a", "team-b", "team-c")]
    for name in names[1:]:  # the install creates its own namespace
        kube.create(Namespace(metadata=ObjectMeta(name=name, labels={ENABLED: "true"})))
    yield names
    for name in names[1:]:
        kube.delete(Namespace, name)


def _app(name: str, namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
    }


async def test_a_namespaced_install_reconciles_in_its_namespaces_only(
    kube: LightClient,
    kube_cluster: ClusterHandle,
    client: Client,
    namespaces: list[str],
    tmp_path: Path,
) -> None:
    ops, team_a, team_b, team_c = namespaces
    parts = install(InstallOptions(namespace=ops, watch_namespaces=(team_a, team_b)))
    # Cluster-wide only: the reviews that guard /metrics, and the scrapers' metrics reader.
    bound = {b["roleRef"]["name"] for b in parts.objects() if b["kind"] == "ClusterRoleBinding"}
    cluster_rules = [  # the operator's own (the editor/viewer roles are for people)
        r
        for o in parts.objects()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] in bound
        for r in o["rules"]
    ]
    assert {res for r in cluster_rules for res in r.get("resources", [])} == {
        "tokenreviews",
        "subjectaccessreviews",
    }
    # removed again: its policies, cluster-wide, would hold the shared install to its rules
    apply_install(kube, parts)
    try:
        await client.create(APP_SERVICE, _app("web", team_c))  # first: it had every chance
        with running_operator(kube, kube_cluster.kubeconfig, parts, tmp_path):
            for watched in (team_a, team_b):
                await client.create(APP_SERVICE, _app("web", watched))
            for watched in (team_a, team_b):
                ready = f"{watched}/web Ready"
                await until(client, APP_SERVICE, "web", watched, is_ready, 60, ready)
                await client.get(DEPLOYMENT, "web", watched)

            async with await Client.connect(str(tmp_path / "operator-kubeconfig")) as operator:
                with pytest.raises(errors.Forbidden):
                    await operator.list(APP_SERVICE, namespace=team_c)
                with pytest.raises(errors.Forbidden):
                    await operator.list(APP_SERVICE)  # no cluster-wide rights either
            with pytest.raises(errors.NotFound):
                await client.get(DEPLOYMENT, "web", team_c)
            untouched = await client.get(APP_SERVICE, "web", team_c)
            assert not untouched.get("status")
    finally:
        remove_install(kube, parts)
