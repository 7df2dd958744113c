"""``CronTab`` (short name ``ct``): run an image on a cron schedule.

The seed's CRD (``cronSpec``, ``image``, ``replicas``) "does nothing"; here it becomes a
CronJob. ``cronSpec`` is standard five-field cron (minute hour day-of-month month
day-of-week), six fields with seconds first (the seed's own ``* * * * * *``; a CronJob runs
at most once a minute, see :mod:`appstack.api.cron`) or a macro (``@hourly`` ...). Types
only, no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from appstack.api.cron import cron_problem
from appstack.api.cron_rules import CRON_RULES
from appstack.api.kind import custom_kind
from appstack.api.security import POD_SECURITY, SECURITY, PodSecurityLevel
from appstack.sdk import (
    AGE,
    DNS_LABEL,
    POD_FIELD_DOCS,
    WIDE_READY,
    Condition,
    CustomObject,
    EnvFromSource,
    EnvList,
    Image,
    KubeModel,
    ObjectName,
    PullSecrets,
    ResourceRequirements,
    SecurityContext,
    name_rules,
)


class CronTabSpec(KubeModel):
    """What to run, and when."""

    cron_spec: str = Field(
        min_length=1,
        max_length=128,
        description="Schedule: five cron fields (minute hour day-of-month month day-of-week), "
        "e.g. '*/5 * * * *'; six with seconds first, e.g. '0 */5 * * * *' (a CronJob runs at "
        "most once a minute: a seconds field asking for more runs once a minute, reason "
        "SecondsRounded); or a macro: @yearly @monthly @weekly @daily @hourly.",
        json_schema_extra={"x-kubernetes-validations": CRON_RULES},
    )
    image: Image = Field(description="Container image to run.")
    replicas: int = Field(
        1, ge=1, le=1000, description="Pods per run (the Job's parallelism and completions)."
    )
    command: list[str] | None = Field(default=None, max_length=64, description="Entrypoint.")
    args: list[str] | None = Field(default=None, max_length=256, description="Arguments.")
    env: EnvList | None = Field(
        default=None, max_length=256, description="Environment variables of the container."
    )
    env_from: list[EnvFromSource] | None = Field(
        default=None,
        max_length=32,
        description="Every key of a ConfigMap or Secret as a variable (env wins on a clash).",
    )
    resources: ResourceRequirements | None = Field(
        default=None,
        description="CPU/memory requests and limits of the container (what a ResourceQuota "
        "demanding them needs).",
    )
    image_pull_secrets: PullSecrets | None = Field(
        default=None, description=POD_FIELD_DOCS["imagePullSecrets"]
    )
    service_account_name: ObjectName | None = Field(
        default=None, description="ServiceAccount the pods run as."
    )
    security_context: SecurityContext | None = Field(default=None, description=SECURITY)
    pod_security: PodSecurityLevel | None = Field(default=None, description=POD_SECURITY)
    time_zone: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$",
        description="IANA time zone of the schedule, e.g. Europe/Berlin (default: UTC).",
    )
    suspend: bool = Field(False, description="Do not start new runs while true.")
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] = Field(
        "Allow", description="What to do when a run is due while the previous one runs."
    )
    successful_jobs_history_limit: int = Field(3, ge=0, le=100, description="Finished runs kept.")
    failed_jobs_history_limit: int = Field(1, ge=0, le=100, description="Failed runs kept.")
    starting_deadline_seconds: int | None = Field(
        default=None,
        ge=0,
        le=86400,
        description="A run that could not start within this many seconds of its time is "
        "skipped (the CronJob's startingDeadlineSeconds; default: no deadline).",
    )
    backoff_limit: int = Field(
        6,
        ge=0,
        le=100,
        description="Retries of a failing run before it counts as failed (the Job's "
        "backoffLimit). The newest run failed: Ready=False, Degraded=True.",
    )
    active_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        description="A run still going after this many seconds is stopped and failed (the "
        "Job's activeDeadlineSeconds).",
    )
    ttl_seconds_after_finished: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="A finished run (its Job and pods) is deleted this many seconds after it "
        "ends (the Job's ttlSecondsAfterFinished; default: kept until the history limits "
        "remove it).",
    )

    @field_validator("cron_spec")
    @classmethod
    def _valid_schedule(cls, value: str) -> str:
        problem = cron_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class CronTabStatus(KubeModel):
    """The observed state, written by the operator."""

    last_schedule_time: str | None = Field(default=None, description="When a run was last started.")
    last_successful_time: str | None = Field(default=None, description="When a run last succeeded.")
    active_jobs: list[str] | None = Field(default=None, description="Jobs running now.")
    active: int | None = Field(default=None, description="How many Jobs are running now.")
    last_run: str | None = Field(default=None, description="The newest Job of this CronTab.")
    last_run_result: Literal["Running", "Succeeded", "Failed"] | None = Field(
        default=None, description="How the newest Job is doing."
    )
    observed_generation: int | None = None
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready and Degraded (the newest run failed or cannot start).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="crontabs",
    short_names=("ct",),
    printer_columns=(
        {"name": "Schedule", "type": "string", "jsonPath": ".spec.cronSpec"},
        {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
        {"name": "Active", "type": "integer", "jsonPath": ".status.active"},
        {"name": "Last Schedule", "type": "date", "jsonPath": ".status.lastScheduleTime"},
        {"name": "Last Run", "type": "string", "jsonPath": ".status.lastRunResult"},
        *WIDE_READY,
        AGE,
    ),
)
class CronTab(CustomObject):
    """A command run on a schedule: a CronJob kept in sync with this spec."""

    NAME_RULES = name_rules(
        DNS_LABEL, 52, "it names the CronJob, whose Jobs add 11 characters to it"
    )

    spec: CronTabSpec
    status: CronTabStatus | None = None
