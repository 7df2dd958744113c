"""appstack's children's labels (pure): the SDK's (:mod:`appstack.sdk.kit.meta`) with
appstack's identity (:data:`appstack.api.identity.IDENTITY`) — ``managed-by=appstack``
(:data:`MANAGED_BY`: the operator's caches hold only children with it,
:data:`CHILD_SELECTOR`) and, for EndpointSlices, the slice manager ``appstack.dev``. Used by
every controller's desired state, the admission policies and the CLI."""

from __future__ import annotations

from appstack.api.identity import IDENTITY
from appstack.sdk import child_labels as sdk_child_labels
from appstack.sdk import child_selector as sdk_child_selector
from appstack.sdk import selector_of

MANAGED_BY = IDENTITY.managed_by
CHILD_SELECTOR = selector_of(MANAGED_BY)
#: Our value of :data:`~appstack.sdk.kit.meta.SLICE_MANAGER_LABEL`.
SLICE_MANAGER = IDENTITY.domain


def child_selector(kind: str) -> str:
    """The label selector of the cache of a child kind
    (:func:`appstack.sdk.kit.meta.child_selector`)."""
    return sdk_child_selector(kind, IDENTITY)


def child_labels(name: str, component: str) -> dict[str, str]:
    """The labels of every child of owner ``name``: instance, managed-by and component."""
    return sdk_child_labels(name, component, MANAGED_BY)
