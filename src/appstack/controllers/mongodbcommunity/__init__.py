"""The MongoDBCommunity controller (seed 004's kind, short name ``mdbc``): MongoDBCommunity →
a replica set on the members shared with the AppStack's managed mongodb (StatefulSet,
headless Service ``<name>-svc``, bootstrap ConfigMap, PodDisruptionBudget, generated keyfile
and administrator Secrets), its users created and kept by the members' bootstrap, and per
user a connection-string Secret; status with phase, ready members, the users' Secrets and
the scale subresource's replicas and selector.

:data:`CONTROLLER` registers it, with its status view (:mod:`.view`); :data:`RBAC_RULES` is
exactly what it uses.
"""

from __future__ import annotations

from appstack.api.mongodbcommunity import MongoDBCommunity
from appstack.controllers.mongodbcommunity import desired, view
from appstack.controllers.mongodbcommunity.reconciler import MongoDBCommunityReconciler
from appstack.runtime import CONFIG_MAP, PDB, SECRET, SERVICE, STATEFUL_SET
from appstack.sdk import Registration, Rule, own_rules, rule

MONGODB_COMMUNITY = MongoDBCommunity.KIND.resource

_WRITE = ("get", "list", "watch", "create", "patch", "delete")
RBAC_RULES: list[Rule] = [
    *own_rules(MongoDBCommunity.KIND),
    rule(STATEFUL_SET, *_WRITE),
    rule(SERVICE, *_WRITE),
    rule(CONFIG_MAP, *_WRITE),
    rule(PDB, *_WRITE),
    # generated and connection-string Secrets; the users' password Secrets read by name
    rule(SECRET, *_WRITE),
]

CONTROLLER = Registration(
    name="mongodbcommunity",
    reconciler=MongoDBCommunityReconciler,
    rbac_rules=RBAC_RULES,
    children=desired.children,
    share=0.5,
    status_view=view.VIEW,
)

__all__ = ["CONTROLLER", "MONGODB_COMMUNITY", "RBAC_RULES", "MongoDBCommunityReconciler"]
