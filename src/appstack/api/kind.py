"""appstack's API group and how its kinds are declared: :func:`custom_kind` is the SDK's
(:func:`appstack.sdk.kind.custom_kind`) with appstack's group (:data:`GROUP`, its
identity's domain) and category (``kubectl get appstack-all``). :func:`group_key` names labels,
annotations and finalizers under the group. Pure, no I/O; used by every kind of
:mod:`appstack.api`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from appstack.api.identity import IDENTITY
from appstack.sdk import DEFAULT_VERSION as VERSION
from appstack.sdk import ModelT
from appstack.sdk import custom_kind as sdk_custom_kind

GROUP = IDENTITY.domain
# Every kind's category (``kubectl get appstack-all``); not ``appstack``, which is
# AppStack's singular name: a category of that name made ``kubectl get appstack NAME`` fail.
CATEGORY = "appstack-all"


def group_key(name: str) -> str:
    """A label, annotation or finalizer name under our group: ``<GROUP>/<name>``."""
    return f"{GROUP}/{name}"


def custom_kind(
    *,
    plural: str,
    short_names: tuple[str, ...] = (),
    printer_columns: tuple[Mapping[str, Any], ...] = (),
    subresources: Mapping[str, Any] | None = None,
    namespaced: bool = True,
) -> Callable[[ModelT], ModelT]:
    """Declare one of appstack's kinds: :data:`GROUP`, version ``v1``, category
    :data:`CATEGORY` (see :func:`appstack.sdk.kind.custom_kind`)."""
    return sdk_custom_kind(
        group=GROUP,
        version=VERSION,
        plural=plural,
        short_names=short_names,
        printer_columns=printer_columns,
        subresources=subresources,
        namespaced=namespaced,
        categories=(CATEGORY,),
    )
