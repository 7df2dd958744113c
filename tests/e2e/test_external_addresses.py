"""External middleware addresses however they are spelt (issue #34, P2): a tenant — a user
who may only create our kinds in one namespace, as in test_tenant.py — gives an AppStack's
external host as an IP address spelt in a way some client still takes for it: with a
trailing dot (WHATWG URL parsers: browsers, Node's ``fetch``), or in inet_aton's forms
(glibc's and musl's ``getaddrinfo``). Each is judged as the address it is
(controllers/appstack/addresses.py):

* the metadata address and the ``kubernetes`` Service's address (in the test bed's service
  range, which the e2e operator denies as an installer would, conftest ``TEST_BED_IPS``)
  are ``ExternalAddressRefused``, with no Service and no EndpointSlice — before, they were
  judged as host names and written as ExternalName Services;
* an allowed address with a trailing dot is a Service with an EndpointSlice holding the
  address itself — before, an ExternalName Service of the dotted name.
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

from appstack.controllers.appstack import APP_STACK
from appstack.manifests import rbac
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import ENDPOINT_SLICE, SERVICE
from appstack_testbed.control_plane import SERVICE_IP
from tests.e2e.conftest import RunningOperator, service_account_kubeconfig, until

EDITOR = rbac.cluster_name("appstack-editor", rbac.NAMESPACE)


@pytest.fixture
async def tenant(
    kube: LightClient, kubeconfig: Path, namespace: str, tmp_path: Path, operator_kubeconfig: Path
) -> AsyncIterator[Client]:
    """A client as ServiceAccount ``tenant`` of the test's namespace, bound there to the
    generated editor ClusterRole (installed with the operator's permissions) only."""
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


def _stack(name: str, namespace: str, host: str) -> dict[str, Any]:
    db = {"name": "db", "type": "postgres", "external": {"host": host, "port": 5432}}
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "middleware": [db],
            "components": [{"name": "app", "image": "app:1", "uses": ["db"]}],
        },
    }


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    (ready,) = [c for c in conditions if c["type"] == "Ready"]
    return dict(ready)


def _refused(obj: dict[str, Any]) -> bool:
    if not (obj.get("status") or {}).get("conditions"):
        return False
    ready = _ready(obj)
    return ready["status"] == "False" and ready["reason"] == "ExternalAddressRefused"


async def test_addresses_spelt_as_names_are_refused(
    client: Client, tenant: Client, namespace: str, operator: RunningOperator
) -> None:
    hosts = {
        "metadata-dot": "169.254.169.254.",
        "apiserver-dot": f"{SERVICE_IP}.",
        "metadata-hex": "0xa9fea9fe",
        "loopback-short": "127.1",
    }
    for name, host in hosts.items():
        await tenant.create(APP_STACK, _stack(name, namespace, host))
    for name, host in hosts.items():
        stack = await until(client, APP_STACK, name, namespace, _refused, 60, f"{name} refused")
        message = _ready(stack)["message"]
        assert host in message, message
        with pytest.raises(errors.NotFound):
            await client.get(SERVICE, f"{name}-db", namespace)
        with pytest.raises(errors.NotFound):
            await client.get(ENDPOINT_SLICE, f"{name}-db-external", namespace)


async def test_an_allowed_address_with_a_trailing_dot_is_written_as_the_address(
    client: Client, tenant: Client, namespace: str, operator: RunningOperator
) -> None:
    await tenant.create(APP_STACK, _stack("shop", namespace, "192.0.2.10."))
    endpoints = await until(client, ENDPOINT_SLICE, "shop-db-external", namespace, bool, 60)
    assert endpoints["addressType"] == "IPv4"
    assert endpoints["endpoints"][0]["addresses"] == ["192.0.2.10"]
    service = await client.get(SERVICE, "shop-db", namespace)
    assert service["spec"]["type"] == "ClusterIP"
    assert "externalName" not in service["spec"]
