"""ValidatingAdmissionPolicies that bound what the operator's own ServiceAccount may write,
whatever its RBAC says (pure; part of the install bundle).

RBAC cannot say "only Opaque Secrets carrying our labels": with ``create`` on Secrets the
operator could mint a ``kubernetes.io/service-account-token`` Secret for any
ServiceAccount (kube-system's included) and read the token back. :func:`secrets_policy`
closes that: the operator's creates and updates of Secrets must be ``Opaque`` and labelled
``app.kubernetes.io/managed-by=appstack``; any other writer is not matched.

*Who is the operator* is not a user name written into the policy — kustomize's
``namespace:`` and ``namePrefix:``, a Helm release namespace or ``serviceAccount.name`` would
move the ServiceAccount and leave the name in the CEL behind, and the guard off. It is
whoever the operator's own RBAC binds: the operator's (Cluster)Role grants a *marker*
permission nothing else uses (:data:`MARKER`: verb ``subject-to`` on
``admissionguards.appstack.dev``), and the policy's ``matchConditions`` ask the authorizer
whether the requester holds it — in the Secret's namespace, so a namespaced install (Roles
only) is matched too. Holders of everything (``system:masters``, ``cluster-admin``,
wildcard roles) hold the marker as well; they are told apart by a *canary* permission no
role grants by name (:data:`CANARY`), which only a wildcard gives, and are not matched:
the guard bounds the operator, not the cluster's administrators. Wherever and under
whatever name the operator is installed, its binding carries the guard with it.
``admissionregistration.k8s.io/v1`` (GA since Kubernetes 1.30). See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.rbac import CANARY, MARKER, MARKER_GROUP, MARKER_RESOURCE
from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE

API_VERSION = "admissionregistration.k8s.io/v1"
SECRETS_POLICY = f"{NAME}-secrets"
MANAGED_BY = ("app.kubernetes.io/managed-by", "appstack")


def operator_user(namespace: str = NAMESPACE) -> str:
    """The user name the API server gives the default install's operator token."""
    return f"system:serviceaccount:{namespace}:{NAME}"


def _holds(verb: str) -> str:
    return (
        f"authorizer.group('{MARKER_GROUP}').resource('{MARKER_RESOURCE}')"
        f".namespace(request.namespace).check('{verb}').allowed()"
    )


def _only_operator() -> list[dict[str, str]]:
    """Requests by whoever the operator's RBAC binds (the marker), not by holders of
    everything (the canary)."""
    return [
        {"name": "bound-as-the-appstack-operator", "expression": _holds(MARKER)},
        {"name": "not-an-administrator", "expression": f"!{_holds(CANARY)}"},
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
            "matchConditions": _only_operator(),
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
