"""Reconcile one CronTab: make its CronJob match, then report status.

Like every controller: read from the cache, validate (a bad ``cronSpec`` is reason
``InvalidSchedule``), apply the CronJob through the child writer, report problems (a
schedule the API server rejects is also ``InvalidSchedule``) and write status. A
six-field schedule asking for more than one run a minute is ``Ready=True``, reason
``SecondsRounded``, with a Warning Event saying the same, once per new message. Deletion is
left to the garbage collector.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.crontab import CronTab, CronTabSpec
from appstack.controllers.crontab import desired, status
from appstack.controllers.util.conditions import Problem, now_rfc3339, previous_conditions
from appstack.controllers.util.reconciler import KindReconciler
from appstack.runtime.controller import Result
from appstack.runtime.resources import CRON_JOB


class CronTabReconciler(KindReconciler[CronTabSpec]):
    """CronTab → CronJob → status."""

    kind = CronTab.KIND
    owns = (CRON_JOB,)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uid -> the rounding message last warned about: the cached status can lag our own
        # write by a reconcile, and that must not repeat the Event.
        self._warned: dict[str, str] = {}

    def invalid_reason(self, error: ValidationError) -> str:
        schedule = any(e["loc"] and e["loc"][0] == "cronSpec" for e in error.errors())
        return "InvalidSchedule" if schedule else "InvalidSpec"

    def invalid_status(self, obj: dict[str, Any], problem: Problem) -> dict[str, Any]:
        return status.from_cron_job(obj, None, problem, now_rfc3339())

    async def apply(self, obj: dict[str, Any], spec: CronTabSpec) -> Result | None:
        level = await self.pod_security.level(obj["metadata"]["namespace"], spec.pod_security)
        synced, problems = await self.writer.sync_all(obj, desired.children(obj, spec, level))
        problem = problems[0] if problems else None
        if problem is not None:
            if "schedule" in problem.message.lower():
                problem = Problem("InvalidSchedule", problem.message)
            await self.writer.report(obj, problem)
        observed = status.from_cron_job(obj, synced.get("CronJob"), problem, now_rfc3339())
        await self._warn_if_rounded(obj, observed)
        await self.writer.write_status(obj, observed)
        return Result(requeue=True) if problem is not None else None

    async def _warn_if_rounded(self, obj: dict[str, Any], observed: dict[str, Any]) -> None:
        """A Warning Event when Ready newly says the schedule was rounded to the minute."""
        (ready,) = (c for c in observed["conditions"] if c["type"] == "Ready")
        uid = obj["metadata"]["uid"]
        if ready["reason"] != "SecondsRounded":
            self._warned.pop(uid, None)
            return
        before = previous_conditions(obj).get("Ready") or {}
        said = (before.get("reason"), before.get("message")) == (ready["reason"], ready["message"])
        if not said and self._warned.get(uid) != ready["message"]:
            await self.writer.event(obj, "Warning", "SecondsRounded", ready["message"])
        self._warned[uid] = ready["message"]
