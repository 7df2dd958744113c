"""Reconcile one AppService: make its Deployment and Service match, then report status.

Level-based: everything is read from the informer cache (the AppService, and its children
through a cache that holds only objects labelled ``app.kubernetes.io/managed-by=appstack``).
Children are written through :class:`~appstack.controllers.children.ChildWriter`: applied
only when the cached one differs, never taking over a same-named object we do not control.

Problems the user must fix (a nodePort already taken, a child name in use, a rejected
child) become ``Ready=False``/``Degraded=True`` with the reason and a Warning Event, and the
key is retried with backoff; other AppServices are unaffected. Deletion is left to the
garbage collector (children carry a controller ownerReference).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import desired
from appstack.controllers.appservice.status import compute
from appstack.controllers.children import ChildWriter, Problem, describe_validation
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.resources import DEPLOYMENT, SERVICE, Resource

APP_SERVICE = Resource("appstack.dev", "v1", "AppService", "appservices")


class AppServiceReconciler:
    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        self.cache = cache
        self.children = ChildWriter(client, cache, recorder, APP_SERVICE)

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
            await self.children.report(app, invalid)
            size = int((app.get("spec") or {}).get("size") or 0)
            await self.children.write_status(
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

        deployment, problem = await self.children.sync(
            app, DEPLOYMENT, desired.deployment(app, spec)
        )
        wanted_service = desired.service(app, spec)
        service: dict[str, Any] | None = None
        if wanted_service is not None:
            service, service_problem = await self.children.sync(app, SERVICE, wanted_service)
            problem = problem or service_problem
        else:
            await self.children.delete(app, SERVICE, "no ports")
        if problem is not None:
            await self.children.report(app, problem)
        status = compute(
            app,
            size=spec.size,
            deployment=deployment,
            service_expected=wanted_service is not None,
            service=service,
            problem=problem,
            selector=selector,
        )
        await self.children.write_status(app, status)
        return Result(requeue=True) if problem is not None else None
