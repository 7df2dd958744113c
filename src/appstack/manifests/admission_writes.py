"""The ValidatingAdmissionPolicy that bounds every write of the operator's token to what
the operator itself would write (pure; part of the install bundle). Issues #28, #34, #46.

RBAC gives the operator ``create``/``patch``/``delete`` on Pods, Deployments, StatefulSets,
Jobs, CronJobs, Services, EndpointSlices, ConfigMaps, PVCs and PDBs in every namespace:
with the token alone one could run a pod as any ServiceAccount, take over an
administrator's Deployment, or slice into the ``kubernetes`` Service. RBAC cannot say "only
objects owned by one of our kinds"; this policy says as much as admission can see. For a
request by the operator (matched by its RBAC binding, see
:mod:`appstack.manifests.admission_base`) on any of those resources:

* **only in enabled namespaces** — labelled ``appstack.dev/enabled=true`` by a platform
  team (:mod:`appstack.api.namespaces`), unless the install enables every namespace; and
  nothing in ``kube-system``, ``kube-public`` or ``kube-node-lease`` unless also labelled
  :data:`MAY_WRITE` ``=true``.
* **owned, before and after** — a created object carries a controller ownerReference to
  one of our kinds with the exact served apiVersion, and our managed-by label; an update or
  delete is only of an object that *already* was ours (both), so a forged owner cannot take
  over or delete anything; an update keeps the label and may release an object that was
  ours (an EtcdCluster's member volume kept on delete). The one way back: a member volume
  released by an EtcdCluster (its UID in the volume's annotation) may be owned again by
  that very cluster (the UID, not a name). Secrets are bounded by
  :mod:`appstack.manifests.admission` instead.
* **EndpointSlices** are named ``<service>-external`` for the Service they feed, carry our
  ``endpointslice.kubernetes.io/managed-by``, and never feed ``kubernetes``.
* **pods at the Pod Security baseline** (:mod:`.admission_pods`), in a Pod and the pod
  template of a workload, unless the namespace is labelled :data:`ALLOW_PRIVILEGED`
  ``=true``; and a pod never names its node.
* **Services only as the operator writes them** (issue #46): of the four types, with only
  the fields it writes (:data:`SERVICE_FIELDS`) and those the API server or a cloud's load
  balancer controller sets itself — never ``externalIPs`` or ``loadBalancerIP``, which take
  an address of the cluster for every pod (CVE-2020-8554: under a real tenant's AppService,
  ``externalIPs: [10.96.0.10]`` answered the cluster's DNS queries). A field someone else
  set on a Service of ours is kept, not refused.
* **no finalizer but ours** added (a foreign one blocks a namespace's deletion), and no
  ConfigMap or Secret made ``immutable`` (nothing of ours is: a Secret that could never be
  rotated or re-owned).

:func:`lease_policy` bounds the leader-election Lease: its duration within the range
``--leader-elect-lease-duration`` accepts, so the token cannot hold the Lease for ever.

The resources come from the operator's own RBAC rules (:func:`written_resources`), so a
kind that starts writing a new resource is bounded without touching this module.
"""

from __future__ import annotations

from typing import Any

from appstack.api.namespaces import ALLOW_PRIVILEGED, MAY_WRITE, SYSTEM_NAMESPACES
from appstack.controllers.etcdcluster.desired import CLUSTER_UID
from appstack.controllers.rbac import MARKER_GROUP, operator_rules
from appstack.controllers.util.meta import SLICE_MANAGER
from appstack.manifests.admission_base import (
    EnableAll,
    cel_list,
    cel_string,
    controlled,
    enabled_variable,
    finalizers_added_only,
    labelled,
    only_operator,
    our_finalizers,
    ours,
    ownerless,
    policy,
)
from appstack.manifests.admission_pods import CHECKS, no_node_name, per_kind
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.sdk.kit.meta import SLICE_MANAGER_LABEL
from appstack.sdk.options import MAX_LEASE_DURATION, MIN_LEASE_DURATION

__all__ = [
    "ALLOW_PRIVILEGED",
    "LEASE_POLICY",
    "MAY_WRITE",
    "WRITES_POLICY",
    "lease_policy",
    "writes_policy",
    "written_resources",
]

