"""``EtcdCluster`` (short name ``etcd``): a managed etcd cluster of real members.

The seed's example (``replicas: 3``, ``storage: 10Gi``) is valid as written, under
``appstack.dev/v1``. Replicas are odd (1, 3, 5, 7, 9): an even count tolerates no more
failures than the odd count below it while needing a larger quorum, so it is refused at
admission unless ``allowEvenReplicas`` says it is meant. Everything decidable from the
object alone is a CEL rule with a field-level message. ``tls`` (optional, set at
creation) names the Secrets of peer and client TLS. Where members run (``nodeSelector``,
``tolerations``, ``affinity``, ``topologySpreadConstraints``) is the SDK's ``PodScheduling``:
the same fields, bounds and rules as AppService's; only the default of ``affinity`` is
EtcdCluster's own (members prefer different nodes). Types only, no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from appstack.api.etcdcluster_backup import BackupSpec, S3Target
from appstack.api.etcdcluster_maintenance import MaintenanceFields
from appstack.api.etcdcluster_recovery import (
    RECOVERY_RULES,
    DisasterRecoverySpec,
    RecoveryStatus,
)
from appstack.api.etcdcluster_version import VERSION_RULES
from appstack.api.kind import custom_kind
from appstack.sdk import (
    AGE,
    DNS_1035,
    Condition,
    CustomObject,
    KubeModel,
    ObjectName,
    PodScheduling,
    PullSecrets,
    Quantity,
    ResourceRequirements,
    name_rules,
)

# Versions with a release the operator knows how to run (etcd's own images are tagged vX.Y.Z).
VERSION_PATTERN = r"^3\.[56]\.[0-9]+$"
DEFAULT_VERSION = "3.6.16"
DEFAULT_IMAGE = "gcr.io/etcd-development/etcd"

_SPEC_RULES: list[Any] = [
    {
        "rule": "self.replicas % 2 == 1 || self.allowEvenReplicas",
        "message": "replicas must be odd (an even count tolerates no more failures than one "
        "member fewer); set allowEvenReplicas to run an even count anyway",
        "fieldPath": ".replicas",
    },
    {
        "rule": "has(self.restore) == has(oldSelf.restore) && "
        "(!has(self.restore) || self.restore == oldSelf.restore)",
        "message": "restore is set when the cluster is created and never changed",
        "fieldPath": ".restore",
    },
    *VERSION_RULES,  # no minor downgrade, no skipped minor
    {
        "rule": "has(self.tls) == has(oldSelf.tls) && (!has(self.tls) || self.tls == oldSelf.tls)",
        "message": "tls is set when the cluster is created and never changed (rotate "
        "certificates by updating the Secrets in place)",
        "fieldPath": ".tls",
    },
    *RECOVERY_RULES,  # disaster recovery needs backups
]

_TLS_RULES: list[Any] = [
    {
        "rule": "has(self.peerSecretName) || has(self.clientSecretName)",
        "message": "tls needs peerSecretName, clientSecretName or both",
        "fieldPath": ".peerSecretName",
    },
    {
        "rule": "has(self.clientSecretName) == has(self.operatorSecretName)",
        "message": "client TLS needs both clientSecretName (the members' serving certificate) "
        "and operatorSecretName (the client certificate the operator presents)",
        "fieldPath": ".operatorSecretName",
    },
]


_RESTORE_RULES: list[Any] = [
    {
        "rule": "has(self.pvcName) ? has(self.path) && !has(self.s3) : has(self.s3)",
        "message": "restore needs pvcName and path (a snapshot file on a PVC), or s3 (an "
        "object in a store)",
        "fieldPath": ".pvcName",
    },
]


class S3Object(S3Target):
    """One snapshot in an S3-compatible object store."""

    key: str = Field(
        max_length=1024,
        pattern=r"^[A-Za-z0-9!_.*'()/-]+\.db$",
        description="The object's key, prefix included, e.g. "
        "etcd/prod/my-etcd-cluster-20261127T030000Z.db (status.backups lists them).",
    )


class RestoreSpec(KubeModel):
    """Start a new cluster from a snapshot instead of empty (at creation only): a file on a
    PVC, or an object in an S3-compatible store."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _RESTORE_RULES})

    pvc_name: ObjectName | None = Field(
        default=None, description="PersistentVolumeClaim holding the snapshot."
    )
    path: str | None = Field(
        default=None,
        max_length=253,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="The snapshot's file name on that PVC, e.g. my-etcd-cluster-0.db.",
    )
    s3: S3Object | None = Field(default=None, description="The snapshot in an object store.")


