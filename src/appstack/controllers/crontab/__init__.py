"""The CronTab controller: CronTab → CronJob (owned, server-side applied, drift-corrected),
with the last schedule/success times, active Jobs and how the newest run went (a failed run or
one whose pods cannot start: ``Degraded``) reported in status.

A schedule the API server or our validator rejects (e.g. minute 61) shows as
``Ready=False`` with reason ``InvalidSchedule`` and a Warning Event. :data:`CONTROLLER`
registers it, with its gauge and dashboard row (:mod:`.metrics`) and its status view
(:mod:`.view`); :data:`RBAC_RULES` is exactly what it uses.
"""

from __future__ import annotations

from appstack.api.crontab import CronTab
from appstack.controllers.crontab import desired, metrics, view
from appstack.controllers.crontab.reconciler import CronTabReconciler
from appstack.runtime import CRON_JOB, JOB, POD
from appstack.sdk import Registration, Rule, own_rules, rule

CRON_TAB = CronTab.KIND.resource

RBAC_RULES: list[Rule] = [
    *own_rules(CronTab.KIND),
    # delete: setting an ownerReference requires it (OwnerReferencesPermissionEnforcement)
    rule(CRON_JOB, "get", "list", "watch", "create", "patch", "delete"),
    # how the runs go: the CronJob's Jobs and their pods (status.py), read only
    rule(JOB, "get", "list", "watch"),
    rule(POD, "get", "list", "watch"),
]

CONTROLLER = Registration(
    name="crontab",
    reconciler=CronTabReconciler,
    rbac_rules=RBAC_RULES,
    children=desired.children,
    share=0.5,  # schedules change rarely: half the workers of the others
    gauges=metrics.GAUGES,
    alerts=metrics.ALERTS,
    dashboard=metrics.panels,
    status_view=view.VIEW,
)

__all__ = ["CONTROLLER", "CRON_TAB", "RBAC_RULES", "CronTabReconciler"]
