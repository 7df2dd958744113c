"""appstack's children's labels (pure): the SDK's (:mod:`appstack.sdk.kit.meta`) with
appstack's identity (:data:`appstack.api.identity.IDENTITY`) — ``managed-by=appstack``
(:data:`MANAGED_BY`: the operator's caches hold only children with it,
:data:`CHILD_SELECTOR`) and, for EndpointSlices, the slice manager ``appstack.dev``. Used by
every controller's desired state, the admission policies and the CLI."""

from __future__ import annotations

from appstack.api.identity import IDENTITY
from appstack.sdk.kit import meta

MANAGED_BY = IDENTITY.managed_by
CHILD_SELECTOR = meta.selector_of(MANAGED_BY)
#: Our value of :data:`~appstack.sdk.kit.meta.SLICE_MANAGER_LABEL`.
SLICE_MANAGER = IDENTITY.domain


def child_selector(kind: str) -> str:
    """The label selector of the cache of a child kind
    (:func:`appstack.sdk.kit.meta.child_selector`)."""
    return meta.child_selector(kind, IDENTITY)


def child_labels(name: str, component: str) -> dict[str, str]:
    """The labels of every child of owner ``name``: instance, managed-by and component."""
    return meta.child_labels(name, component, MANAGED_BY)
