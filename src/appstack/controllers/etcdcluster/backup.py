"""Scheduled snapshots of an EtcdCluster onto a PVC, and the restore of a new one (pure).

What runs where: a snapshot is taken by a Job the controller creates when one is due
(on ``schedule``, or ``intervalMinutes`` after the last one: :mod:`.backup_schedule`),
only while the cluster is healthy: its pod runs ``etcdctl snapshot save`` from the
cluster's own image against the leader (through its
peer name on the headless Service) and writes onto the backup PVC, which only a pod can
mount — the operator never touches the files. Retention rotates file names: snapshot
``n`` is ``<cluster>-<n mod retention>.db``, so at most ``retention`` files exist and the
oldest is overwritten (``etcdctl`` writes ``.part`` and renames, so a failed run never
leaves a broken file under a kept name). The Job's pod is placed like the members
(nodeSelector, tolerations, affinity, priority class).

Restore: each bootstrap member of a cluster with ``spec.restore`` gets an init container
running ``etcdutl snapshot restore`` into its empty data directory with the new cluster's
membership; init containers run once per pod, and members created later join as usual.
"""

from __future__ import annotations

from typing import Any

from appstack.api.etcdcluster import BackupSpec, EtcdClusterSpec, RestoreSpec
from appstack.controllers.etcdcluster import desired, tls
from appstack.controllers.util.meta import child_labels
from appstack.sdk.kit.kubeobject import KubeObject
from appstack.sdk.kit.meta import child_metadata
from appstack.sdk.kit.parts import Manifest

BACKUP_DIR = "/backup"
RESTORE_DIR = "/restore"


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
    obj: KubeObject, spec: EtcdClusterSpec, plan: BackupSpec, n: int, leader: str
) -> Manifest:
    """Job ``n``: ``etcdctl snapshot save`` from member ``leader`` onto the backup PVC."""
    cluster = obj["metadata"]["name"]
    target = f"{BACKUP_DIR}/{file_name(cluster, n, plan.retention)}"
    endpoint = desired.client_url(obj, leader)
    labels = child_labels(cluster, "etcd-backup")
    tls_flags, tls_volumes, tls_mounts = tls.etcdctl_flags(spec)
    container = {
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
    pod_spec = {
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
        **desired.placement(spec),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": child_metadata(obj, job_name(cluster, n), labels),
        "spec": {
            "backoffLimit": 2,
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
            f"{RESTORE_DIR}/{source.path}",
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
    pod: Manifest, obj: KubeObject, spec: EtcdClusterSpec, source: RestoreSpec
) -> Manifest:
    """A bootstrap member ``pod`` that first restores the snapshot ``source``."""
    initial = pod["metadata"]["annotations"][desired.INITIAL]
    pod["spec"]["initContainers"] = [restore_init(obj, spec, source, initial)]
    claim = {"claimName": source.pvc_name, "readOnly": True}
    pod["spec"]["volumes"].append({"name": "restore", "persistentVolumeClaim": claim})
    return pod
