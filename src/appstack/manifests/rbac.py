"""appstack's RBAC, built by the SDK's builders (:mod:`appstack.sdk.install`, the same that
write a scaffolded project's ``config/rbac``) from its registrations
(:func:`appstack.controllers.rbac.operator_rules`, derived as a project's ``manager-role``
is): a ServiceAccount, a ClusterRole + binding (watch all namespaces), a namespaced
Role + binding variant (for ``appstack run --namespace``), the leader-election Role +
binding in the operator's own namespace (the Lease, by name), the metrics reader, the
reviews behind ``/metrics``, the editor and viewer roles of its kinds — and what only
appstack adds: the FlowSchema of its Lease requests. Which of them an install uses is
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
    metrics_auth_role,
    metrics_reader_role,
    user_role,
)
from appstack.sdk import cluster_role as sdk_cluster_role
from appstack.sdk import (
    leader_election_role as sdk_leader_election_role,
)
from appstack.sdk import role as sdk_role
from appstack.sdk import service_account as sdk_service_account

NAMESPACE = "appstack-system"
NAME = "appstack-operator"


def cluster_name(base: str, namespace: str) -> str:
    """The name of a cluster-scoped object of the install in ``namespace``."""
    return f"{base}-{namespace}"


def service_account(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The operator's ServiceAccount in ``namespace``."""
    return sdk_service_account(NAME, namespace, LABELS)


def cluster_role(namespace: str = NAMESPACE, *, sharded: bool = False) -> dict[str, Any]:
    """The operator's ClusterRole: every rule it uses, in every namespace (``sharded``: with
    its primaries' label patches)."""
    rules = operator_rules(sharded=sharded)
    return sdk_cluster_role(cluster_name(NAME, namespace), rules, LABELS)


def cluster_role_binding(namespace: str = NAMESPACE, base: str = NAME) -> dict[str, Any]:
    """Binds the ClusterRole ``<base>-<namespace>`` to the operator's ServiceAccount."""
    name = cluster_name(base, namespace)
    return binding(name, sdk_cluster_role(name, []), (namespace, NAME), LABELS)


def role(
    namespace: str, name: str = NAME, rules: list[Rule] | None = None, *, sharded: bool = False
) -> dict[str, Any]:
    """The operator's Role in ``namespace``: every rule it uses (``sharded``: with its
    primaries' label patches), unless told which."""
    rules = operator_rules(cluster_wide=False, sharded=sharded) if rules is None else rules
    return sdk_role(name, namespace, rules, LABELS)


def role_binding(namespace: str, sa_namespace: str = NAMESPACE, name: str = NAME) -> dict[str, Any]:
    """Binds the Role ``name`` in ``namespace`` to the operator's ServiceAccount."""
    return binding(name, sdk_role(name, namespace, []), (sa_namespace, NAME), LABELS)


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
    return role_binding(namespace, sa_namespace, LEADER_ELECTION)


LEASE_FLOW = f"{NAME}-leases"


def lease_flow_schema(namespace: str = NAMESPACE) -> dict[str, Any]:
    """API Priority and Fairness: the operator's Lease requests (in its namespace, by its
    ServiceAccount) go to the cluster's built-in ``leader-election`` priority level, as
    kube-controller-manager's do, so renewals never queue behind a flood of writes (the
    operator's own included) on a busy API server — a leader that cannot renew stops
    writing, so this keeps the fence from closing for nothing. Not a permission."""
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": cluster_name(LEASE_FLOW, namespace), "labels": LABELS},
        "spec": {
            "priorityLevelConfiguration": {"name": "leader-election"},
            "matchingPrecedence": 190,  # before the built-in workload-leader-election (200)
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "serviceAccount": {"name": NAME, "namespace": namespace},
                        }
                    ],
                    "resourceRules": [
                        {
                            "apiGroups": ["coordination.k8s.io"],
                            "resources": ["leases"],
                            "verbs": ["get", "create", "update"],
                            # its only Leases are in its own namespace (its RBAC); "*" keeps
                            # a kustomize overlay that moves the namespace matching
                            "namespaces": ["*"],
                        }
                    ],
                }
            ],
        },
    }


METRICS_READER = "appstack-metrics-reader"


def metrics_reader(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Bind this to whoever scrapes the operator (e.g. Prometheus' ServiceAccount)."""
    return metrics_reader_role(cluster_name(METRICS_READER, namespace), LABELS)


#: What the people who use appstack's kinds may do with them: the editor (aggregated into
#: the cluster's ``admin`` and ``edit``), the viewer (into ``view``).
USER_ROLES = (
    (
        "editor",
        ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"),
        ("admin", "edit"),
    ),
    ("viewer", ("get", "list", "watch"), ("view",)),
)


def user_roles(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """``appstack-editor`` and ``appstack-viewer``: our kinds for the people who use them,
    aggregated into the cluster's ``admin``/``edit`` and ``view`` roles (kubebuilder's
    ``<kind>_editor_role``/``_viewer_role``, one for all of appstack's kinds), so a
    namespace's editors create AppStacks with no binding of ours."""
    plurals = [controller.kind.resource.plural for controller in ALL]
    group = ALL[0].kind.resource.group
    return [
        user_role(
            cluster_name(f"appstack-{name}", namespace),
            group,
            plurals,
            verbs,
            aggregate_to=into,
            labels=LABELS,
        )
        for name, verbs, into in USER_ROLES
    ]


METRICS_AUTH = f"{NAME}-metrics-auth"


def metrics_auth_cluster_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """For a namespaced install: TokenReviews and SubjectAccessReviews are cluster-scoped,
    so guarding ``/metrics`` needs these two create rules cluster-wide (nothing else)."""
    return metrics_auth_role(cluster_name(METRICS_AUTH, namespace), LABELS)


def metrics_auth_cluster_role_binding(namespace: str = NAMESPACE) -> dict[str, Any]:
    return cluster_role_binding(namespace, METRICS_AUTH)
