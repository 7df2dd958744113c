"""The CronTab's status from its CronJob (pure, unit-tested).

``Ready`` is True once the CronJob exists (reason ``Scheduled``; ``SecondsRounded`` when a
six-field ``cronSpec`` asks for more than one run a minute, saying what runs instead;
``Suspended`` while runs are suspended); the active Jobs and the last schedule/success
times are copied from the CronJob's status.
"""

from __future__ import annotations

from typing import Any

from appstack.api.cron import cron_job_schedule
from appstack.controllers.util.conditions import Problem, condition, previous_conditions


def _scheduled(cron_spec: str, schedule: str) -> tuple[str, str, str]:
    """Ready for a CronJob that runs: what it runs on, and what was asked if different."""
    asked = cron_job_schedule(cron_spec)
    if asked.rounded:
        return ("True", "SecondsRounded", asked.rounded)
    message = f"runs on schedule {schedule!r}"
    if asked.second:
        message += f" (cronSpec {cron_spec!r}: a CronJob starts on the minute, not at second "
        message += f"{asked.second})"
    return ("True", "Scheduled", message)


def from_cron_job(
    tab: dict[str, Any], cron: dict[str, Any] | None, problem: Problem | None, now: str
) -> dict[str, Any]:
    observed = (cron or {}).get("status") or {}
    active = [ref["name"] for ref in observed.get("active") or []]
    if problem is not None:
        ready = ("False", problem.reason, problem.message)
    elif cron is None:
        ready = ("False", "CronJobMissing", "the CronJob has not been created yet")
    elif (tab.get("spec") or {}).get("suspend"):
        ready = ("True", "Suspended", "scheduled runs are suspended")
    else:
        ready = _scheduled(tab["spec"]["cronSpec"], cron["spec"]["schedule"])
    generation = tab["metadata"].get("generation")
    out: dict[str, Any] = {
        "active": len(active),
        "activeJobs": active,
        "observedGeneration": generation,
        "conditions": [
            condition(
                "Ready", *ready, generation=generation, previous=previous_conditions(tab), now=now
            )
        ],
    }
    for field in ("lastScheduleTime", "lastSuccessfulTime"):
        if observed.get(field):
            out[field] = observed[field]
    return out
