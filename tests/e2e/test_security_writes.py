"""The operator's token is not cluster-admin (issue #28, P0.2): attacks made with the
installed operator ServiceAccount's token, each refused by the writes policy
(manifests/admission_writes.py), beside the same write shaped as the operator makes it,
which passes. docs/security.md lists them.

* a privileged ``hostPath`` pod (and a Deployment of one) in ``kube-system``;
* an unowned Deployment, ConfigMap, Service in a tenant namespace; deleting an object the
  operator does not own;
* an EndpointSlice added to ``kube-dns``, or to a Service in the namespace it did not name;
* privileged containers, host namespaces, host ports and ``hostPath`` even under an owner of
  ours — unless the namespace opted in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.util.meta import owner_reference
from appstack.manifests.admission_writes import ALLOW_PRIVILEGED
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    NAMESPACE,
    POD,
    SERVICE,
)
from tests.support.eventually import eventually

NOT_OWNED = "may only write objects controlled by one of its kinds"
SYSTEM = "may not write in namespace kube-system"
PRIVILEGED = "may not write privileged containers or host ports"
HOST = "may not write pods using the host's network"
SLICE = "may only write EndpointSlices named <service>-external"


@pytest.fixture
async def as_operator(operator_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.connect(str(operator_kubeconfig)) as operator_client:
        yield operator_client


@pytest.fixture
async def owner(client: Client, namespace: str) -> dict[str, Any]:
    """An AppService the operator's writes can be owned by (no operator runs here)."""
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "owner", "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 1, "ports": [{"port": 80}]},
    }
    return await client.create(APP_SERVICE, app)


def _meta(name: str, namespace: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]  # as the operator writes it
    return meta


def _pod_spec(**extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox:1.36", "command": ["sleep", "1d"]}
    container.update(extra.pop("container", {}))
    return {"containers": [container], **extra}


def _pod(name: str, namespace: str, owner: dict[str, Any] | None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, namespace, owner),
        "spec": _pod_spec(**spec),
    }


def _deployment(
    name: str, namespace: str, owner: dict[str, Any] | None, **spec: Any
) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace, owner),
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": _pod_spec(**spec)},
        },
    }


def _slice(name: str, namespace: str, service: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta = _meta(name, namespace, owner)
    meta["labels"] = {"kubernetes.io/service-name": service}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.9"]}],
        "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
    }


async def _refused(as_operator: Client, resource: Any, obj: dict[str, Any], why: str) -> None:
    with pytest.raises(errors.ApiError) as refused:
        await as_operator.create(resource, obj)
    assert isinstance(refused.value, errors.Forbidden), refused.value
    assert why in refused.value.message, refused.value.message


HOST_PATH = {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}
PRIVILEGED_CONTAINER = {"container": {"securityContext": {"privileged": True}}}


async def test_nothing_in_kube_system(as_operator: Client) -> None:
    await _refused(as_operator, POD, _pod("attack", "kube-system", None, **HOST_PATH), SYSTEM)
    await _refused(
        as_operator,
        DEPLOYMENT,
        _deployment("attack", "kube-system", None, **PRIVILEGED_CONTAINER),
        SYSTEM,
    )
    await _refused(
        as_operator, ENDPOINT_SLICE, _slice("kube-dns-x", "kube-system", "kube-dns", None), SYSTEM
    )


async def test_only_what_one_of_our_kinds_controls(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    await _refused(as_operator, DEPLOYMENT, _deployment("loose", namespace, None), NOT_OWNED)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("loose", namespace, None)}
    await _refused(as_operator, CONFIG_MAP, config, NOT_OWNED)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta("loose", namespace, None),
        "spec": {"ports": [{"port": 80}]},
    }
    await _refused(as_operator, SERVICE, service, NOT_OWNED)
    # An ownerReference to something that is not one of our kinds does not count either.
    foreign = {**owner, "apiVersion": "apps/v1", "kind": "Deployment"}
    elsewhere = _meta("x", namespace, foreign)
    elsewhere["ownerReferences"][0].pop("blockOwnerDeletion")  # (needs Deployment finalizers)
    await _refused(as_operator, CONFIG_MAP, {**config, "metadata": elsewhere}, NOT_OWNED)
    # Deleting what the operator does not own: refused (an administrator's ConfigMap).
    await client.create(CONFIG_MAP, config)
    with pytest.raises(errors.Forbidden) as refused:
        await as_operator.delete(CONFIG_MAP, "loose", namespace)
    assert NOT_OWNED in refused.value.message
    # Shaped as the operator writes it (owned by an AppService): allowed, and deletable.
    owned = await as_operator.create(
        CONFIG_MAP, {**config, "metadata": _meta("owned", namespace, owner)}
    )
    assert owned["metadata"]["ownerReferences"][0]["kind"] == "AppService"
    await as_operator.create(DEPLOYMENT, _deployment("owned", namespace, owner))
    await as_operator.delete(CONFIG_MAP, "owned", namespace)


async def test_endpoint_slices_only_for_the_service_they_are_named_after(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    hijack = _slice("extra", namespace, "kubernetes", owner)
    await _refused(as_operator, ENDPOINT_SLICE, hijack, SLICE)
    await as_operator.create(ENDPOINT_SLICE, _slice("db-external", namespace, "db", owner))


async def test_no_privileged_or_host_pods_unless_the_namespace_opts_in(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    cases = [
        (PRIVILEGED_CONTAINER, PRIVILEGED),
        ({"container": {"ports": [{"containerPort": 80, "hostPort": 8080}]}}, PRIVILEGED),
        (
            {
                "initContainers": [
                    {"name": "i", "image": "busybox:1.36", **PRIVILEGED_CONTAINER["container"]}
                ]
            },
            PRIVILEGED,
        ),
        ({"hostNetwork": True}, HOST),
        ({"hostPID": True}, HOST),
        ({"hostIPC": True}, HOST),
        (HOST_PATH, HOST),
    ]
    for n, (spec, why) in enumerate(cases):
        await _refused(as_operator, POD, _pod(f"p{n}", namespace, owner, **spec), why)
        await _refused(as_operator, DEPLOYMENT, _deployment(f"d{n}", namespace, owner, **spec), why)
    # An ordinary pod under an owner of ours: allowed.
    await as_operator.create(DEPLOYMENT, _deployment("plain", namespace, owner))
    # The namespace opts in: the same privileged hostPath workload is allowed there.
    await client.patch(NAMESPACE, namespace, {"metadata": {"labels": {ALLOW_PRIVILEGED: "true"}}})
    spec = {**HOST_PATH, **PRIVILEGED_CONTAINER}
    opted = _deployment("opted-in", namespace, owner, **spec)

    # admission sees a namespace's labels through the API server's own cache: a moment
    refusals: list[str] = []

    async def allowed() -> bool:
        try:
            await as_operator.create(DEPLOYMENT, opted)
        except errors.Forbidden as error:
            refusals.append(error.message)
            return False
        return True

    await eventually(allowed, timeout=30, what="allowed once the namespace opted in", interval=0.2)
    assert not refusals or PRIVILEGED in refusals[-1]
