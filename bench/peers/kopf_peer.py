"""The kopf peer of ``bench/peers.py``: a straightforward kopf operator for appstack's
``appstack.dev/v1`` AppService, written the way kopf's documentation suggests — sync
handlers, the official ``kubernetes`` client, ``kopf.adopt``-style owner references,
``status.observedGeneration`` set through the handler's ``patch``, and the Deployment's
replica counts mirrored into the AppService's status by an event handler.

It creates the very children appstack creates (appstack's own desired Deployment and
Service), so the API server does the same work for both. Run as its own process:
``kopf run --standalone --namespace NS bench/peers/kopf_peer.py`` (``KUBECONFIG`` set).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kopf
import kubernetes
from kubernetes.client.rest import ApiException

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import desired

CONFLICT, NOT_FOUND = 409, 404
MIRRORED = ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    kubernetes.config.load_kube_config()
    settings.watching.server_timeout = 290


def _upsert(
    create: Callable[..., Any], patch: Callable[..., Any], obj: dict[str, Any], *, exists: bool
) -> None:
    name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
    try:
        if exists:
            patch(name, namespace, obj)
        else:
            create(namespace, obj)
    except ApiException as err:
        if err.status == (NOT_FOUND if exists else CONFLICT):
            _upsert(create, patch, obj, exists=not exists)
        else:
            raise


@kopf.on.resume("appstack.dev", "v1", "appservices")
@kopf.on.create("appstack.dev", "v1", "appservices")
@kopf.on.update("appstack.dev", "v1", "appservices", field="spec")
def ensure(body: kopf.Body, meta: kopf.Meta, reason: str, patch: kopf.Patch, **_: Any) -> None:
    """Create (or bring up to date) the app's Deployment and Service."""
    app = copy.deepcopy({key: body[key] for key in ("apiVersion", "kind", "metadata", "spec")})
    spec = AppServiceSpec.model_validate(app["spec"])
    exists = reason != "create"
    apps, core = kubernetes.client.AppsV1Api(), kubernetes.client.CoreV1Api()
    deployment = desired.deployment(app, spec)
    service = desired.service(app, spec)
    for child in (deployment, service):
        if child is not None:
            kopf.adopt(child, owner=body)
    if deployment is not None:
        _upsert(
            apps.create_namespaced_deployment,
            apps.patch_namespaced_deployment,
            deployment,
            exists=exists,
        )
    if service is not None:
        _upsert(
            core.create_namespaced_service, core.patch_namespaced_service, service, exists=exists
        )
    patch.status["observedGeneration"] = meta["generation"]


@kopf.on.event("apps", "v1", "deployments")
def mirror(body: kopf.Body, meta: kopf.Meta, namespace: str, **_: Any) -> None:
    """Copy an owned Deployment's replica counts into its AppService's status."""
    owner = next(
        (ref for ref in meta.get("ownerReferences") or [] if ref.get("kind") == "AppService"),
        None,
    )
    status = body.get("status") or {}
    if owner is None or not status:
        return
    try:
        kubernetes.client.CustomObjectsApi().patch_namespaced_custom_object_status(
            "appstack.dev",
            "v1",
            namespace,
            "appservices",
            owner["name"],
            {"status": {key: status.get(key, 0) for key in MIRRORED}},
        )
    except ApiException as err:
        if err.status != NOT_FOUND:
            raise
