"""CronTab → the CronJob we want (pure, unit-tested).

:func:`children` is what the reconciler applies and what ``appstack render`` prints. A
six-field ``cronSpec`` becomes its five minute-and-coarser fields
(:func:`appstack.api.cron.cron_job_schedule`).
"""

from __future__ import annotations

from typing import Any

from appstack.api.cron import cron_job_schedule
from appstack.api.crontab import CronTabSpec
from appstack.api.security import PodSecurityLevel
from appstack.controllers.util.meta import child_labels
from appstack.controllers.util.workloads import container, security_context
from appstack.sdk import KubeObject, Manifest, child_metadata, user_env

COMPONENT = "crontab"


def labels(name: str) -> dict[str, str]:
    return child_labels(name, COMPONENT)


def cron_job(tab: KubeObject, spec: CronTabSpec, level: PodSecurityLevel = "baseline") -> Manifest:
    meta = tab["metadata"]
    job = container(
        "job",
        spec.image,
        env=user_env(spec.env or []),
        env_from=spec.env_from,
        resources=spec.resources,
        command=spec.command,
        args=spec.args,
        security=security_context(spec.security_context, level=spec.pod_security or level),
    )
    pod_spec: dict[str, Any] = {"restartPolicy": "OnFailure", "containers": [job]}
    if spec.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [s.to_dict() for s in spec.image_pull_secrets]
    if spec.service_account_name:
        pod_spec["serviceAccountName"] = spec.service_account_name
    job_spec: dict[str, Any] = {
        "parallelism": spec.replicas,
        "completions": spec.replicas,
        "backoffLimit": spec.backoff_limit,
        "template": {
            "metadata": {"labels": labels(meta["name"])},
            "spec": pod_spec,
        },
    }
    if spec.active_deadline_seconds is not None:
        job_spec["activeDeadlineSeconds"] = spec.active_deadline_seconds
    if spec.ttl_seconds_after_finished is not None:
        job_spec["ttlSecondsAfterFinished"] = spec.ttl_seconds_after_finished
    cron_spec: dict[str, Any] = {
        "schedule": cron_job_schedule(spec.cron_spec).schedule,
        "suspend": spec.suspend,
        "concurrencyPolicy": spec.concurrency_policy,
        "successfulJobsHistoryLimit": spec.successful_jobs_history_limit,
        "failedJobsHistoryLimit": spec.failed_jobs_history_limit,
        "jobTemplate": {"metadata": {"labels": labels(meta["name"])}, "spec": job_spec},
    }
    if spec.starting_deadline_seconds is not None:
        cron_spec["startingDeadlineSeconds"] = spec.starting_deadline_seconds
    if spec.time_zone:
        cron_spec["timeZone"] = spec.time_zone
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": child_metadata(tab, meta["name"], labels(meta["name"])),
        "spec": cron_spec,
    }


def children(
    tab: KubeObject, spec: CronTabSpec, level: PodSecurityLevel = "baseline"
) -> list[Manifest]:
    """Every child the CronTab wants: its CronJob (``level``: the namespace's Pod Security
    level; ``spec.podSecurity`` wins)."""
    return [cron_job(tab, spec, level)]
