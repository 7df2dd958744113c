"""CronTab → the CronJob we want, and the CronTab's status from it (pure, unit-tested)."""

from __future__ import annotations

from typing import Any

from appstack.api.crontab import CronTabSpec
from appstack.controllers.children import (
    MANAGED_BY,
    Problem,
    condition,
    owner_reference,
    previous_conditions,
)


def labels(name: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": name,
        **MANAGED_BY,
        "app.kubernetes.io/component": "crontab",
    }


def cron_job(tab: dict[str, Any], spec: CronTabSpec) -> dict[str, Any]:
    meta = tab["metadata"]
    container: dict[str, Any] = {"name": "job", "image": spec.image}
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    cron_spec: dict[str, Any] = {
        "schedule": spec.cron_spec,
        "suspend": spec.suspend,
        "concurrencyPolicy": spec.concurrency_policy,
        "successfulJobsHistoryLimit": spec.successful_jobs_history_limit,
        "failedJobsHistoryLimit": spec.failed_jobs_history_limit,
        "jobTemplate": {
            "metadata": {"labels": labels(meta["name"])},
            "spec": {
                "parallelism": spec.replicas,
                "completions": spec.replicas,
                "template": {
                    "metadata": {"labels": labels(meta["name"])},
                    "spec": {"restartPolicy": "OnFailure", "containers": [container]},
                },
            },
        },
    }
    if spec.time_zone:
        cron_spec["timeZone"] = spec.time_zone
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels(meta["name"]),
            "ownerReferences": [owner_reference(tab)],
        },
        "spec": cron_spec,
    }


def status(
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
