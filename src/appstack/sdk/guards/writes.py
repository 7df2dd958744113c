"""The ValidatingAdmissionPolicy that bounds every write of an operator's token to what the
operator itself would write (:func:`writes_policy`), and the one that bounds its
leader-election Lease (:func:`lease_policy`). Pure; part of :func:`appstack.sdk.guards.policies`,
for appstack's operator and every scaffolded one.

RBAC gives an operator ``create``/``patch``/``delete`` on the kinds it owns in every
namespace: with the token alone one could write a ConfigMap into ``kube-system``
(``aws-auth``), take over an administrator's Deployment, or run a pod as any
ServiceAccount. RBAC cannot say "only objects owned by one of our kinds"; this policy says
as much as admission can see. For a request by the operator (matched by its RBAC binding,
see :mod:`.subject`) on any resource its RBAC lets it write (:func:`written_resources`):

* **only in enabled namespaces** — labelled ``<domain>/enabled=true`` by a platform team,
  unless the install enables every namespace; and nothing in ``kube-system``,
  ``kube-public`` or ``kube-node-lease`` unless also labelled ``<domain>/operator-may-write=true``.
* **owned, before and after** — a created object carries a controller ownerReference to
  one of the operator's kinds with the exact served apiVersion, and its managed-by label;
  an update or delete is only of an object that *already* was its own (both), so a forged
  owner cannot take over or delete anything; an update keeps the label and may release an
  object (giving up grants nothing).
* **no Secret of type** ``kubernetes.io/service-account-token`` (the API server fills it
  with a token of any ServiceAccount named in it); other types — TLS, Opaque — as owned.
* **pods at the Pod Security baseline** (:mod:`.pods`), in a Pod and the pod template of a
  workload, unless the namespace is labelled ``<domain>/allow-privileged-pods=true``; and a
  pod never names its node.
* **Services only of generic types and fields** (:data:`SERVICE_FIELDS` and those the API
  server or a cloud's load balancer controller sets) — never ``externalIPs`` or
  ``loadBalancerIP``, which take an address of the cluster for every pod (CVE-2020-8554).
  A field someone else set on a Service of the operator's is kept, not refused.
* **no finalizer but its own** added (a foreign one blocks a namespace's deletion), and no
  ConfigMap or Secret made ``immutable``.

What an operator adds of its own comes through :class:`~.subject.WriteExtensions`.
:func:`lease_policy` bounds the Lease's duration to the range
``--leader-elect-lease-duration`` accepts, so the token cannot hold the Lease for ever.
"""

from __future__ import annotations

from appstack.sdk.guards.expressions import (
    Validation,
    cel_list,
    cel_string,
    finalizers_added_only,
    labelled,
    refusal,
    refusal_said,
)
from appstack.sdk.guards.pods import CHECKS, no_node_name, per_kind, pod_kinds
from appstack.sdk.guards.subject import GuardedOperator, Obj
from appstack.sdk.options import MAX_LEASE_DURATION, MIN_LEASE_DURATION

WRITE_VERBS = {"create", "update", "patch", "delete"}
#: Written by an operator but not bounded here: Events (:func:`~.kinds.events_policy`) and
#: the leader-election Lease (a Role in the operator's own namespace, limited by name; its
#: duration bounded by :func:`lease_policy`).
NOT_BOUNDED = {("events.k8s.io", "events"), ("coordination.k8s.io", "leases")}
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
#: The Service types an operator may write.
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
#: Every field of a Service's spec an operator may write: selector-less and headless
#: Services among them.
SERVICE_FIELDS = (
    "type",
    "selector",
    "ports",
    "clusterIP",
    "externalName",
    "publishNotReadyAddresses",
)
#: What the API server sets on those itself (defaults, allocations), and what a cloud's
#: load balancer controller sets on a LoadBalancer Service (AWS Load Balancer Controller's
#: webhook: ``loadBalancerClass``, which implementation serves it — no address).
SERVICE_FIELDS_SET_BY_OTHERS = (
    "clusterIPs",
    "ipFamilies",
    "ipFamilyPolicy",
    "sessionAffinity",
    "internalTrafficPolicy",
    "externalTrafficPolicy",
    "allocateLoadBalancerNodePorts",
    "loadBalancerClass",
)
#: Finalizers the API server puts on what an operator creates (a claim's protection from
#: deletion while a pod uses it, StorageObjectInUseProtection): never the operator's doing.
SYSTEM_FINALIZERS = ("kubernetes.io/pvc-protection",)
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"  # noqa: S105 - a type, no secret


