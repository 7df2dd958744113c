"""EtcdCluster → the objects it wants: Services, PodDisruptionBudget, member pods and
their volumes (pure, unit-tested).

Members are pods the controller creates one by one (not a StatefulSet: see
docs/design.md, "EtcdCluster"), named ``<cluster>-<index>``, each with its own
PersistentVolumeClaim ``data-<pod>``. The headless Service ``<cluster>`` gives every
member the stable peer name ``<pod>.<cluster>.<namespace>.svc``; the client Service
``<cluster>-client`` selects voting members only (label ``appstack.dev/etcd-voter``:
learners refuse client requests); the PodDisruptionBudget keeps a quorum of the wanted
members. URLs are ``https`` where ``spec.tls`` says so (:mod:`.tls`).
:func:`children` is what ``appstack render`` prints (no members: they depend on
what etcd says).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from appstack.api.etcdcluster import EtcdClusterSpec
from appstack.api.kind import group_key
from appstack.controllers.etcdcluster import tls
from appstack.controllers.util.meta import child_labels
from appstack.sdk import (
    Container,
    ContainerSecurity,
    KubeObject,
    Manifest,
    PodSecurityContext,
    ServicePortSpec,
    child_metadata,
    controlled_by,
    instance_labels,
    owner_reference,
    user_resources,
)

COMPONENT = "etcd"
HOSTNAME = "kubernetes.io/hostname"
CLIENT_PORT = 2379
PEER_PORT = 2380
DATA_DIR = "/var/lib/etcd"
VOTER = group_key("etcd-voter")
INITIAL = group_key("etcd-initial-cluster")
# A digest of the member flags and env the spec sets (:func:`config_digest`): a member
# whose pod has another one is restarted, one at a time, like an upgrade.
CONFIG = group_key("etcd-config")
# A volume kept on delete (spec.retainOnDelete) has no owner: this annotation names the
# cluster (by UID) it belongs to, so a namesake cluster created later never adopts it.
CLUSTER_UID = group_key("etcd-cluster-uid")
RUN_AS = 65532  # no root needed: the data volume is group-writable through fsGroup
# The restricted Pod Security profile, as every pod of an EtcdCluster runs — members, backup
# Jobs, the restore init container: one user, so a snapshot a Job writes is one a restore
# can read, and a namespace that enforces restricted admits them all.
POD_SECURITY: PodSecurityContext = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: ContainerSecurity = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


def selector(cluster: str) -> dict[str, str]:
    return {**instance_labels(cluster), "app.kubernetes.io/component": COMPONENT}


def cluster_token(obj: KubeObject) -> str:
    """``--initial-cluster-token``: the object's, and after a disaster recovery a new one
    per recovery (the rebuilt cluster gets a new ID; no old member can join it)."""
    meta = obj["metadata"]
    count = ((obj.get("status") or {}).get("recovery") or {}).get("count")
    return f"{meta['name']}-{meta['uid']}" + (f"-{count}" if count else "")


def member_host(obj: KubeObject, pod: str) -> str:
    """The member's stable DNS name (on the headless Service)."""
    meta = obj["metadata"]
    return f"{pod}.{meta['name']}.{meta['namespace']}.svc"


def peer_url(obj: KubeObject, pod: str) -> str:
    return f"{tls.peer_scheme(obj)}://{member_host(obj, pod)}:{PEER_PORT}"


def client_url(obj: KubeObject, pod: str) -> str:
    return f"{tls.client_scheme(obj)}://{member_host(obj, pod)}:{CLIENT_PORT}"


def service_url(obj: KubeObject) -> str:
    """The client Service's URL, as clients inside the cluster use it."""
    meta = obj["metadata"]
    return f"{tls.client_scheme(obj)}://{meta['name']}-client.{meta['namespace']}.svc:{CLIENT_PORT}"


def pod_of_peer_url(obj: KubeObject, url: str) -> str:
    """The member pod a peer URL names, or "" when it is not one of ours."""
    meta = obj["metadata"]
    host = url.removeprefix("http://").removeprefix("https://").rsplit(":", 1)[0]
    pod, _, rest = host.partition(".")
    return pod if rest == f"{meta['name']}.{meta['namespace']}.svc" else ""


