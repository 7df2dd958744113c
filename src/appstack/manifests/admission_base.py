"""What every admission policy of the install shares (pure): the API version, the
"requested by the appstack operator" match conditions and the binding that enforces a policy.

*Who is the operator* is not a user name written into a policy — kustomize's
``namespace:`` and ``namePrefix:``, a Helm release namespace or ``serviceAccount.name`` would
move the ServiceAccount and leave the name in the CEL behind, and the guard off. It is
whoever the operator's own RBAC binds: the operator's (Cluster)Role grants a *marker*
permission nothing else uses (:data:`~appstack.controllers.rbac.MARKER`: verb ``subject-to``
on ``admissionguards.appstack.dev``), and the policies' ``matchConditions`` ask the
authorizer whether the requester holds it — in the request's namespace, so a namespaced
install (Roles only) is matched too. Holders of everything (``system:masters``,
``cluster-admin``, wildcard roles) hold the marker as well; they are told apart by a
*canary* permission no role grants by name (:data:`~appstack.controllers.rbac.CANARY`),
which only a wildcard gives, and are not matched: the guards bound the operator, not the
cluster's administrators. Used by :mod:`appstack.manifests.admission` (Secrets) and
:mod:`appstack.manifests.admission_writes` (everything else the operator writes).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.rbac import CANARY, MARKER, MARKER_GROUP, MARKER_RESOURCE
from appstack.manifests.crds import LABELS

API_VERSION = "admissionregistration.k8s.io/v1"


def _holds(verb: str) -> str:
    return (
        f"authorizer.group('{MARKER_GROUP}').resource('{MARKER_RESOURCE}')"
        f".namespace(request.namespace).check('{verb}').allowed()"
    )


def only_operator() -> list[dict[str, str]]:
    """Requests by whoever the operator's RBAC binds (the marker), not by holders of
    everything (the canary)."""
    return [
        {"name": "bound-as-the-appstack-operator", "expression": _holds(MARKER)},
        {"name": "not-an-administrator", "expression": f"!{_holds(CANARY)}"},
    ]


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy of the install (refusing when it cannot be evaluated)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": LABELS},
        "spec": {"failurePolicy": "Fail", **spec},
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
