"""The EtcdCluster's ``backup`` block (:class:`BackupSpec`): when snapshots are taken, where
they go and how many are kept. Types and admission rules only; used by
:mod:`appstack.api.etcdcluster`, and by the controller's
:mod:`~appstack.controllers.etcdcluster.backup` and
:mod:`~appstack.controllers.etcdcluster.backup_schedule`.

``schedule`` is five-field cron (or a macro), in UTC, checked at admission by the same
rules as a CronTab's ``cronSpec`` (:func:`appstack.api.cron_rules.cron_rules`), without
seconds or ``@every``. ``intervalMinutes``, the older form, still works; a backup block
takes exactly one of the two.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from appstack.api.cron import cron_problem
from appstack.api.cron_rules import cron_rules
from appstack.sdk.model import KubeModel
from appstack.sdk.names import ObjectName

SCHEDULE = "schedule"
BACKUP_RULES: list[Any] = [
    {
        "rule": "!(has(self.schedule) && has(self.intervalMinutes))",
        "message": "intervalMinutes and schedule are mutually exclusive: set one",
        "fieldPath": ".intervalMinutes",
    },
    {
        "rule": "has(self.schedule) || has(self.intervalMinutes)",
        "message": "backup needs a schedule (five cron fields, e.g. '0 * * * *', or a macro "
        "such as @hourly) or intervalMinutes",
        "fieldPath": ".schedule",
    },
]


class BackupSpec(KubeModel):
    """Snapshots taken on ``schedule`` (or every ``intervalMinutes``), as ``etcdctl
    snapshot save`` does, from the leader, onto a PVC, in ``retention`` rotating files
    ``<cluster>-<n>.db``."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": BACKUP_RULES})

    schedule: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="When to take snapshots, in UTC: five cron fields (minute hour "
        "day-of-month month day-of-week), e.g. '0 */6 * * *', or a macro: @yearly @monthly "
        "@weekly @daily @hourly. A schedule missed while the operator was down takes one "
        "snapshot when it is back, not one per missed time.",
        json_schema_extra={"x-kubernetes-validations": cron_rules(SCHEDULE, seconds=False)},
    )
    interval_minutes: int | None = Field(
        default=None,
        ge=1,
        le=10080,
        description="Minutes between snapshots (at most a week); the older form of schedule, "
        "exclusive with it.",
    )
    pvc_name: ObjectName = Field(description="PersistentVolumeClaim the snapshots are saved on.")
    retention: int = Field(3, ge=1, le=100, description="Snapshot files kept (rotated).")

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, value: str | None) -> str | None:
        problem = value and cron_problem(value, label=SCHEDULE, seconds=False)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_of(self) -> BackupSpec:
        for rule, ok in zip(
            BACKUP_RULES,
            (
                self.schedule is None or self.interval_minutes is None,
                self.schedule is not None or self.interval_minutes is not None,
            ),
            strict=True,
        ):
            if not ok:
                raise ValueError(rule["message"])
        return self
