"""The namespace labels by which a platform team tells the operator where it may act (pure).

Namespaces are opted in, not out (issue #34): the operator reconciles our kinds, writes
their children, their status and Events only in a namespace labelled :data:`ENABLED`
``=true`` — elsewhere an object of ours gets ``Ready=False``, reason
:data:`NOT_ENABLED_REASON`, and nothing else — unless the installer enabled every namespace
(``appstack run --enable-all-namespaces``, the same flag of ``appstack manifests`` and the
chart's ``enableAllNamespaces``). The install's admission policies hold the operator's
token to the same rule, and a third policy lets only holders of
:data:`LABEL_GRANT` (and cluster administrators) set any of :data:`GUARDED` on a namespace,
so a tenant — or whoever may create namespaces — cannot opt a namespace in themselves.
Read by the operator (:mod:`appstack.sdk.kit.namespaces`) and the install
(its admission guards: :mod:`appstack.sdk.guards`, through :mod:`appstack.manifests.admission`).
The labels' names are the SDK's for an operator of appstack's domain
(:attr:`~appstack.sdk.identity.OperatorIdentity.opt_in_labels`).
"""

from __future__ import annotations

from appstack.api.identity import IDENTITY
from appstack.sdk import NOT_ENABLED_REASON, enabler_grant

__all__ = [
    "ALLOW_PRIVILEGED",
    "ENABLED",
    "GUARDED",
    "LABEL_GRANT",
    "MAY_WRITE",
    "NOT_ENABLED_REASON",
    "SYSTEM_NAMESPACES",
    "is_enabled",
    "not_enabled_message",
]

#: ``=true``: the operator acts in this namespace (its identity's enabled label).
ENABLED = IDENTITY.enabled_label
#: ``=true``: the operator may write privileged or host pods (beyond Pod Security baseline).
ALLOW_PRIVILEGED = IDENTITY.allow_privileged_label
#: ``=true``: the operator may write in a system namespace (``kube-*``), if also enabled.
MAY_WRITE = IDENTITY.may_write_label
#: The labels only a platform team may set.
GUARDED = IDENTITY.opt_in_labels
#: The permission (verb on a resource of our group that nothing else uses) that lets a
#: non-administrator set :data:`GUARDED` labels: the generated ClusterRole
#: ``appstack-namespace-enabler-<install namespace>`` grants it.
LABEL_GRANT = enabler_grant(IDENTITY.domain)
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")


def is_enabled(labels: dict[str, str] | None) -> bool:
    """Whether a namespace with ``labels`` is opted in."""
    return (labels or {}).get(ENABLED) == "true"


def not_enabled_message(namespace: str) -> str:
    """What the Ready condition says in a namespace that is not enabled."""
    return IDENTITY.not_enabled_message(namespace)
