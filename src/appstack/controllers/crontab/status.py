"""The CronTab's status from its CronJob, its Jobs and their pods (pure, unit-tested).

``Ready`` is True once the CronJob exists (reason ``Scheduled``; ``SecondsRounded`` when a
six-field ``cronSpec`` asks for more than one run a minute, saying what runs instead;
``Suspended`` while runs are suspended) — unless the newest run went wrong: a Job that
failed (the Job's own reason, e.g. ``BackoffLimitExceeded``, ``DeadlineExceeded``) or whose
pods cannot start (``ErrImagePull``, ``CrashLoopBackOff``, ... from
:func:`~appstack.sdk.kit.pods.pod_problem`) makes ``Ready=False`` and
``Degraded=True`` with that reason, until a newer run succeeds. The active Jobs, the last
schedule/success times, the newest run and how it went (``lastRun``, ``lastRunResult``) are
reported too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from appstack.api.cron import cron_job_schedule
from appstack.api.crontab import CronTabStatus
from appstack.sdk import KubeObject, Problem, Truth, condition, pod_problem, previous_conditions

#: A condition as (status, reason, message).
Said = tuple[Truth, str, str]


def _scheduled(cron_spec: str, schedule: str) -> Said:
    """Ready for a CronJob that runs: what it runs on, and what was asked if different."""
    asked = cron_job_schedule(cron_spec)
    if asked.rounded:
        return ("True", "SecondsRounded", asked.rounded)
    message = f"runs on schedule {schedule!r}"
    if asked.second:
        message += f" (cronSpec {cron_spec!r}: a CronJob starts on the minute, not at second "
        message += f"{asked.second})"
    return ("True", "Scheduled", message)


def _condition_of(job: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = (job.get("status") or {}).get("conditions") or []
    return next(
        (c for c in conditions if c.get("type") == type_ and c.get("status") == "True"), None
    )


def newest(jobs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The newest Job (by creation time, then name: CronJob Jobs carry the scheduled time)."""
    return max(
        jobs,
        key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"]),
        default=None,
    )


def run_result(job: Mapping[str, Any]) -> Literal["Running", "Succeeded", "Failed"]:
    """``Succeeded``, ``Failed`` or ``Running``."""
    if _condition_of(job, "Complete") is not None:
        return "Succeeded"
    if _condition_of(job, "Failed") is not None:
        return "Failed"
    return "Running"


def run_problem(
    job: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], now: float | None = None
) -> Problem | None:
    """What went wrong with the newest run ``job`` (its pods: ``pods``), if anything."""
    if job is None:
        return None
    name = job["metadata"]["name"]
    failed = _condition_of(job, "Failed")
    if failed is not None:
        reason = failed.get("reason") or "JobFailed"
        detail = failed.get("message") or "the Job failed"
        return Problem(str(reason), f"run {name} failed: {detail}")
    if run_result(job) == "Running":
        mine = [p for p in pods if (p["metadata"].get("labels") or {}).get("job-name") == name]
        problem = pod_problem(mine, now)
        if problem is not None:
            return Problem(problem.reason, f"run {name}: {problem.message}")
    return None


def from_cron_job(
    tab: KubeObject,
    cron: dict[str, Any] | None,
    problem: Problem | None,
    now: str,
    *,
    jobs: Iterable[Mapping[str, Any]] = (),
    pods: Iterable[Mapping[str, Any]] = (),
) -> CronTabStatus:
    observed = (cron or {}).get("status") or {}
    active = [ref["name"] for ref in observed.get("active") or []]
    last = newest(jobs)
    failing = run_problem(last, pods)
    ready: Said
    if problem is not None:
        ready = ("False", problem.reason, problem.message)
    elif cron is None:
        ready = ("False", "CronJobMissing", "the CronJob has not been created yet")
    elif failing is not None:
        ready = ("False", failing.reason, failing.message)
    elif (tab.get("spec") or {}).get("suspend"):
        ready = ("True", "Suspended", "scheduled runs are suspended")
    else:
        ready = _scheduled(tab["spec"]["cronSpec"], cron["spec"]["schedule"])
    wrong = problem or failing
    degraded: Said = (
        ("True", wrong.reason, wrong.message)
        if wrong is not None
        else ("False", "AsExpected", "no problems")
    )
    generation = tab["metadata"].get("generation")
    previous = previous_conditions(tab)
    out = CronTabStatus(
        active=len(active),
        active_jobs=active,
        observed_generation=generation,
        conditions=[
            condition(type_, *value, generation=generation, previous=previous, now=now)
            for type_, value in (("Ready", ready), ("Degraded", degraded))
        ],
    )
    # what is not known now is left out (the merge patch keeps what was written)
    if observed.get("lastScheduleTime"):
        out.last_schedule_time = observed["lastScheduleTime"]
    if observed.get("lastSuccessfulTime"):
        out.last_successful_time = observed["lastSuccessfulTime"]
    if last is not None:
        out.last_run = last["metadata"]["name"]
        out.last_run_result = run_result(last)
    return out
