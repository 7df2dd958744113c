"""What the operator process needs from the API: every registered controller's own rules,
then Events (de-duplicated: create, then patch the series) and the reviews that guard
``/metrics`` — the ClusterRole — and, apart
from them, its leader-election Lease: :func:`leader_election_rules`, granted only in the
operator's own namespace (a Role), never cluster-wide."""

from __future__ import annotations

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.runtime import EVENT, LEASE, NAMESPACE, SUBJECT_ACCESS_REVIEW, TOKEN_REVIEW
from appstack.sdk import CANARY, GUARD_RESOURCE, MARKER, Rule, rule
from appstack.sdk import marker_rule as sdk_marker_rule

__all__ = [
    "CANARY",
    "LEASE_NAME",
    "MARKER",
    "MARKER_GROUP",
    "MARKER_RESOURCE",
    "NAMESPACE_WATCH",
    "RUNTIME_RULES",
    "leader_election_rules",
    "marker_rule",
    "operator_rules",
]

LEASE_NAME = IDENTITY.lease_name  # the operator's leader-election Lease (appstack run)
# A permission nothing uses, granted only by the operator's own (Cluster)Role: the admission
# policies that bound the operator's writes select requests by it, so they follow the
# operator's binding wherever it is installed (the SDK's guards, appstack.sdk.guards).
# CANARY is never granted by name; only a wildcard (an administrator) holds it.
MARKER_GROUP = IDENTITY.domain
MARKER_RESOURCE = GUARD_RESOURCE
RUNTIME_RULES: list[Rule] = [
    rule(EVENT, "create", "patch"),
    # Whether a namespace is enabled, and the Pod Security level it enforces (its labels),
    # read by name (sdk/kit/namespaces.py): a namespaced install grants it per
    # namespace; cluster-wide, the enabled namespaces are also watched (NAMESPACE_WATCH).
    rule(NAMESPACE, "get"),
    # Who scrapes /metrics (appstack.runtime.metricsauth): check a token, ask if it may.
    rule(TOKEN_REVIEW, "create"),
    rule(SUBJECT_ACCESS_REVIEW, "create"),
]


#: Cluster-wide only: the operator watches the enabled namespaces (a Role cannot list them).
NAMESPACE_WATCH: Rule = rule(NAMESPACE, "list", "watch")


def marker_rule() -> Rule:
    """The marker permission (see :data:`MARKER`): the admission policies' "this is the
    appstack operator", carried by its own binding."""
    return sdk_marker_rule(MARKER_GROUP)


def operator_rules(*, cluster_wide: bool = True) -> list[Rule]:
    """Every rule the operator uses, controllers first (the generated ClusterRole, or
    without the namespaces' watch a Role), and the admission policies' marker."""
    rules = [rule_ for controller in ALL for rule_ in controller.rules]
    watch = [NAMESPACE_WATCH] if cluster_wide else []
    return [*rules, *RUNTIME_RULES, *watch, marker_rule()]


def leader_election_rules() -> list[Rule]:
    """The Lease, in the operator's namespace only: read and renew exactly
    :data:`LEASE_NAME`. ``create`` cannot be limited by name (RBAC's ``resourceNames``
    do not apply to create: the name is not in the URL), so it is a rule of its own —
    still only in that namespace, where no other component's Lease lives. And the marker,
    there too: the Lease policy (its duration bounded) recognises the operator by it, in
    a namespaced install as well, whose other Roles are only in the watched namespaces."""
    named = rule(LEASE, "get", "update")
    named["resourceNames"] = [LEASE_NAME]
    return [named, rule(LEASE, "create"), marker_rule()]
