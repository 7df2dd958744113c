"""The ValidatingAdmissionPolicy that lets only a platform team opt a namespace in (pure;
part of the install bundle), issue #34.

The operator acts only in namespaces labelled ``appstack.dev/enabled=true``, writes
privileged pods only where ``appstack.dev/allow-privileged-pods=true`` and in a system
namespace only where ``appstack.dev/operator-may-write=true``
(:data:`appstack.api.namespaces.GUARDED`). Whoever may create namespaces (a CI system, a
self-service portal) or patch one must not be able to set those themselves: for **every**
requester (not only the operator), creating a namespace that carries one of them, or
changing one, is refused unless the requester holds
:data:`~appstack.api.namespaces.LABEL_GRANT` — verb ``enable`` on ``namespaces`` of our
group, which nothing else uses: cluster administrators hold it through their wildcard, a
platform team through the generated ClusterRole
``appstack-namespace-enabler-<install namespace>`` (:func:`enabler_role`). The same on the
``namespaces/status`` and ``namespaces/finalize`` subresources, which keep the labels they
are sent (issue #46: whoever may update either set the opt-in label through it).
"""

from __future__ import annotations

from typing import Any

from appstack.api.namespaces import GUARDED, LABEL_GRANT
from appstack.manifests.admission_base import policy
from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAMESPACE, cluster_name

NAMESPACES_POLICY = "appstack-namespace-labels"
#: A namespace and the subresources an update of which stores its labels too.
RESOURCES = ("namespaces", "namespaces/status", "namespaces/finalize")
ENABLER = "appstack-namespace-enabler"


def _label_same(label: str) -> str:
    new = f"(has(object.metadata.labels) && '{label}' in object.metadata.labels)"
    old = (
        "(request.operation == 'UPDATE' && has(oldObject.metadata.labels) && "
        f"'{label}' in oldObject.metadata.labels)"
    )
    return (
        f"({new} == {old} && (!{new} || "
        f"object.metadata.labels['{label}'] == oldObject.metadata.labels['{label}']))"
    )


def namespaces_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """Setting, changing or removing a guarded label takes the grant."""
    group, resource, verb = LABEL_GRANT
    granted = f"authorizer.group('{group}').resource('{resource}').check('{verb}').allowed()"
    labels = ", ".join(GUARDED)
    return policy(
        cluster_name(NAMESPACES_POLICY, namespace),
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": list(RESOURCES),
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "changes-a-guarded-label",
                    "expression": "!(" + " && ".join(_label_same(label) for label in GUARDED) + ")",
                }
            ],
            "validations": [
                {
                    "expression": granted,
                    "message": (
                        f"only a cluster administrator, or a holder of {verb} on "
                        f"{resource}.{group} (ClusterRole {ENABLER}-<install namespace>), may "
                        f"set, change or remove the namespace labels {labels}"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def enabler_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The ClusterRole a platform team is bound to, to enable namespaces for appstack
    (alongside a role that may patch namespaces, which the cluster's own roles grant)."""
    group, resource, verb = LABEL_GRANT
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": cluster_name(ENABLER, namespace), "labels": LABELS},
        "rules": [{"apiGroups": [group], "resources": [resource], "verbs": [verb]}],
    }
