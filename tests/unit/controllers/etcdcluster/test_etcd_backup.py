"""EtcdCluster snapshots and restore (pure): the Job, rotation, restore (when one is due:
test_etcd_backup_schedule.py)."""

from __future__ import annotations

import datetime
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


IMG = "registry.example.com/appstack:1.2.3"
AT = datetime.datetime(2026, 11, 27, 3, 0, 5, tzinfo=datetime.timezone.utc)
S3 = {
    "endpoint": "https://s3.example.com",
    "bucket": "snaps",
    "prefix": "etcd/prod/",
    "credentialsSecretName": "s3-creds",
    "caSecretName": "s3-ca",
}


SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "e"}},
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
        tolerations=[{"key": "a", "operator": "Exists"}],
        topologySpreadConstraints=[SPREAD],
    )
    assert wanted.backup is not None
    job = backup.backup_job(OBJ, wanted, wanted.backup, 3, "e-1", image=IMG, at=AT)
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
    assert pod["tolerations"] == [{"key": "a", "operator": "Exists"}]
    # the members' spread constraints are theirs: a lone Job pod they do not select has none
    assert "topologySpreadConstraints" not in pod
    assert "affinity" not in pod  # nor the members' default anti-affinity
    assert pod["restartPolicy"] == "OnFailure"


def test_bootstrap_members_of_a_restored_cluster_restore_first() -> None:
    wanted = spec(restore={"pvcName": "snaps", "path": "old-0.db"})
    assert wanted.restore is not None
    initial = {"e-0": desired.peer_url(OBJ, "e-0"), "e-1": desired.peer_url(OBJ, "e-1")}
    pod = desired.member_pod(OBJ, wanted, "e-1", initial, new_cluster=True, voter=True)
    pod = backup.with_restore(pod, OBJ, wanted, wanted.restore, IMG)
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
    job = backup.backup_job(obj, spec, plan, 0, "e-0", image=IMG, at=AT)["spec"]["template"]["spec"]
    assert job["securityContext"] == desired.POD_SECURITY
    assert job["containers"][0]["securityContext"] == desired.CONTAINER_SECURITY
    source = RestoreSpec.model_validate({"pvcName": "snaps", "path": "e-0.db"})
    init = backup.restore_init(obj, spec, source, "e-0=http://e-0.e.ns.svc:2380")
    assert init["securityContext"] == desired.CONTAINER_SECURITY


def test_an_s3_backup_saves_onto_an_empty_dir_then_uploads_with_the_users_secret() -> None:
    wanted = spec(backup={"schedule": "@hourly", "s3": S3, "retention": 5, "retentionDays": 7})
    assert wanted.backup is not None
    job = backup.backup_job(OBJ, wanted, wanted.backup, 4, "e-2", image=IMG, at=AT)
    key = "etcd/prod/e-20261127T030005Z.db"
    assert job["metadata"]["annotations"] == {backup.SNAPSHOT: key}
    pod = job["spec"]["template"]["spec"]
    (save,) = pod["initContainers"]
    assert save["args"][-1] == "/snapshot/snapshot.db"
    assert save["volumeMounts"][0] == {"name": "backup", "mountPath": "/snapshot"}
    (upload,) = pod["containers"]
    assert upload["image"] == IMG
    assert upload["args"] == [
        "etcd-backup",
        "upload",
        "--file=/snapshot/snapshot.db",
        f"--key={key}",
        "--keep-prefix=etcd/prod/e-",
        "--retention=5",
        "--retention-days=7",
        "--endpoint=https://s3.example.com",
        "--bucket=snaps",
        "--region=us-east-1",
        "--ca-file=/s3-ca/ca.crt",
    ]
    # the credentials are referenced, never read by the operator
    assert [e["valueFrom"]["secretKeyRef"] for e in upload["env"]] == [
        {"name": "s3-creds", "key": "AWS_ACCESS_KEY_ID"},
        {"name": "s3-creds", "key": "AWS_SECRET_ACCESS_KEY"},
    ]
    assert upload["securityContext"] == desired.CONTAINER_SECURITY
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 0  # reported at once, retried by the operator
    assert {"name": "backup", "emptyDir": {}} in pod["volumes"]
    assert {"name": "s3-ca", "secret": {"secretName": "s3-ca"}} in pod["volumes"]
    assert backup.location(wanted.backup, key) == f"s3://snaps/{key}"


def test_a_member_restored_from_s3_downloads_the_object_first() -> None:
    wanted = spec(restore={"s3": {**S3, "key": "etcd/prod/e-20261127T030005Z.db"}})
    assert wanted.restore is not None
    pod = desired.member_pod(OBJ, wanted, "e-0", {"e-0": "x"}, new_cluster=True, voter=True)
    pod = backup.with_restore(pod, OBJ, wanted, wanted.restore, IMG)
    fetch, restore = pod["spec"]["initContainers"]
    assert fetch["image"] == IMG
    assert fetch["args"][:3] == [
        "etcd-backup",
        "download",
        "--key=etcd/prod/e-20261127T030005Z.db",
    ]
    assert "--to=/restore/snapshot.db" in fetch["args"]
    assert restore["args"][2] == "/restore/snapshot.db"
    assert {"name": "restore", "emptyDir": {}} in pod["spec"]["volumes"]


def test_on_demand_requests_retries_and_failures() -> None:
    obj = {**OBJ, "metadata": {**OBJ["metadata"], "annotations": {backup.REQUEST: "now-1"}}}
    assert backup.pending_request(obj) == "now-1"
    assert backup.pending_request({**obj, "status": {"backupRequest": "now-1"}}) == ""
    assert backup.pending_request(OBJ) == ""
    failed = "2026-11-27T03:00:00Z"
    assert backup.retry_after("x", failed, AT) == 55.0
    assert backup.retry_after("", failed, AT) == 0.0
    pods = [
        {
            "metadata": {"creationTimestamp": "2026-11-27T03:00:00Z"},
            "status": {
                "initContainerStatuses": [
                    {"name": "snapshot", "state": {"terminated": {"exitCode": 0}}}
                ],
                "containerStatuses": [
                    {
                        "name": "upload",
                        "state": {
                            "terminated": {
                                "exitCode": 1,
                                "reason": "Error",
                                "message": "NoSuchBucket: The specified bucket does not exist",
                            }
                        },
                    }
                ],
            },
        }
    ]
    assert backup.failure(pods) == "upload: NoSuchBucket: The specified bucket does not exist"
    assert "no reason left" in backup.failure([])


def test_pull_secrets_reach_members_and_backup_jobs_alike() -> None:
    wanted = spec(
        imagePullSecrets=[{"name": "regcred"}],
        backup={"schedule": "@hourly", "s3": S3},
    )
    assert wanted.backup is not None
    member = desired.member_pod(OBJ, wanted, "e-0", {"e-0": "x"}, new_cluster=True, voter=True)
    assert member["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    job = backup.backup_job(OBJ, wanted, wanted.backup, 0, "e-0", image=IMG, at=AT)
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