WRITES_POLICY = f"{NAME}-writes"
WRITE_VERBS = {"create", "update", "patch", "delete"}
#: Written by the operator but not bounded here: Events and our own kinds
#: (:mod:`.admission_kinds`), the reviews behind /metrics (nothing is stored; admission
#: policies never see them) and the leader-election Lease (a Role in the operator's own
#: namespace, limited by name; its duration bounded by :func:`lease_policy`).
NOT_BOUNDED = {("events.k8s.io", "events"), ("coordination.k8s.io", "leases")}
ETCD_CLUSTER = "appstack.dev/v1/EtcdCluster"
LEASE_POLICY = f"{NAME}-lease-duration"

#: The Service types the operator writes: AppService and component Services (ClusterIP,
#: NodePort, LoadBalancer), external middleware given as a host name (ExternalName).
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
#: Every field of a Service's spec the operator writes (``controllers/**/desired*.py``,
#: ``controllers/appstack/middleware.py``: selector-less and headless Services among them).
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
#: Finalizers the API server puts on what the operator creates (a claim's protection from
#: deletion while a pod uses it, StorageObjectInUseProtection): never the operator's doing.
SYSTEM_FINALIZERS = ("kubernetes.io/pvc-protection",)


def written_resources() -> list[tuple[str, str]]:
    """(group, plural) of every resource the operator's RBAC lets it write, apart from our
    own kinds and :data:`NOT_BOUNDED`."""
    found: list[tuple[str, str]] = []
    for rule in operator_rules():
        if not WRITE_VERBS & set(rule["verbs"]):
            continue
        for group in rule["apiGroups"]:
            for plural in rule["resources"]:
                key = (group, plural)
                if group == MARKER_GROUP or "/" in plural or key in NOT_BOUNDED:
                    continue
                if group.endswith(".k8s.io") and plural.endswith("reviews"):
                    continue
                if key not in found:
                    found.append(key)
    return found


def _reowned_volume() -> str:
    """An EtcdCluster's released member volume made that same cluster's again."""
    uid = f"oldObject.metadata.annotations['{CLUSTER_UID}']"
    return (
        "(object.kind == 'PersistentVolumeClaim' && "
        f"{ownerless('oldObject')} && has(oldObject.metadata.annotations) && "
        f"'{CLUSTER_UID}' in oldObject.metadata.annotations && "
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        "has(r.controller) && r.controller && "
        f"(r.apiVersion + '/' + r.kind) == '{ETCD_CLUSTER}' && r.uid == {uid}))"
    )


def owned() -> str:
    """CEL: the object is ours on CREATE (and stays ours), was ours on UPDATE and DELETE."""
    secrets = "variables.target.kind == 'Secret'"  # bounded by the Secrets policy
    create = f"({controlled('object')} && {ours('object')})"
    old = f"({controlled('oldObject')} && {ours('oldObject')})"
    # an update of an object we control may release it (giving up grants nothing)
    update = f"({ours('object')} && ({old} || ({ours('oldObject')} && {_reowned_volume()})))"
    return (
        f"{secrets} || (request.operation == 'CREATE' ? {create} : "
        f"request.operation == 'DELETE' ? {old} : {update})"
    )


def _slice_ok(target: str) -> str:
    service = "'kubernetes.io/service-name'"
    labels = f"{target}.metadata.labels"
    return (
        f"({target}.kind != 'EndpointSlice' || ("
        f"has({labels}) && {service} in {labels} && {labels}[{service}] != 'kubernetes' && "
        f"{target}.metadata.name == {labels}[{service}] + '-external' && "
        f"{labelled(SLICE_MANAGER_LABEL, SLICE_MANAGER, f'{target}.metadata')}))"
    )


def slices_ok() -> str:
    """CEL: an EndpointSlice written (and the one it replaces or deletes) is one of ours."""
    return (
        "(request.operation == 'DELETE' || "
        f"{_slice_ok('object')}) && (request.operation == 'CREATE' || {_slice_ok('oldObject')})"
    )


def _pods(check: str) -> str:
    """``check`` unless deleting or in a namespace opted in to privileged pods."""
    return f"request.operation == 'DELETE' || variables.privileged || ({check})"


