"""EtcdCluster snapshots and restore (pure): the Job, rotation, restore (when one is due:
test_etcd_backup_schedule.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.etcdcluster import EtcdClusterSpec, RestoreSpec
from appstack.api.etcdcluster_backup import BackupSpec
from appstack.controllers.etcdcluster import backup, desired

OBJ: dict[str, Any] = {
    "apiVersion": "appstack.dev/v1",
    "kind": "EtcdCluster",
    "metadata": {"name": "e", "namespace": "ns", "uid": "u-1"},
}


def spec(**extra: Any) -> EtcdClusterSpec:
    return EtcdClusterSpec.model_validate({"replicas": 3, "storage": "1Gi", **extra})


def test_retention_rotates_file_names() -> None:
    names = [backup.file_name("e", n, 3) for n in range(5)]
    assert names == ["e-0.db", "e-1.db", "e-2.db", "e-0.db", "e-1.db"]


def test_job_outcome_from_conditions() -> None:
    assert backup.outcome({}) == "Running"
    complete = {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert backup.outcome(complete) == "Succeeded"
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert backup.outcome(failed) == "Failed"


def test_the_snapshot_job_saves_from_the_leader_onto_the_pvc_placed_like_members() -> None:
    wanted = spec(
        backup={"intervalMinutes": 30, "pvcName": "snaps", "retention": 2},
        nodeSelector={"a": "b"},
    )
    assert wanted.backup is not None
    job = backup.backup_job(OBJ, wanted, wanted.backup, 3, "e-1")
    assert job["metadata"]["name"] == "e-backup-3"
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] == ["etcdctl"]
    assert container["args"] == [
        "--endpoints=http://e-1.e.ns.svc:2379",
        "--command-timeout=60s",
        "snapshot",
        "save",
        "/backup/e-1.db",
    ]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "snaps"
    assert pod["nodeSelector"] == {"a": "b"}
    assert pod["restartPolicy"] == "OnFailure"


def test_bootstrap_members_of_a_restored_cluster_restore_first() -> None:
    wanted = spec(restore={"pvcName": "snaps", "path": "old-0.db"})
    assert wanted.restore is not None
    initial = {"e-0": desired.peer_url(OBJ, "e-0"), "e-1": desired.peer_url(OBJ, "e-1")}
    pod = desired.member_pod(OBJ, wanted, "e-1", initial, new_cluster=True, voter=True)
    pod = backup.with_restore(pod, OBJ, wanted, wanted.restore)
    (init,) = pod["spec"]["initContainers"]
    assert init["command"] == ["etcdutl"]
    assert init["args"][:3] == ["snapshot", "restore", "/restore/old-0.db"]
    assert (
        "--initial-cluster=e-0=http://e-0.e.ns.svc:2380,e-1=http://e-1.e.ns.svc:2380"
        in (init["args"])
    )
    assert "--data-dir=/var/lib/etcd/data" in init["args"]
    assert {
        "name": "restore",
        "persistentVolumeClaim": {"claimName": "snaps", "readOnly": True},
    } in (pod["spec"]["volumes"])


def test_backup_and_restore_fields_are_validated() -> None:
    with pytest.raises(ValidationError, match="intervalMinutes"):
        spec(backup={"intervalMinutes": 0, "pvcName": "s"})
    with pytest.raises(ValidationError, match="path"):
        spec(restore={"pvcName": "s", "path": "../etc/passwd"})


def test_backup_jobs_and_the_restore_run_as_the_members_user_under_restricted() -> None:
    """A snapshot the Job writes is one the restore can read (the same user), and a
    namespace enforcing the restricted Pod Security level admits both (found on the real
    node: a root Job's 0600 snapshot, then 'permission denied' for the restore)."""
    obj = {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": "e", "namespace": "ns", "uid": "u"},
        "spec": {},
    }
    spec = EtcdClusterSpec.model_validate({"replicas": 3, "storage": "1Gi"})
    plan = BackupSpec.model_validate({"intervalMinutes": 60, "pvcName": "snaps"})
    job = backup.backup_job(obj, spec, plan, 0, "e-0")["spec"]["template"]["spec"]
    assert job["securityContext"] == desired.POD_SECURITY
    assert job["containers"][0]["securityContext"] == desired.CONTAINER_SECURITY
    source = RestoreSpec.model_validate({"pvcName": "snaps", "path": "e-0.db"})
    init = backup.restore_init(obj, spec, source, "e-0=http://e-0.e.ns.svc:2380")
    assert init["securityContext"] == desired.CONTAINER_SECURITY
