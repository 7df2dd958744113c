"""ValidatingAdmissionPolicies that bound what the operator's own ServiceAccount may write,
whatever its RBAC says (pure; part of the install bundle), and :func:`policies`, all of them
in install order.

RBAC cannot say "only Opaque Secrets of ours": with ``create`` on Secrets the operator
could mint a ``kubernetes.io/service-account-token`` Secret for any ServiceAccount
(kube-system's included) and read the token back, or rewrite a tenant's generated
credentials. :func:`secrets_policy` closes that: the operator writes Secrets only in
enabled namespaces (:mod:`appstack.api.namespaces`), of type ``Opaque``, labelled
``app.kubernetes.io/managed-by=appstack``, and controlled by one of our kinds — or, kept
after their stack went (a retained volume's credentials), ownerless but carrying the
stack and member labels; it changes or deletes only a Secret that already was such, and
never changes a Secret's data, but for the MongoDB users' connection-string and SCRAM
Secrets a MongoDBCommunity controls (made again when a password changes). Any other writer
is not matched.

*Who is the operator* is whoever the operator's own RBAC binds, wherever and under whatever
name it is installed (see :mod:`appstack.manifests.admission_base`). The other writes:
:mod:`appstack.manifests.admission_writes` (children), :mod:`.admission_kinds` (our kinds,
Events, what tenants may ask), :mod:`.admission_namespaces` (who may enable a namespace).
``admissionregistration.k8s.io/v1`` (GA since Kubernetes 1.30). See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.appstack.labels import MEMBER_LABEL, STACK_LABEL
from appstack.controllers.mongodbcommunity import scram, users
from appstack.controllers.util.meta import MANAGED_BY
from appstack.manifests.admission_base import (
    EnableAll,
    binding,
    controlled,
    enabled_variable,
    only_operator,
    ownerless,
    policy,
    unchanged,
)
from appstack.manifests.admission_kinds import kinds_policies
from appstack.manifests.admission_namespaces import namespaces_policy
from appstack.manifests.admission_writes import writes_policy
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.sdk.kit.meta import COMPONENT_LABEL

SECRETS_POLICY = f"{NAME}-secrets"
MONGODB = "appstack.dev/v1/MongoDBCommunity"


def _kept_for_a_stack(target: str) -> str:
    """CEL: ``target`` is ownerless and names the stack member it was generated for."""
    labels = f"{target}.metadata.labels"
    return (
        f"({ownerless(target)} && has({labels}) && '{STACK_LABEL}' in {labels} && "
        f"'{MEMBER_LABEL}' in {labels})"
    )


def _ours(target: str) -> str:
    return f"({controlled(target)} || {_kept_for_a_stack(target)})"


def _rewritten_by_mongodb() -> str:
    """CEL: a MongoDB user's Secret (connection string, SCRAM credentials) its
    MongoDBCommunity controls: its data follows the user's password."""
    labels = "object.metadata.labels"
    components = f"['{users.COMPONENT}', '{scram.COMPONENT}']"
    return (
        f"(has({labels}) && '{COMPONENT_LABEL}' in {labels} && "
        f"{labels}['{COMPONENT_LABEL}'] in {components} && "
        "object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && "
        f"(r.apiVersion + '/' + r.kind) == '{MONGODB}'))"
    )


def secrets_policy(namespace: str = NAMESPACE, *, enable_all: EnableAll = False) -> dict[str, Any]:
    """The operator writes only its own ``Opaque`` Secrets, in enabled namespaces."""
    ((key, value),) = MANAGED_BY.items()
    label = f"{key}={value}"

    def has_label(target: str) -> str:
        return (
            f"(has({target}.metadata.labels) && '{key}' in {target}.metadata.labels"
            f" && {target}.metadata.labels['{key}'] == '{value}')"
        )

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
            "variables": [enabled_variable(enable_all)],
            "validations": [
                {
                    "expression": "variables.enabled",
                    "messageExpression": (
                        "'the appstack operator may not write Secrets in namespace ' + "
                        "request.namespace + ': it is not enabled for appstack'"
                    ),
                    "reason": "Forbidden",
                },
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
                        f"request.operation == 'DELETE' || ({has_label('object')} && "
                        f"{_ours('object')})"
                    ),
                    "message": (
                        f"the appstack operator may only write Secrets labelled {label} and "
                        "controlled by one of its kinds (or kept for a stack member, "
                        f"labelled {STACK_LABEL} and {MEMBER_LABEL})"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"request.operation == 'CREATE' || ({has_label('oldObject')} && "
                        f"{_ours('oldObject')})"
                    ),
                    "message": (
                        "the appstack operator may only change or delete Secrets already "
                        f"labelled {label} and its own"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        f"request.operation != 'UPDATE' || ({unchanged('data')} && "
                        f"{unchanged('type')}) || {_rewritten_by_mongodb()}"
                    ),
                    "message": (
                        "the appstack operator never changes a Secret's data (but for the "
                        "MongoDB users' Secrets a MongoDBCommunity controls)"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )


def policies(namespace: str = NAMESPACE, *, enable_all: EnableAll = False) -> list[dict[str, Any]]:
    """Every policy with its binding, in install order."""
    result: list[dict[str, Any]] = []
    every = (
        namespaces_policy(namespace),
        secrets_policy(namespace, enable_all=enable_all),
        writes_policy(namespace, enable_all=enable_all),
        *kinds_policies(namespace, enable_all=enable_all),
    )
    for each in every:
        result += [each, binding(each)]
    return result