class TLSSpec(KubeModel):
    """TLS of member traffic from Secrets of type ``kubernetes.io/tls`` with keys
    ``ca.crt``, ``tls.crt`` and ``tls.key``; peer and client TLS are independent."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _TLS_RULES})

    peer_secret_name: ObjectName | None = Field(
        default=None,
        description="Peer TLS: each member's certificate for peer traffic (server and client "
        "auth) and the CA peers must be signed by.",
    )
    client_secret_name: ObjectName | None = Field(
        default=None,
        description="Client TLS: the certificate members serve clients with, and the CA "
        "client certificates must be signed by (client certificates are required).",
    )
    operator_secret_name: ObjectName | None = Field(
        default=None,
        description="The client certificate the operator (and backup Jobs) present, and the "
        "CA it verifies the members' serving certificate with; required with client TLS.",
    )


class EtcdClusterSpec(MaintenanceFields, PodScheduling):
    """The desired etcd cluster, day-2 fields (compaction, quota, defragmentation...) included."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _SPEC_RULES})
    __scheduling_defaults__: ClassVar[dict[str, str]] = {
        "affinity": "Default: members prefer different nodes (a preferred pod anti-affinity "
        "on kubernetes.io/hostname); set, it replaces that default.",
    }

    replicas: int = Field(3, ge=1, le=9, description="Members (odd; see allowEvenReplicas).")
    allow_even_replicas: bool = Field(
        False, description="Accept an even replica count (no extra fault tolerance)."
    )
    version: str = Field(
        DEFAULT_VERSION,
        pattern=VERSION_PATTERN,
        description="etcd version, e.g. 3.6.16; changed one member at a time, leader last. "
        "A minor version goes up one at a time (3.5 -> 3.6) and never down (refused).",
    )
    repository: str = Field(
        DEFAULT_IMAGE,
        max_length=512,
        pattern=r"^[a-z0-9.:/_-]+$",
        description="Image repository; the image is <repository>:v<version>.",
    )
    storage: Quantity = Field(description="Size of each member's data volume, e.g. 10Gi.")
    storage_class_name: ObjectName | None = Field(
        default=None,
        description="StorageClass of the data volumes (default: the cluster's default).",
    )
    retain_on_delete: bool = Field(
        False,
        description="Keep the members' data volumes (PVCs data-<name>-<n>) when the "
        "EtcdCluster is deleted: they have no owner while this is true and stay, never adopted "
        "by another cluster. Default false: they are deleted with the cluster (garbage "
        "collected through their owner). Changing it re-owns or releases the existing volumes.",
    )
    resources: ResourceRequirements | None = Field(
        default=None, description="Member container resources."
    )
    priority_class_name: ObjectName | None = Field(
        default=None, description="PriorityClass of members."
    )
    image_pull_secrets: PullSecrets | None = Field(
        default=None,
        description="Secrets of the namespace for pulling the images of members, backup Jobs "
        "and restores (etcd's, and the operator's own for S3 uploads) from a private "
        "registry; new pods get them (running members keep theirs until they restart).",
    )
    backup: BackupSpec | None = Field(default=None, description="Scheduled snapshots (optional).")
    restore: RestoreSpec | None = Field(
        default=None, description="Bootstrap from this snapshot (set at creation, never changed)."
    )
    disaster_recovery: DisasterRecoverySpec | None = Field(
        default=None,
        description="Opt-in: rebuild from the newest snapshot once quorum has been lost for "
        "a stated time (needs backup). Default: quorum loss is reported, never recovered.",
    )
    tls: TLSSpec | None = Field(
        default=None,
        description="TLS for peer and/or client traffic (set at creation; default plain).",
    )

    @property
    def image(self) -> str:
        return f"{self.repository}:v{self.version}"


class EtcdMember(KubeModel):
    """One member as etcd reports it."""

    name: str = Field(description="Member (and pod) name.")
    id: str = Field(description="Member ID (hex).")
    peer_url: str | None = Field(default=None, alias="peerURL")
    healthy: bool = False
    is_leader: bool = False
    is_learner: bool = False
    version: str | None = None
    db_size: int | None = Field(default=None, description="Bytes of its database file.")
    db_size_in_use: int | None = Field(
        default=None, description="Bytes of the file holding data (the rest is free space)."
    )


