"""Writing a custom resource's children, events and status, the same way in every controller.

:class:`ChildWriter` is the only way a reconciler changes the cluster: it applies a desired
child only when the cached one differs — a wanted field not so, or one our last apply set
that is no longer wanted (an idle resync writes nothing) — never takes over a
same-named object the owner does not control, creates create-once children (generated
credentials) without ever overwriting them, deletes children with a UID precondition,
records ``Created``/``Updated``/``Deleted``/``Pruned`` Events, turns rejections the user
must fix into a :class:`~appstack.sdk.kit.conditions.Problem`, reports problems
(log + Warning Event) and writes status only when it changed. In a sharded operator every
child it writes carries its root's shard labels (:func:`~.parts.wire`), and one it finds by
name without them is given them (:meth:`ChildWriter.claim`): the shard's caches of the child
kinds hold only its own roots' children (docs/sharding.md). Used by every controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import structlog

from appstack.core.resource import Resource, object_key
from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder, EventType
from appstack.runtime.sharding import shard_child_labels
from appstack.sdk.kit.compare import (
    already_so,
    create_only,
    node_port_taken,
    owners_to_write,
    status_gist,
    status_patch,
    unowned_with_labels,
    users_problem,
)
from appstack.sdk.kit.conditions import Problem, last_condition
from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.kit.meta import controlled_by
from appstack.sdk.kit.parts import Manifest, wire
from appstack.sdk.kit.written import RecentWrites
from appstack.sdk.model import KubeModel

log = structlog.get_logger(__name__)

#: Seconds between two status writes of one owner while its rollout moves...
STATUS_INTERVAL = 1.0
#: ...and when only its counts and messages changed (not a condition or observedGeneration):
#: seldom, as each write is a request (and an event for every watcher) while a wave of
#: rollouts is what makes them slow; the Deployment itself shows its progress meanwhile.
PROGRESS_INTERVAL = 60.0


#: Children of one owner written at once by :meth:`ChildWriter.sync_all`.
SYNC_CONCURRENCY = 4

# What syncing one child gave: the child as now known, a problem, "Created"/"Updated".
_Synced = tuple[dict[str, Any] | None, Problem | None, str | None]


class Synced(dict[tuple[str, str], dict[str, Any] | None]):
    """The children one :meth:`ChildWriter.sync_all` wrote, by (kind, name), as now known
    (None: not written, e.g. a name someone else holds)."""

    def wrote(self, kind: str) -> bool:
        """Whether a child of ``kind`` was among those written."""
        return any(key[0] == kind for key in self)

    def one(self, kind: str) -> dict[str, Any] | None:
        """The only child of ``kind`` (None if there is none); several are an error — name
        the one you mean (``synced[kind, name]``) instead of getting one at random."""
        keys = [key for key in self if key[0] == kind]
        if len(keys) > 1:
            names = ", ".join(name for _, name in keys)
            raise LookupError(f"{len(keys)} children of kind {kind} ({names}): name one")
        return self[keys[0]] if keys else None


def _unclaimed(child: dict[str, Any]) -> dict[str, str]:
    """The labels of a sharded reconcile's root (:func:`appstack.runtime.shard_child_labels`)
    that ``child`` lacks: what :meth:`ChildWriter.claim` adds."""
    labels = (child.get("metadata") or {}).get("labels") or {}
    return {k: v for k, v in shard_child_labels().items() if labels.get(k) != v}


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
        self.writes = RecentWrites(cache)
        self._changed_at: dict[str, float] = {}  # owner key → last status write/child change
        self._swept_at_size = 0
        for resource in (owner_kind, *owns):
            self.writes.follow(resource)

    def conflict(self, resource: Resource, name: str) -> Problem:
        """``<Kind>Conflict``: ``name`` exists and is not controlled by an owner of ours (never
        taken over; a controller that creates children itself says the same)."""
        return Problem(
            f"{resource.kind}Conflict",
            f"{resource.kind} {name} already exists and is not managed by this "
            f"{self.owner_kind.kind}",
        )

    async def sync(
        self,
        owner: KubeObject,
        resource: Resource,
        want: Manifest,
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        """Make the child ``want`` so; returns the child as now known and any problem."""
        current, problem, verb = await self._sync(owner, resource, want)
        if verb is not None:
            await self.event(
                owner, "Normal", verb, f"{verb} {resource.kind} {want['metadata']['name']}"
            )
        return current, problem

    async def _sync(self, owner: KubeObject, resource: Resource, want: Manifest) -> _Synced:
        """:meth:`sync` without the Event: also returns ``Created``/``Updated`` or None."""
        meta = want["metadata"]
        current = self.writes.get(resource, f"{meta['namespace']}/{meta['name']}")
        if current is None:
            # Not in our label-filtered cache: create it, but only if the name is free (an
            # object we do not manage may hold it: then it is read, below, not taken over).
            try:
                created, problem = await self._apply(resource, create_only(wire(want)))
            except errors.Conflict:
                with contextlib.suppress(errors.NotFound):  # deleted meanwhile: apply
                    current = await self.client.get(resource, meta["name"], meta["namespace"])
            else:
                return created, problem, "Created" if problem is None else None
        if current is not None and not controlled_by(current, owner):
            return None, self.conflict(resource, meta["name"]), None
        if current is not None and already_so(wire(want), current, self.client.field_manager):
            return current, None, None
        applied, problem = await self._apply(resource, wire(want))
        if problem is not None:
            return current, problem, None
        return applied, None, "Created" if current is None else "Updated"

    async def _apply(
        self, resource: Resource, want: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        """Server-side apply ``want``; a rejection the user must fix becomes a problem."""
        name = want["metadata"]["name"]
        try:
            key = object_key(want)
            applied = await self.writes.track(resource, key, self.client.apply(resource, want))
        except errors.ApiError as error:
            if not users_problem(error):
                raise
            reason = "NodePortConflict" if node_port_taken(error) else f"{resource.kind}Rejected"
            return None, Problem(reason, f"{resource.kind} {name}: {error.message}")
        log.debug("applied", kind=resource.kind, child=name)
        return applied, None

    async def sync_all(
        self, owner: KubeObject, children: Iterable[Manifest]
    ) -> tuple[Synced, list[Problem]]:
        """:meth:`sync` each child (of a kind in ``owns``): (kind, name) → child as now known.

        The children are written concurrently (at most :data:`SYNC_CONCURRENCY` at once:
        server-side apply needs no order among them, and a reconcile that creates a
        Deployment and a Service then waits one round trip, not two). One Event tells what
        this call changed (``Created Deployment a, Service a``): ``Created`` when it only
        created children, else ``Updated``."""
        wanted = list(children)
        limit = asyncio.Semaphore(SYNC_CONCURRENCY)

        async def one(child: Manifest) -> _Synced:
            async with limit:
                return await self._sync(owner, self.owns[child["kind"]], child)

        outcomes = await asyncio.gather(*(one(c) for c in wanted), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):  # the first failure, once all are done
                raise outcome
        synced = Synced()
        problems: list[Problem] = []
        changed: list[tuple[str, str]] = []
        for child, outcome in zip(wanted, outcomes, strict=True):
            assert not isinstance(outcome, BaseException)  # noqa: S101 (raised above)
            current, problem, verb = outcome
            if problem is not None:
                problems.append(problem)
            if verb is not None:
                changed.append((verb, f"{child['kind']} {child['metadata']['name']}"))
            synced[child["kind"], child["metadata"]["name"]] = current
        if changed:
            self._mark_changed(object_key(owner), time.monotonic())
            await self._record(owner, changed)
        return synced, problems

    async def _record(self, owner: KubeObject, changed: list[tuple[str, str]]) -> None:
        """One Event for what one reconcile changed: ``Created Deployment a, Service a``, or
        ``Updated Deployment a`` when it repaired drift. Applying the user's own spec change
        (``generation`` not yet observed) is logged only: the status's
        ``observedGeneration`` tells it, and an update then costs one request less."""
        created = all(verb == "Created" for verb, _ in changed)
        reason = "Created" if created else "Updated"
        what = ", ".join(w if created else f"{v} {w}" for v, w in changed)
        note = f"Created {what}" if created else what
        log.info(f"{reason.lower()} children", owner=owner["metadata"]["name"], note=note)
        observed = (owner.get("status") or {}).get("observedGeneration")
        if created or observed == owner["metadata"].get("generation"):
            await self.event(owner, "Normal", reason, note)

    async def create_once(
        self, owner: KubeObject, resource: Resource, want: Manifest, what: str
    ) -> Problem | None:
        """Create ``want`` if absent (read by name, not from the cache); never overwrite its
        content (its owner is made what ``want`` says: see :meth:`ensure_once`)."""
        _, problem = await self.ensure_once(owner, resource, want, what)
        return problem

    async def ensure_once(
        self, owner: KubeObject, resource: Resource, want: Manifest, what: str
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        """:meth:`create_once`, with the object as it now is (created, or found and its
        owner set; None with the problem when it is not ours).

        An existing one is ours when we control it, or when nobody does and it carries
        every label we would give it (``want`` without an owner: kept after its owner
        was deleted, adopted as it is by the owner's successor)."""
        meta = want["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        try:
            current = await self.client.get(resource, name, namespace)
        except errors.NotFound:
            try:
                created = await self.client.create(resource, wire(want))
            except errors.AlreadyExists:  # another writer was first: judged as found
                current = await self.client.get(resource, name, namespace)
            else:
                note = f"Created {resource.kind} {name} ({what})"
                await self.event(owner, "Normal", "Created", note)
                return dict(created), None
        mine = controlled_by(current, owner) or unowned_with_labels(current, meta)
        if not mine:
            return None, self.conflict(resource, name)
        # Owned or not as ``want`` says now (e.g. a stack's credentials when its volumes'
        # ``retainOnDelete`` flips), never anything else of it.
        owners = owners_to_write(current, meta, owner["metadata"]["uid"])
        if owners is None:
            return await self.claim(resource, dict(current)), None
        kept = current["metadata"]["resourceVersion"]
        changed: dict[str, Any] = {"ownerReferences": owners or None, "resourceVersion": kept}
        labels = _unclaimed(current)  # and its shard's labels, in the same write
        if labels:
            changed["labels"] = labels
        current = await self.client.patch(
            resource, name, {"metadata": changed}, namespace=namespace
        )
        said = "owned by" if owners else "kept apart from"
        note = f"{resource.kind} {name} ({what}) now {said} {owner['kind']}"
        await self.event(owner, "Normal", "Updated", note)
        return dict(current), None

    async def claim(self, resource: Resource, child: dict[str, Any]) -> dict[str, Any]:
        """``child`` (ours, found by name) labelled to this shard if a sharded operator's
        reconcile asks it (:func:`appstack.runtime.shard_child_labels`) and it is not yet
        — else the shard would never see it in its cache; as it is otherwise."""
        missing = _unclaimed(child)
        if not missing:
            return child
        meta = child["metadata"]
        patch = {"metadata": {"labels": missing}}
        patched = await self.client.patch(
            resource, meta["name"], patch, namespace=meta.get("namespace")
        )
        return dict(patched)

    async def delete_child(
        self, resource: Resource, child: dict[str, Any], *, propagation: str = "Background"
    ) -> None:
        """Delete ``child`` — this very object (UID precondition), not a namesake."""
        meta = child["metadata"]
        await self.client.delete(
            resource, meta["name"], meta["namespace"], propagation=propagation, uid=meta["uid"]
        )

    async def delete(self, owner: KubeObject, resource: Resource, why: str) -> None:
        """Delete the owner's child of kind ``resource`` (named like the owner) if we
        control it."""
        meta = owner["metadata"]
        current = self.cache.get(resource, f"{meta['namespace']}/{meta['name']}")
        if current is not None and controlled_by(current, owner):
            await self.delete_child(resource, current)
            note = f"Deleted {resource.kind} {meta['name']} ({why})"
            await self.event(owner, "Normal", "Deleted", note)

    async def prune(
        self, owner: KubeObject, resource: Resource, child: dict[str, Any], why: str
    ) -> None:
        """Delete a child that is no longer wanted, with a ``Pruned`` Event."""
        await self.delete_child(resource, child)
        note = f"Deleted {resource.kind} {child['metadata']['name']}: {why}"
        await self.event(owner, "Normal", "Pruned", note)

    async def event(
        self,
        owner: KubeObject,
        type_: EventType,
        reason: str,
        note: str,
        *,
        action: str = "Reconcile",
    ) -> None:
        """Record an Event about ``owner``; it is sent in the background (never waited for)."""
        self.recorder.record(owner, type_, reason, note, action=action)

    async def report(self, owner: KubeObject, problem: Problem) -> None:
        """Log ``problem`` and record it as a Warning Event about ``owner`` (its reason, its
        message)."""
        log.warning("cannot reconcile", reason=problem.reason, problem=problem.message)
        await self.event(owner, "Warning", problem.reason, problem.message)

    async def report_new(self, owner: KubeObject, problem: Problem) -> None:
        """:meth:`report`, unless the owner's Ready condition already says so (pod states
        wake the owner often; one Warning Event per new reason or message)."""
        ready = last_condition(owner, "Ready")
        if (ready.get("reason"), ready.get("message")) != (problem.reason, problem.message):
            await self.report(owner, problem)

    async def write_status(
        self, owner: KubeObject, typed: KubeModel, *, rolling: bool = False
    ) -> float | None:
        """Merge-patch the status subresource with ``typed`` (the kind's status model, as
        :func:`~.compare.status_patch`), only if it changed.

        While ``rolling`` (a rollout moves and nothing is wrong), one owner's status is
        written at most once per :data:`STATUS_INTERVAL` — :data:`PROGRESS_INTERVAL` when
        only replica counts moved — counted from its last status write or child change: a
        write due sooner is put off and the seconds to wait are returned
        — the caller looks again then and writes the status as it is by then, so the steps
        of a rollout cost one patch, and the final state is never lost."""
        status = status_patch(owner.get("status") or {}, typed)
        if (owner.get("status") or {}) == status:
            return None
        meta = owner["metadata"]
        key = object_key(owner)
        now = time.monotonic()
        if rolling:
            interval = (
                PROGRESS_INTERVAL
                if status_gist(owner.get("status") or {}) == status_gist(status)
                else STATUS_INTERVAL
            )
            wait = self._changed_at.get(key, -interval) + interval - now
            if wait > 0:
                return wait
        self._changed_at.pop(key, None)
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile
            patch = self.client.patch_status(
                self.owner_kind, meta["name"], status, namespace=meta["namespace"]
            )
            await self.writes.track(self.owner_kind, key, patch)
            if rolling:
                self._mark_changed(key, now)
        return None

    def _mark_changed(self, key: str, now: float) -> None:
        """Note when ``key``'s status was written or a child of it changed. An entry older
        than :data:`PROGRESS_INTERVAL` puts nothing off: those are swept whenever the map
        has doubled since the last sweep, so owners deleted meanwhile are not kept for good."""
        self._changed_at[key] = now
        if len(self._changed_at) > 2 * self._swept_at_size:
            stale = [k for k, at in self._changed_at.items() if now - at >= PROGRESS_INTERVAL]
            for k in stale:
                del self._changed_at[k]
            self._swept_at_size = max(len(self._changed_at), 64)
