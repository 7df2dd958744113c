"""What a reconciler declares and the SDK wires, caches and grants RBAC for — one set of
class attributes for a reconciler of the project's own kinds
(:class:`~appstack.sdk.kit.reconciler.KindReconciler`) and of any kind
(:class:`~appstack.sdk.kit.objects.ObjectReconciler`), read by
:class:`~appstack.sdk.kit.registration.Registration`, :mod:`.caching` and the RBAC and
guards generators.
"""

from __future__ import annotations

from typing import ClassVar

from appstack.core.resource import Resource
from appstack.runtime.builder import Mapper
from appstack.runtime.filters import Filter
from appstack.runtime.store import IndexFunc
from appstack.sdk.kit.timers import Timer


class Declared:
    """``owns``: the kinds of its children (their controller ownerReference names the
    object); ``watches``: other kinds whose events a mapper (a function, or a method of the
    reconciler) turns into requests; ``references``: kinds its objects' specs name objects
    of (:mod:`.references`); ``finalizer``: holds deletion until ``cleanup`` is done;
    ``filter``: which of its objects' events wake it (:mod:`appstack.runtime.filters`;
    None: all); ``timers``: methods called for each object every so many seconds
    (:mod:`.timers`); ``status_changes``: whether an update of only an object's status
    (its own write) wakes it; ``selectors``: per owned or watched kind, a narrower label
    selector of its cache than every child of the operator's; ``indexers``: per kind, the
    indexes (name → function) its reads use, registered on the cache once at setup."""

    owns: ClassVar[tuple[Resource, ...]] = ()
    watches: ClassVar[tuple[tuple[Resource, Mapper], ...]] = ()
    references: ClassVar[tuple[Resource, ...]] = ()
    finalizer: ClassVar[str | None] = None
    filter: ClassVar[Filter | None] = None
    timers: ClassVar[tuple[Timer, ...]] = ()
    status_changes: ClassVar[bool] = True
    selectors: ClassVar[dict[Resource, str]] = {}
    indexers: ClassVar[dict[Resource, dict[str, IndexFunc]]] = {}
