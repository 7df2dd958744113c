"""What users run, as metrics (controllers/kind_metrics.py over the registry, each kind's
own gauges in its ``metrics`` module, read from its typed status): pure samples per kind,
and the collector over a cache."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from appstack.api.identity import IDENTITY
from appstack.controllers.kind_metrics import FAMILIES, samples
from appstack.controllers.registry import ALL
from appstack.runtime.resources import Resource
from appstack.sdk.kit.kind_metrics import KindMetrics


def _obj(kind: str, name: str, status: dict[str, Any], spec: dict[str, Any] | None = None) -> Any:
    meta = {"name": name, "namespace": "ns", "creationTimestamp": "2026-11-25T00:00:00Z"}
    return {"kind": kind, "metadata": meta, "spec": spec or {}, "status": status}


def _ready(status: str, kind: str = "Ready") -> dict[str, Any]:
    return {"conditions": [{"type": kind, "status": status}]}


def test_readiness_per_object_and_kind() -> None:
    got = list(
        samples(
            "AppService",
            [
                _obj("AppService", "a", _ready("True")),
                _obj("AppService", "b", _ready("False")),
                _obj("AppService", "c", {}),
            ],
        )
    )
    assert [(s[1]["name"], s[2]) for s in got] == [("a", 1.0), ("b", 0.0), ("c", 0.0)]
    assert got[0][1] == {"kind": "AppService", "namespace": "ns", "name": "a"}
    # an EtcdCluster is Ready when Available
    (etcd, *_) = samples("EtcdCluster", [_obj("EtcdCluster", "e", _ready("True", "Available"))])
    assert etcd == (
        "appstack_object_ready",
        {"kind": "EtcdCluster", "namespace": "ns", "name": "e"},
        1.0,
    )


def _member(name: str, state: str) -> dict[str, str]:
    return {"name": name, "kind": "Component", "ready": "1/1", "state": state}


def test_an_appstacks_members_by_state() -> None:
    members = [_member("a", "Ready"), _member("b", "Ready"), _member("c", "Failed")]
    got = {
        s[1].get("state"): s[2]
        for s in samples("AppStack", [_obj("AppStack", "s", {"members": members})])
        if s[0] == "appstack_appstack_members"
    }
    assert got == {"Ready": 2, "Progressing": 0, "WaitingForDependencies": 0, "Failed": 1}


def test_an_etcd_clusters_quorum_leader_and_backups() -> None:
    status = {
        "members": [{"name": f"e-{i}", "id": str(i)} for i in range(3)],
        "readyMembers": 1,
        "leader": "",
        "lastBackupTime": "2026-11-25T10:00:00Z",
    }
    spec = {"replicas": 3, "backup": {"intervalMinutes": 60, "pvcName": "b"}}
    got = {s[0]: s[2] for s in samples("EtcdCluster", [_obj("EtcdCluster", "e", status, spec)])}
    assert got["appstack_etcdcluster_members"] == 3
    assert got["appstack_etcdcluster_quorum"] == 0.0  # 1 of 3 voters healthy
    assert got["appstack_etcdcluster_has_leader"] == 0.0
    last = got["appstack_etcdcluster_last_backup_timestamp_seconds"]
    assert got["appstack_etcdcluster_next_backup_due_timestamp_seconds"] == last + 3600
    healthy = {**status, "readyMembers": 2, "leader": "e-0"}
    got = {s[0]: s[2] for s in samples("EtcdCluster", [_obj("EtcdCluster", "e", healthy, spec)])}
    assert got["appstack_etcdcluster_quorum"] == 1.0
    assert got["appstack_etcdcluster_has_leader"] == 1.0
    without = {
        s[0] for s in samples("EtcdCluster", [_obj("EtcdCluster", "e", {}, {"replicas": 3})])
    }
    assert "appstack_etcdcluster_next_backup_due_timestamp_seconds" not in without


def test_an_etcd_clusters_quota_beside_its_members_database_sizes() -> None:
    status = {"members": [{"name": "e-0", "id": "1", "dbSize": 14 << 20, "dbSizeInUse": 9 << 20}]}

    def got(spec: dict[str, Any]) -> dict[str, float]:
        obj = _obj("EtcdCluster", "e", status, spec)
        return {s[0]: s[2] for s in samples("EtcdCluster", [obj])}

    assert got({"replicas": 1})["appstack_etcdcluster_quota_backend_bytes"] == 2 << 30  # etcd's
    small = got({"replicas": 1, "quotaBackendBytes": 16 << 20})
    assert small["appstack_etcdcluster_quota_backend_bytes"] == 16 << 20
    assert small["appstack_etcdcluster_db_size_bytes"] == 14 << 20


def test_a_crontabs_failed_run() -> None:
    got = [
        s
        for s in samples("CronTab", [_obj("CronTab", "c", {"lastRunResult": "Failed"})])
        if s[0] == "appstack_crontab_last_run_failed"
    ]
    assert got == [("appstack_crontab_last_run_failed", {"namespace": "ns", "name": "c"}, 1.0)]


def test_the_collector_exports_every_family_from_the_cache() -> None:
    class Cache:
        def iter_objects(self, resource: Resource) -> Iterator[Any]:
            if resource.kind == "AppService":
                yield _obj("AppService", "web", _ready("True"))

    registry = CollectorRegistry()
    registry.register(KindMetrics(Cache(), ALL, IDENTITY))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    for name in FAMILIES:
        assert f"# TYPE {name} gauge" in text
    assert 'appstack_object_ready{kind="AppService",name="web",namespace="ns"} 1.0' in text


def test_a_scrape_holds_one_cached_object_at_a_time() -> None:
    """The cache keeps objects packed; a scrape that decoded them all at once would hold
    the whole cache decoded (10,000 AppServices: tens of MiB) at every scrape."""

    class Decoded(dict[str, Any]):
        """A dict that can be weakly referenced."""

    held: list[weakref.ref[Decoded]] = []

    class Cache:
        def iter_objects(self, resource: Resource) -> Iterator[Any]:
            if resource.kind != "AppService":
                return

            def alive() -> list[weakref.ref[Decoded]]:
                return [ref for ref in held[:-1] if ref() is not None]

            for i in range(50):
                # every object but the last one read (the reader's loop holds it) is gone;
                # a full collection (a second in a big test process) only if one seems held
                if alive():
                    gc.collect()
                assert not alive()
                obj = Decoded(_obj("AppService", f"web-{i}", _ready("True")))
                held.append(weakref.ref(obj))
                yield obj
                del obj

    registry = CollectorRegistry()
    registry.register(KindMetrics(Cache(), ALL, IDENTITY))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert len(held) == 50
    assert 'appstack_object_ready{kind="AppService",name="web-49",namespace="ns"} 1.0' in text


def test_an_etcd_clusters_database_sizes_defragmentation_and_alarms() -> None:
    status = {
        "members": [
            {"name": "e-0", "id": "a", "dbSize": 300, "dbSizeInUse": 100},
            {"name": "e-1", "id": "b", "dbSize": 200, "dbSizeInUse": 100},
        ],
        "defragmentation": {"lastTime": "2026-11-25T10:00:00Z", "result": "Complete"},
        "alarms": ["NOSPACE"],
    }
    got = list(samples("EtcdCluster", [_obj("EtcdCluster", "e", status, {"replicas": 3})]))
    who = {"namespace": "ns", "name": "e"}
    assert ("appstack_etcdcluster_db_size_bytes", {**who, "member": "e-0"}, 300.0) in got
    assert ("appstack_etcdcluster_db_size_in_use_bytes", {**who, "member": "e-1"}, 100.0) in got
    assert ("appstack_etcdcluster_alarm", {**who, "alarm": "NOSPACE"}, 1.0) in got
    defrag = [
        s for s in got if s[0] == "appstack_etcdcluster_last_defragmentation_timestamp_seconds"
    ]
    assert defrag == [
        ("appstack_etcdcluster_last_defragmentation_timestamp_seconds", who, 1795600800.0)
    ]
    quiet = {**status, "alarms": []}
    names = {s[0] for s in samples("EtcdCluster", [_obj("EtcdCluster", "e", quiet, {})])}
    assert "appstack_etcdcluster_alarm" not in names


def test_a_status_its_kind_does_not_know_gives_its_readiness_only() -> None:
    """A kind's own gauges read its typed status; one the model refuses (a field this
    version does not know) gives no such sample, and the object's readiness still."""
    up = {"type": "Available", "status": "True", "reason": "Quorum", "lastTransitionTime": "t"}
    status = {"conditions": [up], "readyMembers": 3}
    whole = {s[0] for s in samples("EtcdCluster", [_obj("EtcdCluster", "e", status, {})])}
    assert "appstack_etcdcluster_ready_members" in whole
    status["newField"] = 1
    got = list(samples("EtcdCluster", [_obj("EtcdCluster", "e", status, {"replicas": 3})]))
    assert got == [
        ("appstack_object_ready", {"kind": "EtcdCluster", "namespace": "ns", "name": "e"}, 1.0)
    ]
    assert list(samples("Deployment", [_obj("Deployment", "d", _ready("True"))])) == []
