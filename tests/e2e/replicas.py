"""Helpers for the fault-injection tests: operator replicas as real processes (``appstack
run --leader-elect``, :mod:`appstack_testbed.replica`), the Lease's holder, AppServices,
and ServiceAccount tokens bound to a Secret (deleting the Secret revokes the token at once —
the API server's minimum token lifetime of 10 minutes is too long for a test)."""

from __future__ import annotations

import ssl
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from lightkube import Client as LightClient
from lightkube.models.authentication_v1 import BoundObjectReference, TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Secret, ServiceAccount

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.rbac import LEASE_NAME
from appstack.manifests import rbac
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import LEASE
from appstack_testbed.waiting import condition_status, eventually


async def holder(client: Client, namespace: str) -> str:
    try:
        lease = await client.get(LEASE, LEASE_NAME, namespace)
    except errors.NotFound:
        return ""
    return str(lease["spec"].get("holderIdentity") or "")


async def wait_holder(client: Client, namespace: str, prefix: str, timeout: float) -> str:
    """Wait until the operator's Lease is held by an identity starting with ``prefix``."""
    return await eventually(
        lambda: holder(client, namespace),
        lambda current: current.startswith(prefix + "_"),
        timeout=timeout,
        what=f"the lease held by {prefix}_*",
        interval=0.05,
    )


def app_service(name: str, namespace: str, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": image, "ports": [{"port": 80}]},
    }


async def wait_ready_app(client: Client, name: str, namespace: str, timeout: float = 60) -> None:
    await eventually(
        lambda: client.get(APP_SERVICE, name, namespace),
        lambda obj: condition_status(obj, "Ready") == "True",
        timeout=timeout,
        what=f"AppService {name} Ready",
    )


def bound_token(light: LightClient) -> tuple[str, str]:
    """A token of the operator's ServiceAccount bound to a new Secret: (token, secret name).
    Deleting the Secret invalidates the token."""
    name = f"token-{uuid.uuid4().hex[:8]}"
    secret = light.create(Secret(metadata=ObjectMeta(name=name, namespace=rbac.NAMESPACE)))
    assert secret.metadata is not None
    request = ServiceAccount.Token(
        metadata=ObjectMeta(name=rbac.NAME, namespace=rbac.NAMESPACE),
        spec=TokenRequestSpec(
            audiences=[],
            expirationSeconds=3600,
            boundObjectRef=BoundObjectReference(
                kind="Secret", apiVersion="v1", name=name, uid=secret.metadata.uid
            ),
        ),
    )
    token = light.create(request, name=rbac.NAME, namespace=rbac.NAMESPACE).status.token
    return str(token), name


def token_file_kubeconfig(admin_kubeconfig: Path, token_file: Path, path: Path) -> Path:
    """A copy of the admin kubeconfig whose user reads its token from ``token_file``."""
    config = yaml.safe_load(admin_kubeconfig.read_text())
    config["users"] = [{"name": "operator", "user": {"tokenFile": str(token_file)}}]
    config["contexts"][0]["context"]["user"] = "operator"
    path.write_text(yaml.safe_dump(config))
    return path


def write_atomically(path: Path, text: str) -> None:
    """Replace a file in one step, as the kubelet rotates a projected token."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


async def token_rejected(api_url: str, ca: Path, token: str) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{api_url}/api", headers={"Authorization": f"Bearer {token}"}, ssl=context
        ) as response,
    ):
        return response.status == 401
