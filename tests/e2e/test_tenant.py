"""A tenant stays in its namespace (issue #28 P1.4): every attack made as a user who may only
create our kinds in one namespace — a ServiceAccount bound there to the generated
``appstack-editor`` ClusterRole, the role the install aggregates into ``edit`` — while the
operator (under its generated RBAC and admission policies) watches that namespace *and* a
neighbour's. docs/security.md ("Tenants: what creating each kind amounts to") lists them.

* the premise: the tenant can create our kinds here and nothing else (no Deployments, no
  Secrets, no status, nothing in the neighbour's namespace);
* every name the tenant writes resolves in the tenant's namespace: a Secret of the neighbour
  stays unseen (``CredentialsNotFound``), a name with a namespace in it is refused at
  admission;
* nobody else's object is adopted or changed: an unowned Deployment and Service of the same
  name are left as they were (``DeploymentConflict``), and no EndpointSlice is added to a
  Service the stack does not own;
* addresses inside the cluster (the neighbour's Service, ``kubernetes.default``, metadata)
  are refused;
* pods beyond the Pod Security baseline asked through our kinds are refused at admission
  with the field named (unless the namespace opted in); what the namespace's Pod Security
  level still refuses shows as ``ReplicaFailure``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client as LightClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import RoleRef, Subject
from lightkube.resources.core_v1 import ServiceAccount
from lightkube.resources.rbac_authorization_v1 import RoleBinding

from appstack.api.namespaces import ALLOW_PRIVILEGED
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.crontab import CRON_TAB
from appstack.controllers.util.meta import SLICE_MANAGER
from appstack.manifests import rbac
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    DEPLOYMENT,
    ENDPOINT_SLICE,
    NAMESPACE,
    POD,
    SECRET,
    SERVICE,
)
from appstack.sdk.kit.meta import SLICE_MANAGER_LABEL
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import (
    RunningOperator,
    service_account_kubeconfig,
    start_operator,
    until,
)

EDITOR = rbac.cluster_name("appstack-editor", rbac.NAMESPACE)


def _reason(obj: dict[str, Any]) -> str:
    ready = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"]
    return ready[0]["reason"] if ready and ready[0]["status"] == "False" else ""


async def _said(  # noqa: PLR0917 - read positionally, like until()
    client: Client, resource: Any, name: str, namespace: str, reason: str, timeout: float
) -> dict[str, Any]:
    """Wait until the object is ``Ready=False`` with ``reason``; return it."""
    return await until(
        client, resource, name, namespace, lambda o: _reason(o) == reason, timeout, reason
    )


def _message(obj: dict[str, Any]) -> str:
    ready = [c for c in obj["status"]["conditions"] if c["type"] == "Ready"]
    return str(ready[0]["message"])


@pytest.fixture
async def neighbour(client: Client, namespace: str) -> AsyncIterator[str]:
    """Another team's namespace, with a Secret, a ConfigMap and a Service of its own."""
    other = f"{namespace[:40]}-neighbour"
    await client.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    meta = {"namespace": other}
    await client.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {**meta, "name": "uuc-token"},
            "stringData": {"token": "the-neighbours-token"},
        },
    )
    await client.create(
        SERVICE,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {**meta, "name": "api"},
            "spec": {"ports": [{"port": 80}], "selector": {"app": "api"}},
        },
    )
    yield other
    await client.delete(NAMESPACE, other)


@pytest.fixture
async def operator_here_and_next_door(
    operator_kubeconfig: Path, namespace: str, neighbour: str
) -> AsyncIterator[RunningOperator]:
    """The operator watching both namespaces (so a leak would have someone to act on it)."""
    running = await start_operator(operator_kubeconfig, namespace, also_watch=(neighbour,))
    yield running
    await running.stop()


@pytest.fixture
async def tenant(
    kube: LightClient, kubeconfig: Path, namespace: str, tmp_path: Path, operator_kubeconfig: Path
) -> AsyncIterator[Client]:
    """A client as ServiceAccount ``tenant`` of the test's namespace, bound there (a
    RoleBinding) to the generated editor ClusterRole (installed with the operator's
    permissions) and nothing else."""
    meta = ObjectMeta(name="tenant", namespace=namespace)
    kube.create(ServiceAccount(metadata=meta))
    kube.create(
        RoleBinding(
            metadata=meta,
            roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="ClusterRole", name=EDITOR),
            subjects=[Subject(kind="ServiceAccount", name="tenant", namespace=namespace)],
        )
    )
    path = service_account_kubeconfig(kube, kubeconfig, namespace, tmp_path / "tenant", "tenant")
    async with await Client.connect(str(path)) as as_tenant:
        yield as_tenant


def _app(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 1, "ports": [{"port": 80}], **spec},
    }


def _cron(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cronSpec": "* * * * *", "image": "busybox", **spec},
    }


def _stack(name: str, namespace: str, middleware: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "middleware": [middleware],
            "components": [{"name": "app", "image": "app:1", "uses": [middleware["name"]]}],
        },
    }