class DefragmentedMember(KubeModel):
    """One member of a defragmentation run."""

    name: str
    before_bytes: int = Field(description="Database file size before.")
    after_bytes: int = Field(description="Database file size after.")


class DefragmentationStatus(KubeModel):
    """The last defragmentation run (scheduled, or of a NOSPACE recovery)."""

    last_time: str | None = Field(default=None, description="When the last complete run ended.")
    reclaimed_bytes: int | None = Field(default=None, description="Bytes it gave back.")
    members: list[DefragmentedMember] | None = Field(
        default=None, description="The members it defragmented, in order (leader last)."
    )
    result: str | None = Field(
        default=None, description="Complete, or why the last run stopped before the end."
    )


class BackupRecord(KubeModel):
    """One snapshot taken."""

    name: str = Field(description="File name on the PVC, or the object's key.")
    location: str = Field(description="pvc://<claim>/<file> or s3://<bucket>/<key>.")
    time: str = Field(description="When its Job completed.")
    requested: bool | None = Field(
        default=None, description="Taken on demand (the backup-request annotation)."
    )


class EtcdClusterStatus(KubeModel):
    """The observed cluster, written by the operator."""

    members: list[EtcdMember] | None = None
    replicas: int | None = Field(default=None, description="Members (voters and learners; scale).")
    selector: str | None = Field(
        default=None, description="Label selector of the member pods (scale)."
    )
    ready_members: int | None = Field(default=None, description="Healthy voting members.")
    leader: str | None = Field(default=None, description="Name of the leader.")
    cluster_id: str | None = Field(
        default=None, alias="clusterID", description="etcd cluster ID (hex)."
    )
    client_url: str | None = Field(
        default=None, alias="clientURL", description="Where clients connect (the client Service)."
    )
    version: str | None = Field(default=None, description="Lowest member version.")
    phase: str | None = Field(default=None, description="What the operator is doing now.")
    backups_taken: int | None = Field(default=None, description="Snapshots taken so far.")
    backups: list[BackupRecord] | None = Field(
        default=None, description="The newest snapshots taken (newest first, at most 10)."
    )
    backup_request: str | None = Field(
        default=None,
        description="The last on-demand backup request handled (the value of the annotation "
        "appstack.dev/backup-request), and with what result.",
    )
    last_backup_error: str | None = Field(
        default=None, description="Why the last snapshot failed (empty once one succeeds)."
    )
    last_backup_failure_time: str | None = Field(
        default=None, description="When it failed (it is tried again a minute later)."
    )
    last_backup: str | None = Field(default=None, description="File name of the newest snapshot.")
    last_backup_time: str | None = Field(default=None, description="When it was taken.")
    quorum_lost_since: str | None = Field(
        default=None, description="When quorum was found lost (gone once a leader is back)."
    )
    recovery: RecoveryStatus | None = Field(default=None, description="The last disaster recovery.")
    defragmentation: DefragmentationStatus | None = Field(
        default=None, description="The last defragmentation."
    )
    alarms: list[str] | None = Field(
        default=None, description="Alarms etcd has raised (NOSPACE, CORRUPT); empty: none."
    )
    observed_generation: int | None = None
    conditions: list[Condition] | None = Field(
        default=None,
        description="Available, Progressing, Degraded.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="etcdclusters",
    short_names=("etcd",),
    subresources={
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    },
    printer_columns=(
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyMembers"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Version", "type": "string", "jsonPath": ".status.version"},
        {"name": "Leader", "type": "string", "jsonPath": ".status.leader"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
        AGE,
    ),
)
class EtcdCluster(CustomObject):
    """An etcd cluster: member pods, their volumes, Services and a PodDisruptionBudget."""

    NAME_RULES = name_rules(
        DNS_1035, 40, "it names the Services, and members add a dash and an index to it"
    )

    spec: EtcdClusterSpec
    status: EtcdClusterStatus | None = None


__all__ = [
    "BackupRecord",
    "BackupSpec",
    "DisasterRecoverySpec",
    "EtcdCluster",
    "EtcdClusterSpec",
    "EtcdClusterStatus",
    "S3Object",
    "S3Target",
    "TLSSpec",
]
