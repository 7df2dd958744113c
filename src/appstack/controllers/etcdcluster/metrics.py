"""The EtcdCluster's own gauges — its members, healthy voters, leader and quorum, the times
of its newest snapshot, next scheduled one and last defragmentation, its members' database
sizes beside its quota and the alarms etcd raised — read from its typed status (and the
replicas, quota and backup plan of its spec), the dashboard rows that show them and the
alerts on them (:data:`ALERTS`: quorum lost, NOSPACE, near the quota, a snapshot overdue).
Declared on its registration (:data:`.CONTROLLER`); the operator's per-kind collector reads
them at scrape time (:mod:`appstack.controllers.kind_metrics`), its dashboard is drawn by
:mod:`appstack.manifests.grafana` and its alerts go into the operator's PrometheusRule
(:mod:`appstack.manifests.dashboard`, through :func:`appstack.sdk.alert_rules`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from appstack.api.etcdcluster import EtcdClusterStatus
from appstack.api.etcdcluster_backup import BackupSpec
from appstack.api.etcdcluster_maintenance import DEFAULT_QUOTA
from appstack.controllers.etcdcluster.backup_schedule import next_due
from appstack.controllers.etcdcluster.maintenance import NEAR_QUOTA
from appstack.sdk import Alert, Gauges, Panel, Sample

FAMILIES: dict[str, str] = {
    "appstack_etcdcluster_members": "An EtcdCluster's members (voters and learners)",
    "appstack_etcdcluster_ready_members": "An EtcdCluster's healthy voting members",
    "appstack_etcdcluster_has_leader": "1 if the EtcdCluster has a leader",
    "appstack_etcdcluster_quorum": "1 if more than half of the EtcdCluster's voters are healthy",
    "appstack_etcdcluster_last_backup_timestamp_seconds": "When the newest snapshot was taken",
    "appstack_etcdcluster_next_backup_due_timestamp_seconds": (
        "When the next snapshot is due by the EtcdCluster's backup schedule"
    ),
    "appstack_etcdcluster_db_size_bytes": "An EtcdCluster member's database file size",
    "appstack_etcdcluster_db_size_in_use_bytes": (
        "The bytes of an EtcdCluster member's database file holding data"
    ),
    "appstack_etcdcluster_last_defragmentation_timestamp_seconds": (
        "When the EtcdCluster's last complete defragmentation ended"
    ),
    "appstack_etcdcluster_quota_backend_bytes": (
        "An EtcdCluster's spec.quotaBackendBytes (etcd's 2 GiB when unset): a member whose "
        "database file reaches it raises NOSPACE"
    ),
    "appstack_etcdcluster_alarm": "1 while etcd has raised this alarm (NOSPACE, CORRUPT)",
}


def _seconds(rfc3339: str | None) -> float | None:
    try:
        return datetime.fromisoformat((rfc3339 or "").replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _backup_due(obj: dict[str, Any], last: str | None) -> float | None:
    """When the cluster's next snapshot is due (None: no backups, or never due)."""
    plan = (obj.get("spec") or {}).get("backup")
    if not plan:
        return None
    try:
        spec = BackupSpec.model_validate(plan)
        due = next_due(spec, last, obj["metadata"]["creationTimestamp"])
    except (ValidationError, KeyError, ValueError):
        return None
    return due.timestamp() if due is not None else None


def _quota(obj: dict[str, Any]) -> float:
    quota = (obj.get("spec") or {}).get("quotaBackendBytes")
    return float(quota if isinstance(quota, int) and quota > 0 else DEFAULT_QUOTA)


def _sizes(status: EtcdClusterStatus, who: dict[str, str]) -> Iterator[Sample]:
    """Per member database sizes, the last defragmentation, the raised alarms."""
    for member in status.members or []:
        at = {**who, "member": member.name}
        if member.db_size is not None:
            yield "appstack_etcdcluster_db_size_bytes", at, float(member.db_size)
        if member.db_size_in_use is not None:
            yield "appstack_etcdcluster_db_size_in_use_bytes", at, float(member.db_size_in_use)
    ended = _seconds(status.defragmentation.last_time) if status.defragmentation else None
    if ended is not None:
        yield "appstack_etcdcluster_last_defragmentation_timestamp_seconds", who, ended
    for alarm in status.alarms or []:
        yield "appstack_etcdcluster_alarm", {**who, "alarm": alarm}, 1.0