def _refusal(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


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


def service_validations() -> list[dict[str, str]]:
    """Services only of the operator's types and fields: ``externalIPs`` and
    ``loadBalancerIP`` named, then any other field it never writes."""
    addresses = [
        _refusal(
            _service(f"!has(object.spec.{field}) || {_kept(cel_string(field))}"),
            f"the appstack operator never sets spec.{field} on a Service: it takes {what} "
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
        _refusal(
            _service(
                f"(!has(object.spec.type) || object.spec.type in {types}) && "
                f"object.spec.all(k, k in {allowed} || {_kept('k')})"
            ),
            "the appstack operator writes Services of types "
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


def writes_policy(namespace: str = NAMESPACE, *, enable_all: EnableAll = False) -> dict[str, Any]:
    """The bounds above, for the operator installed in ``namespace`` (the policy's name);
    ``enable_all``: in every namespace, not only labelled ones."""
    rules = [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": [plural],
        }
        for group, plural in written_resources()
    ]
    system = ", ".join(f"'{name}'" for name in SYSTEM_NAMESPACES)
    pods = [
        _refusal(
            _pods(per_kind(check)),
            f"the appstack operator may not write {check.message} "
            f"(unless the namespace is labelled {ALLOW_PRIVILEGED}=true)",
        )
        for check in CHECKS
    ]
    return policy(
        f"{WRITES_POLICY}-{namespace}",
        {
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": only_operator(),
            "variables": [
                {
                    "name": "target",
                    "expression": "request.operation == 'DELETE' ? oldObject : object",
                },
                enabled_variable(enable_all),
                {"name": "privileged", "expression": labelled(ALLOW_PRIVILEGED)},
            ],
            "validations": [
                {
                    "expression": "variables.enabled",
                    "messageExpression": (
                        "'the appstack operator may not write in namespace ' + "
                        "request.namespace + ': it is not enabled for appstack'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": (f"!(request.namespace in [{system}]) || {labelled(MAY_WRITE)}"),
                    "messageExpression": (
                        "'the appstack operator may not write in namespace ' + request.namespace"
                        f" + ' (unless it is labelled {MAY_WRITE}=true)'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": owned(),
                    "messageExpression": (
                        "'the appstack operator may only write objects controlled by one of "
                        "its kinds (and labelled as its own, before and after); ' + "
                        "variables.target.kind + ' ' + variables.target.metadata.name + ' is not'"
                    ),
                    "reason": "Forbidden",
                },
                _refusal(
                    slices_ok(),
                    "the appstack operator may only write EndpointSlices of its own, named "
                    "<service>-external for the Service they name, never for kubernetes",
                ),
                *pods,
                _refusal(
                    f"request.operation == 'DELETE' || {no_node_name()}",
                    "the appstack operator may not name a pod's node (spec.nodeName): pods "
                    "go through the scheduler",
                ),
                *service_validations(),
                _refusal(
                    "request.operation == 'DELETE' || "
                    + finalizers_added_only([*our_finalizers(), *SYSTEM_FINALIZERS]),
                    "the appstack operator may add no finalizer to what it writes but its own ("
                    + ", ".join(our_finalizers())
                    + "): another one would hold the object, and its namespace, for ever",
                ),
                _refusal(
                    _immutable_refused(),
                    "the appstack operator never makes a ConfigMap or Secret immutable "
                    "(immutable: true): remove it",
                ),
            ],
        },
    )


def lease_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The operator's Lease writes: ``spec.leaseDurationSeconds`` from
    :data:`~appstack.sdk.options.MIN_LEASE_DURATION` to
    :data:`~appstack.sdk.options.MAX_LEASE_DURATION` — what ``--leader-elect-lease-duration``
    accepts (and 1, what a leader writes when it lets go). A stolen token could otherwise
    write ``2147483647`` and hold the Lease, every replica waiting, for ever (issue #46);
    bounded, a Lease it stops renewing is free again within five minutes."""
    duration = "object.spec.leaseDurationSeconds"
    low, high = int(MIN_LEASE_DURATION), int(MAX_LEASE_DURATION)
    return policy(
        f"{LEASE_POLICY}-{namespace}",
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
            "matchConditions": only_operator(),
            "validations": [
                _refusal(
                    f"has(object.spec) && has({duration}) && {duration} >= {low} && "
                    f"{duration} <= {high}",
                    "the appstack operator writes a Lease only with spec.leaseDurationSeconds "
                    f"from {low} to {high}: what its lease duration flag accepts",
                ),
            ],
        },
    )
