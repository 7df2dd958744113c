"""Writing a custom resource's children and status, the same way in every controller.

:class:`ChildWriter` applies a desired child only when the cached one differs (an idle
resync writes nothing), never takes over a same-named object the owner does not control,
records ``Created``/``Updated`` Events, and turns rejections the user must fix into a
:class:`Problem`. It also reports problems (log + Warning Event) and writes status only
when it changed. Used by the AppService and CronTab reconcilers.
"""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import Resource

log = structlog.get_logger("appstack.children")

MANAGED_BY = {"app.kubernetes.io/managed-by": "appstack"}
CHILD_SELECTOR = "app.kubernetes.io/managed-by=appstack"


def field_path(loc: tuple[Any, ...]) -> str:
    """A Pydantic error location as a field path: ``ports[0].port``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def error_message(item: Any) -> str:
    return str(item["msg"]).removeprefix("Value error, ")


def describe_validation(error: ValidationError) -> str:
    """Pydantic errors as ``spec.<field>: <message>``, for status and events."""
    parts = []
    for item in error.errors():
        path = field_path(item["loc"])
        parts.append(f"spec{'.' + path if path else ''}: {error_message(item)}")
    return "; ".join(parts)


def condition(
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int | None,
    previous: dict[str, dict[str, Any]],
    now: str,
) -> dict[str, Any]:
    """A condition per the API conventions: ``lastTransitionTime`` moves only when the
    status flips (``previous`` maps type -> the condition as last written)."""
    old = previous.get(type_)
    since = now
    if old is not None and old.get("status") == status:
        since = old.get("lastTransitionTime", now)
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


def previous_conditions(owner: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (owner.get("status") or {}).get("conditions") or []}


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Problem:
    """Something the user must fix; reported as Ready=False and a Warning Event."""

    reason: str
    message: str


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = owner["metadata"]["uid"]
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def is_subset(desired: Any, actual: Any) -> bool:
    """True when every field we want is already so in ``actual`` (server defaults ignored)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k]) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(desired) == len(actual)
            and all(is_subset(d, a) for d, a in zip(desired, actual, strict=True))
        )
    return bool(desired == actual)


class ChildWriter:
    def __init__(
        self, client: Client, cache: Cache, recorder: EventRecorder, owner_kind: Resource
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.owner_kind = owner_kind

    async def sync(
        self,
        owner: dict[str, Any],
        res: Resource,
        want: dict[str, Any],
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        """Make the child ``want`` so; returns the child as now known and any problem."""
        meta = want["metadata"]
        current = self.cache.get(res, f"{meta['namespace']}/{meta['name']}")
        if current is None:
            # Not in our label-filtered cache: an object we do not manage may hold the name.
            try:
                current = await self.client.get(res, meta["name"], meta["namespace"])
            except errors.NotFound:
                current = None
        if current is not None and not controlled_by(current, owner):
            return None, Problem(
                f"{res.kind}Conflict",
                f"{res.kind} {meta['name']} already exists and is not managed by this "
                f"{self.owner_kind.kind}",
            )
        if current is not None and is_subset(want, current):
            return current, None
        try:
            applied = await self.client.apply(res, want)
        except (errors.Invalid, errors.Forbidden, errors.BadRequest) as error:
            reason = (
                "NodePortConflict"
                if "already allocated" in error.message
                else (f"{res.kind}Rejected")
            )
            return current, Problem(reason, f"{res.kind} {meta['name']}: {error.message}")
        verb = "Created" if current is None else "Updated"
        log.info(f"{verb.lower()} {res.kind}", child=meta["name"])
        await self.recorder.event(owner, "Normal", verb, f"{verb} {res.kind} {meta['name']}")
        return applied, None

    async def delete(self, owner: dict[str, Any], res: Resource, why: str) -> None:
        """Delete the owner's child of kind ``res`` (named like the owner) if we control it."""
        meta = owner["metadata"]
        current = self.cache.get(res, f"{meta['namespace']}/{meta['name']}")
        if current is not None and controlled_by(current, owner):
            await self.client.delete(
                res, meta["name"], meta["namespace"], uid=current["metadata"]["uid"]
            )
            await self.recorder.event(
                owner, "Normal", "Deleted", f"Deleted {res.kind} {meta['name']} ({why})"
            )

    async def report(self, owner: dict[str, Any], problem: Problem) -> None:
        log.warning("cannot reconcile", reason=problem.reason, problem=problem.message)
        await self.recorder.event(owner, "Warning", problem.reason, problem.message)

    async def write_status(self, owner: dict[str, Any], status: dict[str, Any]) -> None:
        """Merge-patch the status subresource, only if it changed."""
        if (owner.get("status") or {}) == status:
            return
        meta = owner["metadata"]
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile
            await self.client.patch_status(
                self.owner_kind, meta["name"], status, namespace=meta["namespace"]
            )
