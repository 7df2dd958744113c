"""The AppStack controller: middleware (managed StatefulSet + Secret + Services, or an
external endpoint behind a stable Service) and components (ConfigMap + Deployment +
Service) started in dependency order, with connection details injected.

:func:`setup` wires it into a manager; :data:`RBAC_RULES` is what it uses.
"""

from typing import Any

from appstack.controllers.appstack.reconciler import APP_STACK, AppStackReconciler
from appstack.controllers.children import CHILD_SELECTOR
from appstack.runtime.builder import Builder
from appstack.runtime.controller import Controller
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    SERVICE,
    STATEFUL_SET,
)

RBAC_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["appstack.dev"],
        "resources": ["appstacks"],
        "verbs": ["get", "list", "watch", "patch"],
    },  # patch: the teardown finalizer
    {"apiGroups": ["appstack.dev"], "resources": ["appstacks/status"], "verbs": ["patch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["statefulsets"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create"]},
    {
        "apiGroups": ["discovery.k8s.io"],
        "resources": ["endpointslices"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]},
]


def setup(
    manager: Manager, recorder: EventRecorder, *, concurrency: int = 4, resync: float = 60.0
) -> Controller:
    """``resync``: how often every stack is looked at again — Secrets are not watched (we
    never list them), so a changed Secret rolls the pods using it within this period."""
    for kind in (DEPLOYMENT, SERVICE, STATEFUL_SET, CONFIG_MAP, ENDPOINT_SLICE):
        manager.cache.set_label_selector(kind, CHILD_SELECTOR)
    return (
        Builder(manager, "appstack")
        .for_(APP_STACK)
        .owns(DEPLOYMENT)
        .owns(SERVICE)
        .owns(STATEFUL_SET)
        .owns(CONFIG_MAP)
        .owns(ENDPOINT_SLICE)
        .with_concurrency(concurrency)
        .with_resync(resync)
        .complete(AppStackReconciler(manager.client, manager.cache, recorder))
    )
