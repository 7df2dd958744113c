"""appstack's admission policies (pure; part of the install bundle): the SDK's guards
(:mod:`appstack.sdk.guards`, the same generator every scaffolded operator's install uses)
for appstack's operator — :func:`guarded`, its description: its identity, every controller
of :data:`~appstack.controllers.registry.ALL` (their kinds, finalizers), the rules of its
ClusterRole (:func:`appstack.controllers.rbac.operator_rules`), its cluster-scoped names
ending in ``-<install namespace>`` — and what only appstack's kinds need, :data:`GUARDS`,
through the extension point a scaffolded project declares its own ``GUARDS`` with
(:class:`appstack.sdk.GuardExtensions`):

* its own Secrets policy (:mod:`.admission_secrets`, the guards' ``own`` policies): only
  ``Opaque`` Secrets of its kinds or kept for a stack member, a Secret's data changed only
  for a MongoDB user's, its labels and owners pinned — so the writes policy leaves Secrets'
  ownership to it (``owned_elsewhere``);
* an EtcdCluster's released member volume (its UID in the volume's annotation) may be
  owned again by that very cluster (``readopted``);
* EndpointSlices are named ``<service>-external`` for the Service they feed, carry our
  ``endpointslice.kubernetes.io/managed-by``, and never feed ``kubernetes``
  (``validations``).

:func:`policies`, all of them with their bindings in install order; :func:`enabler_role`,
the ClusterRole that may enable a namespace. ``admissionregistration.k8s.io/v1`` (GA since
Kubernetes 1.30). See docs/security.md.
"""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.api.namespaces import ENABLED
from appstack.controllers.etcdcluster.desired import CLUSTER_UID
from appstack.controllers.rbac import operator_rules
from appstack.controllers.registry import ALL
from appstack.controllers.util.meta import SLICE_MANAGER
from appstack.manifests.admission_secrets import secrets_policy
from appstack.manifests.rbac import NAMESPACE
from appstack.sdk import ENABLER_ROLE as ENABLER_PART
from appstack.sdk import (
    SLICE_MANAGER_LABEL,
    EnableAll,
    GuardedOperator,
    GuardExtensions,
    WriteExtensions,
    guard_policies,
)
from appstack.sdk import cel_labelled as labelled
from appstack.sdk import cel_ownerless as ownerless
from appstack.sdk import cel_refusal as refusal
from appstack.sdk import enabler_role as sdk_enabler_role

ETCD_CLUSTER = "appstack.dev/v1/EtcdCluster"
#: The enabler ClusterRole's name before the install's namespace.
ENABLER = f"{IDENTITY.project}-{ENABLER_PART}"


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


#: What appstack adds to the guards every SDK operator gets, declared as a scaffolded
#: project declares its ``GUARDS`` (:class:`appstack.sdk.GuardExtensions`): its Secrets
#: policy, which the writes policy leaves Secrets' ownership to; an EtcdCluster's released
#: member volume owned again by that very cluster; its EndpointSlices.
GUARDS = GuardExtensions(
    writes=WriteExtensions(
        owned_elsewhere=("Secret",),
        readopted=_reowned_volume(),
        validations=(
            refusal(
                slices_ok(),
                "the appstack operator may only write EndpointSlices of its own, named "
                "<service>-external for the Service they name, never for kubernetes",
            ),
        ),
    ),
    own=(secrets_policy,),
)


def guarded(
    namespace: str = NAMESPACE, *, enable_all: EnableAll = False, sharded: bool = False
) -> GuardedOperator:
    """appstack's operator installed in ``namespace`` (see above); ``sharded``: its token
    may change the shard labels of its kinds' objects, and nobody else may."""
    return GuardedOperator.of(
        IDENTITY,
        ALL,
        rules=operator_rules(sharded=sharded),
        suffix=f"-{namespace}",
        shown_suffix="-<install namespace>",
        enable_all=enable_all,
        sharded=sharded,
        writes=GUARDS.writes,
    )


def policies(
    namespace: str = NAMESPACE, *, enable_all: EnableAll = False, sharded: bool = False
) -> list[dict[str, Any]]:
    """Every policy with its binding, in install order: who may enable a namespace first,
    then the operator's writes (Secrets, children, its Lease, our kinds and Events), then
    tenants' objects of our kinds (``sharded``: and their shard labels)."""
    operator = guarded(namespace, enable_all=enable_all, sharded=sharded)
    return guard_policies(operator, own=GUARDS.policies(operator))


def enabler_role(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The ClusterRole a platform team is bound to, to enable namespaces for appstack."""
    return sdk_enabler_role(guarded(namespace))


def enabled_check() -> str:
    """CEL: the request's namespace is labelled as enabled (the chart's choice between it
    and every namespace)."""
    return labelled(ENABLED)
