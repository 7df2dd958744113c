"""The start of every reconcile, written once: :class:`KindReconciler`.

Read the object from the cache (gone: nothing to do) → deletion (left to the garbage
collector through ownerReferences, or, for a kind with a finalizer, the controller's
:meth:`~KindReconciler.cleanup` under :func:`appstack.runtime.finalizer.finalize`) →
validate the spec with the kind's model (fields it does not know — a CRD newer than the
operator — ignored with a Warning Event, :mod:`.tolerant`; and the kind's name rules that
have no CEL) → on an
invalid spec, report the problem (log +
Warning Event) and write a status that says so, and wait for the spec to change → else
:meth:`~KindReconciler.apply`. Every controller's ``reconciler`` module subclasses it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ValidationError

from appstack.runtime import errors
from appstack.runtime import finalizer as finalizers
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.sdk.identity import NOT_ENABLED_REASON
from appstack.sdk.kind import CustomKind
from appstack.sdk.kit.children import ChildWriter
from appstack.sdk.kit.conditions import (
    Problem,
    describe_validation,
    now_rfc3339,
    only_ready_false,
)
from appstack.sdk.kit.declared import Declared
from appstack.sdk.kit.kubeobject import KubeObject, as_object
from appstack.sdk.kit.namespaces import NamespaceGate
from appstack.sdk.kit.timers import run_timers, timer_state
from appstack.sdk.kit.tolerant import validate_tolerant
from appstack.sdk.model import KubeModel

SpecT = TypeVar("SpecT", bound=BaseModel)


class KindReconciler(Declared, ABC, Generic[SpecT]):
    """Reconciles one custom kind (``kind``), with what it declares
    (:class:`~appstack.sdk.kit.declared.Declared`: ``owns``, ``watches`` — e.g. pods
    labelled as ours, waking the owner their mapper names —, ``references`` — a user's
    ConfigMap or Secret its spec names, waking the objects whose ``REFERENCES`` index names
    them —, ``finalizer``, ``filter``, ``timers``...; what the cache keeps of each kind is
    the operator's one table: :mod:`.caching`)."""

    kind: ClassVar[CustomKind]

    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        """A kind's own options are keyword arguments of its subclass; an option no
        reconciler takes is a TypeError at start-up, never silently dropped."""
        self.client = client
        self.cache = cache
        self.resource = self.kind.resource
        self.writer = ChildWriter(client, cache, recorder, self.resource, self.owns)
        # Where it may act, and each namespace's labels (kit/namespaces.py): the operator's
        # shared gate replaces this one at setup (registration.py); alone, everywhere.
        self.namespaces = NamespaceGate(client, cache, enable_all=True, watch=False)
        #: What the Ready condition says where the namespace is not enabled (setup sets it
        #: from the operator's identity).
        self.not_enabled_message: Callable[[str], str] = lambda namespace: (
            f"namespace {namespace} is not enabled for this operator"
        )
        self._told_unknown: set[tuple[str, int]] = set()
        self._timers = timer_state(self, self.timers)

    async def reconcile(self, request: Request) -> Result | None:
        """The runtime's entry point: :meth:`_reconcile`, then the object's due
        :attr:`timers` (:mod:`.timers`)."""
        result = await self._reconcile(request)
        return await run_timers(self, self._timers, request, result)

    async def _reconcile(self, request: Request) -> Result | None:
        """The runtime's entry point: the cached object of ``request``, validated, then
        :meth:`apply` (or :meth:`cleanup` while it is being deleted); a spec that does not validate
        gets ``Ready=False`` with the field named."""
        cached = self.cache.get(self.resource, request.key)
        if cached is None:
            return None
        # Our last status write, if the cache has not caught up with it yet.
        raw = self.writer.writes.get(self.resource, request.key) or cached
        obj = as_object(raw)
        namespace = obj["metadata"].get("namespace")
        if namespace and not await self.namespaces.enabled(namespace):
            return await self._not_enabled(obj, namespace)
        if raw is cached and self.cache.is_cut(self.resource, request.key):
            # kept cut down while its namespace was not enabled (caching.py), not read
            # again in full yet: read it now
            try:
                raw = await self.client.get(self.resource, request.name, namespace)
            except errors.NotFound:
                return None
            obj = as_object(raw)
        if self.finalizer is None:
            if obj["metadata"].get("deletionTimestamp"):
                return None  # going: the garbage collector removes the children
            return await self._validated(obj)
        return await finalizers.finalize(
            self.client,
            self.resource,
            raw,
            self.finalizer,
            apply=lambda raw: self._validated(as_object(raw)),
            cleanup=lambda raw: self.cleanup(as_object(raw)),
        )

    async def _not_enabled(self, obj: KubeObject, namespace: str) -> Result | None:
        """Outside the enabled namespaces: say so in status and do nothing else — no child,
        no Event (the admission policies refuse them there too). An object going away is
        let go (our finalizer removed, nothing torn down: the garbage collector removes
        what it owns)."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            if self.finalizer is not None:
                await finalizers.remove(self.client, self.resource, dict(obj), self.finalizer)
            return None
        await self.writer.write_status(obj, self.not_enabled_status(obj, namespace))
        after = self.namespaces.requeue_after
        return Result(requeue_after=after) if after is not None else None

    def not_enabled_status(self, obj: KubeObject, namespace: str) -> KubeModel:
        """The status of an object in a namespace the operator does not act in: the kind's
        :meth:`invalid_status` for ``NamespaceNotEnabled``, its conditions only one —
        ``Ready=False`` with the reason and :attr:`not_enabled_message` (the install's
        admission policy admits no other condition beside it there)."""
        problem = Problem(NOT_ENABLED_REASON, self.not_enabled_message(namespace))
        status = self.invalid_status(obj, problem)
        if "conditions" not in type(status).model_fields:
            return status
        conditions = only_ready_false(obj, problem, now_rfc3339())
        return status.model_copy(update={"conditions": conditions})

    async def _validated(self, obj: KubeObject) -> Result | None:
        try:
            model, ignored = validate_tolerant(self.kind.spec, obj.get("spec") or {})
        except ValidationError as error:
            problem = Problem(self.invalid_reason(error), describe_validation(error))
            await self._invalid(obj, problem)
            return None
        spec = cast(SpecT, model)
        if ignored:
            await self._unknown_fields(obj, ignored)
        name = str(obj["metadata"]["name"])
        for rule in self.kind.model.NAME_RULES:
            if rule.check is not None and not rule.check(name, spec):  # CEL: at admission
                await self._invalid(obj, Problem("InvalidSpec", rule.message))
                return None
        return await self.apply(obj, spec)

    async def _unknown_fields(self, obj: KubeObject, ignored: list[str]) -> None:
        """Say once per generation which fields this operator ignored (a CRD newer than it)."""
        meta = obj["metadata"]
        seen = (meta.get("uid", ""), meta.get("generation", 0))
        if seen in self._told_unknown:
            return
        self._told_unknown.add(seen)
        fields = ", ".join(f"spec{path}" for path in ignored)
        note = f"{fields} not known to this operator (the CRD is newer): ignored"
        await self.writer.event(obj, "Warning", "UnknownFields", note)

    async def _invalid(self, obj: KubeObject, problem: Problem) -> None:
        await self.writer.report(obj, problem)
        await self.writer.write_status(obj, self.invalid_status(obj, problem))
        # nothing to retry until the spec changes

    def invalid_reason(self, error: ValidationError) -> str:
        """The condition reason of an invalid spec."""
        return "InvalidSpec"

    @abstractmethod
    def invalid_status(self, obj: KubeObject, problem: Problem) -> KubeModel:
        """The status (the kind's status model) of an object whose spec is invalid."""

    @abstractmethod
    async def apply(self, obj: KubeObject, spec: SpecT) -> Result | None:
        """Make the children match a valid spec and write status."""

    async def cleanup(self, obj: KubeObject) -> Result | None:
        """Deletion work while ``finalizer`` holds the object; None when done."""
        return None
