"""The kopf twin of the operator ``appstack init`` + ``appstack create api --group webapp
--version v1 --kind Guestbook`` generates, for ``bench/scaffolded.py``: the same behaviour
written the way kopf's documentation suggests, so that the two processes can be compared
(idle memory, start-up, imports).

Like the generated controller, each Guestbook keeps a ConfigMap ``<name>-guestbook`` holding
``spec.foo`` (owned by the Guestbook, labelled), and gets ``status.observedGeneration`` and a
``Ready`` condition; a deleted ConfigMap is made again. Sync handlers and the official
``kubernetes`` client, as kopf's examples use. Run as its own process:
``kopf run --standalone --namespace NS bench/peers/kopf_guestbook.py`` (``KUBECONFIG`` set).
"""

from __future__ import annotations

import datetime
from typing import Any

import kopf
import kubernetes
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "webapp.tutorial.kubebuilder.io", "v1", "guestbooks"
MANAGED_BY = "guestbook-kopf"
CONFLICT, NOT_FOUND = 409, 404


@kopf.on.startup()
def configure(**_: Any) -> None:
    kubernetes.config.load_kube_config()


def _config_map(body: kopf.Body) -> dict[str, Any]:
    name = body["metadata"]["name"]
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{name}-guestbook",
            "labels": {
                "app.kubernetes.io/name": "guestbook",
                "app.kubernetes.io/instance": name,
                "app.kubernetes.io/managed-by": MANAGED_BY,
            },
        },
        "data": {"foo": body.get("spec", {}).get("foo") or ""},
    }
    kopf.adopt(config_map, owner=body)
    return config_map


def _ensure(body: kopf.Body) -> None:
    config_map = _config_map(body)
    core = kubernetes.client.CoreV1Api()
    name, namespace = config_map["metadata"]["name"], body["metadata"]["namespace"]
    try:
        core.create_namespaced_config_map(namespace, config_map)
    except ApiException as err:
        if err.status != CONFLICT:
            raise
        core.replace_namespaced_config_map(name, namespace, config_map)


def _ready(body: kopf.Body) -> dict[str, Any]:
    generation = body["metadata"].get("generation")
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "observedGeneration": generation,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Reconciled",
                "message": "every child is as wanted",
                "observedGeneration": generation,
                "lastTransitionTime": now,
            }
        ],
    }


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
def reconcile(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """The ConfigMap as the spec wants it, then Ready and the generation acted on."""
    _ensure(body)
    patch.status.update(_ready(body))


@kopf.on.event("", "v1", "configmaps", labels={"app.kubernetes.io/managed-by": MANAGED_BY})
def restore(event: kopf.RawEvent, meta: kopf.Meta, namespace: str, **_: Any) -> None:
    """A deleted child is made again from its Guestbook (if the Guestbook is still there)."""
    if event["type"] != "DELETED":
        return
    owner = meta.get("labels", {}).get("app.kubernetes.io/instance")
    custom = kubernetes.client.CustomObjectsApi()
    try:
        guestbook = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, owner)
    except ApiException as err:
        if err.status == NOT_FOUND:
            return
        raise
    if not guestbook["metadata"].get("deletionTimestamp"):
        _ensure(kopf.Body(guestbook))
