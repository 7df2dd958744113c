"""The EtcdCluster's ``backup`` block (:class:`BackupSpec`): when snapshots are taken, where
they go and how many are kept. Types and admission rules only; used by
:mod:`appstack.api.etcdcluster`, and by the controller's
:mod:`~appstack.controllers.etcdcluster.backup` and
:mod:`~appstack.controllers.etcdcluster.backup_schedule`.

``schedule`` is five-field cron (or a macro), in UTC, checked at admission by the same
rules as a CronTab's ``cronSpec`` (:func:`appstack.api.cron_rules.cron_rules`), without
seconds or ``@every``. ``intervalMinutes``, the older form, still works; a backup block
takes exactly one of the two. Snapshots go to a PVC (``pvcName``) or to an S3-compatible
object store (``s3``: :class:`S3Target`), exactly one.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from appstack.api.cron import cron_problem
from appstack.api.cron_rules import cron_rules
from appstack.sdk import KubeModel, ObjectName

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
    {
        "rule": "has(self.pvcName) != has(self.s3)",
        "message": "backup needs exactly one target: pvcName (a PersistentVolumeClaim) or s3 "
        "(an object store)",
        "fieldPath": ".pvcName",
    },
    {
        "rule": "!has(self.retentionDays) || has(self.s3)",
        "message": "retentionDays applies to s3 (PVC snapshots rotate through retention slots)",
        "fieldPath": ".retentionDays",
    },
]
BUCKET = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
ENDPOINT = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$"
PREFIX = r"^([A-Za-z0-9!_.*'()-]+/)*$"
#: The keys of the credentials Secret (as the AWS tools name them).
ACCESS_KEY = "AWS_ACCESS_KEY_ID"
SECRET_KEY = "AWS_SECRET_ACCESS_KEY"  # noqa: S105 - a key's name, not a secret


class S3Target(KubeModel):
    """An S3-compatible object store (AWS S3, MinIO, Ceph RGW, SeaweedFS, Versity ...),
    addressed path-style: ``<endpoint>/<bucket>/<prefix><key>``."""

    endpoint: str = Field(
        max_length=256,
        pattern=ENDPOINT,
        description="http(s)://host[:port], e.g. https://s3.eu-west-1.amazonaws.com or "
        "http://minio.storage.svc:9000. Reached from the backup Job's pod in the cluster's "
        "namespace (its network policies apply), never from the operator.",
    )
    bucket: str = Field(pattern=BUCKET, description="The bucket (it must exist).")
    prefix: str | None = Field(
        default=None,
        max_length=256,
        pattern=PREFIX,
        description="A folder for this cluster's snapshots, ending in '/', e.g. "
        "etcd/prod/ (objects are <prefix><cluster>-<time>.db).",
    )
    region: str = Field(
        "us-east-1", max_length=64, pattern=r"^[a-z0-9-]+$", description="The signing region."
    )
    credentials_secret_name: ObjectName = Field(
        description=f"A Secret of the namespace with the keys {ACCESS_KEY} and {SECRET_KEY}."
    )
    ca_secret_name: ObjectName | None = Field(
        default=None,
        description="A Secret with key ca.crt: the CA the endpoint's certificate is "
        "checked against (default: the system's).",
    )

    @property
    def key_prefix(self) -> str:
        return self.prefix or ""


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
    pvc_name: ObjectName | None = Field(
        default=None, description="PersistentVolumeClaim the snapshots are saved on."
    )
    s3: S3Target | None = Field(
        default=None, description="An S3-compatible object store the snapshots go to."
    )
    retention: int = Field(
        3, ge=1, le=100, description="Snapshots kept (PVC: rotated files; s3: newest objects)."
    )
    retention_days: int | None = Field(
        default=None,
        ge=1,
        le=3650,
        description="s3: snapshots older than this many days are deleted too (the newest "
        "one never).",
    )

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, value: str | None) -> str | None:
        problem = value and cron_problem(value, label=SCHEDULE, seconds=False)
        if problem:
            raise ValueError(problem)
        return value