def _ports() -> list[ServicePortSpec]:
    return [
        {"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT},
        {"name": "peer", "port": PEER_PORT, "targetPort": PEER_PORT},
    ]


def services(obj: KubeObject) -> list[Manifest]:
    name = obj["metadata"]["name"]
    labels = child_labels(name, COMPONENT)
    headless: Manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(obj, name, labels),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,  # peers must find each other before Ready
            "selector": selector(name),
            "ports": _ports(),
        },
    }
    client: Manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(obj, f"{name}-client", labels),
        "spec": {"selector": {**selector(name), VOTER: "true"}, "ports": _ports()[:1]},
    }
    return [headless, client]


def disruption_budget(obj: KubeObject, spec: EtcdClusterSpec) -> Manifest:
    name = obj["metadata"]["name"]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": child_metadata(obj, name, child_labels(name, COMPONENT)),
        "spec": {
            "minAvailable": spec.replicas // 2 + 1,  # a quorum of the wanted members
            "selector": {"matchLabels": {**selector(name), VOTER: "true"}},
        },
    }


def volume(obj: KubeObject, spec: EtcdClusterSpec, pod: str) -> Manifest:
    cluster = obj["metadata"]["name"]
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": str(spec.storage)}},
    }
    if spec.storage_class_name:
        claim["storageClassName"] = spec.storage_class_name
    # Created owned even with retainOnDelete (the writes policy admits no ownerless object
    # the operator creates); the reconciler releases it right after (volume_owner).
    meta = child_metadata(obj, f"data-{pod}", child_labels(cluster, COMPONENT))
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": claim}


def volume_owner(obj: KubeObject, *, retain: bool) -> dict[str, Any]:
    """A merge patch of a member volume's ``metadata`` that makes it owned by the cluster
    (deleted with it) or, retained, ownerless with the cluster's UID in an annotation."""
    if retain:
        return {"ownerReferences": None, "annotations": {CLUSTER_UID: obj["metadata"]["uid"]}}
    return {"ownerReferences": [owner_reference(obj)], "annotations": {CLUSTER_UID: None}}


def owns_volume(obj: KubeObject, child: dict[str, Any]) -> bool:
    """Whether ``child`` (a member's Pod or volume) is this cluster's: controlled by it, or
    a volume retained for it (its UID, not only its name)."""
    annotations = child["metadata"].get("annotations") or {}
    return controlled_by(child, obj) or annotations.get(CLUSTER_UID) == obj["metadata"]["uid"]


def retained(volume: dict[str, Any]) -> bool:
    """Whether a member volume is currently kept on delete (has no owner)."""
    return not volume["metadata"].get("ownerReferences")


def spread(cluster: str) -> dict[str, Any]:
    """Members of ``cluster`` prefer nodes without another member (preferred, so a cluster
    of more members than nodes still starts); ``spec.affinity`` replaces it."""
    term = {"labelSelector": {"matchLabels": selector(cluster)}, "topologyKey": HOSTNAME}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
    }


def placement(spec: EtcdClusterSpec, *, spread_constraints: bool = True) -> dict[str, Any]:
    """The members' scheduling constraints (the SDK's ``PodScheduling``: the same fields as
    AppService's), priority class and pull secrets. The backup Jobs' pods get them without
    ``topologySpreadConstraints`` (``spread_constraints=False``): those spread the members,
    and a lone pod they do not select gains nothing from them but a chance to stay Pending."""
    out = spec.pod_scheduling()
    if not spread_constraints:
        out.pop("topologySpreadConstraints", None)
    if spec.priority_class_name:
        out["priorityClassName"] = spec.priority_class_name
    if spec.image_pull_secrets:
        out["imagePullSecrets"] = [s.to_dict() for s in spec.image_pull_secrets]
    return out


def maintenance_args(spec: EtcdClusterSpec) -> list[str]:
    """The flags of ``compaction``, ``quotaBackendBytes`` (defaults made explicit) and
    ``extraArgs`` (sorted, so that the same spec gives the same arguments)."""
    compaction = spec.compaction_or_default
    args = [
        f"--auto-compaction-mode={compaction.mode}",
        f"--auto-compaction-retention={compaction.retention}",
        f"--quota-backend-bytes={spec.quota}",
    ]
    return args + [f"--{k}={v}" for k, v in sorted((spec.extra_args or {}).items())]


