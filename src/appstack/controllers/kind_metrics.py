"""Metrics about what users run, not the operator's internals: per kind the objects and
whether each is Ready; an AppStack's members by state; an EtcdCluster's members, leader,
quorum, the time of its last backup and defragmentation, its members' database sizes and
the alarms etcd raised; a CronTab's last run. Read at scrape time from the
manager's cache (no API request, nothing kept between scrapes) by :class:`KindMetrics`, a
Prometheus collector the operator registers (:mod:`appstack.operator`); the alerts and the
dashboard's per-kind rows (:mod:`appstack.manifests.dashboard`) use them. :func:`samples` is
pure and unit-tested.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from pydantic import ValidationError

from appstack.api.etcdcluster_backup import BackupSpec
from appstack.controllers.etcdcluster.backup_schedule import next_due
from appstack.controllers.registry import ALL
from appstack.runtime.cache import Cache

Sample = tuple[str, dict[str, str], float]

#: name → help; every gauge :func:`samples` may produce (also what the tests check against).
FAMILIES: dict[str, str] = {
    "appstack_object_ready": "1 if the object's Ready condition (EtcdCluster: Available) is True",
    "appstack_appstack_members": "An AppStack's members, by state",
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
    "appstack_etcdcluster_alarm": "1 while etcd has raised this alarm (NOSPACE, CORRUPT)",
    "appstack_crontab_last_run_failed": "1 if the CronTab's newest run failed",
}
_READY = {"EtcdCluster": "Available"}


def _seconds(rfc3339: str) -> float | None:
    try:
        return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition(obj: dict[str, Any], kind: str) -> bool:
    wanted = _READY.get(kind, "Ready")
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == wanted:
            return bool(condition.get("status") == "True")
    return False


def _backup_due(obj: dict[str, Any]) -> float | None:
    """When the cluster's next snapshot is due (None: no backups, or never due)."""
    plan = (obj.get("spec") or {}).get("backup")
    if not plan:
        return None
    try:
        spec = BackupSpec.model_validate(plan)
        last = (obj.get("status") or {}).get("lastBackupTime")
        due = next_due(spec, last, obj["metadata"]["creationTimestamp"])
    except (ValidationError, KeyError, ValueError):
        return None
    return due.timestamp() if due is not None else None


def _etcd_sizes(status: dict[str, Any], who: dict[str, str]) -> Iterator[Sample]:
    """Per member database sizes, the last defragmentation, the raised alarms."""
    for member in status.get("members") or []:
        at = {**who, "member": str(member.get("name", ""))}
        if member.get("dbSize") is not None:
            yield "appstack_etcdcluster_db_size_bytes", at, float(member["dbSize"])
        if member.get("dbSizeInUse") is not None:
            yield "appstack_etcdcluster_db_size_in_use_bytes", at, float(member["dbSizeInUse"])
    last = ((status.get("defragmentation") or {}).get("lastTime")) or ""
    ended = _seconds(last) if last else None
    if ended is not None:
        yield "appstack_etcdcluster_last_defragmentation_timestamp_seconds", who, ended
    for alarm in status.get("alarms") or []:
        yield "appstack_etcdcluster_alarm", {**who, "alarm": str(alarm)}, 1.0


def _per_kind(kind: str, obj: dict[str, Any], who: dict[str, str]) -> Iterator[Sample]:
    status = obj.get("status") or {}
    if kind == "AppStack":
        states: dict[str, int] = {}
        for member in status.get("members") or []:
            states[member.get("state", "")] = states.get(member.get("state", ""), 0) + 1
        for state in ("Ready", "Progressing", "WaitingForDependencies", "Failed"):
            yield "appstack_appstack_members", {**who, "state": state}, states.get(state, 0)
    elif kind == "EtcdCluster":
        voters = int((obj.get("spec") or {}).get("replicas") or 0)
        ready = int(status.get("readyMembers") or 0)
        yield "appstack_etcdcluster_members", who, len(status.get("members") or [])
        yield "appstack_etcdcluster_ready_members", who, ready
        yield "appstack_etcdcluster_has_leader", who, 1.0 if status.get("leader") else 0.0
        yield "appstack_etcdcluster_quorum", who, 1.0 if voters and 2 * ready > voters else 0.0
        taken = _seconds(status.get("lastBackupTime") or "")
        if taken is not None:
            yield "appstack_etcdcluster_last_backup_timestamp_seconds", who, taken
        due = _backup_due(obj)
        if due is not None:
            yield "appstack_etcdcluster_next_backup_due_timestamp_seconds", who, due
        yield from _etcd_sizes(status, who)
    elif kind == "CronTab":
        failed = status.get("lastRunResult") == "Failed"
        yield "appstack_crontab_last_run_failed", who, 1.0 if failed else 0.0


def samples(kind: str, objects: Iterable[dict[str, Any]]) -> Iterator[Sample]:
    """Every sample one kind's cached ``objects`` give (pure)."""
    for obj in objects:
        meta = obj.get("metadata") or {}
        who = {"kind": kind, "namespace": meta.get("namespace", ""), "name": meta.get("name", "")}
        yield "appstack_object_ready", who, 1.0 if _condition(obj, kind) else 0.0
        yield from _per_kind(kind, obj, {k: v for k, v in who.items() if k != "kind"})


class KindMetrics(Collector):
    """The gauges of :data:`FAMILIES`, from the cache of every registered kind."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One family per name of :data:`FAMILIES`; every object is read from the cache one
        at a time and its samples added at once (a scrape holds the samples, never the
        cache decoded)."""
        families: dict[str, tuple[GaugeMetricFamily, list[str]]] = {}
        for controller in ALL:
            resource = controller.kind.resource
            for name, labels, value in samples(resource.kind, self.cache.iter_objects(resource)):
                if name not in families:
                    keys = sorted(labels)
                    families[name] = GaugeMetricFamily(name, FAMILIES[name], labels=keys), keys
                family, keys = families[name]
                family.add_metric([labels[key] for key in keys], value)
        for name, help_text in FAMILIES.items():
            yield families[name][0] if name in families else GaugeMetricFamily(name, help_text)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families, without reading the cache (prometheus_client calls this at
        registration)."""
        for name, help_text in FAMILIES.items():
            yield GaugeMetricFamily(name, help_text)
