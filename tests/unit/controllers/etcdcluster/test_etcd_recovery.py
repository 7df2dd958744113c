"""The EtcdCluster's disaster-recovery decision (appstack.controllers.etcdcluster.recovery):
when a lost quorum is recovered, from which snapshot, and never without the opt-in."""

from __future__ import annotations

import datetime
from typing import Any, cast

import pytest
from pydantic import ValidationError

from appstack.api.etcdcluster import EtcdCluster, EtcdClusterSpec, EtcdClusterStatus
from appstack.api.etcdcluster_recovery import DisasterRecoverySpec
from appstack.controllers.etcdcluster import desired, recover, recovery
from appstack.controllers.etcdcluster.observe import Observation
from appstack.controllers.etcdcluster.plan import Observed, PodView, Step
from appstack.runtime.leaderelection import NotLeader
from appstack.sdk.kit.compare import status_patch

UTC = datetime.timezone.utc
LOST = datetime.datetime(2026, 11, 25, 20, 0, 0, tzinfo=UTC)
SNAP = recovery.Snapshot("e-1.db", datetime.datetime(2026, 11, 25, 19, 58, 0, tzinfo=UTC))
ON = DisasterRecoverySpec(enabled=True, after="2m")


def at(seconds: float) -> datetime.datetime:
    return LOST + datetime.timedelta(seconds=seconds)


def test_never_without_the_opt_in() -> None:
    for policy in (None, DisasterRecoverySpec(), DisasterRecoverySpec(enabled=False)):
        decision = recovery.decide(policy, LOST, at(86400), SNAP)
        assert decision.kind == "OptIn"
        assert "opt-in" in decision.reason
        assert "spec.disasterRecovery.enabled" in decision.reason


def test_without_a_snapshot_recovery_is_impossible_at_once() -> None:
    decision = recovery.decide(ON, LOST, at(0), None)
    assert decision.kind == "Impossible"
    assert "recovery impossible" in decision.reason
    assert "no snapshot" in decision.reason


def test_waits_for_after_then_recovers_from_the_newest_snapshot() -> None:
    waiting = recovery.decide(ON, LOST, at(30), SNAP)
    assert waiting.kind == "Waiting"
    assert waiting.wait == 90
    assert "e-1.db" in waiting.reason
    assert recovery.decide(ON, LOST, at(119.9), SNAP).kind == "Waiting"
    decision = recovery.decide(ON, LOST, at(120), SNAP)
    assert decision.kind == "Recover"
    assert decision.snapshot == SNAP
    # the data-loss window: the snapshot's age when recovery starts (2 min before the loss)
    assert "240s old" in decision.reason
    assert "2026-11-25T19:58:00Z" in decision.reason
    assert recovery.decide(DisasterRecoverySpec(enabled=True), LOST, at(299), SNAP).kind == (
        "Waiting"  # the default after: 5m
    )


def test_the_newest_snapshot_is_the_last_completed_backup() -> None:
    assert recovery.newest_snapshot({}) is None
    assert recovery.newest_snapshot({"lastBackup": "e-1.db"}) is None  # no time: not complete
    found = recovery.newest_snapshot(
        {"backupsTaken": 5, "lastBackup": "e-1.db", "lastBackupTime": "2026-11-25T19:58:00Z"}
    )
    assert found == SNAP


def test_quorum_lost_since_is_set_once_and_cleared_by_a_leader() -> None:
    now = "2026-11-25T20:00:00Z"
    assert recovery.lost_since({}, degraded=False, leader=False, now=now) is None
    assert recovery.lost_since({}, degraded=True, leader=False, now=now) == now
    earlier = {"quorumLostSince": "2026-11-25T19:59:00Z"}
    assert recovery.lost_since(earlier, degraded=True, leader=False, now=now) == (
        "2026-11-25T19:59:00Z"
    )
    assert recovery.lost_since(earlier, degraded=False, leader=False, now=now) == (
        "2026-11-25T19:59:00Z"  # an election under way: still lost since then
    )
    assert recovery.lost_since(earlier, degraded=False, leader=True, now=now) is None


def test_the_opt_in_needs_a_backup_and_a_duration() -> None:
    """Validated as whole EtcdClusters, as admission validates them (CEL rules too)."""

    def spec(**fields: Any) -> EtcdClusterSpec:
        obj = {"metadata": {"name": "e"}, "spec": {"replicas": 3, "storage": "1Gi", **fields}}
        return EtcdCluster.model_validate(obj).spec

    with pytest.raises(ValidationError, match=r"disasterRecovery\.enabled needs backup") as caught:
        spec(disasterRecovery={"enabled": True})
    where = ("spec", "disasterRecovery", "enabled")
    assert [e["loc"] for e in caught.value.errors()] == [where]
    off = spec(disasterRecovery={"enabled": False})
    assert off.disaster_recovery is not None
    backup = {"intervalMinutes": 60, "pvcName": "snaps"}
    with pytest.raises(ValidationError, match="after") as caught:
        spec(backup=backup, disasterRecovery={"enabled": True, "after": "soon"})
    assert [e["loc"] for e in caught.value.errors()] == [("spec", "disasterRecovery", "after")]
    on = spec(backup=backup, disasterRecovery={"enabled": True, "after": "1h30m"})
    assert on.disaster_recovery == DisasterRecoverySpec(enabled=True, after="1h30m")


def test_a_recovered_cluster_bootstraps_under_a_new_token() -> None:
    obj = {"metadata": {"name": "e", "uid": "u-1"}}
    assert desired.cluster_token(obj) == "e-u-1"
    recovered = {**obj, "status": {"recovery": {"count": 2}}}
    assert desired.cluster_token(recovered) == "e-u-1-2"


