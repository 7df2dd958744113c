"""Namespaces are opted in (issue #34): the installed operator (cluster-wide, its own
ServiceAccount, the generated RBAC and admission policies) acts only in namespaces labelled
``appstack.dev/enabled=true``; elsewhere an object of ours gets ``Ready=False``, reason
``NamespaceNotEnabled``, and nothing else — no child, no Event — and an AppStack being
deleted there is let go at once. Labelling the namespace wakes its objects at once (the
operator watches the enabled namespaces). Only a cluster administrator, or a holder of the
generated ``appstack-namespace-enabler`` ClusterRole, may set the label: whoever may merely
create or patch namespaces may not (the namespace-labels policy), nor set it through the
``status`` or ``finalize`` subresource. docs/security.md.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, codecs
from lightkube import Client as LightClient
from lightkube.resources.core_v1 import Namespace
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from appstack.api.namespaces import ALLOW_PRIVILEGED, ENABLED, NOT_ENABLED_REASON
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.manifests import rbac
from appstack.manifests.admission import ENABLER
from appstack.manifests.install import install
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT, EVENT, NAMESPACE
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import absent, service_account_kubeconfig, until
from tests.e2e.installed import apply_install, running_operator

# Serial (alone on the cluster): its operator acts in every enabled namespace, every other test's
# too, and holds the install's Lease.
pytestmark = pytest.mark.serial


def _reason(obj: dict[str, Any]) -> str:
    ready = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"]
    return str(ready[0]["reason"]) if ready else ""


@pytest.fixture
async def closed(client: Client, namespace: str) -> AsyncIterator[str]:
    """A namespace nobody enabled (the test's own namespace is enabled)."""
    name = f"{namespace[:40]}-closed"
    await client.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await client.delete(NAMESPACE, name)


@pytest.fixture
def installed_operator(
    kube: LightClient, kube_cluster: ClusterHandle, tmp_path: Path, operator_kubeconfig: Path
) -> Iterator[None]:
    """The generated cluster-wide install's operator, as a process under its token."""
    parts = install()
    apply_install(kube, parts)
    with running_operator(kube, kube_cluster.kubeconfig, parts, tmp_path):
        yield


def _app(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 1, "ports": [{"port": 80}]},
    }


async def test_the_operator_acts_only_where_enabled_and_at_once_when_enabled(
    client: Client, closed: str, installed_operator: None
) -> None:
    await client.create(APP_SERVICE, _app("web", closed))
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": closed},
        "spec": {"components": [{"name": "web", "image": "nginx:1.7.9"}]},
    }
    await client.create(APP_STACK, stack)
    for resource, name in ((APP_SERVICE, "web"), (APP_STACK, "shop")):
        obj = await until(
            client, resource, name, closed, lambda o: _reason(o) == NOT_ENABLED_REASON, 60
        )
        ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "False"
        assert f"kubectl label namespace {closed} {ENABLED}=true" in ready["message"]
    assert not (await client.list(DEPLOYMENT, closed))[0]
    assert not (await client.list(EVENT, closed))[0]  # no Event where not enabled
    # An AppStack going away where it is not enabled is let go (no teardown to wait for).
    await client.delete(APP_STACK, "shop", closed)
    await eventually(lambda: absent(client, APP_STACK, "shop", closed), timeout=30, what="gone")
    # The platform team opens the namespace: the object is reconciled at once.
    started = time.monotonic()
    await client.patch(NAMESPACE, closed, {"metadata": {"labels": {ENABLED: "true"}}})
    await until(client, DEPLOYMENT, "web", closed, lambda _: True, 30, "its Deployment")
    await until(client, APP_SERVICE, "web", closed, lambda o: _reason(o) != NOT_ENABLED_REASON, 30)
    print(f"reconciled {time.monotonic() - started:.1f}s after the label")
    # ... and closed again: the operator stops acting (and says so).
    await client.patch(NAMESPACE, closed, {"metadata": {"labels": {ENABLED: None}}})
    await until(client, APP_SERVICE, "web", closed, lambda o: _reason(o) == NOT_ENABLED_REASON, 30)


