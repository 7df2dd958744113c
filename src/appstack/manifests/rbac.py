"""RBAC generated from what the controllers declare they use (no wildcards): a
ServiceAccount, a ClusterRole + binding (watch all namespaces), a namespaced
Role + binding variant (for ``appstack run --namespace``), and the leader-election Role +
binding in the operator's own namespace (the Lease, by name). Which of them an install uses
is decided in :mod:`appstack.manifests.install`.

Cluster-scoped objects are named after the install's namespace
(``appstack-operator-<namespace>``, :func:`cluster_name`): two installs in different
namespaces never overwrite each other's, and uninstalling one leaves the other's alone."""

from __future__ import annotations

from typing import Any

from appstack.controllers.rbac import RUNTIME_RULES, leader_election_rules, operator_rules
from appstack.controllers.registry import ALL
from appstack.manifests.crds import LABELS
from appstack.sdk import Rule

NAMESPACE = "appstack-system"
REVIEWS = ("tokenreviews", "subjectaccessreviews")
NAME = "appstack-operator"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": LABELS}
    if namespace:
        meta["namespace"] = namespace
    return meta


def cluster_name(base: str, namespace: str) -> str:
    """The name of a cluster-scoped object of the install in ``namespace``."""
    return f"{base}-{namespace}"


def service_account(namespace: str = NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)}


def cluster_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(cluster_name(NAME, namespace)),
        "rules": operator_rules(),
    }


def cluster_role_binding(namespace: str = NAMESPACE, base: str = NAME) -> dict[str, Any]:
    """Binds the ClusterRole ``<base>-<namespace>`` to the operator's ServiceAccount."""
    name = cluster_name(base, namespace)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
    }


def role(namespace: str, name: str = NAME, rules: list[Rule] | None = None) -> dict[str, Any]:
    """The operator's Role in ``namespace``: every rule it uses, unless told which."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(name, namespace),
        "rules": operator_rules(cluster_wide=False) if rules is None else rules,
    }


def role_binding(namespace: str, sa_namespace: str = NAMESPACE, name: str = NAME) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": sa_namespace}],
    }


LEADER_ELECTION = f"{NAME}-leader-election"


def leader_election_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The Lease, only in the operator's namespace (``--leader-election-namespace``)."""
    return role(namespace, LEADER_ELECTION, leader_election_rules())


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
        "metadata": _meta(cluster_name(LEASE_FLOW, namespace)),
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
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(cluster_name(METRICS_READER, namespace)),
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }


def user_roles(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """``appstack-editor`` and ``appstack-viewer``: our kinds for the people who use them,
    aggregated into the cluster's ``admin``/``edit`` and ``view`` roles (kubebuilder's
    ``<kind>_editor_role``/``_viewer_role``), so a namespace's editors create AppStacks
    with no binding of ours."""
    plurals = [controller.kind.resource.plural for controller in ALL]
    statuses = [f"{plural}/status" for plural in plurals]
    group = ALL[0].kind.resource.group
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    roles = []
    for role, verbs, into in (
        (
            "editor",
            ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
            ("admin", "edit"),
        ),
        ("viewer", ["get", "list", "watch"], ("view",)),
    ):
        meta = _meta(cluster_name(f"appstack-{role}", namespace))
        meta["labels"] = {**meta["labels"], **{f"{aggregate}{r}": "true" for r in into}}
        roles.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta,
                "rules": [
                    {"apiGroups": [group], "resources": plurals, "verbs": verbs},
                    {"apiGroups": [group], "resources": statuses, "verbs": ["get"]},
                ],
            }
        )
    return roles


METRICS_AUTH = f"{NAME}-metrics-auth"


def metrics_auth_cluster_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """For a namespaced install: TokenReviews and SubjectAccessReviews are cluster-scoped,
    so guarding ``/metrics`` needs these two create rules cluster-wide (nothing else)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(cluster_name(METRICS_AUTH, namespace)),
        "rules": [r for r in RUNTIME_RULES if r["resources"][0] in REVIEWS],
    }


def metrics_auth_cluster_role_binding(namespace: str = NAMESPACE) -> dict[str, Any]:
    return cluster_role_binding(namespace, METRICS_AUTH)