def observation(pods: dict[str, bool], volumes: dict[str, bool], leader: int = 0) -> Observation:
    """An observation of pods and volumes (name -> being deleted)."""
    views = {
        n: PodView(n, "10.0.0.1", ready=False, version="3.6.16", deleting=d)
        for n, d in pods.items()
    }
    seen = Observed("e", 3, "3.6.16", views, volumes, None, leader=leader)
    return Observation(seen, {}, 0, None, {}, {})


def test_tear_down_deletes_everything_of_the_lost_cluster_then_restores() -> None:
    step = recover.tear_down_step(
        observation({"e-0": False}, {"data-e-0": False, "data-e-1": False})
    )
    assert (step.kind, step.pods) == ("TearDown", ("e-0", "e-1"))
    step = recover.tear_down_step(observation({"e-0": True}, {"data-e-0": True}))
    assert step.kind == "Wait"  # going, not gone
    assert recover.tear_down_step(observation({}, {})).kind == "Restore"


STARTED = {
    "phase": "TearingDown",
    "count": 1,
    "snapshot": "e-1.db",
    "snapshotTime": "2026-11-25T19:58:00Z",
    "dataLossSeconds": 240,
    "quorumLostSince": "2026-11-25T20:00:00Z",
    "startedTime": "2026-11-25T20:02:00Z",
}


def cluster(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "e", "uid": "u-1"}, "status": status}


def _with_recovery(
    old: dict[str, Any], observed: dict[str, Any], seen: Observation, step: Step, now: str
) -> dict[str, Any]:
    """The status patch :func:`recover.with_recovery` makes of ``observed``."""
    out = recover.with_recovery(
        cluster(old), EtcdClusterStatus.model_validate(observed), seen, step, now
    )
    return status_patch(old, out)


def test_status_walks_the_recovery_through_its_phases() -> None:
    now = "2026-11-25T20:02:30Z"
    lost = _with_recovery(
        {"clusterID": "abc"},
        {"clusterID": "abc"},
        observation({"e-0": False}, {}),
        Step("Degraded", "quorum lost"),
        now,
    )
    assert lost["quorumLostSince"] == now
    old = {"clusterID": "abc", "quorumLostSince": "x", "recovery": STARTED}
    restoring = _with_recovery(
        old,
        {"clusterID": "abc", "members": [{"name": "e-0", "id": "a1"}]},
        observation({}, {}),
        Step("Restore", "gone"),
        now,
    )
    assert restoring["recovery"]["phase"] == "Restoring"
    assert restoring["clusterID"] is None  # removed: the plan bootstraps a new cluster
    assert restoring["members"] == []
    assert restoring["quorumLostSince"] is None
    done = _with_recovery(
        {"recovery": restoring["recovery"]},
        {"clusterID": "def"},
        observation({"e-0": False}, {}, leader=7),
        Step("Done", "3 healthy members"),
        "2026-11-25T20:03:00Z",
    )
    assert done["recovery"]["phase"] == "Recovered"
    assert done["recovery"]["secondsToRecover"] == 60
    assert done["clusterID"] == "def"
    assert "quorumLostSince" not in done


def test_only_a_recovery_under_way_restores_its_snapshot() -> None:
    spec = EtcdClusterSpec.model_validate(
        {"replicas": 3, "storage": "1Gi", "backup": {"intervalMinutes": 60, "pvcName": "snaps"}}
    )
    assert recover.restore_source(cluster({"recovery": STARTED}), spec) is None
    restoring = cluster({"recovery": {**STARTED, "phase": "Restoring"}})
    source = recover.restore_source(restoring, spec)
    assert source is not None
    assert (source.pvc_name, source.path) == ("snaps", "e-1.db")
    done = cluster({"recovery": {**STARTED, "phase": "Recovered"}})
    assert recover.restore_source(done, spec) is None


class _Writer:
    """Records what a recovery writes (status, events) instead of sending it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def write_status(self, obj: dict[str, Any], status: dict[str, Any]) -> None:
        self.calls.append("status")

    async def event(self, obj: dict[str, Any], type_: str, reason: str, note: str) -> None:
        self.calls.append(reason)


class _Client:
    def __init__(self, guard: Any) -> None:
        self.write_guard = guard


def _refuse() -> float:
    raise NotLeader("may no longer hold the Lease")


async def test_a_recovery_starts_only_behind_the_leader_fence() -> None:
    spec = EtcdClusterSpec.model_validate(
        {
            "replicas": 3,
            "storage": "1Gi",
            "backup": {"intervalMinutes": 60, "pvcName": "snaps"},
            "disasterRecovery": {"enabled": True, "after": "1m"},
        }
    )
    obj = cluster(
        {
            "quorumLostSince": "2026-11-25T20:00:00Z",
            "lastBackup": "e-1.db",
            "lastBackupTime": "2026-11-25T19:58:00Z",
        }
    )
    lost = Step("Degraded", "quorum lost")
    writer = _Writer()
    fenced = recover.Recoverer(cast(Any, _Client(_refuse)), cast(Any, None), cast(Any, writer))
    with pytest.raises(NotLeader):
        await fenced.quorum_lost(obj, spec, lost, at(120))
    assert writer.calls == []  # nothing recorded, nothing deleted
    leader = recover.Recoverer(cast(Any, _Client(lambda: 10.0)), cast(Any, None), cast(Any, writer))
    step, problem = await leader.quorum_lost(obj, spec, lost, at(120))
    assert (step.kind, problem) == ("TearDown", None)
    assert writer.calls == ["status", "DisasterRecovery"]  # recorded before any deletion