def user_env(spec: EtcdClusterSpec) -> list[Any]:
    """``spec.env`` as the container's (after the variables appstack sets)."""
    return [e.to_dict() for e in spec.env or []]


def config_digest(spec: EtcdClusterSpec) -> str:
    """What identifies the configuration a member runs with (its pod's :data:`CONFIG`)."""
    text = json.dumps([maintenance_args(spec), user_env(spec)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pod_quota(pod: dict[str, Any]) -> int | None:
    """The ``--quota-backend-bytes`` a member pod runs with (None: etcd's default)."""
    for container in pod["spec"].get("containers") or []:
        for arg in container.get("args") or []:
            if str(arg).startswith("--quota-backend-bytes="):
                value = str(arg).split("=", 1)[1]
                return int(value) if value.isdigit() else None
    return None


def member_pod(
    obj: KubeObject,
    spec: EtcdClusterSpec,
    pod: str,
    initial: dict[str, str],
    *,
    new_cluster: bool,
    voter: bool,
) -> Manifest:
    """Member ``pod``: etcd bound to its pod IP, peers named through the headless
    Service; ``initial`` (name → peer URL) only matters on its first start (etcd ignores
    it once its data directory exists)."""
    cluster = obj["metadata"]["name"]
    cluster_flag = ",".join(f"{n}={u}" for n, u in sorted(initial.items()))
    args = [
        "--name=$(POD_NAME)",
        f"--data-dir={DATA_DIR}/data",
        f"--listen-client-urls={tls.client_scheme(obj)}://$(POD_IP):{CLIENT_PORT}",
        f"--advertise-client-urls={client_url(obj, pod)}",
        f"--listen-peer-urls={tls.peer_scheme(obj)}://$(POD_IP):{PEER_PORT}",
        f"--initial-advertise-peer-urls={peer_url(obj, pod)}",
        f"--initial-cluster={cluster_flag}",
        f"--initial-cluster-state={'new' if new_cluster else 'existing'}",
        f"--initial-cluster-token={cluster_token(obj)}",
        *maintenance_args(spec),
    ]
    container: Container = {
        "name": "etcd",
        "image": spec.image,
        "command": ["etcd"],
        "args": args,
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            *user_env(spec),
        ],
        "ports": [
            {"name": "client", "containerPort": CLIENT_PORT},
            {"name": "peer", "containerPort": PEER_PORT},
        ],
        # Ready while it serves: NOSPACE refuses writes, not reads or deletes (what frees
        # space), so it must not take every member out of the client Service (etcd's own
        # /health fails on any alarm unless told to leave one out).
        "readinessProbe": {
            "httpGet": {"path": "/health?exclude=NOSPACE", "port": CLIENT_PORT},
            "periodSeconds": 2,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}],
        "securityContext": CONTAINER_SECURITY.copy(),
    }
    if spec.resources:
        container["resources"] = user_resources(spec.resources)
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,  # etcd never talks to the Kubernetes API
        "hostname": pod,
        "subdomain": cluster,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "securityContext": dict(POD_SECURITY),
        "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{pod}"}}],
    }
    pod_spec.update(placement(spec))
    # By default (no spec.affinity), members prefer different nodes (one lost: one member).
    if "affinity" not in pod_spec:
        pod_spec["affinity"] = spread(cluster)
    labels = {**child_labels(cluster, COMPONENT), VOTER: "true" if voter else "false"}
    meta = child_metadata(obj, pod, labels)
    meta["annotations"] = {INITIAL: cluster_flag, CONFIG: config_digest(spec)}
    pod_obj: Manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    return tls.with_member_tls(pod_obj, spec)


def children(obj: KubeObject, spec: EtcdClusterSpec) -> list[Manifest]:
    """The fixed children: both Services and the PodDisruptionBudget (members are
    created one at a time by the reconciler, from what etcd reports)."""
    return [*services(obj), disruption_budget(obj, spec)]
