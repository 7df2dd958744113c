"""RBAC generated from what the controllers declare they use (no wildcards): a
ServiceAccount, a ClusterRole + binding (watch all namespaces), and a namespaced
Role + binding variant (for ``appstack run --namespace``). Which of them an install uses is
decided in :mod:`appstack.manifests.install`."""

from __future__ import annotations

from typing import Any

from appstack.controllers.rbac import operator_rules
from appstack.controllers.util.rbac import Rule
from appstack.manifests.crds import LABELS

NAMESPACE = "appstack-system"
NAME = "appstack-operator"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": LABELS}
    if namespace:
        meta["namespace"] = namespace
    return meta


def service_account(namespace: str = NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)}


def cluster_role() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME),
        "rules": operator_rules(),
    }


def cluster_role_binding(namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(NAME),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
    }


def role(namespace: str, rules: list[Rule] | None = None) -> dict[str, Any]:
    """The operator's Role in ``namespace``: every rule it uses, unless told which."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(NAME, namespace),
        "rules": operator_rules() if rules is None else rules,
    }


def role_binding(namespace: str, sa_namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(NAME, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": sa_namespace}],
    }
