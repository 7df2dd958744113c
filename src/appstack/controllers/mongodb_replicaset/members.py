"""A MongoDB replica set as Kubernetes objects, shared by the AppStack's managed ``mongodb``
middleware (``controllers/appstack/mongodb.py``) and the ``MongoDBCommunity`` kind
(``controllers/mongodbcommunity``): one implementation of the members' pod, their stable
hosts, the desired-members document, the keyfile and the disruption budget. Pure.

* members are the pods ``<sts>-0``, ``-1``, ... of a StatefulSet, named through a headless
  Service (``<pod>.<headless>.<namespace>.svc:<port>``);
* ``mongod --replSet <set> --keyFile ...``: the keyfile comes from a generated Secret
  (mounted readable by the pods' group, ``fsGroup``) and is copied by an init container into
  a memory volume with mode 0400, as mongod demands;
* the ``rs-bootstrap`` sidecar (:mod:`.bootstrap`) initiates the set and follows
  scaling from the ConfigMap it mounts at ``/replicaset``; what else it reads (credentials)
  each caller passes as env or volumes;
* a member is ready when it is the primary or a secondary (an exec readiness probe in the
  image's shell).
"""

from __future__ import annotations

import base64
import secrets
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.sdk import (
    ChildMeta,
    Container,
    ContainerSecurity,
    EnvVarDict,
    Manifest,
    Resources,
    VolumeDict,
    VolumeMountDict,
)

KEYFILE_KEY = "keyfile"
KEYFILE_PATH = "/keyfile"
HOME: EnvVarDict = {"name": "HOME", "value": "/tmp"}  # noqa: S108 - the container's own /tmp


def hosts(sts: str, headless: str, namespace: str, port: int, count: int) -> list[str]:
    """Every member's stable host:port, in ordinal order."""
    return [f"{sts}-{i}.{headless}.{namespace}.svc:{port}" for i in range(count)]


class ReplicaMember(TypedDict):
    _id: int
    host: str


class ReplicaSetConfig(TypedDict):
    """The desired replica set as the bootstrap script reads it."""

    _id: str
    members: list[ReplicaMember]


def replica_set(set_name: str, member_hosts: list[str]) -> ReplicaSetConfig:
    """The desired members: ``_id`` is the pod's ordinal, so it stays when others change."""
    return {"_id": set_name, "members": [{"_id": i, "host": h} for i, h in enumerate(member_hosts)]}


def keyfile_data() -> dict[str, str]:
    """The members' shared key: 756 base64 characters (mongod's limit is 1024)."""
    return {KEYFILE_KEY: base64.b64encode(secrets.token_bytes(567)).decode()}


@dataclass(frozen=True)
class Members:
    """What differs between the replica sets built on :func:`pod_spec`."""

    set_name: str  # the replica set's name (mongod --replSet)
    image: str
    port: int
    data_path: str
    uid: int  # the image's user; the pods' fsGroup
    keyfile_secret: str
    config_map: str  # the bootstrap script and replicaset.json
    resources: Resources | None = None
    shell: str = boot.MONGOSH
    sidecar_env: list[EnvVarDict] = field(default_factory=list)
    sidecar_mounts: list[VolumeMountDict] = field(default_factory=list)
    volumes: list[VolumeDict] = field(default_factory=list)
    data_volume: str = "data"  # the StatefulSet's claim template (claims <it>-<pod>)


def pod_spec(m: Members, security: ContainerSecurity) -> dict[str, Any]:
    """mongod, the keyfile init container and the bootstrap sidecar, all as the image's
    user (``security``: the restricted container securityContext for it)."""
    keyfile = f"{KEYFILE_PATH}/{KEYFILE_KEY}"
    mongod: Container = {
        "name": "mongod",
        "image": m.image,
        "command": ["mongod", "--replSet", m.set_name, "--bind_ip_all", "--port", str(m.port)],
        "args": ["--dbpath", m.data_path, "--keyFile", keyfile],
        "env": [HOME.copy()],  # the shell (readiness probe) keeps its logs there, not in data
        "ports": [{"name": "mongodb", "containerPort": m.port, "protocol": "TCP"}],
        "volumeMounts": [
            {"name": m.data_volume, "mountPath": m.data_path},
            {"name": "keyfile", "mountPath": KEYFILE_PATH, "readOnly": True},
        ],
        "readinessProbe": boot.readiness_probe(m.shell),
        "securityContext": deepcopy(security),
    }
    if m.resources is not None:
        mongod["resources"] = m.resources
    sidecar = {
        "name": "rs-bootstrap",
        "image": m.image,
        "command": boot.loop_command(m.shell),
        "env": [dict(HOME), *deepcopy(m.sidecar_env)],
        "volumeMounts": [
            {"name": "replicaset", "mountPath": boot.MOUNT_PATH, "readOnly": True},
            *deepcopy(m.sidecar_mounts),
        ],
        "securityContext": deepcopy(security),
    }
    copy = {
        "name": "keyfile",
        "image": m.image,
        "command": [
            "sh",
            "-c",
            f"cp /keyfile-secret/{KEYFILE_KEY} {keyfile} && chmod 0400 {keyfile}",
        ],
        "volumeMounts": [
            {"name": "keyfile-secret", "mountPath": "/keyfile-secret", "readOnly": True},
            {"name": "keyfile", "mountPath": KEYFILE_PATH},
        ],
        "securityContext": deepcopy(security),
    }
    return {
        "initContainers": [copy],
        "containers": [mongod, sidecar],
        "securityContext": {"fsGroup": m.uid},
        "volumes": [
            {"name": "keyfile", "emptyDir": {"medium": "Memory"}},
            {
                "name": "keyfile-secret",
                "secret": {"secretName": m.keyfile_secret, "defaultMode": 0o440},
            },
            {"name": "replicaset", "configMap": {"name": m.config_map}},
            *deepcopy(m.volumes),
        ],
    }


def disruption_budget(
    metadata: ChildMeta, members: int, selector: dict[str, str]
) -> list[Manifest]:
    """A majority of the members available through voluntary disruptions (none for a single
    member: a budget that forbids evicting it would block every node drain)."""
    if members < 2:
        return []
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": metadata,
            "spec": {
                "minAvailable": members // 2 + 1,
                "selector": {"matchLabels": selector},
            },
        }
    ]
