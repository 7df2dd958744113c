"""The status each controller writes, for representative cases of every kind, is what its
typed ``…Status`` model says (it validates into it and dumps back the same) and what the
generated CRD's status schema accepts (no field the API server would prune, types, enums,
bounds)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppServiceStatus
from appstack.api.appstack import AppStackStatus, MemberStatus
from appstack.api.crontab import CronTabStatus
from appstack.api.etcdcluster import EtcdClusterStatus
from appstack.api.mongodbcommunity import MongoDBCommunityStatus, UserStatus
from appstack.controllers.appservice import status as appservice
from appstack.controllers.appstack import status as appstack
from appstack.controllers.crontab import status as crontab
from appstack.controllers.etcdcluster import recover
from appstack.controllers.etcdcluster import status as etcd
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import MemberView, Observed, Step
from appstack.controllers.mongodbcommunity import status as mongodb
from appstack.sdk.kit.compare import status_patch
from appstack.sdk.kit.conditions import Problem
from appstack.sdk.model import KubeModel
from tests.support.status_schema import status_schema, violations

PROBLEM = Problem("InvalidSpec", "spec.size: must be at least 0")


def _obj(kind: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {"name": "x", "namespace": "ns", "uid": "u-1", "generation": 2}
    return {"kind": kind, "metadata": meta, "spec": spec, "status": status or {}}


def _conforms(plural: str, model: type[KubeModel], written: KubeModel, old: Any = None) -> None:
    """``written`` as patched onto ``old`` validates into ``model`` (the same dump back) and
    conforms to the CRD's status schema."""
    assert isinstance(written, model)
    patch = status_patch(old or {}, written)
    stored = {k: v for k, v in {**(old or {}), **patch}.items() if v is not None}
    again = model.model_validate(stored).model_dump(by_alias=True, exclude_none=True, mode="json")
    assert again == stored
    assert violations(stored, status_schema(plural)) == []


def _deployment(ready: int, want: int) -> dict[str, Any]:
    condition = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
    counts = {"replicas": want, "readyReplicas": ready, "availableReplicas": ready}
    return {
        "metadata": {"generation": 1},
        "spec": {"replicas": want},
        "status": {
            "observedGeneration": 1,
            **counts,
            "updatedReplicas": want,
            "conditions": [condition],
        },
    }


@pytest.mark.parametrize(
    ("deployment", "problem"),
    [(_deployment(2, 2), None), (_deployment(1, 2), None), (None, PROBLEM)],
    ids=["ready", "rolling-out", "invalid"],
)
def test_appservice_status(deployment: dict[str, Any] | None, problem: Problem | None) -> None:
    app = _obj("AppService", {"size": 2})
    written = appservice.from_children(
        app,
        size=2,
        deployment=deployment,
        service_expected=True,
        service={"metadata": {"name": "x"}},
        problem=problem,
        selector="app=x",
    )
    _conforms("appservices", AppServiceStatus, written)


def test_appstack_status() -> None:
    stack = _obj("AppStack", {"components": []})
    members = [
        appstack.member(("db", "Middleware/mysql"), True, "1/1", "starting"),
        appstack.waiting(("web", "Component"), "0/2", ["db"]),
        appstack.failed_if(
            appstack.member(("api", "Component"), False, "0/1", "rolling out"), [PROBLEM]
        ),
    ]
    written = appstack.from_members(stack, members, PROBLEM)
    _conforms("appstacks", AppStackStatus, written)
    gone = {**stack, "status": written.to_dict()}
    _conforms("appstacks", AppStackStatus, appstack.deleting(gone, "TearingDown", "deleting"))


def test_crontab_status() -> None:
    tab = _obj("CronTab", {"cronSpec": "*/5 * * * *", "image": "busybox"})
    cron = {
        "spec": {"schedule": "*/5 * * * *"},
        "status": {"active": [{"name": "x-2"}], "lastScheduleTime": "2026-11-25T20:00:00Z"},
    }
    job = {"metadata": {"name": "x-2", "creationTimestamp": "2026-11-25T20:00:00Z"}}
    written = crontab.from_cron_job(tab, cron, None, "now", jobs=[job])
    _conforms("crontabs", CronTabStatus, written)
    _conforms("crontabs", CronTabStatus, crontab.from_cron_job(tab, None, PROBLEM, "now"))


def _etcd_seen(leader: int) -> Observation:
    members = [MemberView(1, "x-0", True, False, True, version="3.6.16")]
    members.append(MemberView(2, "x-1", True, True, False))
    seen = Observed("x", 2, "3.6.16", {}, {}, members, leader, True)
    return Observation(seen, {}, 0xABC, None, {}, {})


def test_etcdcluster_status() -> None:
    obj = _obj("EtcdCluster", {"replicas": 3, "storage": "1Gi"})
    written = etcd.from_observation(obj, _etcd_seen(1), Step("Done", "ok"), "now")
    _conforms("etcdclusters", EtcdClusterStatus, written)
    old = {**written.to_dict(), "lastBackup": "x-0.db", "lastBackupTime": "t", "backupsTaken": 1}
    obj = {**obj, "status": old}
    _conforms("etcdclusters", EtcdClusterStatus, etcd.blocked(obj, PROBLEM, "later"), old)
    _conforms("etcdclusters", EtcdClusterStatus, etcd.invalid(obj, PROBLEM, "later"), old)
    lost = etcd.from_observation(obj, _etcd_seen(0), Step("Degraded", "lost"), "later")
    lost = recover.with_recovery(obj, lost, _etcd_seen(0), Step("Degraded", "lost"), "later")
    _conforms("etcdclusters", EtcdClusterStatus, lost, old)
    recovery = {"phase": "TearingDown", "count": 1, "startedTime": "t", "snapshot": "x-0.db"}
    going = {**obj, "status": {**old, "quorumLostSince": "t", "recovery": recovery}}
    restoring = recover.with_recovery(going, lost, _etcd_seen(0), Step("Restore", "gone"), "t2")
    _conforms("etcdclusters", EtcdClusterStatus, restoring, going["status"])


def test_mongodbcommunity_status() -> None:
    obj = _obj("MongoDBCommunity", {"members": 3, "version": "6.0.5"})
    sts = {
        "metadata": {"generation": 1},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3},
    }
    users = [UserStatus(name="app", db="admin", connection_string_secret_name="x-admin-app")]
    written = mongodb.observed(obj, sts, None, "now", users=users, mongo_uri="mongodb://x-0")
    _conforms("mongodbcommunity", MongoDBCommunityStatus, written)
    failed = mongodb.observed(obj, None, PROBLEM, "now")
    _conforms("mongodbcommunity", MongoDBCommunityStatus, failed)


def test_a_misspelt_or_mistyped_status_field_is_caught() -> None:
    schema = status_schema("appstacks")
    assert violations({"readyMember": "1/1"}, schema) == [
        "status.readyMember: unknown field (pruned by the API server)"
    ]
    bad = {"members": [{"name": "a", "kind": "Component", "ready": "1/1", "state": "Up"}]}
    assert violations(bad, schema) == [
        "status.members[0].state: 'Up' not one of "
        "['WaitingForDependencies', 'Progressing', 'Ready', 'Failed']"
    ]
    with pytest.raises(ValidationError):
        MemberStatus.model_validate(bad["members"][0])
    with pytest.raises(ValidationError):
        AppStackStatus.model_validate({"readyMember": "1/1"})
