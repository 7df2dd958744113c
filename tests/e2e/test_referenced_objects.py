"""The Secrets and ConfigMaps an AppStack names but does not own are watched: a missing
third-party Secret being created, or a mounted ConfigMap being changed, reconciles the
stack within seconds — with a one-hour sync period, so only the watch can explain it —
and a missing Secret is not polled meanwhile. The cache holds their metadata only (never
a Secret's data), while the ConfigMaps the stack writes are cached in full."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.appstack import APP_STACK, labels
from appstack.runtime.client import Client
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, SECRET
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import TEST_BED_IPS, RunningOperator, is_ready, start_operator, until
from tests.e2e.test_appstack import _reason, _stack

HOUR = 3600.0


@pytest.fixture
async def hourly(operator_kubeconfig: Path, namespace: str) -> AsyncIterator[RunningOperator]:
    """The operator resyncing AppStacks once an hour (as ``--sync-period 1h``)."""
    options = {"appstack": {"sync_period": HOUR, "external_ips": TEST_BED_IPS}}
    running = await start_operator(operator_kubeconfig, namespace, options)
    yield running
    await running.stop()


def _reconciles(operator: RunningOperator, result: str) -> float:
    registry = operator.manager.metrics.registry
    labels_ = {"controller": "appstack", "result": result}
    return registry.get_sample_value("controller_runtime_reconcile_total", labels_) or 0.0


async def test_a_missing_third_party_secret_once_created_makes_the_stack_ready_at_once(
    client: Client, namespace: str, hourly: RunningOperator
) -> None:
    idp = {
        "name": "idp",
        "type": "service",
        "external": {
            "url": "https://idp.example.com/oauth",
            "authMethod": "basic",
            "secretRef": {"name": "idp-auth", "usernameKey": "user", "passwordKey": "pass"},
        },
    }
    component = {"name": "app", "image": "app:1", "uses": ["idp"]}
    await client.create(
        APP_STACK, _stack("tp", namespace, middleware=[idp], components=[component])
    )
    await until(
        client,
        APP_STACK,
        "tp",
        namespace,
        lambda s: _reason(s) == ("False", "CredentialsNotFound"),
        60,
        "CredentialsNotFound",
    )
    # The reconcile that found it missing succeeded: the Secret's creation will wake the
    # stack, it is not looked for again and again with backoff.
    await eventually(lambda: _reconciles(hourly, "success") >= 1, timeout=10, what="a reconcile")
    assert _reconciles(hourly, "requeue") == 0

    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "idp-auth", "namespace": namespace},
        "stringData": {"user": "u", "pass": "p"},
    }
    await client.create(SECRET, secret)
    created = time.monotonic()
    await until(client, APP_STACK, "tp", namespace, is_ready, 15, "Ready once the Secret exists")
    print(f"Ready {time.monotonic() - created:.1f}s after the Secret was created (resync 1h)")

    # watched as metadata only: the server never sent the data (PartialObjectMetadata)
    cached = hourly.manager.cache.get(SECRET.metadata_only(), f"{namespace}/idp-auth")
    assert cached is not None
    assert hourly.manager.cache.get(SECRET, f"{namespace}/idp-auth") is None  # no full cache
    assert "data" not in cached
    assert "stringData" not in cached
    assert "annotations" not in cached["metadata"]


async def test_a_changed_mounted_configmap_rolls_the_component_at_once(
    client: Client, namespace: str, hourly: RunningOperator
) -> None:
    site = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "site", "namespace": namespace},
        "data": {"index.html": "one"},
    }
    await client.create(CONFIG_MAP, site)
    configs = [
        {"name": "site", "mountPath": "/srv", "configMap": "site"},
        {"name": "web-conf", "mountPath": "/etc/web", "files": {"web.conf": "x = 1"}},
    ]
    stack = _stack(
        "cm", namespace, components=[{"name": "web", "image": "web:1", "configs": configs}]
    )
    await client.create(APP_STACK, stack)
    await until(client, APP_STACK, "cm", namespace, is_ready, 60, "the stack")

    def digest(deployment: dict[str, Any]) -> str:
        return str(deployment["spec"]["template"]["metadata"]["annotations"][labels.CONFIG_HASH])

    before = digest(await client.get(DEPLOYMENT, "cm-web", namespace))
    await client.patch(CONFIG_MAP, "site", {"data": {"index.html": "two"}}, namespace=namespace)
    changed = time.monotonic()
    await until(
        client,
        DEPLOYMENT,
        "cm-web",
        namespace,
        lambda d: digest(d) != before,
        15,
        "the ConfigMap change to roll the component",
    )
    print(f"rolled {time.monotonic() - changed:.1f}s after the ConfigMap changed (resync 1h)")

    cache = hourly.manager.cache
    theirs = cache.get(CONFIG_MAP.metadata_only(), f"{namespace}/site")
    assert theirs is not None
    assert "data" not in theirs  # a user's ConfigMap: metadata only, as the server sent it
    assert cache.get(CONFIG_MAP, f"{namespace}/site") is None  # the full cache: ours only
    ours = cache.get(CONFIG_MAP, f"{namespace}/cm-web-conf")
    assert ours is not None
    assert ours["data"] == {"web.conf": "x = 1"}  # our child: in full, compared on resync
