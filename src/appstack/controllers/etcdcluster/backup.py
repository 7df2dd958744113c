"""Scheduled and on-demand snapshots of an EtcdCluster onto a PVC or into an S3-compatible
object store, and the restore of a new one (pure).

What runs where: a snapshot is taken by a Job the controller creates when one is due
(on ``schedule``, or ``intervalMinutes`` after the last one: :mod:`.backup_schedule`),
only while the cluster is healthy: its pod runs ``etcdctl snapshot save`` from the
cluster's own image against the leader (through its
peer name on the headless Service) and writes onto the backup PVC, which only a pod can
mount — the operator never touches the files. Retention rotates file names: snapshot
``n`` is ``<cluster>-<n mod retention>.db``, so at most ``retention`` files exist and the
oldest is overwritten (``etcdctl`` writes ``.part`` and renames, so a failed run never
leaves a broken file under a kept name). The Job's pod is placed like the members
(nodeSelector, tolerations, affinity, priority class; not their topologySpreadConstraints).

With ``backup.s3`` the Job's init container saves the snapshot onto an emptyDir and its
container — the operator's own image (``--backup-image``), running ``appstack etcd-backup
upload`` — puts it as ``<prefix><cluster>-<time>.db`` with the credentials of the user's
Secret, then deletes what retention no longer keeps; the operator never holds the
credentials nor talks to the store. The object's key is in the Job's annotation
:data:`SNAPSHOT`, which the reconciler records once the Job completed.

Restore: each bootstrap member of a cluster with ``spec.restore`` gets an init container
running ``etcdutl snapshot restore`` into its empty data directory with the new cluster's
membership (from an S3 object, a first init container downloads it); init containers run
once per pod, and members created later join as usual.
"""

from __future__ import annotations

import datetime
from typing import Any

from appstack.api.etcdcluster import BackupSpec, EtcdClusterSpec, RestoreSpec, S3Target
from appstack.api.etcdcluster_backup import ACCESS_KEY, SECRET_KEY
from appstack.api.kind import group_key
from appstack.controllers.etcdcluster import desired, tls
from appstack.controllers.etcdcluster.backup_schedule import parse_time
from appstack.controllers.util.meta import child_labels
from appstack.sdk import KubeObject, Manifest, child_metadata

BACKUP_DIR = "/backup"
RESTORE_DIR = "/restore"
SNAPSHOT_DIR = "/snapshot"
CA_DIR = "/s3-ca"
#: On a backup Job: the snapshot's name (PVC file or object key) it writes.
SNAPSHOT = group_key("etcd-snapshot")
#: On an EtcdCluster: a token; a new value asks for one snapshot now.
REQUEST = group_key("backup-request")


def object_key(target: S3Target, cluster: str, at: datetime.datetime) -> str:
    """``<prefix><cluster>-<UTC time>.db``: keys sort by time."""
    return f"{target.key_prefix}{cluster}-{at.strftime('%Y%m%dT%H%M%SZ')}.db"


def location(plan: BackupSpec, name: str) -> str:
    if plan.s3 is not None:
        return f"s3://{plan.s3.bucket}/{name}"
    return f"pvc://{plan.pvc_name}/{name}"


def _s3_env(target: S3Target) -> list[dict[str, Any]]:
    ref = target.credentials_secret_name
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": ref, "key": key}}}
        for key in (ACCESS_KEY, SECRET_KEY)
    ]


