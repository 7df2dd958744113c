"""Deleting an AppStack: its children go in *reverse* dependency order, one wave at a time.

The consumers first, the middleware they use last; a wave's children are deleted (UID
precondition, through the child writer) and the stack is looked at again shortly, until
nothing it controls is left — also when some children were already gone. An invalid spec
has no order: everything goes at once. Runs under the AppStack's finalizer
(:func:`appstack.runtime.finalizer.finalize` removes it when this returns None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from appstack.api.appstack import AppStackSpec
from appstack.api.graph import teardown_order
from appstack.controllers.appstack.labels import member_label
from appstack.controllers.children import ChildWriter
from appstack.core.resource import Resource
from appstack.runtime.cache import Cache
from appstack.runtime.controller import Result

FINALIZER_NAME = "teardown"
WAVE_POLL = 0.5  # seconds between looks while a wave is being deleted


def owned(
    cache: Cache, kinds: Sequence[Resource], stack: dict[str, Any]
) -> list[tuple[Resource, dict[str, Any]]]:
    """Every cached child the stack controls, with its kind."""
    uid = stack["metadata"]["uid"]
    return [
        (resource, obj)
        for resource in kinds
        for obj in cache.by_index(resource, "controller-uid", uid)
    ]


def waves(stack: dict[str, Any]) -> list[list[str]]:
    try:
        spec = AppStackSpec.model_validate(stack.get("spec") or {})
        return teardown_order({c.name: c.dependencies() for c in spec.components})
    except (ValidationError, ValueError):
        return []


async def teardown(
    writer: ChildWriter, cache: Cache, kinds: Sequence[Resource], stack: dict[str, Any]
) -> Result | None:
    """Delete the next wave; None once nothing is left."""
    children = owned(cache, kinds, stack)
    for wave in [*waves(stack), None]:
        batch = [
            (resource, obj)
            for resource, obj in children
            if wave is None or member_label(obj) in wave
        ]
        if not batch:
            continue
        for resource, obj in batch:
            if not obj["metadata"].get("deletionTimestamp"):
                await writer.delete_child(resource, obj)
        members = sorted({member_label(obj) for _, obj in batch})
        note = f"deleting {', '.join(members)}"
        await writer.event(stack, "Normal", "TearingDown", note, action="Delete")
        return Result(requeue_after=WAVE_POLL)  # wait for this wave to be gone
    return None
