"""The AppStack controller: middleware (managed StatefulSet + Secret + Services, and for a
mongodb replica set a PodDisruptionBudget; or an external endpoint behind a stable
Service) and components (ConfigMap + Deployment + Service) started in dependency order,
with connection details injected.

:data:`CONTROLLER` registers it, with its gauges and dashboard row (:mod:`.metrics`) and
its status view (:mod:`.view`); :data:`RBAC_RULES` is what it uses.
"""

from __future__ import annotations

from appstack.api.appstack import AppStack
from appstack.controllers.appstack import desired, metrics, view
from appstack.controllers.appstack.reconciler import AppStackReconciler
from appstack.runtime import CONFIG_MAP, DEPLOYMENT, ENDPOINT_SLICE, PDB, POD, SECRET, STATEFUL_SET
from appstack.sdk import Registration, Rule, own_rules, rule

APP_STACK = AppStack.KIND.resource

_WRITE = ("get", "list", "watch", "create", "patch", "delete")
RBAC_RULES: list[Rule] = [
    *own_rules(AppStack.KIND, finalizer=True),  # patch: the teardown finalizer
    rule(STATEFUL_SET, *_WRITE),
    rule(CONFIG_MAP, *_WRITE),
    # watched: metadata only is cached; patched: a generated Secret's owners only, which
    # the API server allows only with delete (the Secret guard keeps both to Secrets
    # labelled as ours)
    rule(SECRET, "get", "list", "watch", "create", "patch", "delete"),
    rule(ENDPOINT_SLICE, *_WRITE),
    rule(PDB, *_WRITE),  # a managed mongodb's majority
    rule(DEPLOYMENT, "delete"),
    rule(POD, "get", "list", "watch"),  # why pods cannot start (util/pods.py)
]

CONTROLLER = Registration(
    name="appstack",
    reconciler=AppStackReconciler,
    rbac_rules=RBAC_RULES,
    children=desired.children,
    gauges=metrics.GAUGES,
    dashboard=metrics.panels,
    status_view=view.VIEW,
)

__all__ = ["APP_STACK", "CONTROLLER", "RBAC_RULES", "AppStackReconciler"]
