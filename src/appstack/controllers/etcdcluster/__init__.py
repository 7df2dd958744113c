"""The EtcdCluster controller: EtcdCluster → member pods (one PVC each), a headless and a
client Service and a PodDisruptionBudget, driven through etcd's own v3 API: bootstrap,
scaling one learner at a time, member replacement, upgrades leader last; status lists
the members as etcd reports them.

:data:`CONTROLLER` registers it, with what is known of a cluster from outside: it is up
when ``Available`` (:data:`.status.UP`), its gauges, dashboard rows and alerts (:mod:`.metrics`),
its status view (:mod:`.view`); :data:`RBAC_RULES` is exactly what it uses.
"""

from __future__ import annotations

from appstack.api.etcdcluster import EtcdCluster
from appstack.controllers.etcdcluster import desired, metrics, status, view
from appstack.controllers.etcdcluster.reconciler import EtcdClusterReconciler
from appstack.controllers.etcdcluster.resources import PDB
from appstack.runtime import JOB, POD, PVC, SECRET, SERVICE
from appstack.sdk import Registration, Rule, own_rules, rule

ETCD_CLUSTER = EtcdCluster.KIND.resource

RBAC_RULES: list[Rule] = [
    *own_rules(EtcdCluster.KIND),
    rule(SERVICE, "get", "list", "watch", "create", "patch", "delete"),
    rule(PDB, "get", "list", "watch", "create", "patch", "delete"),
    # members are created, relabelled (voter) and deleted one by one
    rule(POD, "get", "list", "watch", "create", "patch", "delete"),
    # member volumes; patched to be owned or ownerless (spec.retainOnDelete)
    rule(PVC, "get", "list", "watch", "create", "patch", "delete"),
    rule(JOB, "get", "list", "watch", "create", "delete"),  # snapshots (backup.py)
    rule(SECRET, "get"),  # the Secrets spec.tls names, read by name only (tlsclient.py)
]

CONTROLLER = Registration(
    name="etcdcluster",
    reconciler=EtcdClusterReconciler,
    rbac_rules=RBAC_RULES,
    children=desired.children,
    ready_condition=status.UP,
    gauges=metrics.GAUGES,
    alerts=metrics.ALERTS,
    dashboard=metrics.panels,
    status_view=view.VIEW,
)

__all__ = ["CONTROLLER", "ETCD_CLUSTER", "RBAC_RULES", "EtcdClusterReconciler"]
