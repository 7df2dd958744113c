"""appstack's RBAC, built by the SDK's builders (:mod:`appstack.sdk.install`, the same that
write a scaffolded project's ``config/rbac``) from its registrations
(:func:`appstack.controllers.rbac.operator_rules`, derived as a project's ``manager-role``
is): a ServiceAccount, a ClusterRole + binding (watch all namespaces), a namespaced
Role + binding variant (for ``appstack run --namespace``), the leader-election Role +
binding in the operator's own namespace (the Lease, by name), the metrics reader, the
reviews behind ``/metrics``, the editor and viewer roles of its kinds, and the FlowSchema
of its Lease requests (:func:`appstack.sdk.lease_flow_schema`). Which of them an install uses is
decided in :mod:`appstack.manifests.install`. This module only names them.

Cluster-scoped objects are named after the install's namespace
(``appstack-operator-<namespace>``, :func:`cluster_name`): two installs in different
namespaces never overwrite each other's, and uninstalling one leaves the other's alone."""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.rbac import LEASE_NAME, operator_rules
from appstack.controllers.registry import ALL
from appstack.manifests.crds import LABELS
from appstack.sdk import (
    Rule,
    binding,
    manager_grants,
    metrics_auth_role,
    metrics_reader_role,
    user_role,
)
from appstack.sdk import (
    leader_election_role as sdk_leader_election_role,
)
from appstack.sdk import lease_flow_schema as sdk_lease_flow_schema
from appstack.sdk import service_account as sdk_service_account

NAMESPACE = "appstack-system"
NAME = "appstack-operator"


def cluster_name(base: str, namespace: str) -> str:
    """The name of a cluster-scoped object of the install in ``namespace``."""
    return f"{base}-{namespace}"


def service_account(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The operator's ServiceAccount in ``namespace``."""
    return sdk_service_account(NAME, namespace, LABELS)


def grants(
    namespace: str, rules: list[Rule], *, watched: str | None = None
) -> list[dict[str, Any]]:
    """The operator's own role of ``rules`` and its binding to the ServiceAccount of the
    install in ``namespace`` (:func:`appstack.sdk.manager_grants`): the ClusterRole
    ``appstack-operator-<namespace>`` (every namespace), or the Role of that name in the
    ``watched`` namespace (named after the install, as the SDK's chart names a watched
    namespace's Role after the ClusterRole: two installs may watch one namespace)."""
    name = cluster_name(NAME, namespace)
    return manager_grants(name, rules, account=(namespace, NAME), labels=LABELS, namespace=watched)


def cluster_role(namespace: str = NAMESPACE, *, sharded: bool = False) -> dict[str, Any]:
    """The operator's ClusterRole: every rule it uses, in every namespace (``sharded``: with
    its primaries' label patches)."""
    return grants(namespace, operator_rules(sharded=sharded))[0]


def cluster_role_binding(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Binds the ClusterRole ``appstack-operator-<namespace>`` to the operator's
    ServiceAccount."""
    return grants(namespace, [])[1]


def role(namespace: str, *, sharded: bool = False) -> dict[str, Any]:
    """The operator's Role in ``namespace``: every rule it uses (``sharded``: with its
    primaries' label patches)."""
    return grants(
        namespace, operator_rules(cluster_wide=False, sharded=sharded), watched=namespace
    )[0]


def role_binding(namespace: str, sa_namespace: str = NAMESPACE) -> dict[str, Any]:
    """Binds the Role ``appstack-operator`` in ``namespace`` to the operator's
    ServiceAccount (of the install in ``sa_namespace``)."""
    return grants(sa_namespace, [], watched=namespace)[1]


LEADER_ELECTION = f"{NAME}-leader-election"


def leader_election_role(namespace: str = NAMESPACE, *, sharded: bool = False) -> dict[str, Any]:
    """The Lease, only in the operator's namespace (``--leader-election-namespace``);
    ``sharded``: every Lease there (the shard Leases have names of their own)."""
    return sdk_leader_election_role(
        LEADER_ELECTION,
        namespace,
        lease=LEASE_NAME,
        domain=IDENTITY.domain,
        labels=LABELS,
        sharded=sharded,
    )


def leader_election_role_binding(
    namespace: str = NAMESPACE, sa_namespace: str = NAMESPACE
) -> dict[str, Any]:
    """Binds the leader-election Role in ``namespace`` to the operator's ServiceAccount (of
    the install in ``sa_namespace``)."""
    return binding(LEADER_ELECTION, leader_election_role(namespace), (sa_namespace, NAME), LABELS)


LEASE_FLOW = f"{NAME}-leases"


def lease_flow_schema(namespace: str = NAMESPACE) -> dict[str, Any]:
    """API Priority and Fairness: the operator's Lease requests (by its ServiceAccount) go
    to the cluster's built-in ``leader-election`` priority level
    (:func:`appstack.sdk.lease_flow_schema`), so renewals never queue behind a flood of
    writes (the operator's own included) — a leader that cannot renew stops writing, so
    this keeps the fence from closing for nothing."""
    return sdk_lease_flow_schema(
        cluster_name(LEASE_FLOW, namespace), account=(namespace, NAME), labels=LABELS
    )


METRICS_READER = "appstack-metrics-reader"


def metrics_reader(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Bind this to whoever scrapes the operator (e.g. Prometheus' ServiceAccount)."""
    return metrics_reader_role(cluster_name(METRICS_READER, namespace), LABELS)


#: The user roles of appstack's kinds: one editor and one viewer for all of them (the SDK's
#: :data:`appstack.sdk.USER_ROLES`, which a project has per kind), aggregated into the
#: cluster's ``admin``/``edit`` and ``view``.
USER_ROLES = ("editor", "viewer")


def user_roles(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """``appstack-editor`` and ``appstack-viewer``: our kinds for the people who use them,
    aggregated into the cluster's ``admin``/``edit`` and ``view`` roles (kubebuilder's
    ``<kind>_editor_role``/``_viewer_role``, one for all of appstack's kinds), so a
    namespace's editors create AppStacks with no binding of ours."""
    plurals = [controller.kind.resource.plural for controller in ALL]
    group = ALL[0].kind.resource.group

    def name(access: str) -> str:
        return cluster_name(f"appstack-{access}", namespace)

    return [user_role(name(access), group, plurals, access, labels=LABELS) for access in USER_ROLES]


METRICS_AUTH = f"{NAME}-metrics-auth"


def metrics_auth_cluster_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """For a namespaced install: TokenReviews and SubjectAccessReviews are cluster-scoped,
    so guarding ``/metrics`` needs these two create rules cluster-wide (nothing else)."""
    return metrics_auth_role(cluster_name(METRICS_AUTH, namespace), LABELS)


def metrics_auth_cluster_role_binding(namespace: str = NAMESPACE) -> dict[str, Any]:
    name = cluster_name(METRICS_AUTH, namespace)
    return binding(name, metrics_auth_cluster_role(namespace), (namespace, NAME), LABELS)
