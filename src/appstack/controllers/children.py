"""Writing a custom resource's children, events and status, the same way in every controller.

:class:`ChildWriter` is the only way a reconciler changes the cluster: it applies a desired
child only when the cached one differs (an idle resync writes nothing), never takes over a
same-named object the owner does not control, creates create-once children (generated
credentials) without ever overwriting them, deletes children with a UID precondition,
records ``Created``/``Updated``/``Deleted``/``Pruned`` Events, turns rejections the user
must fix into a :class:`~appstack.controllers.util.conditions.Problem`, reports problems
(log + Warning Event) and writes status only when it changed. Used by every controller.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

import structlog

from appstack.controllers.util.conditions import Problem, previous_conditions
from appstack.controllers.util.meta import controlled_by
from appstack.controllers.util.quantity import same_quantity
from appstack.core.resource import Resource
from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder, EventType

log = structlog.get_logger("appstack.children")


def users_problem(error: errors.ApiError) -> bool:
    """Whether a rejected apply is the user's to fix (reported), not the server's (retried).

    The API server's refusals of the object itself (400, 403, 404 of a missing namespace
    aside, 405, 422) are the user's, and so is the HTTP 500 server-side apply answers when
    it cannot build the patch (duplicate list keys, a list item without its key); busy or
    failing servers (429, other 5xx) and authentication (401) are transient or ours.
    """
    if isinstance(error, errors.ServerError) and not isinstance(error, errors.ServerTimeout):
        return any(marker in error.message for marker in _SSA_MARKERS)
    return not error.retryable and not isinstance(
        error, (errors.Unauthorized, errors.NotFound, errors.Conflict, errors.Gone)
    )


# What server-side apply says (HTTP 500) when the applied object itself is malformed.
_SSA_MARKERS = ("failed to create typed patch object", "duplicate entries for key")


# Maps whose values are resource quantities (container resources, claim requests).
_QUANTITY_MAPS = frozenset({"limits", "requests"})


def is_subset(desired: Any, actual: Any, *, quantities: bool = False) -> bool:
    """True when every field we want is already so in ``actual`` (server defaults ignored;
    quantities compared as numbers, as the API server canonicalises them)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k], quantities=quantities or k in _QUANTITY_MAPS)
            for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(desired) == len(actual)
            and all(is_subset(d, a) for d, a in zip(desired, actual, strict=True))
        )
    if quantities:
        return same_quantity(desired, actual)
    return bool(desired == actual)


def _unowned_with_labels(current: dict[str, Any], meta: dict[str, Any]) -> bool:
    ours = not meta.get("ownerReferences") and not current["metadata"].get("ownerReferences")
    return ours and is_subset(meta.get("labels") or {}, current["metadata"].get("labels") or {})


