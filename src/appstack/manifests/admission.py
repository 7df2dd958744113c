"""ValidatingAdmissionPolicies that bound what the operator's own ServiceAccount may write,
whatever its RBAC says (pure; part of the install bundle).

RBAC cannot say "only Opaque Secrets carrying our labels": with ``create`` on Secrets the
operator could mint a ``kubernetes.io/service-account-token`` Secret for any
ServiceAccount (kube-system's included) and read the token back. :func:`secrets_policy`
closes that: the operator's creates and updates of Secrets must be ``Opaque`` and labelled
``app.kubernetes.io/managed-by=appstack``, and it may change or delete only a Secret that
already carried that label (a foreign Secret is not taken over by labelling it); any other
writer is not matched.

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
                    "expression": (
                        "request.operation == 'DELETE' || (has(object.type) && object.type == "
                        "'Opaque')"
                    ),
                    "message": "the appstack operator may only write Secrets of type Opaque",
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"request.operation == 'DELETE' || (has(object.metadata.labels) && "
                        f"'{key}' in object.metadata.labels"
                        f" && object.metadata.labels['{key}'] == '{value}')"
                    ),
                    "message": f"the appstack operator may only write Secrets labelled {label}",
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        "request.operation == 'CREATE' || (has(oldObject.metadata.labels)"
                        f" && '{key}' in oldObject.metadata.labels"
                        f" && oldObject.metadata.labels['{key}'] == '{value}')"
                    ),
                    "message": (
                        "the appstack operator may only change or delete Secrets already "
                        f"labelled {label}"
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
