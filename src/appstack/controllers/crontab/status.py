"""The CronTab's status from its CronJob (pure, unit-tested).

``Ready`` is True once the CronJob exists (reason ``Scheduled``, or ``Suspended`` while
runs are suspended); the active Jobs and the last schedule/success times are copied from
the CronJob's status.
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util.conditions import Problem, condition, previous_conditions


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
        ready = ("True", "Scheduled", f"runs on schedule {cron['spec']['schedule']!r}")
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
