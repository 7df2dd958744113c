"""ValidatingAdmissionPolicies that bound what the operator's own ServiceAccount may write,
whatever its RBAC says (pure; part of the install bundle).

RBAC cannot say "only Opaque Secrets carrying our labels": with ``create`` on Secrets the
operator could mint a ``kubernetes.io/service-account-token`` Secret for any
ServiceAccount (kube-system's included) and read the token back. :func:`secrets_policy`
closes that: the operator's creates and updates of Secrets must be ``Opaque`` and labelled
``app.kubernetes.io/managed-by=appstack``; any other writer is not matched (the policy's
``matchConditions`` select only the operator's user name). ``admissionregistration.k8s.io/v1``
(GA since Kubernetes 1.30). See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE

API_VERSION = "admissionregistration.k8s.io/v1"
SECRETS_POLICY = f"{NAME}-secrets"
MANAGED_BY = ("app.kubernetes.io/managed-by", "appstack")


def operator_user(namespace: str = NAMESPACE) -> str:
    """The user name the API server gives the operator's ServiceAccount token."""
    return f"system:serviceaccount:{namespace}:{NAME}"


def _only_operator(namespace: str) -> list[dict[str, str]]:
    return [
        {
            "name": "operator-only",
            "expression": f"request.userInfo.username == '{operator_user(namespace)}'",
        }
    ]


def secrets_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The operator writes only ``Opaque`` Secrets with its managed-by label."""
    key, value = MANAGED_BY
    label = f"{key}={value}"
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        # Named after the operator's namespace: the policy is cluster-scoped and matches that
        # namespace's ServiceAccount, so two installs must not overwrite each other's.
        "metadata": {"name": f"{SECRETS_POLICY}-{namespace}", "labels": LABELS},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["secrets"],
                    }
                ]
            },
            "matchConditions": _only_operator(namespace),
            "validations": [
                {
                    "expression": "has(object.type) && object.type == 'Opaque'",
                    "message": "the appstack operator may only write Secrets of type Opaque",
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"has(object.metadata.labels) && '{key}' in object.metadata.labels"
                        f" && object.metadata.labels['{key}'] == '{value}'"
                    ),
                    "message": f"the appstack operator may only write Secrets labelled {label}",
                    "reason": "Forbidden",
                },
            ],
        },
    }


def binding(policy: dict[str, Any]) -> dict[str, Any]:
    """Enforce ``policy`` everywhere (Deny: the write is refused, not only audited)."""
    name = policy["metadata"]["name"]
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": LABELS},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }


def policies(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """Every policy with its binding, in install order."""
    result: list[dict[str, Any]] = []
    for policy in (secrets_policy(namespace),):
        result += [policy, binding(policy)]
    return result
