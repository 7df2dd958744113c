"""An operator's admission guards: the ValidatingAdmissionPolicies (and their bindings)
that bound what its own ServiceAccount token may write, whatever its RBAC says, generated
from what describes the operator (:class:`GuardedOperator`: its identity, its kinds, its
RBAC rules, its finalizers). One generator for every operator built on the SDK: a
scaffolded project's install (:mod:`appstack.sdk.config`, ``config/admission/``) and
appstack's own (:mod:`appstack.manifests.admission`, which adds its Secrets policy and its
own write rules through :class:`GuardExtensions`, as a scaffolded project's ``GUARDS``
does). Pure; ``admissionregistration.k8s.io/v1`` (GA since Kubernetes 1.30).

:func:`policies`, in install order:

* ``<project>-namespace-labels`` (:mod:`.namespaces`) — only cluster administrators and
  holders of the generated enabler ClusterRole (:func:`enabler_role`) set the opt-in labels
  ``<domain>/enabled``, ``/allow-privileged-pods``, ``/operator-may-write``;
* the operator's own policies, if it has any (appstack: its Secrets);
* ``<name>-writes`` (:mod:`.writes`) — every write of the token: enabled namespaces only,
  ``kube-*`` refused unless labelled, owned by its kinds before and after, no
  service-account-token Secret, pods at the Pod Security baseline, no pod naming its node,
  Services without ``externalIPs``/``loadBalancerIP``, no foreign finalizer, nothing made
  immutable;
* ``<name>-lease-duration`` — its Lease held 1 to 300 s at most;
* ``<name>-kinds``, ``<name>-events`` (:mod:`.kinds`) — its kinds: only finalizers and
  status; Events only in enabled namespaces, about its kinds, in their namespace;
* ``<project>-baseline`` — a tenant's objects of its kinds at the Pod Security baseline
  (where their schemas ask for a ``securityContext`` or pod annotations);
* ``<project>-shard-labels`` (installed sharded only, :attr:`GuardedOperator.sharded`) —
  nobody but the operator sets or changes the shard labels of its kinds' objects; its own
  ``<name>-kinds`` then lets it change those two labels.

A policy with nothing to bound (no kind, nothing written) is left out. Who the operator is:
:mod:`.subject`.
"""

from __future__ import annotations

from collections.abc import Iterable

from appstack.sdk.guards.kinds import (
    baseline_policy,
    events_policy,
    kinds_policy,
    shard_labels_policy,
)
from appstack.sdk.guards.namespaces import enabler_role, namespaces_policy
from appstack.sdk.guards.subject import (
    EnableAll,
    GuardedOperator,
    GuardExtensions,
    Obj,
    WriteExtensions,
)
from appstack.sdk.guards.writes import lease_policy, writes_policy

__all__ = [
    "EnableAll",
    "GuardExtensions",
    "GuardedOperator",
    "WriteExtensions",
    "enabler_role",
    "policies",
]


def policies(operator: GuardedOperator, *, own: Iterable[Obj] = ()) -> list[Obj]:
    """Every guard of ``operator`` with its binding, in install order (see above); ``own``,
    the operator's own policies, after who may enable a namespace and before its writes."""
    every = (
        namespaces_policy(operator),
        *own,
        writes_policy(operator),
        lease_policy(operator),
        kinds_policy(operator),
        events_policy(operator),
        baseline_policy(operator),
        shard_labels_policy(operator),
    )
    result: list[Obj] = []
    for each in every:
        if each is not None:
            result += [each, operator.binding(each)]
    return result