def written_resources(operator: GuardedOperator) -> list[tuple[str, str]]:
    """(group, plural) of every resource the operator's RBAC lets it write, apart from its
    own kinds (:mod:`.kinds`), its marker, subresources, the reviews behind ``/metrics``
    (nothing is stored; admission policies never see them) and :data:`NOT_BOUNDED`."""
    own = {(k.group, k.plural) for k in operator.kinds}
    found: list[tuple[str, str]] = []
    for rule in operator.rules:
        if not WRITE_VERBS & set(rule.get("verbs", ())):
            continue
        for group in rule.get("apiGroups", ()):
            for plural in rule.get("resources", ()):
                key = (group, plural)
                if group == operator.identity.domain or "/" in plural or key in NOT_BOUNDED:
                    continue
                if key in own or (group.endswith(".k8s.io") and plural.endswith("reviews")):
                    continue
                if key not in found:
                    found.append(key)
    return found


def owned(operator: GuardedOperator) -> str:
    """CEL: the object is the operator's on CREATE (and stays so), was on UPDATE and
    DELETE (but for the kinds it bounds elsewhere, and what it may take back)."""
    create = f"({operator.controlled('object')} && {operator.ours('object')})"
    old = f"({operator.controlled('oldObject')} && {operator.ours('oldObject')})"
    extensions = operator.writes
    if extensions.readopted:
        old_or_taken_back = f"({old} || ({operator.ours('oldObject')} && {extensions.readopted}))"
    else:
        old_or_taken_back = old
    # an update of an object it controls may release it (giving up grants nothing)
    update = f"({operator.ours('object')} && {old_or_taken_back})"
    checked = (
        f"(request.operation == 'CREATE' ? {create} : "
        f"request.operation == 'DELETE' ? {old} : {update})"
    )
    elsewhere = (*extensions.owned_elsewhere, *extensions.unowned)
    if not elsewhere:
        return checked
    kinds = f"== {cel_string(elsewhere[0])}" if len(elsewhere) == 1 else f"in {cel_list(elsewhere)}"
    return f"variables.target.kind {kinds} || {checked}"


def _pods(check: str) -> str:
    """``check`` unless deleting or in a namespace opted in to privileged pods."""
    return f"request.operation == 'DELETE' || variables.privileged || ({check})"


def _kept(field: str) -> str:
    """CEL: ``object.spec[field]`` was on the old object already, the same (an update of a
    Service someone else gave it to: kept, not the operator's doing)."""
    return (
        f"(request.operation == 'UPDATE' && has(oldObject.spec) && {field} in oldObject.spec "
        f"&& oldObject.spec[{field}] == object.spec[{field}])"
    )


def _service(check: str) -> str:
    """``check`` on a Service created or changed (not on other kinds, not on delete)."""
    return (
        "request.operation == 'DELETE' || object.kind != 'Service' || !has(object.spec) || "
        f"({check})"
    )


def service_validations(operator: GuardedOperator) -> list[Validation]:
    """Services only of :data:`SERVICE_TYPES` and :data:`SERVICE_FIELDS`: ``externalIPs``
    and ``loadBalancerIP`` named, then any other field."""
    addresses = [
        refusal(
            _service(f"!has(object.spec.{field}) || {_kept(cel_string(field))}"),
            f"{operator.who} never sets spec.{field} on a Service: it takes {what} "
            "(CVE-2020-8554); remove it",
        )
        for field, what in (
            ("externalIPs", "addresses of the cluster for every pod"),
            ("loadBalancerIP", "a load balancer address the operator never asks for"),
        )
    ]
    allowed = cel_list([*SERVICE_FIELDS, *SERVICE_FIELDS_SET_BY_OTHERS])
    types = cel_list(SERVICE_TYPES)
    return [
        *addresses,
        refusal(
            _service(
                f"(!has(object.spec.type) || object.spec.type in {types}) && "
                f"object.spec.all(k, k in {allowed} || {_kept('k')})"
            ),
            f"{operator.who} writes Services of types "
            + ", ".join(SERVICE_TYPES)
            + " with spec."
            + ", spec.".join(SERVICE_FIELDS)
            + " only (and what the API server sets): no other field",
        ),
    ]


def _immutable_refused() -> str:
    """CEL: a ConfigMap or Secret is not made immutable (one already so stays so)."""
    return (
        "request.operation == 'DELETE' || !(object.kind in ['ConfigMap', 'Secret']) || "
        "!has(object.immutable) || !object.immutable || (request.operation == 'UPDATE' && "
        "has(oldObject.immutable) && oldObject.immutable)"
    )


def _no_token_secret(operator: GuardedOperator) -> list[Validation]:
    """A Secret of type service-account-token refused, unless Secrets are bounded by a
    policy of the operator's own or not written at all."""
    if ("", "secrets") not in written_resources(operator):
        return []
    if "Secret" in operator.writes.owned_elsewhere:
        return []
    return [
        refusal(
            "request.operation == 'DELETE' || object.kind != 'Secret' || !has(object.type) || "
            f"object.type != '{SERVICE_ACCOUNT_TOKEN}'",
            f"{operator.who} never writes a Secret of type {SERVICE_ACCOUNT_TOKEN} (the API "
            "server would fill it with a ServiceAccount's token): use another type",
        )
    ]