async def _refused(call: Any) -> errors.ApiError:
    with pytest.raises(errors.Forbidden) as refused:
        await call
    return refused.value


async def test_the_tenant_may_create_our_kinds_here_and_nothing_else(
    client: Client, tenant: Client, namespace: str, neighbour: str
) -> None:
    """The premise of the other tests, checked rather than assumed."""
    await tenant.create(APP_SERVICE, _app("web", namespace))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    await _refused(
        tenant.create(DEPLOYMENT, {**deployment, "metadata": {"name": "d", "namespace": namespace}})
    )
    await _refused(tenant.list(SECRET, namespace))
    await _refused(tenant.list(POD, namespace))
    await _refused(tenant.get(SECRET, "uuc-token", neighbour))
    await _refused(tenant.create(APP_SERVICE, _app("web", neighbour)))
    await _refused(tenant.list(APP_SERVICE, neighbour))
    # Status is the operator's: the tenant cannot claim its object Ready.
    ready = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Lie",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    await _refused(tenant.patch_status(APP_SERVICE, "web", ready, namespace=namespace))
    assert (await client.get(APP_SERVICE, "web", namespace)).get("status") is None


async def test_names_the_tenant_writes_resolve_in_its_namespace(
    client: Client,
    tenant: Client,
    namespace: str,
    neighbour: str,
    operator_here_and_next_door: RunningOperator,
) -> None:
    """The neighbour's ``uuc-token`` Secret is not found for the tenant's stack (only its own
    namespace is looked in); a reference with a namespace in it is refused at admission."""
    uuc: dict[str, Any] = {
        "name": "uuc",
        "type": "service",
        "external": {
            "url": "https://uuc.example.com:8443/uuc",
            "authMethod": "bearer",
            "secretRef": {"name": "uuc-token"},
        },
    }
    await tenant.create(APP_STACK, _stack("shop", namespace, uuc))
    stack = await _said(client, APP_STACK, "shop", namespace, "CredentialsNotFound", 60)
    assert "uuc-token" in _message(stack)
    assert "the-neighbours-token" not in str(stack)
    escaping = {
        **uuc,
        "external": {**uuc["external"], "secretRef": {"name": f"{neighbour}/uuc-token"}},
    }
    with pytest.raises(errors.Invalid) as refused:
        await tenant.create(APP_STACK, _stack("escape", namespace, escaping))
    assert "secretRef.name" in refused.value.message, refused.value.message
    configs = {
        "name": "app2",
        "image": "app:1",
        "configs": [
            {"name": "settings", "mountPath": "/etc/app", "configMap": f"{neighbour}/settings"}
        ],
    }
    with pytest.raises(errors.Invalid):
        await tenant.create(
            APP_STACK,
            {
                **_stack("escape", namespace, uuc),
                "spec": {"middleware": [uuc], "components": [configs]},
            },
        )
    # The tenant's own Secret of that name is what the stack takes, once it exists.
    await client.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "uuc-token", "namespace": namespace},
            "stringData": {"token": "the-tenants-token"},
        },
    )
    await until(
        client,
        APP_STACK,
        "shop",
        namespace,
        lambda s: _reason(s) not in {"", "CredentialsNotFound"} or _ready(s),
        60,
        "the tenant's own Secret to be taken",
    )


def _ready(obj: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


async def test_objects_of_others_are_neither_adopted_nor_changed(
    client: Client,
    tenant: Client,
    namespace: str,
    operator_here_and_next_door: RunningOperator,
) -> None:
    """Someone else's Deployment and Service named like the tenant's AppService stay as they
    were; someone else's Service named like a stack's external middleware gets no
    EndpointSlice."""
    theirs = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace, "labels": {"team": "other"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "theirs"}},
            "template": {
                "metadata": {"labels": {"app": "theirs"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            },
        },
    }
    before = await client.create(DEPLOYMENT, theirs)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "shop-db", "namespace": namespace},
        "spec": {"ports": [{"port": 5432}], "selector": {"app": "theirs"}},
    }
    their_service = await client.create(SERVICE, service)
    await tenant.create(APP_SERVICE, _app("web", namespace, image="nginx:1.25"))
    app = await _said(client, APP_SERVICE, "web", namespace, "DeploymentConflict", 60)
    assert "Deployment web already exists" in _message(app)
    after = await client.get(DEPLOYMENT, "web", namespace)
    assert after["spec"] == before["spec"]  # (its status is the deployment controller's)
    assert after["metadata"].get("labels") == before["metadata"]["labels"]
    assert "ownerReferences" not in after["metadata"]
    # created here by Update; the operator writes by server-side apply only
    assert [f["operation"] for f in after["metadata"]["managedFields"]] == ["Update", "Update"]
    db = {"name": "db", "type": "postgres", "external": {"host": "192.0.2.10", "port": 5432}}
    await tenant.create(APP_STACK, _stack("shop", namespace, db))
    stack = await _said(client, APP_STACK, "shop", namespace, "ServiceConflict", 60)
    assert "Service shop-db already exists" in _message(stack)
    with pytest.raises(errors.NotFound):
        await client.get(ENDPOINT_SLICE, "shop-db-external", namespace)
    slices, _ = await client.list(ENDPOINT_SLICE, namespace)
    assert not [
        s for s in slices if s["metadata"]["labels"].get(SLICE_MANAGER_LABEL) == SLICE_MANAGER
    ]
    still = await client.get(SERVICE, "shop-db", namespace)
    assert still["metadata"]["resourceVersion"] == their_service["metadata"]["resourceVersion"]


