"""A field removed from the spec leaves the child too: the child writer applies when the
child keeps a field our last apply set that is no longer wanted (its managedFields entry),
and server-side apply prunes it — here ``resources`` and the environment of an AppService
and of an AppStack component, whose Deployments still had every wanted field."""

from __future__ import annotations

from typing import Any

from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT
from tests.e2e.conftest import RunningOperator, until
from tests.e2e.test_appstack import _stack

_RESOURCES = {"limits": {"cpu": "500m", "memory": "128Mi"}}


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def _has_env_and_resources(deployment: dict[str, Any]) -> bool:
    container = _container(deployment)
    return bool(container.get("env")) and bool(container.get("resources"))


def _lost_env_and_resources(deployment: dict[str, Any]) -> bool:
    container = _container(deployment)
    return not container.get("env") and not container.get("resources")


async def test_resources_and_env_removed_from_an_appservice_leave_its_deployment(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "trim", "namespace": namespace},
        "spec": {
            "image": "nginx:1.27",
            "envs": [{"name": "MODE", "value": "prod"}],
            "resources": _RESOURCES,
        },
    }
    await client.create(APP_SERVICE, app)
    await until(client, DEPLOYMENT, "trim", namespace, _has_env_and_resources, 30)

    patch = {"spec": {"envs": None, "resources": None}}
    await client.patch(APP_SERVICE, "trim", patch, namespace=namespace)

    deployment = await until(
        client, DEPLOYMENT, "trim", namespace, _lost_env_and_resources, 30, "env and resources gone"
    )
    assert _container(deployment)["image"] == "nginx:1.27"  # the rest stays as it was


async def test_resources_and_env_removed_from_a_component_leave_its_deployment(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    component = {"name": "api", "image": "api:1", "env": {"MODE": "prod"}, "resources": _RESOURCES}
    await client.create(APP_STACK, _stack("trim", namespace, components=[component]))
    await until(client, DEPLOYMENT, "trim-api", namespace, _has_env_and_resources, 30)

    patch = {"spec": {"components": [{"name": "api", "image": "api:1"}]}}  # replaces the list
    await client.patch(APP_STACK, "trim", patch, namespace=namespace)

    deployment = await until(
        client,
        DEPLOYMENT,
        "trim-api",
        namespace,
        _lost_env_and_resources,
        30,
        "env and resources gone",
    )
    assert _container(deployment)["image"] == "api:1"