def _pod_validations(operator: GuardedOperator, kinds: list[str]) -> list[Validation]:
    """Baseline of every pod kind written, and no node named (none: nothing)."""
    if not kinds:
        return []
    privileged = operator.identity.allow_privileged_label
    return [
        *(
            refusal(
                _pods(per_kind(check, kinds)),
                f"{operator.who} may not write {check.message} "
                f"(unless the namespace is labelled {privileged}=true)",
            )
            for check in CHECKS
        ),
        refusal(
            f"request.operation == 'DELETE' || {no_node_name(kinds)}",
            f"{operator.who} may not name a pod's node (spec.nodeName): pods "
            "go through the scheduler",
        ),
    ]


def _finalizers(operator: GuardedOperator) -> Validation:
    finalizers = ", ".join(operator.finalizers) or "it has none"
    return refusal(
        "request.operation == 'DELETE' || "
        + finalizers_added_only([*operator.finalizers, *SYSTEM_FINALIZERS]),
        f"{operator.who} may add no finalizer to what it writes but its own ("
        + finalizers
        + "): another one would hold the object, and its namespace, for ever",
    )


def _own_secret(operator: GuardedOperator) -> list[dict[str, str]]:
    """The match condition that leaves out the operator's own TLS Secret in its own
    namespace (:attr:`~.subject.WriteExtensions.own_secret`), if it keeps one."""
    if operator.writes.own_secret is None:
        return []
    namespace, name = operator.writes.own_secret
    return [
        {
            "name": "not-its-webhook-certificate",
            "expression": (
                "!(request.resource.group == '' && request.resource.resource == 'secrets'"
                f" && request.namespace == {cel_string(namespace)}"
                f" && request.name == {cel_string(name)}"
                " && request.operation != 'DELETE' && object.type == 'kubernetes.io/tls')"
            ),
        }
    ]


def writes_policy(operator: GuardedOperator) -> Obj | None:
    """The bounds above (None: the operator's RBAC writes nothing they apply to)."""
    written = written_resources(operator)
    if not written:
        return None
    rules = [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": [plural],
        }
        for group, plural in written
    ]
    system = ", ".join(f"'{name}'" for name in SYSTEM_NAMESPACES)
    may_write = operator.identity.may_write_label
    who = operator.who
    return operator.policy(
        operator.operator_name("writes"),
        {
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [*operator.only_operator(), *_own_secret(operator)],
            "variables": [
                {
                    "name": "target",
                    "expression": "request.operation == 'DELETE' ? oldObject : object",
                },
                operator.enabled_variable(),
                {
                    "name": "privileged",
                    "expression": labelled(operator.identity.allow_privileged_label),
                },
            ],
            "validations": [
                operator.not_enabled(),
                refusal_said(
                    f"!(request.namespace in [{system}]) || {labelled(may_write)}",
                    f"'{who} may not write in namespace ' + request.namespace"
                    f" + ' (unless it is labelled {may_write}=true)'",
                ),
                refusal_said(
                    owned(operator),
                    f"'{who} may only write objects controlled by one of "
                    "its kinds (and labelled as its own, before and after); ' + "
                    "variables.target.kind + ' ' + variables.target.metadata.name + ' is not'",
                ),
                *operator.writes.validations,
                *_no_token_secret(operator),
                *_pod_validations(operator, pod_kinds(written)),
                *service_validations(operator),
                _finalizers(operator),
                refusal(
                    _immutable_refused(),
                    f"{who} never makes a ConfigMap or Secret immutable "
                    "(immutable: true): remove it",
                ),
            ],
        },
    )


def lease_policy(operator: GuardedOperator) -> Obj:
    """The operator's Lease writes: ``spec.leaseDurationSeconds`` from
    :data:`~appstack.sdk.options.MIN_LEASE_DURATION` to
    :data:`~appstack.sdk.options.MAX_LEASE_DURATION` — what ``--leader-elect-lease-duration``
    accepts (and 1, what a leader writes when it lets go). A stolen token could otherwise
    write ``2147483647`` and hold the Lease, every replica waiting, for ever (issue #46);
    bounded, a Lease it stops renewing is free again within five minutes."""
    duration = "object.spec.leaseDurationSeconds"
    low, high = int(MIN_LEASE_DURATION), int(MAX_LEASE_DURATION)
    return operator.policy(
        operator.operator_name("lease-duration"),
        {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["leases"],
                    }
                ]
            },
            "matchConditions": operator.only_operator(),
            "validations": [
                refusal(
                    f"has(object.spec) && has({duration}) && {duration} >= {low} && "
                    f"{duration} <= {high}",
                    f"{operator.who} writes a Lease only with spec.leaseDurationSeconds "
                    f"from {low} to {high}: what its lease duration flag accepts",
                ),
            ],
        },
    )
