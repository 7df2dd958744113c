"""The CronTab and EtcdCluster rows of the CEL parity table (pure data): their base objects
and, per rule, the change that breaks it — the schedule rules of both kinds
(:func:`appstack.api.cron_rules.cron_rules`), the EtcdCluster's replicas, backup, recovery,
TLS and transition rules; boundaries both sides accept where a rule has one."""

from __future__ import annotations

from typing import Any

from tests.cel_parity.table import DELETE, Case


def _obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "appstack.dev/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


CRONTAB = _obj("CronTab", "job", {"cronSpec": "*/5 * * * *", "image": "busybox:1.36"})
ETCDCLUSTER = _obj(
    "EtcdCluster",
    "etcd",
    {
        "replicas": 3,
        "storage": "1Gi",
        "version": "3.5.21",
        "backup": {"schedule": "0 * * * *", "pvcName": "snapshots"},
        "disasterRecovery": {"enabled": True},
        "tls": {"peerSecretName": "peer"},
        "compaction": {"mode": "periodic", "retention": "1h"},
        "quotaBackendBytes": 4294967296,
        "defragmentation": {"schedule": "0 3 * * *", "freeSpacePercent": 20},
        "extraArgs": {"snapshot-count": "10000"},
        "env": [{"name": "GOMAXPROCS", "value": "2"}],
    },
)
_ONE_MINOR_APART = (
    "the CRD's version pattern admits 3.5 and 3.6 only, one minor apart: "
    "tests/e2e/test_etcdcluster_admission.py shows the rule on a CRD of its own"
)
_A, _R = "CronTab", "EtcdCluster"
_S3 = {"endpoint": "http://s3.storage.svc:9000", "bucket": "snaps", "credentialsSecretName": "s3"}
_S3_OBJECT = {**_S3, "key": "etcd-20261127T030000Z.db"}


def _cron(kind: str, path: str, label: str, field: str, *, seconds: bool) -> tuple[Case, ...]:
    """The schedule rules (:func:`appstack.api.cron_rules.cron_rules`) of one field."""
    at = field
    shape = "* * * *" if seconds else "* * * * * *"
    cases = [
        Case(kind, path, f"{label} takes five fields", ((at, "@often"),), at),
        Case(kind, path, f"{label} takes five fields", ((at, "@every 1s\n"),), at),
        # A wrong number of fields breaks the characters rule too (it counts them).
        Case(kind, path, f"{label} takes five fields", ((at, shape),), at, also=True),
        Case(kind, path, f"{label} fields may only", ((at, "0 * * * %"),), at),
        Case(kind, path, f"{label}: a step /n", ((at, "*/0 * * * *"),), at),
        Case(kind, path, f"{label} minute: a range", ((at, "30-10 * * * *"),), at),
        Case(kind, path, f"{label} hour: a range", ((at, "* 5-1 * * *"),), at),
        Case(kind, path, f"{label} day of month: a range", ((at, "* * 20-10 * *"),), at),
        Case(kind, path, f"{label} month: a range", ((at, "* * * DEC-JAN *"),), at),
        Case(kind, path, f"{label} day of week: a range", ((at, "* * * * FRI-MON"),), at),
        Case(
            kind,
            path,
            f"{label} month: a range",
            ((at, "0 9 1-31 JAN-DEC MON-FRI"),),
            at,
            refused=False,
        ),
        Case(kind, path, f"{label} takes five fields", ((at, "@hourly"),), at, refused=False),
    ]
    if seconds:
        cases += [
            Case(kind, path, f"{label} second: a range", ((at, "30-10 * * * * *"),), at),
            Case(
                kind,
                path,
                f"{label} second: a range",
                ((at, "10-30 * * * * *"),),
                at,
                refused=False,
            ),
        ]
    return tuple(cases)


