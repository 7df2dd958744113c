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

from collections.abc import Iterable
from typing import Any

from appstack.api.namespaces import ENABLED
from appstack.controllers.rbac import CANARY, MARKER, MARKER_GROUP, MARKER_RESOURCE
from appstack.controllers.registry import ALL
from appstack.controllers.util.meta import MANAGED_BY
from appstack.manifests.crds import LABELS

API_VERSION = "admissionregistration.k8s.io/v1"
#: Whether the operator may act in every namespace: True, False (only labelled ones), or a
#: CEL expression of a boolean (the chart's value, as a template sentinel).
EnableAll = bool | str


def labelled(label: str, value: str = "true", meta: str = "namespaceObject.metadata") -> str:
    """CEL: the object whose metadata is ``meta`` carries ``label=value``."""
    labels = f"{meta}.labels"
    return f"(has({labels}) && '{label}' in {labels} && {labels}['{label}'] == '{value}')"


def enabled_check() -> str:
    """CEL: the request's namespace is labelled as enabled (:mod:`appstack.api.namespaces`)."""
    return labelled(ENABLED)


def enabled_variable(enable_all: EnableAll) -> dict[str, str]:
    """The policy variable ``enabled``: may the operator act in the request's namespace."""
    if isinstance(enable_all, bool):
        return {"name": "enabled", "expression": "true" if enable_all else enabled_check()}
    return {"name": "enabled", "expression": enable_all}


def our_owner_versions() -> str:
    """CEL list of ``apiVersion/Kind`` of every kind of ours, exactly as served."""
    return "[" + ", ".join(f"'{c.kind.api_version}/{c.kind.kind}'" for c in ALL) + "]"


def controlled(target: str) -> str:
    """CEL: ``target`` has a controller ownerReference to one of our kinds, with the exact
    served apiVersion (``appstack.dev/v1alpha1`` names nothing: the garbage collector would
    never remove what it "owns")."""
    return (
        f"(has({target}.metadata.ownerReferences) && "
        f"{target}.metadata.ownerReferences.exists(r, "
        "has(r.controller) && r.controller && "
        f"(r.apiVersion + '/' + r.kind) in {our_owner_versions()}))"
    )


def ownerless(target: str) -> str:
    """CEL: ``target`` has no controller ownerReference at all."""
    return (
        f"(!has({target}.metadata.ownerReferences) || "
        f"!{target}.metadata.ownerReferences.exists(r, has(r.controller) && r.controller))"
    )


def ours(target: str) -> str:
    """CEL: ``target`` carries our managed-by label."""
    ((key, value),) = MANAGED_BY.items()
    return labelled(key, value, f"{target}.metadata")


def cel_string(text: str) -> str:
    """``text`` as a CEL string literal (single-quoted)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(items: Iterable[str]) -> str:
    """CEL list of the strings ``items``."""
    return "[" + ", ".join(cel_string(i) for i in items) + "]"


def our_finalizers() -> list[str]:
    """Every finalizer the operator's controllers put on an object (their kinds' own:
    AppStack's teardown)."""
    return sorted({c.reconciler.finalizer for c in ALL if c.reconciler.finalizer})


def finalizers_added_only(allowed: Iterable[str]) -> str:
    """CEL: every finalizer of ``object`` was already on ``oldObject`` (an update) or is
    one of ``allowed``: a write may remove finalizers and add only those."""
    old = "oldObject.metadata.finalizers"
    return (
        "(!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, "
        f"f in {cel_list(allowed)} || (request.operation == 'UPDATE' && has({old}) && "
        f"f in {old})))"
    )


def unchanged(field: str) -> str:
    """CEL: ``object.<field>`` equals ``oldObject.<field>`` (both absent counts)."""
    *parent, last = field.split(".")
    new = ".".join(["object", *parent])
    old = ".".join(["oldObject", *parent])
    return (
        f"(has({new}.{last}) == has({old}.{last}) && "
        f"(!has({new}.{last}) || {new}.{last} == {old}.{last}))"
    )


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