def samples(obj: dict[str, Any], who: dict[str, str]) -> Iterator[Sample]:
    """Every sample of :data:`FAMILIES` one cluster gives (none for a status that is not
    the kind's)."""
    try:
        status = EtcdClusterStatus.model_validate(obj.get("status") or {})
    except ValidationError:
        return
    voters = int((obj.get("spec") or {}).get("replicas") or 0)
    ready = status.ready_members or 0
    yield "appstack_etcdcluster_members", who, len(status.members or [])
    yield "appstack_etcdcluster_ready_members", who, ready
    yield "appstack_etcdcluster_has_leader", who, 1.0 if status.leader else 0.0
    yield "appstack_etcdcluster_quorum", who, 1.0 if voters and 2 * ready > voters else 0.0
    taken = _seconds(status.last_backup_time)
    if taken is not None:
        yield "appstack_etcdcluster_last_backup_timestamp_seconds", who, taken
    due = _backup_due(obj, status.last_backup_time)
    if due is not None:
        yield "appstack_etcdcluster_next_backup_due_timestamp_seconds", who, due
    yield "appstack_etcdcluster_quota_backend_bytes", who, _quota(obj)
    yield from _sizes(status, who)


def panels(who: str) -> Sequence[Panel]:
    """The dashboard rows of :data:`FAMILIES`, for the objects ``who`` selects."""

    def by_object(metric: str, how: str = "max") -> str:
        return f"{how} by (namespace, name) ({metric}{{{who}}})"

    def by_member(metric: str) -> str:
        return f"max by (namespace, name, member) ({metric}{{{who}}})"

    return [
        (
            "Healthy voters / members",
            "short",
            [
                by_object("appstack_etcdcluster_ready_members"),
                by_object("appstack_etcdcluster_members"),
            ],
        ),
        (
            "Quorum and leader (1 = yes)",
            "short",
            [
                by_object("appstack_etcdcluster_quorum", "min"),
                by_object("appstack_etcdcluster_has_leader", "min"),
            ],
        ),
        (
            "Database size / in use per member, and the quota",
            "bytes",
            [
                by_member("appstack_etcdcluster_db_size_bytes"),
                by_member("appstack_etcdcluster_db_size_in_use_bytes"),
                by_object("appstack_etcdcluster_quota_backend_bytes"),
            ],
        ),
        (
            "Alarms raised (NOSPACE: writes refused)",
            "short",
            [f"max by (namespace, name, alarm) (appstack_etcdcluster_alarm{{{who}}})"],
        ),
        (
            "Since the last defragmentation",
            "s",
            [
                "time() - "
                + by_object("appstack_etcdcluster_last_defragmentation_timestamp_seconds")
            ],
        ),
        (
            "Age of the newest snapshot",
            "s",
            [f"time() - {by_object('appstack_etcdcluster_last_backup_timestamp_seconds')}"],
        ),
        (
            "Next snapshot due in (negative: overdue)",
            "s",
            [f"{by_object('appstack_etcdcluster_next_backup_due_timestamp_seconds')} - time()"],
        ),
    ]


GAUGES = Gauges(FAMILIES, samples)

#: What users are warned of about their EtcdClusters (the operator's PrometheusRule).
ALERTS = (
    Alert(
        "AppstackEtcdQuorumLost",
        "min by (namespace, name) (appstack_etcdcluster_quorum) == 0",
        "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }} has lost its quorum: it takes "
        "no writes",
        for_="2m",
        severity="critical",
        description="Fewer than half of its voters are healthy. With spec.disasterRecovery "
        "enabled it is rebuilt from the newest snapshot; see docs/etcdcluster.md.",
    ),
    Alert(
        "AppstackEtcdNoSpace",
        'max by (namespace, name) (appstack_etcdcluster_alarm{alarm="NOSPACE"}) == 1',
        "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }} raised NOSPACE: it refuses "
        "every write",
        for_="1m",
        severity="critical",
        description="Its database reached spec.quotaBackendBytes. Set spec.recoverFromNoSpace "
        "to compact, defragment and disarm it, or raise the quota; see docs/etcdcluster.md.",
    ),
    Alert(
        "AppstackEtcdNearQuota",
        "max by (namespace, name) (appstack_etcdcluster_db_size_bytes) / "
        f"max by (namespace, name) (appstack_etcdcluster_quota_backend_bytes) > {NEAR_QUOTA}",
        "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }}: a member's database file "
        "holds {{ $value | humanizePercentage }} of its quota",
        for_="10m",
        description="At the quota etcd raises NOSPACE and refuses every write. Delete what is "
        "not needed, let compaction free old revisions and defragment "
        "(spec.defragmentation), or raise spec.quotaBackendBytes; see docs/etcdcluster.md.",
    ),
    Alert(
        "AppstackEtcdBackupOverdue",
        "time() - max by (namespace, name) "
        "(appstack_etcdcluster_next_backup_due_timestamp_seconds) > 1800",
        "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }}: a scheduled snapshot is more "
        "than 30 minutes overdue",
        for_="10m",
        description="Its backup Jobs do not complete (kubectl get jobs -n "
        "{{ $labels.namespace }}); the newest snapshot is getting old.",
    ),
)
