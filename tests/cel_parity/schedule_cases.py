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
    },
)
_TRANSITION = "a transition rule: the models see no old object"
_ONE_MINOR_APART = (
    "the CRD's version pattern admits 3.5 and 3.6 only, one minor apart: "
    "tests/e2e/test_etcdcluster_admission.py shows the rule on a CRD of its own"
)
_A, _R = "CronTab", "EtcdCluster"


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
        python=_TRANSITION,
    ),
    Case(
        _R,
        ".spec",
        "etcd cannot go back a minor",
        (("spec.version", "3.5.21"),),
        "spec.version",
        old=(("spec.version", "3.6.16"),),
        python=_TRANSITION,
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
        python=_TRANSITION,
        server=_ONE_MINOR_APART,
    ),
    Case(
        _R,
        ".spec",
        "tls is set when",
        (("spec.tls.peerSecretName", "other"),),
        "spec.tls",
        old=(),
        python=_TRANSITION,
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
    Case(
        _R,
        ".spec.tls",
        "client TLS needs both",
        (("spec.tls.clientSecretName", "srv"),),
        "spec.tls.operatorSecretName",
    ),
)
