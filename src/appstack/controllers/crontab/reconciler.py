"""Reconcile one CronTab: make its CronJob match, then report status.

Like every controller: read from the cache, validate (a bad ``cronSpec`` is reason
``InvalidSchedule``), apply the CronJob through the child writer, report problems (a
schedule the API server rejects is also ``InvalidSchedule``) and write status. A
six-field schedule asking for more than one run a minute is ``Ready=True``, reason
``SecondsRounded``, with a Warning Event saying the same, once per new message. Deletion is
left to the garbage collector.

Its Jobs (made by the CronJob, labelled like every child) and their pods are watched too:
the newest run failing, or its pods unable to start, makes the CronTab ``Ready=False``,
``Degraded=True`` with the reason, and a Warning Event once per new reason (status.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import ValidationError

from appstack.api.crontab import CronTab, CronTabSpec, CronTabStatus
from appstack.controllers.crontab import desired, status
from appstack.controllers.util import podsecurity
from appstack.runtime import (
    CRON_JOB,
    JOB,
    POD,
    Cache,
    Client,
    EventRecorder,
    IndexFunc,
    Request,
    Resource,
    Result,
)
from appstack.sdk import (
    COMPONENT_LABEL,
    INSTANCE_LABEL,
    POD_INDEXERS,
    Condition,
    KindReconciler,
    KubeObject,
    Problem,
    instance_labels,
    label_indexers,
    labelled,
    last_condition,
    now_rfc3339,
    pod_mapper,
    pods_of,
)


def _job_mapper(job: dict[str, Any]) -> list[Request]:
    """A Job of one of our CronJobs wakes its CronTab (named by its instance label)."""
    labels = job["metadata"].get("labels") or {}
    if labels.get(COMPONENT_LABEL) != desired.COMPONENT or INSTANCE_LABEL not in labels:
        return []
    return [Request(job["metadata"].get("namespace"), labels[INSTANCE_LABEL])]


class CronTabReconciler(KindReconciler[CronTabSpec]):
    """CronTab → CronJob → status."""

    kind = CronTab.KIND
    owns = (CRON_JOB,)
    watches = (
        (JOB, _job_mapper),
        (POD, pod_mapper(INSTANCE_LABEL, **{COMPONENT_LABEL: desired.COMPONENT})),
    )
    indexers: ClassVar[dict[Resource, dict[str, IndexFunc]]] = {
        **POD_INDEXERS,
        **label_indexers(JOB),
    }

    def __init__(self, client: Client, cache: Cache, recorder: EventRecorder) -> None:
        super().__init__(client, cache, recorder)
        # (condition type, uid) -> the message last warned about: the cached status can lag
        # our own write by a reconcile, and that must not repeat the Event.
        self._warned: dict[tuple[str, str], str] = {}

    def invalid_reason(self, error: ValidationError) -> str:
        schedule = any(e["loc"] and e["loc"][0] == "cronSpec" for e in error.errors())
        return "InvalidSchedule" if schedule else "InvalidSpec"

    def invalid_status(self, obj: KubeObject, problem: Problem) -> CronTabStatus:
        return status.from_cron_job(obj, None, problem, now_rfc3339())

    async def apply(self, obj: KubeObject, spec: CronTabSpec) -> Result | None:
        level = await podsecurity.level(
            self.namespaces, obj["metadata"]["namespace"], spec.pod_security
        )
        synced, problems = await self.writer.sync_all(obj, desired.children(obj, spec, level))
        problem = problems[0] if problems else None
        if problem is not None:
            if "schedule" in problem.message.lower():
                problem = Problem("InvalidSchedule", problem.message)
            await self.writer.report(obj, problem)
        meta = obj["metadata"]
        selector = {**instance_labels(meta["name"]), COMPONENT_LABEL: desired.COMPONENT}
        observed = status.from_cron_job(
            obj,
            synced.one("CronJob"),
            problem,
            now_rfc3339(),
            jobs=labelled(self.cache, JOB, meta["namespace"], selector),
            pods=pods_of(self.cache, meta["namespace"], selector),
        )
        await self._warn_once(obj, observed, "Ready", lambda c: c.reason == "SecondsRounded")
        # a problem writing the CronJob was reported above; a failing run is told here
        await self._warn_once(
            obj, observed, "Degraded", lambda c: problem is None and c.status == "True"
        )
        await self.writer.write_status(obj, observed)
        return Result(requeue=True) if problem is not None else None

    async def _warn_once(
        self,
        obj: KubeObject,
        observed: CronTabStatus,
        type_: str,
        warn: Callable[[Condition], bool],
    ) -> None:
        """A Warning Event when condition ``type_`` newly says something ``warn`` picks."""
        (now,) = (c for c in observed.conditions or [] if c.type == type_)
        key = (type_, obj["metadata"]["uid"])
        if not warn(now):
            self._warned.pop(key, None)
            return
        before = last_condition(obj, type_)
        said = (before.get("reason"), before.get("message")) == (now.reason, now.message)
        if not said and self._warned.get(key) != now.message:
            await self.writer.event(obj, "Warning", now.reason, now.message)
        self._warned[key] = now.message
