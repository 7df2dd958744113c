"""Short-lived credentials: the operator re-reads a rotated token file (a 401 triggers the
re-read), and ``/healthz`` fails once the API server has rejected its credentials for
longer than the threshold. Tokens are bound to a Secret: deleting it revokes the token at
once (the API server will not mint tokens shorter than 10 minutes)."""

from __future__ import annotations

import time
from pathlib import Path

import aiohttp
import pytest
from lightkube import Client as LightClient
from lightkube.resources.core_v1 import Secret

from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests import rbac
from appstack.runtime.client import Client
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import start_operator
from tests.e2e.replicas import (
    app_service,
    bound_token,
    token_file_kubeconfig,
    token_rejected,
    wait_ready_app,
    write_atomically,
)


class Tokens:
    """Bound tokens of the operator's ServiceAccount, a token file and a kubeconfig using it."""

    def __init__(self, kube: LightClient, local: LocalCluster, base: Path, tmp: Path) -> None:
        self.kube, self.local = kube, local
        self.file = tmp / "token"
        self.kubeconfig = token_file_kubeconfig(base, self.file, tmp / "kubeconfig")

    def mint(self) -> tuple[str, str]:
        """A new token (and the Secret it is bound to)."""
        return bound_token(self.kube)

    async def revoke(self, secret: str, token: str) -> None:
        """Delete the Secret the token is bound to; wait until the API server rejects it."""
        self.kube.delete(Secret, secret, namespace=rbac.NAMESPACE)
        ca, url = self.local.directory / "pki" / "ca.crt", self.local.layout().api_url
        await eventually(
            lambda: token_rejected(url, ca, token), timeout=30, what="the token rejected"
        )


@pytest.fixture
def tokens(
    kube: LightClient, kube_cluster: ClusterHandle, operator_kubeconfig: Path, tmp_path: Path
) -> Tokens:
    return Tokens(kube, kube_cluster.require_local(), operator_kubeconfig, tmp_path)


async def test_a_rotated_token_file_is_re_read_after_the_old_token_is_revoked(
    client: Client, namespace: str, tokens: Tokens
) -> None:
    first, first_secret = tokens.mint()
    tokens.file.write_text(first)
    operator = await start_operator(tokens.kubeconfig, namespace)
    try:
        await client.create(APP_SERVICE, app_service("first", namespace))
        await wait_ready_app(client, "first", namespace)

        second, _ = tokens.mint()
        write_atomically(tokens.file, second)  # as the kubelet rotates a projected token
        await tokens.revoke(first_secret, first)
        rotated = time.monotonic()
        await client.create(APP_SERVICE, app_service("second", namespace))
        await wait_ready_app(client, "second", namespace)
        recovered = time.monotonic() - rotated
        rejected = sum(
            sample.value
            for metric in operator.client.metrics.rest_requests.collect()
            for sample in metric.samples
            if sample.name.endswith("_total") and sample.labels["code"] == "401"
        )
    finally:
        await operator.stop()

    print(f"token rotated and old one revoked: Ready again after {recovered:.1f}s ({rejected} 401)")
    # The old token was used once more (401), then the file re-read; "second" became Ready,
    # so the operator wrote its children with the new token after the old one was revoked.
    assert rejected >= 1


async def test_healthz_fails_once_the_credentials_are_rejected_for_longer_than_the_threshold(
    client: Client, namespace: str, tokens: Tokens
) -> None:
    token, secret = tokens.mint()
    tokens.file.write_text(token)
    threshold = 3.0
    operator = await start_operator(
        tokens.kubeconfig, namespace, health_address="127.0.0.1:0", auth_failure_threshold=threshold
    )
    url = f"http://127.0.0.1:{operator.manager.bound['health']}/healthz"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(url) as response:
                assert response.status == 200
            await tokens.revoke(secret, token)
            revoked = time.monotonic()
            # Something to do: every request it makes is now rejected.
            await client.create(APP_SERVICE, app_service("orphan", namespace))

            async def healthz() -> tuple[int, str]:
                async with http.get(url) as response:
                    return response.status, await response.text()

            _, body = await eventually(
                healthz,
                lambda answer: answer[0] == 503,
                timeout=threshold + 30,
                what="/healthz 503",
            )
            unhealthy = time.monotonic() - revoked
            async with http.get(url.replace("healthz", "readyz")) as response:
                ready = response.status
    finally:
        await operator.stop()

    print(f"credentials revoked: /healthz 503 after {unhealthy:.1f}s (threshold {threshold}s)")
    assert "rejected our credentials" in body
    assert unhealthy >= threshold
    assert ready == 200  # readiness is about the caches; liveness restarts the process
