"""The CronTab controller: CronTab → CronJob (owned, server-side applied, drift-corrected),
with the last schedule/success times and active Jobs reported in status.

A schedule the API server or our validator rejects (e.g. minute 61) shows as
``Ready=False`` with reason ``InvalidSchedule`` and a Warning Event.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.crontab import CronTabSpec
from appstack.controllers.children import (
    CHILD_SELECTOR,
    ChildWriter,
    Problem,
    describe_validation,
    now_rfc3339,
)
from appstack.controllers.crontab import desired
from appstack.runtime.builder import Builder
from appstack.runtime.cache import Cache
from appstack.runtime.client import Client
from appstack.runtime.controller import Controller, Request, Result
from appstack.runtime.events import EventRecorder
from appstack.runtime.manager import Manager
from appstack.runtime.resources import CRON_JOB, Resource

CRON_TAB = Resource("appstack.dev", "v1", "CronTab", "crontabs")

RBAC_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["appstack.dev"], "resources": ["crontabs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["appstack.dev"], "resources": ["crontabs/status"], "verbs": ["patch"]},
    {
        "apiGroups": ["batch"],
        "resources": ["cronjobs"],
        "verbs": ["get", "list", "watch", "create", "patch"],
    },
]


class CronTabReconciler:
    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        self.cache = cache
        self.children = ChildWriter(client, cache, recorder, CRON_TAB)

    async def reconcile(self, request: Request) -> Result | None:
        tab = self.cache.get(CRON_TAB, request.key)
        if tab is None or tab["metadata"].get("deletionTimestamp"):
            return None
        try:
            spec = CronTabSpec.model_validate(tab.get("spec") or {})
        except ValidationError as error:
            schedule = any(e["loc"] and e["loc"][0] == "cronSpec" for e in error.errors())
            invalid = Problem(
                "InvalidSchedule" if schedule else "InvalidSpec", describe_validation(error)
            )
            await self.children.report(tab, invalid)
            await self.children.write_status(tab, desired.status(tab, None, invalid, now_rfc3339()))
            return None
        cron, problem = await self.children.sync(tab, CRON_JOB, desired.cron_job(tab, spec))
        if problem is not None:
            if "schedule" in problem.message.lower():
                problem = Problem("InvalidSchedule", problem.message)
            await self.children.report(tab, problem)
        await self.children.write_status(tab, desired.status(tab, cron, problem, now_rfc3339()))
        return Result(requeue=True) if problem is not None else None


def setup(manager: Manager, recorder: EventRecorder, *, concurrency: int = 2) -> Controller:
    manager.cache.set_label_selector(CRON_JOB, CHILD_SELECTOR)
    return (
        Builder(manager, "crontab")
        .for_(CRON_TAB)
        .owns(CRON_JOB)
        .with_concurrency(concurrency)
        .complete(CronTabReconciler(manager.client, manager.cache, recorder))
    )