async def test_addresses_inside_the_cluster_are_refused_to_a_tenant(
    client: Client,
    tenant: Client,
    namespace: str,
    neighbour: str,
    operator_here_and_next_door: RunningOperator,
) -> None:
    """The neighbour's Service by its cluster name, the API server's and the metadata
    endpoint: each ``ExternalAddressRefused``, with nothing written that points there."""
    hosts = {
        "next-door": f"api.{neighbour}.svc.cluster.local",
        "next-door-short": f"api.{neighbour}",
        "apiserver": "kubernetes.default",
        "metadata": "169.254.169.254",
    }
    for name, host in hosts.items():
        db = {"name": "db", "type": "postgres", "external": {"host": host, "port": 5432}}
        await tenant.create(APP_STACK, _stack(name, namespace, db))
    for name, host in hosts.items():
        stack = await _said(client, APP_STACK, name, namespace, "ExternalAddressRefused", 60)
        assert host in _message(stack), _message(stack)
        with pytest.raises(errors.NotFound):
            await client.get(SERVICE, f"{name}-db", namespace)
        with pytest.raises(errors.NotFound):
            await client.get(ENDPOINT_SLICE, f"{name}-db-external", namespace)


async def test_pods_beyond_baseline_asked_through_our_kinds_are_refused_at_admission(
    client: Client,
    tenant: Client,
    namespace: str,
    operator_here_and_next_door: RunningOperator,
) -> None:
    """Privileged, capabilities beyond the baseline (``SYS_ADMIN``: with no seccomp and
    AppArmor, root on the node), an Unconfined seccomp profile or an AppArmor-unconfined
    pod annotation in an AppService, a stack's component or managed middleware, or a
    CronTab: refused at admission with the field named (issue #34), nothing written.
    Where the namespace opted in to privileged pods they are admitted; what the
    namespace's Pod Security level still refuses (``SYS_ADMIN`` under baseline) is refused
    when the pods are made, and said as ``ReplicaFailure`` with the API server's message."""
    admin = {"capabilities": {"add": ["SYS_ADMIN"]}}
    unconfined = {"seccompProfile": {"type": "Unconfined"}}
    apparmor = {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}
    component = {"name": "app", "image": "app:1", "securityContext": admin}
    stack = _stack("shop", namespace, {"name": "db", "type": "postgres", "managed": {}})
    stack["spec"]["components"] = [component]
    redis = {"name": "db", "type": "redis", "managed": {"securityContext": admin}}
    attempts = [
        ("spec.securityContext", _app("root", namespace, securityContext={"privileged": True})),
        ("spec.securityContext", _app("admin", namespace, securityContext=admin)),
        ("spec.securityContext", _app("loose", namespace, securityContext=unconfined)),
        ("spec.podAnnotations", _app("armor", namespace, podAnnotations=apparmor)),
        ("spec.components[*].securityContext", stack),
        ("spec.middleware[*].managed.securityContext", _stack("shop2", namespace, redis)),
        ("CronTab spec.securityContext", _cron("tab", namespace, securityContext=admin)),
    ]
    kinds = {"AppStack": APP_STACK, "AppService": APP_SERVICE, "CronTab": CRON_TAB}
    for field, obj in attempts:
        resource = kinds[obj["kind"]]
        refused = await _refused(tenant.create(resource, obj))
        assert field in refused.message, refused.message
        assert "allow-privileged-pods=true" in refused.message
    assert not (await client.list(APP_SERVICE, namespace))[0]
    assert not (await client.list(DEPLOYMENT, namespace))[0]
    await client.patch(
        NAMESPACE,
        namespace,
        {
            "metadata": {
                "labels": {
                    ALLOW_PRIVILEGED: "true",
                    "pod-security.kubernetes.io/enforce": "baseline",
                }
            }
        },
    )

    async def admitted() -> bool:
        try:
            await tenant.create(APP_SERVICE, _app("admin", namespace, securityContext=admin))
        except errors.Forbidden:
            return False
        return True

    await eventually(admitted, timeout=30, what="admitted once opted in", interval=0.2)
    app = await _said(client, APP_SERVICE, "admin", namespace, "ReplicaFailure", 90)
    assert "violates PodSecurity" in _message(app), _message(app)
    assert not (await client.list(POD, namespace))[0]
