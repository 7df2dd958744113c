"""What the operator process needs from the API, derived by the SDK as for every operator
built on it (:func:`appstack.sdk.manager_rules`): every registered controller's own rules,
then the process's (Events, the namespaces it acts in, the reviews that guard
``/metrics``) and the admission guards' marker — the ClusterRole, or without the
namespaces' watch a Role. Its leader-election Lease is apart
(:func:`appstack.sdk.leader_election_role`: in its own namespace only, by :data:`LEASE_NAME`)."""

from __future__ import annotations

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.sdk import CANARY, GUARD_RESOURCE, MARKER, Rule, manager_rules, sharding_rules

__all__ = [
    "CANARY",
    "LEASE_NAME",
    "MARKER",
    "MARKER_GROUP",
    "MARKER_RESOURCE",
    "operator_rules",
]

LEASE_NAME = IDENTITY.lease_name  # the operator's leader-election Lease (appstack run)
# A permission nothing uses, granted only by the operator's own (Cluster)Role: the admission
# policies that bound the operator's writes select requests by it, so they follow the
# operator's binding wherever it is installed (the SDK's guards, appstack.sdk.guards).
# CANARY is never granted by name; only a wildcard (an administrator) holds it.
MARKER_GROUP = IDENTITY.domain
MARKER_RESOURCE = GUARD_RESOURCE


def operator_rules(*, cluster_wide: bool = True, sharded: bool = False) -> list[Rule]:
    """Every rule the operator uses (the generated ClusterRole, or without the namespaces'
    list and watch a Role): derived from its registrations exactly as a scaffolded
    project's ``manager-role`` is (:func:`appstack.sdk.manager_rules`); ``sharded``, with
    the label patches of its primaries (:func:`appstack.sdk.sharding_rules`)."""
    rules = [rule_ for controller in ALL for rule_ in controller.rules]
    if sharded:
        rules += sharding_rules(controller.primary for controller in ALL)
    return manager_rules(rules, IDENTITY.domain, cluster_wide=cluster_wide)
