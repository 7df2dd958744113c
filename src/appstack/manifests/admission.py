"""ValidatingAdmissionPolicies that bound what the operator's own ServiceAccount may write,
whatever its RBAC says (pure; part of the install bundle).

RBAC cannot say "only Opaque Secrets carrying our labels": with ``create`` on Secrets the
operator could mint a ``kubernetes.io/service-account-token`` Secret for any
ServiceAccount (kube-system's included) and read the token back. :func:`secrets_policy`
closes that: the operator's creates and updates of Secrets must be ``Opaque`` and labelled
``app.kubernetes.io/managed-by=appstack``, and an update (the operator patches only a
generated Secret's owners, when ``retainOnDelete`` flips) must leave the data as it was, of
a Secret that already carried the label; it never deletes one (RBAC grants ``delete`` only
because the API server asks for it to set an owner); any other writer is not matched.

*Who is the operator* is whoever the operator's own RBAC binds, wherever and under whatever
name it is installed (see :mod:`appstack.manifests.admission_base`). Everything else the
operator writes is bounded by :mod:`appstack.manifests.admission_writes`.
``admissionregistration.k8s.io/v1`` (GA since Kubernetes 1.30). See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.manifests.admission_base import binding, only_operator, policy
from appstack.manifests.admission_writes import writes_policy
from appstack.manifests.rbac import NAME, NAMESPACE

SECRETS_POLICY = f"{NAME}-secrets"
MANAGED_BY = ("app.kubernetes.io/managed-by", "appstack")


def operator_user(namespace: str = NAMESPACE) -> str:
    """The user name the API server gives the default install's operator token."""
    return f"system:serviceaccount:{namespace}:{NAME}"


def secrets_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The operator writes only ``Opaque`` Secrets with its managed-by label."""
    key, value = MANAGED_BY
    label = f"{key}={value}"
    # Named after the operator's namespace: the policy is cluster-scoped, so two installs
    # must not overwrite each other's.
    return policy(
        f"{SECRETS_POLICY}-{namespace}",
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "resources": ["secrets"],
                    }
                ]
            },
            "matchConditions": only_operator(),
            "validations": [
                {
                    # RBAC's delete is there only for OwnerReferencesPermissionEnforcement
                    # (setting an owner needs it); no Secret is ever deleted with it.
                    "expression": "request.operation != 'DELETE'",
                    "message": "the appstack operator never deletes Secrets",
                    "reason": "Forbidden",
                },
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
                {
                    "expression": (
                        "request.operation != 'UPDATE' || (has(oldObject.metadata.labels)"
                        f" && '{key}' in oldObject.metadata.labels"
                        f" && oldObject.metadata.labels['{key}'] == '{value}')"
                    ),
                    "message": (
                        f"the appstack operator may only change Secrets already labelled {label}"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        "request.operation != 'UPDATE' || (has(object.data) ? (has(oldObject.data)"
                        " && object.data == oldObject.data) : !has(oldObject.data))"
                    ),
                    "message": (
                        "the appstack operator may not change a Secret's data (only which "
                        "object owns it)"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )


def policies(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """Every policy with its binding, in install order."""
    result: list[dict[str, Any]] = []
    for each in (secrets_policy(namespace), writes_policy(namespace)):
        result += [each, binding(each)]
    return result