def _s3_flags(target: S3Target) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The store's flags of ``appstack etcd-backup``, with the CA's volume and mount."""
    flags = [f"--endpoint={target.endpoint}", f"--bucket={target.bucket}"]
    flags.append(f"--region={target.region}")
    if target.ca_secret_name is None:
        return flags, [], []
    volume = {"name": "s3-ca", "secret": {"secretName": target.ca_secret_name}}
    mount = {"name": "s3-ca", "mountPath": CA_DIR, "readOnly": True}
    return [*flags, f"--ca-file={CA_DIR}/ca.crt"], [volume], [mount]


def _tool(
    image: str, name: str, args: list[str], target: S3Target, mounts: list[Any]
) -> dict[str, Any]:
    """A container of the operator's image running ``appstack etcd-backup ...``."""
    return {
        "name": name,
        "image": image,
        "args": ["etcd-backup", *args],
        "env": _s3_env(target),
        "volumeMounts": mounts,
        "securityContext": dict(desired.CONTAINER_SECURITY),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


#: Snapshots listed in ``status.backups`` (newest first).
LISTED = 10
#: Seconds before a failed snapshot is tried again.
RETRY_AFTER = 60.0


def pending_request(obj: KubeObject) -> str:
    """The on-demand request not yet handled (the annotation's value), or ""."""
    asked = str((obj["metadata"].get("annotations") or {}).get(REQUEST) or "")
    handled = (obj.get("status") or {}).get("backupRequest")
    return asked if asked and asked != handled else ""


def retry_after(error: str | None, failed: str | None, now: datetime.datetime) -> float:
    """Seconds until a failed snapshot may be tried again (<= 0: now), from the status's
    ``lastBackupError`` and ``lastBackupFailureTime``."""
    if not error or not failed:
        return 0.0
    return (parse_time(failed) - now).total_seconds() + RETRY_AFTER


def failure(pods: list[dict[str, Any]]) -> str:
    """Why a snapshot Job's pods failed: the termination message (or reason and exit code)
    of the failed container of the newest pod."""
    said = []
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        status = pod.get("status") or {}
        for container in [
            *(status.get("initContainerStatuses") or []),
            *(status.get("containerStatuses") or []),
        ]:
            for state in (container.get("state") or {}, container.get("lastState") or {}):
                done = state.get("terminated") or {}
                if done and done.get("exitCode", 0) != 0:
                    text = (done.get("message") or "").strip().splitlines()
                    reason = f"{done.get('reason', 'Error')}, exit code {done.get('exitCode')}"
                    said.append(f"{container.get('name')}: {text[-1] if text else reason}")
    return said[-1] if said else "the Job failed (its pods are gone: no reason left)"


def job_name(cluster: str, n: int) -> str:
    return f"{cluster}-backup-{n}"


def file_name(cluster: str, n: int, retention: int) -> str:
    return f"{cluster}-{n % retention}.db"


def outcome(job: dict[str, Any]) -> str:
    """``Succeeded``, ``Failed`` or ``Running``, from the Job's conditions."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed"):
            return "Succeeded" if cond["type"] == "Complete" else "Failed"
    return "Running"


def backup_job(
    obj: KubeObject,
    spec: EtcdClusterSpec,
    plan: BackupSpec,
    n: int,
    leader: str,
    *,
    image: str,
    at: datetime.datetime,
) -> Manifest:
    """Job ``n``: ``etcdctl snapshot save`` from member ``leader`` onto the backup PVC, or
    onto an emptyDir and then into the object store (``image``: the operator's, ``at``:
    the time in the object's key)."""
    cluster = obj["metadata"]["name"]
    if plan.s3 is not None:
        name = object_key(plan.s3, cluster, at)
        target = f"{SNAPSHOT_DIR}/snapshot.db"
    else:
        name = file_name(cluster, n, plan.retention)
        target = f"{BACKUP_DIR}/{name}"
    endpoint = desired.client_url(obj, leader)
    labels = child_labels(cluster, "etcd-backup")
    tls_flags, tls_volumes, tls_mounts = tls.etcdctl_flags(spec)
    container: dict[str, Any] = {
        "name": "snapshot",
        "image": spec.image,
        "command": ["etcdctl"],
        "args": [
            f"--endpoints={endpoint}",
            *tls_flags,
            "--command-timeout=60s",
            "snapshot",
            "save",
            target,
        ],
        "volumeMounts": [{"name": "backup", "mountPath": BACKUP_DIR}, *tls_mounts],
        "securityContext": dict(desired.CONTAINER_SECURITY),
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "OnFailure",
        "automountServiceAccountToken": False,  # etcdctl talks to etcd only
        # the members' user: the snapshot is theirs to restore, and restricted namespaces
        # admit the Job (without it no backup would ever run there)
        "securityContext": dict(desired.POD_SECURITY),
        "containers": [container],
        "volumes": [
            {"name": "backup", "persistentVolumeClaim": {"claimName": plan.pvc_name}},
            *tls_volumes,
        ],
        **desired.placement(spec, spread_constraints=False),
    }
    if plan.s3 is not None:  # saved on an emptyDir first, then uploaded
        flags, ca_volumes, ca_mounts = _s3_flags(plan.s3)
        container["volumeMounts"][0] = {"name": "backup", "mountPath": SNAPSHOT_DIR}
        pod_spec["volumes"][0] = {"name": "backup", "emptyDir": {}}
        upload = [
            "upload",
            f"--file={target}",
            f"--key={name}",
            f"--keep-prefix={plan.s3.key_prefix}{cluster}-",
            f"--retention={plan.retention}",
            *([f"--retention-days={plan.retention_days}"] if plan.retention_days else []),
            *flags,
        ]
        mounts = [{"name": "backup", "mountPath": SNAPSHOT_DIR, "readOnly": True}, *ca_mounts]
        pod_spec["initContainers"] = [container]
        pod_spec["containers"] = [_tool(image, "upload", upload, plan.s3, mounts)]
        pod_spec["volumes"] += ca_volumes
        pod_spec["restartPolicy"] = "Never"  # a failed upload is a failed pod: said, retried
    meta = child_metadata(obj, job_name(cluster, n), labels)
    meta["annotations"] = {SNAPSHOT: name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            # an object store's answer (no such bucket, wrong keys) does not change by
            # retrying at once: the operator reports it and tries again a minute later
            "backoffLimit": 0 if plan.s3 is not None else 2,
            "activeDeadlineSeconds": 600,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def restore_init(
    obj: KubeObject, spec: EtcdClusterSpec, source: RestoreSpec, initial: str
) -> dict[str, Any]:
    """The init container that fills a bootstrap member's data directory from the snapshot."""
    return {
        "name": "restore",
        "image": spec.image,
        "command": ["etcdutl"],
        "args": [
            "snapshot",
            "restore",
            f"{RESTORE_DIR}/{source.path if source.s3 is None else 'snapshot.db'}",
            "--name=$(POD_NAME)",
            f"--initial-cluster={initial}",
            f"--initial-cluster-token={desired.cluster_token(obj)}",
            f"--initial-advertise-peer-urls={desired.peer_url(obj, '$(POD_NAME)')}",
            f"--data-dir={desired.DATA_DIR}/data",
        ],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "volumeMounts": [
            {"name": "data", "mountPath": desired.DATA_DIR},
            {"name": "restore", "mountPath": RESTORE_DIR, "readOnly": True},
        ],
        "securityContext": dict(desired.CONTAINER_SECURITY),
    }


def with_restore(
    pod: Manifest, obj: KubeObject, spec: EtcdClusterSpec, source: RestoreSpec, image: str
) -> Manifest:
    """A bootstrap member ``pod`` that first restores the snapshot ``source`` (from an
    object store: downloaded first by the operator's ``image``)."""
    initial = pod["metadata"]["annotations"][desired.INITIAL]
    restore = restore_init(obj, spec, source, initial)
    if source.s3 is None:
        pod["spec"]["initContainers"] = [restore]
        claim = {"claimName": source.pvc_name, "readOnly": True}
        pod["spec"]["volumes"].append({"name": "restore", "persistentVolumeClaim": claim})
        return pod
    flags, ca_volumes, ca_mounts = _s3_flags(source.s3)
    fetch_args = ["download", f"--key={source.s3.key}", f"--to={RESTORE_DIR}/snapshot.db", *flags]
    mounts = [{"name": "restore", "mountPath": RESTORE_DIR}, *ca_mounts]
    fetch = _tool(image, "fetch", fetch_args, source.s3, mounts)
    pod["spec"]["initContainers"] = [fetch, restore]
    pod["spec"]["volumes"] += [{"name": "restore", "emptyDir": {}}, *ca_volumes]
    return pod