class ChildWriter:
    """Writes the children (of the kinds in ``owns``), events and status of ``owner_kind``."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        recorder: EventRecorder,
        owner_kind: Resource,
        owns: Sequence[Resource] = (),
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.owner_kind = owner_kind
        self.owns = {resource.kind: resource for resource in owns}

    def _conflict(self, resource: Resource, name: str) -> Problem:
        return Problem(
            f"{resource.kind}Conflict",
            f"{resource.kind} {name} already exists and is not managed by this "
            f"{self.owner_kind.kind}",
        )

    async def sync(
        self,
        owner: dict[str, Any],
        resource: Resource,
        want: dict[str, Any],
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        """Make the child ``want`` so; returns the child as now known and any problem."""
        meta = want["metadata"]
        current = self.cache.get(resource, f"{meta['namespace']}/{meta['name']}")
        if current is None:
            # Not in our label-filtered cache: an object we do not manage may hold the name.
            try:
                current = await self.client.get(resource, meta["name"], meta["namespace"])
            except errors.NotFound:
                current = None
        if current is not None and not controlled_by(current, owner):
            return None, self._conflict(resource, meta["name"])
        if current is not None and is_subset(want, current):
            return current, None
        try:
            applied = await self.client.apply(resource, want)
        except errors.ApiError as error:
            if not users_problem(error):
                raise
            reason = (
                "NodePortConflict"
                if "already allocated" in error.message
                else (f"{resource.kind}Rejected")
            )
            return current, Problem(reason, f"{resource.kind} {meta['name']}: {error.message}")
        verb = "Created" if current is None else "Updated"
        log.info(f"{verb.lower()} {resource.kind}", child=meta["name"])
        await self.event(owner, "Normal", verb, f"{verb} {resource.kind} {meta['name']}")
        return applied, None

    async def sync_all(
        self, owner: dict[str, Any], children: Iterable[dict[str, Any]]
    ) -> tuple[dict[str, dict[str, Any] | None], list[Problem]]:
        """:meth:`sync` each child (of a kind in ``owns``): kind → child as now known."""
        synced: dict[str, dict[str, Any] | None] = {}
        problems: list[Problem] = []
        for child in children:
            current, problem = await self.sync(owner, self.owns[child["kind"]], child)
            if problem is not None:
                problems.append(problem)
            synced[child["kind"]] = current
        return synced, problems

    async def create_once(
        self, owner: dict[str, Any], resource: Resource, want: dict[str, Any], what: str
    ) -> Problem | None:
        """Create ``want`` if absent (read by name, not from the cache); never overwrite it.

        An existing one is ours when we control it, or when nobody does and it carries
        every label we would give it (``want`` without an owner: kept after its owner
        was deleted, adopted as it is by the owner's successor)."""
        meta = want["metadata"]
        try:
            current = await self.client.get(resource, meta["name"], meta["namespace"])
        except errors.NotFound:
            try:
                await self.client.create(resource, want)
            except errors.AlreadyExists:
                return None
            note = f"Created {resource.kind} {meta['name']} ({what})"
            await self.event(owner, "Normal", "Created", note)
            return None
        mine = controlled_by(current, owner) or _unowned_with_labels(current, meta)
        return None if mine else self._conflict(resource, meta["name"])

    async def delete_child(
        self, resource: Resource, child: dict[str, Any], *, propagation: str = "Background"
    ) -> None:
        """Delete ``child`` — this very object (UID precondition), not a namesake."""
        meta = child["metadata"]
        await self.client.delete(
            resource, meta["name"], meta["namespace"], propagation=propagation, uid=meta["uid"]
        )

    async def delete(self, owner: dict[str, Any], resource: Resource, why: str) -> None:
        """Delete the owner's child of kind ``resource`` (named like the owner) if we
        control it."""
        meta = owner["metadata"]
        current = self.cache.get(resource, f"{meta['namespace']}/{meta['name']}")
        if current is not None and controlled_by(current, owner):
            await self.delete_child(resource, current)
            note = f"Deleted {resource.kind} {meta['name']} ({why})"
            await self.event(owner, "Normal", "Deleted", note)

    async def prune(
        self, owner: dict[str, Any], resource: Resource, child: dict[str, Any], why: str
    ) -> None:
        """Delete a child that is no longer wanted, with a ``Pruned`` Event."""
        await self.delete_child(resource, child)
        note = f"Deleted {resource.kind} {child['metadata']['name']}: {why}"
        await self.event(owner, "Normal", "Pruned", note)

    async def event(
        self,
        owner: dict[str, Any],
        type_: EventType,
        reason: str,
        note: str,
        *,
        action: str = "Reconcile",
    ) -> None:
        await self.recorder.event(owner, type_, reason, note, action=action)

    async def report(self, owner: dict[str, Any], problem: Problem) -> None:
        log.warning("cannot reconcile", reason=problem.reason, problem=problem.message)
        await self.event(owner, "Warning", problem.reason, problem.message)

    async def report_new(self, owner: dict[str, Any], problem: Problem) -> None:
        """:meth:`report`, unless the owner's Ready condition already says so (pod states
        wake the owner often; one Warning Event per new reason or message)."""
        ready = previous_conditions(owner).get("Ready") or {}
        if (ready.get("reason"), ready.get("message")) != (problem.reason, problem.message):
            await self.report(owner, problem)

    async def write_status(self, owner: dict[str, Any], status: dict[str, Any]) -> None:
        """Merge-patch the status subresource, only if it changed."""
        if (owner.get("status") or {}) == status:
            return
        meta = owner["metadata"]
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile
            await self.client.patch_status(
                self.owner_kind, meta["name"], status, namespace=meta["namespace"]
            )
