"""Reconcile one AppService: make its Deployment and Service match, then report status.

Level-based: everything is read from the informer cache (the AppService, and its children
through a cache that holds only objects labelled ``app.kubernetes.io/managed-by=appstack``).
A child is written (server-side apply, field manager ``appstack``, forced on our fields)
only when the cached one differs from what we want, so an idle resync issues no writes.
A same-named object we do not control is never touched: that is reported as a problem.

Problems the user must fix (a nodePort already taken, a child name in use, a rejected
child) become ``Ready=False``/``Degraded=True`` with the reason and a Warning Event, and the
key is retried with backoff; other AppServices are unaffected. Deletion is left to the
garbage collector (children carry a controller ownerReference).
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog
from pydantic import ValidationError

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import desired
from appstack.controllers.appservice.status import Problem, compute
from appstack.runtime import errors
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import DEPLOYMENT, SERVICE, Resource

log = structlog.get_logger("appstack.appservice")

APP_SERVICE = Resource("appstack.dev", "v1", "AppService", "appservices")
CHILD_SELECTOR = "app.kubernetes.io/managed-by=appstack"


def controlled_by(obj: dict[str, Any], app: dict[str, Any]) -> bool:
    uid = app["metadata"]["uid"]
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def describe_validation(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        path = ".".join(str(p) for p in item["loc"])
        parts.append(f"spec.{path}: {item['msg']}")
    return "; ".join(parts)


class AppServiceReconciler:
    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder

    async def reconcile(self, request: Request) -> Result | None:
        app = self.cache.get(APP_SERVICE, request.key)
        if app is None or app["metadata"].get("deletionTimestamp"):
            return None  # gone or going: the garbage collector removes the children
        name = request.name
        selector = ",".join(f"{k}={v}" for k, v in sorted(desired.selector_labels(name).items()))
        try:
            spec = AppServiceSpec.model_validate(app.get("spec") or {})
        except ValidationError as error:
            invalid = Problem("InvalidSpec", describe_validation(error))
            await self._report(app, invalid)
            size = int((app.get("spec") or {}).get("size") or 0)
            await self._write_status(
                app,
                compute(
                    app,
                    size=size,
                    deployment=None,
                    service_expected=False,
                    service=None,
                    problem=invalid,
                    selector=selector,
                ),
            )
            return None  # nothing to retry until the spec changes

        deployment, problem = await self._sync(app, DEPLOYMENT, desired.deployment(app, spec))
        wanted_service = desired.service(app, spec)
        service = None
        if wanted_service is not None:
            service, service_problem = await self._sync(app, SERVICE, wanted_service)
            problem = problem or service_problem
        else:
            await self._delete_owned(app, SERVICE)
        if problem is not None:
            await self._report(app, problem)
        status = compute(
            app,
            size=spec.size,
            deployment=deployment,
            service_expected=wanted_service is not None,
            service=service,
            problem=problem,
            selector=selector,
        )
        await self._write_status(app, status)
        return Result(requeue=True) if problem is not None else None

    async def _sync(
        self, app: dict[str, Any], res: Resource, want: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, Problem | None]:
        meta = app["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        current = self.cache.get(res, key)
        if current is None:
            # Not in our label-filtered cache: an object we do not manage may hold the name.
            try:
                current = await self.client.get(res, meta["name"], meta["namespace"])
            except errors.NotFound:
                current = None
        if current is not None and not controlled_by(current, app):
            return None, Problem(
                f"{res.kind}Conflict",
                f"{res.kind} {meta['name']} already exists and is not managed by this AppService",
            )
        if current is not None and desired.is_subset(want, current):
            return current, None
        try:
            applied = await self.client.apply(res, want)
        except (errors.Invalid, errors.Forbidden, errors.BadRequest) as error:
            reason = (
                "NodePortConflict"
                if "already allocated" in error.message
                else f"{res.kind}Rejected"
            )
            return current, Problem(reason, f"{res.kind} {meta['name']}: {error.message}")
        verb = "Created" if current is None else "Updated"
        log.info(f"{verb.lower()} {res.kind}", child=meta["name"])
        await self.recorder.event(app, "Normal", verb, f"{verb} {res.kind} {meta['name']}")
        return applied, None

    async def _delete_owned(self, app: dict[str, Any], res: Resource) -> None:
        meta = app["metadata"]
        current = self.cache.get(res, f"{meta['namespace']}/{meta['name']}")
        if current is not None and controlled_by(current, app):
            await self.client.delete(
                res, meta["name"], meta["namespace"], uid=current["metadata"]["uid"]
            )
            await self.recorder.event(
                app, "Normal", "Deleted", f"Deleted {res.kind} {meta['name']} (no ports)"
            )

    async def _report(self, app: dict[str, Any], problem: Problem) -> None:
        log.warning("cannot reconcile", reason=problem.reason, problem=problem.message)
        await self.recorder.event(app, "Warning", problem.reason, problem.message)

    async def _write_status(self, app: dict[str, Any], status: dict[str, Any]) -> None:
        if (app.get("status") or {}) == status:
            return
        meta = app["metadata"]
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile
            await self.client.patch_status(
                APP_SERVICE, meta["name"], status, namespace=meta["namespace"]
            )
