"""The AppService controller: AppService → Deployment + Service, with status and events.

:func:`setup` wires the reconciler into a manager; :data:`RBAC_RULES` is exactly what it
uses (the generated ClusterRole is built from it — no wildcards).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.appservice.reconciler import APP_SERVICE, AppServiceReconciler
from appstack.controllers.children import CHILD_SELECTOR
from appstack.runtime.builder import Builder
from appstack.runtime.controller import Controller
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.runtime.resources import DEPLOYMENT, SERVICE

RBAC_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["appstack.dev"],
        "resources": ["appservices"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["appstack.dev"], "resources": ["appservices/status"], "verbs": ["patch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "create", "patch"],
    },
    {
        "apiGroups": [""],
        "resources": ["services"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    },
]

__all__ = ["APP_SERVICE", "RBAC_RULES", "AppServiceReconciler", "setup"]


def setup(manager: Manager, recorder: EventRecorder, *, concurrency: int = 4) -> Controller:
    manager.cache.set_label_selector(DEPLOYMENT, CHILD_SELECTOR)
    manager.cache.set_label_selector(SERVICE, CHILD_SELECTOR)
    return (
        Builder(manager, "appservice")
        .for_(APP_SERVICE)
        .owns(DEPLOYMENT)
        .owns(SERVICE)
        .with_concurrency(concurrency)
        .complete(AppServiceReconciler(manager.client, manager.cache, recorder))
    )