SCHEDULE_CASES: tuple[Case, ...] = (
    # CronTab
    Case(_A, "", "metadata.name must contain", (("metadata.name", "job.v1"),)),
    Case(_A, "", "metadata.name must contain", (("metadata.name", "1job"),), refused=False),
    Case(_A, "", "metadata.name must be at most 52", (("metadata.name", "j" * 53),)),
    Case(_A, "", "metadata.name must be at most 52", (("metadata.name", "j" * 52),), refused=False),
    *_cron(_A, ".spec.cronSpec", "cronSpec", "spec.cronSpec", seconds=True),
    # EtcdCluster
    Case(_R, "", "metadata.name must start", (("metadata.name", "1etcd"),)),
    Case(_R, "", "metadata.name must be at most 40", (("metadata.name", "e" * 41),)),
    Case(_R, "", "metadata.name must be at most 40", (("metadata.name", "e" * 40),), refused=False),
    Case(_R, ".spec", "replicas must be odd", (("spec.replicas", 4),), "spec.replicas"),
    Case(
        _R,
        ".spec",
        "replicas must be odd",
        (("spec.replicas", 4), ("spec.allowEvenReplicas", True)),
        "spec.replicas",
        refused=False,
    ),
    Case(
        _R,
        ".spec",
        "restore is set when",
        (("spec.restore", {"pvcName": "p", "path": "a.db"}),),
        "spec.restore",
        old=(),
    ),
    Case(
        _R,
        ".spec",
        "etcd cannot go back a minor",
        (("spec.version", "3.5.21"),),
        "spec.version",
        old=(("spec.version", "3.6.16"),),
    ),
    Case(
        _R,
        ".spec",
        "etcd cannot go back a minor",
        (("spec.version", "3.6.16"),),
        "spec.version",
        refused=False,
        old=(),
    ),
    Case(
        _R,
        ".spec",
        "etcd upgrades one minor",
        (("spec.version", "3.6.16"),),
        "spec.version",
        refused=False,
        old=(),
    ),
    Case(
        _R,
        ".spec",
        "etcd upgrades one minor",
        (("spec.version", "3.6.16"),),
        "spec.version",
        old=(("spec.version", "3.4.30"),),
        server=_ONE_MINOR_APART,
    ),
    Case(
        _R,
        ".spec",
        "tls is set when",
        (("spec.tls.peerSecretName", "other"),),
        "spec.tls",
        old=(),
    ),
    Case(
        _R,
        ".spec",
        "disasterRecovery.enabled needs",
        (("spec.backup", DELETE),),
        "spec.disasterRecovery.enabled",
    ),
    Case(
        _R,
        ".spec.backup",
        "intervalMinutes and schedule",
        (("spec.backup.intervalMinutes", 5),),
        "spec.backup.intervalMinutes",
    ),
    Case(
        _R,
        ".spec.backup",
        "backup needs a schedule",
        (("spec.backup.schedule", DELETE),),
        "spec.backup.schedule",
    ),
    *_cron(_R, ".spec.backup.schedule", "schedule", "spec.backup.schedule", seconds=False),
    Case(
        _R, ".spec.tls", "tls needs peerSecretName", (("spec.tls", {}),), "spec.tls.peerSecretName"
    ),
    # backups to an object store, restore from one
    Case(
        _R,
        ".spec.backup",
        "backup needs exactly one target",
        (("spec.backup.s3", _S3),),
        "spec.backup.pvcName",
    ),
    Case(
        _R,
        ".spec.backup",
        "backup needs exactly one target",
        (("spec.backup.pvcName", DELETE),),
        "spec.backup.pvcName",
    ),
    Case(
        _R,
        ".spec.backup",
        "backup needs exactly one target",
        (("spec.backup.pvcName", DELETE), ("spec.backup.s3", _S3)),
        "spec.backup.pvcName",
        refused=False,
    ),
    Case(
        _R,
        ".spec.backup",
        "retentionDays applies to s3",
        (("spec.backup.retentionDays", 7),),
        "spec.backup.retentionDays",
    ),
    Case(
        _R,
        ".spec.restore",
        "restore needs pvcName and path",
        (("spec.restore", {"pvcName": "snapshots"}),),
        "spec.restore.pvcName",
    ),
    Case(
        _R,
        ".spec.restore",
        "restore needs pvcName and path",
        (("spec.restore", {"pvcName": "snapshots", "path": "a.db", "s3": _S3_OBJECT}),),
        "spec.restore.pvcName",
    ),
    Case(
        _R,
        ".spec.restore",
        "restore needs pvcName and path",
        (("spec.restore", {"s3": _S3_OBJECT}),),
        "spec.restore.pvcName",
        refused=False,
    ),
    # day 2: compaction, defragmentation, extraArgs, env
    *_cron(
        _R,
        ".spec.defragmentation.schedule",
        "defragmentation.schedule",
        "spec.defragmentation.schedule",
        seconds=False,
    ),
    Case(
        _R,
        ".spec.compaction",
        "compaction.retention:",
        (("spec.compaction.retention", "10000"),),
        "spec.compaction.retention",
    ),
    Case(
        _R,
        ".spec.compaction",
        "compaction.retention:",
        (("spec.compaction", {"mode": "revision", "retention": "1h"}),),
        "spec.compaction.retention",
    ),
    Case(
        _R,
        ".spec.compaction",
        "compaction.retention:",
        (("spec.compaction", {"mode": "revision", "retention": "10000"}),),
        "spec.compaction.retention",
        refused=False,
    ),
    Case(
        _R,
        ".spec.extraArgs",
        "extraArgs: a flag's name",
        (("spec.extraArgs", {"--snapshot-count": "1"}),),
        "spec.extraArgs",
    ),
    Case(
        _R,
        ".spec.extraArgs",
        "extraArgs may not set",
        (("spec.extraArgs", {"snapshot-count": "1", "quota-backend-bytes": "1"}),),
        "spec.extraArgs",
    ),
    Case(
        _R,
        ".spec.extraArgs",
        "extraArgs may not set",
        (("spec.extraArgs", {"snapshot-count": "1", "experimental-peer-skip": "x"}),),
        "spec.extraArgs",
        refused=False,
    ),
    Case(
        _R,
        ".spec.env[*]",
        "env may not set",
        (("spec.env", [{"name": "ETCD_DATA_DIR", "value": "/x"}]),),
        "spec.env[0].name",
    ),
    Case(
        _R,
        ".spec.env[*]",
        "set either value or valueFrom",
        (("spec.env[0].valueFrom", {"fieldRef": {"fieldPath": "metadata.name"}}),),
        "spec.env[0]",
    ),
    Case(
        _R,
        ".spec.env[*].valueFrom",
        "valueFrom needs exactly one",
        (("spec.env", [{"name": "A", "valueFrom": {}}]),),
        "spec.env[0].valueFrom",
    ),
    Case(
        _R,
        ".spec.tls",
        "client TLS needs both",
        (("spec.tls.clientSecretName", "srv"),),
        "spec.tls.operatorSecretName",
    ),
)
