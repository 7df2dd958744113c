"""Any kind as the primary: :class:`ObjectReconciler` reconciles objects the project does
not declare — built-in kinds (core/v1 Secrets, ConfigMaps, Pods, Services; apps/v1 ...) or
a CRD someone else installs (cert-manager's ``Certificate``) — as controller-runtime's
``For(&corev1.Secret{})`` and kopf's ``@kopf.on.event("secrets")``.

Where :class:`~appstack.sdk.kit.reconciler.KindReconciler` validates a spec against the
project's model and writes a status, an object reconciler gets the object as the API
server has it and does what it is for in :meth:`ObjectReconciler.apply`: its declaration
(``primary``, ``owns``, ``watches``, ``writes``, ``finalizer``) is what the SDK wires, caches
and grants RBAC for (:func:`object_rules`), exactly as for a project's own kinds. The
primary's objects can be chosen by the API server (``selector``: a label selector of the
cache — the others are never sent nor kept) and by ``filter``
(:mod:`appstack.runtime.filters`: which events wake it).

A finalizer makes deletion wait for :meth:`ObjectReconciler.cleanup`: also when an object
leaves the ``selector`` (its label removed) — the reconciler then reads it, cleans up and
lets it go, so nothing is left behind and no object is held by a finalizer nobody removes.
Objects in namespaces the operator is not enabled in are left alone. Used by a project's
controllers (registered like any other: :class:`~appstack.sdk.kit.registration.Registration`)
and by the SDK's assembly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime import finalizer as finalizers
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import Obj
from appstack.sdk.kit.children import ChildWriter
from appstack.sdk.kit.declared import Declared
from appstack.sdk.kit.namespaces import NamespaceGate
from appstack.sdk.kit.timers import run_timers, timer_state
from appstack.sdk.rbac import CHILD_VERBS, READ_VERBS, Rule, merged, rule


class ObjectReconciler(Declared, ABC):
    """Reconciles objects of ``primary`` — any kind the API server serves — with what it
    declares, as a :class:`~appstack.sdk.kit.reconciler.KindReconciler` does
    (:class:`~appstack.sdk.kit.declared.Declared`: ``owns``, ``watches``, ``finalizer``,
    ``filter``, ``timers``...; ``references`` stays empty: the project's kinds declare
    them), and: ``writes`` (kinds it writes that it does not own: copies in other
    namespaces, objects it labels) and ``selector`` (the primary's label selector, applied
    by the API server)."""

    primary: ClassVar[Resource]
    writes: ClassVar[tuple[Resource, ...]] = ()
    selector: ClassVar[str | None] = None

    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        """Options of its own are keyword arguments of its subclass; an option no reconciler
        takes is a TypeError at start-up."""
        self.client = client
        self.cache = cache
        self.resource = self.primary
        #: Writes children (server-side apply, pruning) and Events about the primary.
        self.writer = ChildWriter(client, cache, recorder, self.primary, self.owns)
        #: Where it may act (setup replaces it with the operator's shared gate).
        self.namespaces = NamespaceGate(client, cache, enable_all=True, watch=False)
        self._timers = timer_state(self, self.timers)

    async def reconcile(self, request: Request) -> Result | None:
        """The runtime's entry point: the cached object (or, with a finalizer, the object
        as the API server has it when it left the cache's selection), then :meth:`apply`,
        or :meth:`cleanup` while it is being deleted or since it left the selection; then
        the object's due :attr:`timers`."""
        result = await self._reconcile(request)
        return await run_timers(self, self._timers, request, result)

    async def _reconcile(self, request: Request) -> Result | None:
        raw = self.cache.get(self.primary, request.key)
        if raw is None:
            return await self._let_go(request)
        namespace = raw["metadata"].get("namespace")
        if namespace and not await self.namespaces.enabled(namespace):
            if self.finalizer is not None and finalizers.has(raw, self.finalizer):
                await finalizers.remove(self.client, self.primary, raw, self.finalizer)
            return None
        if self.finalizer is None:
            if raw["metadata"].get("deletionTimestamp"):
                return None
            return await self.apply(raw)
        return await finalizers.finalize(
            self.client, self.primary, raw, self.finalizer, apply=self.apply, cleanup=self.cleanup
        )

    async def _let_go(self, request: Request) -> Result | None:
        """Not in the cache: gone — or still there, out of the ``selector``, holding our
        finalizer: then clean up and remove it."""
        if self.finalizer is None:
            return None
        try:
            raw = await self.client.get(self.primary, request.name, request.namespace)
        except errors.NotFound:
            return None
        if not finalizers.has(raw, self.finalizer):
            return None
        result = await self.cleanup(raw)
        if result is None:
            await finalizers.remove(self.client, self.primary, raw, self.finalizer)
        return result

    @abstractmethod
    async def apply(self, obj: Obj) -> Result | None:
        """Do what the controller is for, for ``obj`` as it now is (idempotent: called
        again on every change, every resync and after every failure)."""

    async def cleanup(self, obj: Obj) -> Result | None:
        """With a ``finalizer``: undo what :meth:`apply` did (``obj`` is being deleted, or
        left the ``selector``); None when done — the finalizer is then removed."""
        return None


def object_rules(reconciler: type[ObjectReconciler]) -> list[Rule]:
    """An object reconciler's RBAC rules from its declaration: read and watch its
    ``primary`` (and patch it, for a ``finalizer``; update its ``finalizers`` subresource,
    which a child's ``blockOwnerDeletion`` needs, when it ``owns`` anything); the child
    verbs on what it ``owns`` and ``writes``; read on what it ``watches``."""
    primary = reconciler.primary
    verbs = (*READ_VERBS, "patch") if reconciler.finalizer else READ_VERBS
    rules = [rule(primary, *verbs)]
    if reconciler.owns:
        rules.append(rule(primary, "update", subresource="finalizers"))
    rules += [rule(resource, *CHILD_VERBS) for resource in (*reconciler.owns, *reconciler.writes)]
    rules += [rule(resource, *READ_VERBS) for resource, _ in reconciler.watches]
    return merged(rules)
