"""Deleting an AppStack: its children go in *reverse* dependency order, one wave at a time.

The consumers first, the middleware they use last. A wave's children are deleted with
``Foreground`` propagation (UID precondition, through the child writer): a Deployment or
StatefulSet stays, marked for deletion, until the garbage collector has deleted its
ReplicaSets and pods — so the next wave starts only once the consumers' *pods* are gone,
not merely their API objects. An invalid spec has no order: everything goes at once.

A child that does not go (a foreign finalizer on it or on one of its pods) must not make
the stack spin: the wave is looked at again after a delay that grows with how long the
oldest child has been terminating (a quarter of it, from :data:`WAVE_POLL` up to
:data:`MAX_POLL` — exponential in the number of looks), and after :data:`BLOCKED_AFTER`
the stack shows ``Ready=False``, reason ``DeletionBlocked``, naming the object and its
finalizers, with a Warning Event. Runs under the AppStack's finalizer
(:func:`appstack.runtime.finalizer.finalize` removes it when this returns None).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from appstack.api.appstack import AppStackSpec
from appstack.api.graph import teardown_order
from appstack.controllers.appstack import status
from appstack.controllers.appstack.labels import member_label
from appstack.core.resource import Resource
from appstack.runtime import Cache, Result, controller_key
from appstack.sdk import ChildWriter, KubeObject

FINALIZER_NAME = "teardown"
WAVE_POLL = 0.5  # seconds between the first looks while a wave is being deleted
MAX_POLL = 60.0  # ... growing to at most this while something does not go
BLOCKED_AFTER = 15.0  # seconds terminating before the stack names the blocking object

Child = tuple[Resource, dict[str, Any]]


def owned(cache: Cache, kinds: Sequence[Resource], stack: KubeObject) -> list[Child]:
    """Every cached child the stack controls, with its kind."""
    uid = stack["metadata"]["uid"]
    return [
        (resource, obj)
        for resource in kinds
        for obj in cache.by_index(
            resource, "controller-uid", controller_key(stack["metadata"]["namespace"], uid)
        )
    ]


def waves(stack: KubeObject) -> list[list[str]]:
    try:
        spec = AppStackSpec.model_validate(stack.get("spec") or {})
        return teardown_order({c.name: c.dependencies() for c in spec.components})
    except (ValidationError, ValueError):
        return []


def terminating_for(obj: dict[str, Any], now: datetime.datetime) -> float:
    """Seconds since ``obj`` was marked for deletion (0 if it is not)."""
    stamp = obj["metadata"].get("deletionTimestamp")
    if not stamp:
        return 0.0
    return max(0.0, (now - datetime.datetime.fromisoformat(stamp)).total_seconds())


def poll_after(waited: float) -> float:
    """A quarter of the time waited so far, within [:data:`WAVE_POLL`, :data:`MAX_POLL`]."""
    return min(MAX_POLL, max(WAVE_POLL, waited / 4))


def describe(resource: Resource, obj: dict[str, Any]) -> str:
    finalizers = ", ".join(obj["metadata"].get("finalizers") or []) or "none"
    return f"{resource.kind} {obj['metadata']['name']} (finalizers: {finalizers})"


async def teardown(
    writer: ChildWriter, cache: Cache, kinds: Sequence[Resource], stack: KubeObject
) -> Result | None:
    """Delete the next wave; None once nothing is left."""
    children = owned(cache, kinds, stack)
    for wave in [*waves(stack), None]:
        batch = [(r, obj) for r, obj in children if wave is None or member_label(obj) in wave]
        if batch:
            return await _wave(writer, stack, batch)
    return None


async def _wave(writer: ChildWriter, stack: KubeObject, batch: list[Child]) -> Result:
    members = ", ".join(sorted({member_label(obj) for _, obj in batch}))
    fresh = [(r, obj) for r, obj in batch if not obj["metadata"].get("deletionTimestamp")]
    for resource, obj in fresh:
        await writer.delete_child(resource, obj, propagation="Foreground")
    if fresh:
        await writer.event(stack, "Normal", "TearingDown", f"deleting {members}", action="Delete")
    now = datetime.datetime.now(datetime.timezone.utc)
    waited, (resource, oldest) = max(
        ((terminating_for(obj, now), (r, obj)) for r, obj in batch), key=lambda w: w[0]
    )
    reason, message = "TearingDown", f"deleting {members}"
    if waited >= BLOCKED_AFTER:
        reason = "DeletionBlocked"
        # No durations in the message: a status that changes on every look would wake
        # the stack again at once (its own watch) — the very spin this avoids.
        message = f"{describe(resource, oldest)} is marked for deletion but does not go"
        await writer.event(stack, "Warning", reason, message, action="Delete")
    await writer.write_status(stack, status.deleting(stack, reason, message))
    return Result(requeue_after=poll_after(waited))
