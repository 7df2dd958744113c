"""The ValidatingAdmissionPolicy that bounds every write of the operator's token to what
the operator itself would write (pure; part of the install bundle). Issue #28, P0.2.

RBAC gives the operator ``create``/``patch``/``delete`` on Pods, Deployments, StatefulSets,
Jobs, CronJobs, Services, EndpointSlices, ConfigMaps, PVCs and PDBs in every namespace:
with the token alone one could run a privileged hostPath pod in ``kube-system``, or add an
EndpointSlice to ``kube-dns``. RBAC cannot say "only objects owned by one of our kinds";
this policy does. For a request by the operator (matched by its RBAC binding, see
:mod:`appstack.manifests.admission_base`) on any of those resources:

* **owned** — the object written (for a delete, the object deleted) carries a controller
  ownerReference to one of our kinds (ownerReferences are always within the namespace);
  an update may also release an object that was ours (an EtcdCluster's member volume kept
  on delete), never take one that was not.
  Secrets are exempt here (credentials outlive their stack while their volume is retained,
  with no owner); :mod:`appstack.manifests.admission` bounds them by type and label.
* **not a system namespace** — nothing in ``kube-system``, ``kube-public`` or
  ``kube-node-lease`` unless the namespace is labelled :data:`MAY_WRITE` ``=true``.
* **EndpointSlices** are named ``<service>-external`` for the Service they feed (what the
  AppStack controller writes for an external middleware address): never a slice of a
  Service it did not name.
* **pods as the baseline allows** — a pod, or the pod template of a workload, is never
  privileged, never uses the host's network, PID or IPC namespaces, host ports or
  ``hostPath`` volumes, unless the namespace is labelled :data:`ALLOW_PRIVILEGED` ``=true``.

The resources come from the operator's own RBAC rules (:func:`written_resources`), so a
kind that starts writing a new resource is bounded without touching this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from appstack.controllers.rbac import MARKER_GROUP, operator_rules
from appstack.controllers.registry import ALL
from appstack.manifests.admission_base import only_operator, policy
from appstack.manifests.rbac import NAME, NAMESPACE

WRITES_POLICY = f"{NAME}-writes"
#: Namespace label that lets the operator write in a system namespace.
MAY_WRITE = "appstack.dev/operator-may-write"
#: Namespace label that lets the operator write privileged / host pods there.
ALLOW_PRIVILEGED = "appstack.dev/allow-privileged-pods"
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
WRITE_VERBS = {"create", "update", "patch", "delete"}
#: Written by the operator but not bounded here: Events (about our own objects), the
#: reviews behind /metrics (nothing is stored) and the leader-election Lease (a Role in the
#: operator's own namespace, limited by name).
NOT_BOUNDED = {("events.k8s.io", "events"), ("coordination.k8s.io", "leases")}
#: Where each kind that makes pods has its pod spec (read from ``object`` directly: CEL's
#: has() does not see through a composed variable).
POD_SPECS = {
    "Pod": "object.spec",
    "Deployment": "object.spec.template.spec",
    "StatefulSet": "object.spec.template.spec",
    "ReplicaSet": "object.spec.template.spec",
    "DaemonSet": "object.spec.template.spec",
    "Job": "object.spec.template.spec",
    "CronJob": "object.spec.jobTemplate.spec.template.spec",
}


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


def _labelled(label: str) -> str:
    return (
        f"has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels"
        f" && namespaceObject.metadata.labels['{label}'] == 'true'"
    )


def _controlled(target: str) -> str:
    kinds = ", ".join(f"'{registration.kind.kind}'" for registration in ALL)
    return (
        f"(has({target}.metadata.ownerReferences) && "
        f"{target}.metadata.ownerReferences.exists(r, "
        "has(r.controller) && r.controller && "
        f"r.apiVersion.startsWith('{MARKER_GROUP}/') && r.kind in [{kinds}]))"
    )


def _owned() -> str:
    # An update of an object we control may release it (an EtcdCluster's member volume
    # kept on delete, spec.retainOnDelete): giving up what is ours grants nothing.
    return (
        f"variables.target.kind == 'Secret' || {_controlled('variables.target')} || "
        f"(request.operation == 'UPDATE' && {_controlled('oldObject')})"
    )


def _containers_ok(spec: str) -> str:
    def none_privileged(field: str) -> str:
        return (
            f"(!has({spec}.{field}) || {spec}.{field}.all(c, "
            "(!has(c.securityContext) || !has(c.securityContext.privileged)"
            " || !c.securityContext.privileged)"
            " && (!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))))"
        )

    return " && ".join(none_privileged(field) for field in ("containers", "initContainers"))


def _host_ok(spec: str) -> str:
    flags = " && ".join(
        f"(!has({spec}.{flag}) || !{spec}.{flag})" for flag in ("hostNetwork", "hostPID", "hostIPC")
    )
    volumes = f"(!has({spec}.volumes) || {spec}.volumes.all(v, !has(v.hostPath)))"
    return f"{flags} && {volumes}"


def _pods_guarded(check: Callable[[str], str]) -> str:
    """``check`` of the pod spec of whichever kind is written; a delete, another kind or an
    opted-in namespace passes."""
    per_kind = " && ".join(
        f"(object.kind != '{kind}' || ({check(spec)}))" for kind, spec in POD_SPECS.items()
    )
    return f"request.operation == 'DELETE' || {_labelled(ALLOW_PRIVILEGED)} || ({per_kind})"


def writes_policy(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The bounds above, for the operator installed in ``namespace`` (the policy's name)."""
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
    slice_name = (
        "variables.target.kind != 'EndpointSlice' || ("
        "has(variables.target.metadata.labels) && "
        "'kubernetes.io/service-name' in variables.target.metadata.labels && "
        "variables.target.metadata.name == "
        "variables.target.metadata.labels['kubernetes.io/service-name'] + '-external')"
    )
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
            ],
            "validations": [
                {
                    "expression": f"!(request.namespace in [{system}]) || {_labelled(MAY_WRITE)}",
                    "messageExpression": (
                        "'the appstack operator may not write in namespace ' + request.namespace"
                        f" + ' (unless it is labelled {MAY_WRITE}=true)'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": _owned(),
                    "messageExpression": (
                        "'the appstack operator may only write objects controlled by one of "
                        "its kinds; ' + variables.target.kind + ' ' + "
                        "variables.target.metadata.name + ' is not'"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": slice_name,
                    "message": (
                        "the appstack operator may only write EndpointSlices named "
                        "<service>-external for the Service they name"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": _pods_guarded(_containers_ok),
                    "message": (
                        "the appstack operator may not write privileged containers or host "
                        f"ports (unless the namespace is labelled {ALLOW_PRIVILEGED}=true)"
                    ),
                    "reason": "Forbidden",
                },
                {
                    "expression": _pods_guarded(_host_ok),
                    "message": (
                        "the appstack operator may not write pods using the host's network, "
                        "PID or IPC namespaces or hostPath volumes (unless the namespace is "
                        f"labelled {ALLOW_PRIVILEGED}=true)"
                    ),
                    "reason": "Forbidden",
                },
            ],
        },
    )
