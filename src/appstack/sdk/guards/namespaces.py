"""The admission guard that lets only a platform team opt a namespace in to an operator
(:func:`namespaces_policy`), and the ClusterRole that makes a platform team one
(:func:`enabler_role`). Pure; part of :func:`appstack.sdk.guards.policies`, for appstack's
operator and every scaffolded one.

An operator acts only in namespaces labelled ``<domain>/enabled=true``, writes privileged
pods only where ``<domain>/allow-privileged-pods=true`` and in a system namespace only
where ``<domain>/operator-may-write=true`` (its identity's
:attr:`~appstack.sdk.identity.OperatorIdentity.opt_in_labels`). Whoever may create
namespaces (a CI system, a self-service portal) or patch one must not be able to set those
themselves: for **every** requester (not only the operator), creating a namespace that
carries one of them, or changing one, is refused unless the requester holds verb
``enable`` on ``namespaces.<domain>`` (:func:`appstack.sdk.rbac.enabler_grant`), which
nothing else uses: cluster administrators hold it through their wildcard, a platform team
through the generated ClusterRole ``<project>-namespace-enabler``. The same on the
``namespaces/status`` and ``namespaces/finalize`` subresources, which keep the labels they
are sent.
"""

from __future__ import annotations

from appstack.sdk.guards.subject import GuardedOperator, Obj
from appstack.sdk.rbac import cluster_role, enabler_grant

#: A namespace and the subresources an update of which stores its labels too.
RESOURCES = ("namespaces", "namespaces/status", "namespaces/finalize")
ENABLER = "namespace-enabler"


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


def namespaces_policy(operator: GuardedOperator) -> Obj:
    """Setting, changing or removing an opt-in label takes the grant."""
    group, resource, verb = enabler_grant(operator.identity.domain)
    granted = f"authorizer.group('{group}').resource('{resource}').check('{verb}').allowed()"
    guarded = operator.identity.opt_in_labels
    enabler = operator.project_name(ENABLER, shown=True)
    return operator.policy(
        operator.project_name("namespace-labels"),
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
                    "expression": "!(" + " && ".join(_label_same(label) for label in guarded) + ")",
                }
            ],
            "validations": [
                {
                    "expression": granted,
                    "message": (
                        f"only a cluster administrator, or a holder of {verb} on "
                        f"{resource}.{group} (ClusterRole {enabler}), may "
                        f"set, change or remove the namespace labels {', '.join(guarded)}"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    )


def enabler_role(operator: GuardedOperator) -> Obj:
    """The ClusterRole a platform team is bound to, to enable namespaces for the operator
    (alongside a role that may patch namespaces, which the cluster's own roles grant)."""
    group, resource, verb = enabler_grant(operator.identity.domain)
    rules = [{"apiGroups": [group], "resources": [resource], "verbs": [verb]}]
    return cluster_role(operator.project_name(ENABLER), rules, operator.install_labels)
