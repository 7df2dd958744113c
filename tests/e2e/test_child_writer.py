"""The child writer against the real API server: any refusal of an apply that the user must
fix — including the HTTP 500 server-side apply answers for duplicate list keys — comes back
as a Problem (reported in status), never as an exception that aborts the reconcile."""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.util.meta import CHILD_SELECTOR, child_labels
from appstack.runtime.cache import ByObject, Cache
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import DEPLOYMENT
from appstack.sdk.kit.children import ChildWriter
from appstack.sdk.kit.meta import child_metadata


def _deployment(owner: dict[str, Any], env: list[dict[str, str]]) -> dict[str, Any]:
    labels = child_labels("owner", "test")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": child_metadata(owner, "owner", labels),
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "env": env}]},
            },
        },
    }


async def test_an_apply_refused_with_http_500_for_duplicate_keys_is_a_problem(
    client: Client, namespace: str, operator_kubeconfig: object
) -> None:
    owner = await client.create(
        APP_SERVICE,
        {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "metadata": {"name": "owner", "namespace": namespace},
            "spec": {"image": "nginx:1.27"},
        },
    )
    cache = Cache(client, [namespace], by_object={DEPLOYMENT: ByObject(CHILD_SELECTOR)})
    cache.informers(DEPLOYMENT)
    await cache.start()
    try:
        await cache.wait_synced()
        recorder = EventRecorder(client, controller=IDENTITY.event_source, instance="e2e")
        writer = ChildWriter(client, cache, recorder, APP_SERVICE, (DEPLOYMENT,))
        twice = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
        current, problem = await writer.sync(owner, DEPLOYMENT, _deployment(owner, twice))
        assert current is None
        assert problem is not None
        assert problem.reason == "DeploymentRejected"
        assert "duplicate entries for key" in problem.message, problem.message

        once = [{"name": "A", "value": "1"}]
        current, problem = await writer.sync(owner, DEPLOYMENT, _deployment(owner, once))
        assert problem is None
        assert current is not None
    finally:
        await cache.stop()