async def test_only_an_administrator_or_an_enabler_may_open_a_namespace(
    kube: LightClient,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    operator_kubeconfig: Path,
) -> None:
    """Whoever may create and patch namespaces (a CI system, a portal), but holds no
    enabler grant, can neither create a namespace already enabled nor label one; bound
    to the generated enabler ClusterRole too, it can."""
    portal = f"{namespace[:40]}-portal"
    creator = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": portal},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create", "get", "patch"]}
        ],
    }
    subject = [{"kind": "ServiceAccount", "name": "portal", "namespace": namespace}]
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "portal", "namespace": namespace},
    }
    for obj in (creator, sa, _binding(portal, portal, subject)):
        kube.apply(codecs.from_dict(obj), force=True)
    path = service_account_kubeconfig(kube, kubeconfig, namespace, tmp_path / "portal", "portal")
    made = [f"{portal}-a", f"{portal}-b", f"{portal}-c"]
    try:
        async with await Client.connect(str(path)) as as_portal:
            opened = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": made[0], "labels": {ENABLED: "true"}},
            }
            with pytest.raises(errors.Forbidden) as refused:
                await as_portal.create(NAMESPACE, opened)
            assert ENABLER in refused.value.message, refused.value.message
            plain = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": made[1]}}
            await as_portal.create(NAMESPACE, plain)
            with pytest.raises(errors.Forbidden):
                await as_portal.patch(
                    NAMESPACE, made[1], {"metadata": {"labels": {ENABLED: "true"}}}
                )
            other = {"metadata": {"labels": {"team": "shop"}}}
            await as_portal.patch(NAMESPACE, made[1], other)  # other labels: its business
            enabler = rbac.cluster_name(ENABLER, rbac.NAMESPACE)
            kube.apply(
                codecs.from_dict(_binding(f"{portal}-enabler", enabler, subject)), force=True
            )

            async def opens() -> bool:
                try:
                    await as_portal.patch(
                        NAMESPACE, made[1], {"metadata": {"labels": {ENABLED: "true"}}}
                    )
                except errors.Forbidden:
                    return False
                return True

            await eventually(opens, timeout=30, what="the enabler may label", interval=0.5)
            await as_portal.create(
                NAMESPACE, {**opened, "metadata": {**opened["metadata"], "name": made[2]}}
            )
    finally:
        for name in made:
            with contextlib.suppress(ApiError):
                kube.delete(Namespace, name)
        for kind, name in (
            (ClusterRoleBinding, portal),
            (ClusterRoleBinding, f"{portal}-enabler"),
            (ClusterRole, portal),
        ):
            with contextlib.suppress(ApiError):
                kube.delete(kind, name)


async def test_the_opt_in_labels_cannot_be_set_through_status_or_finalize(
    kube: LightClient,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    operator_kubeconfig: Path,
) -> None:
    """Issue #46: the ``namespaces/status`` and ``namespaces/finalize`` subresources store
    the labels they are sent, so whoever may update either (a portal finishing namespaces'
    deletion, a status reporter) could set the opt-in label through them. Refused there
    too, without the enabler grant; any other label is theirs to set."""
    portal = f"{namespace[:40]}-sub"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": portal},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create", "get"]},
            {"apiGroups": [""], "resources": ["namespaces/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["namespaces/finalize"], "verbs": ["update"]},
        ],
    }
    subject = [{"kind": "ServiceAccount", "name": "portal", "namespace": namespace}]
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "portal", "namespace": namespace},
    }
    for obj in (role, sa, _binding(portal, portal, subject)):
        kube.apply(codecs.from_dict(obj), force=True)
    path = service_account_kubeconfig(kube, kubeconfig, namespace, tmp_path / "portal", "portal")
    made = f"{portal}-ns"
    try:
        async with await Client.connect(str(path)) as as_portal:

            async def created() -> bool:  # the ClusterRole was just bound: a moment
                try:
                    plain = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": made}}
                    await as_portal.create(NAMESPACE, plain)
                except errors.Forbidden:
                    return False
                return True

            await eventually(created, timeout=30, what="the portal may create a namespace")

            async def finalize(labels: dict[str, str]) -> None:
                current = await as_portal.get(NAMESPACE, made)
                current["metadata"]["labels"] = {**current["metadata"].get("labels", {}), **labels}
                await as_portal.request("PUT", f"/api/v1/namespaces/{made}/finalize", body=current)

            def status(labels: dict[str, str]) -> Any:
                patch = {"metadata": {"labels": labels}}
                return as_portal.patch(NAMESPACE, made, patch, subresource="status")

            for label in (ENABLED, ALLOW_PRIVILEGED):
                for attack in (status({label: "true"}), finalize({label: "true"})):
                    with pytest.raises(errors.Forbidden) as refused:
                        await attack
                    assert ENABLER in refused.value.message, refused.value.message
            # other labels through either: theirs (the subresources do store labels)
            await status({"team": "shop"})
            await finalize({"stage": "test"})
            labels = (await as_portal.get(NAMESPACE, made))["metadata"]["labels"]
            assert labels["team"] == "shop"
            assert labels["stage"] == "test"
            assert ENABLED not in labels
            assert ALLOW_PRIVILEGED not in labels
    finally:
        with contextlib.suppress(ApiError):
            kube.delete(Namespace, made)
        for kind, name in ((ClusterRoleBinding, portal), (ClusterRole, portal)):
            with contextlib.suppress(ApiError):
                kube.delete(kind, name)


def _binding(name: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }
