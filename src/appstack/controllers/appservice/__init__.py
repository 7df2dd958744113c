"""The AppService controller: AppService → Deployment + Service, with status and events.

:data:`CONTROLLER` registers it (:mod:`appstack.controllers.registry`), with its status
view (:mod:`.view`); :data:`RBAC_RULES` is exactly what it uses (the generated ClusterRole
is built from it — no wildcards).
"""

from __future__ import annotations

from appstack.api.appservice import AppService
from appstack.controllers.appservice import desired, view
from appstack.controllers.appservice.reconciler import AppServiceReconciler
from appstack.runtime import DEPLOYMENT, POD, SERVICE
from appstack.sdk import Registration, Rule, own_rules, rule

APP_SERVICE = AppService.KIND.resource

RBAC_RULES: list[Rule] = [
    *own_rules(AppService.KIND),
    # delete: never called, but setting a child's ownerReference requires it
    # (OwnerReferencesPermissionEnforcement); the garbage collector deletes Deployments.
    rule(DEPLOYMENT, "get", "list", "watch", "create", "patch", "delete"),
    rule(SERVICE, "get", "list", "watch", "create", "patch", "delete"),
    rule(POD, "get", "list", "watch"),  # why pods cannot start (util/pods.py)
]

CONTROLLER = Registration(
    name="appservice",
    reconciler=AppServiceReconciler,
    rbac_rules=RBAC_RULES,
    children=desired.children,
    status_view=view.VIEW,
)

__all__ = ["APP_SERVICE", "CONTROLLER", "RBAC_RULES", "AppServiceReconciler"]
