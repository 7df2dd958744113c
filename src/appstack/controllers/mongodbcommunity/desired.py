"""MongoDBCommunity → the objects it wants (pure, unit-tested), on the replica set shared
with the AppStack's managed mongodb (:mod:`appstack.controllers.mongodb_replicaset.members`).

* StatefulSet ``<name>`` (members ``<name>-0``, ``-1``, ...; a claim each, deleted with the
  object, named as the community operator names them, ``data-volume-<name>-<n>``: claims
  created beforehand under those names, as seed 004 does, are the ones used; a StatefulSet
  made by an earlier appstack keeps its ``data-<name>-<n>``, since claim templates never
  change: :data:`CLAIM`, :func:`claim_of`), the headless Service ``<name>-svc`` (the
  community operator's name: the members are ``<pod>.<name>-svc.<namespace>.svc:27017``;
  published before they are ready so that they find each other), the ConfigMap
  ``<name>-replicaset`` (the bootstrap and ``replicaset.json``), and a PodDisruptionBudget
  keeping a majority;
* generated once (:func:`generated_secrets`, never printed by ``appstack render``): the
  keyfile ``<name>-keyfile`` and the bootstrap administrator's password ``<name>-admin``;
* the ``rs-bootstrap`` sidecar runs in the image's shell (``mongo`` before 5.0, ``mongosh``
  from 5.0: :func:`~appstack.controllers.mongodb_replicaset.bootstrap.shell_for`) and reads every
  user's password from a volume of the user's own Secret (optional: a missing Secret only
  holds back that user).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from appstack.api.mongodbcommunity import ADMIN_USER, DEFAULT_IMAGE, MongoDBCommunitySpec, User
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodb_replicaset import members as rs
from appstack.controllers.mongodbcommunity import bootstrap
from appstack.controllers.util.meta import child_labels
from appstack.controllers.util.workloads import security_context
from appstack.sdk import (
    ChildMeta,
    ClaimSpec,
    KeyToPathDict,
    KubeObject,
    Manifest,
    SecretVolume,
    VolumeDict,
    VolumeMountDict,
    child_metadata,
    instance_labels,
    user_resources,
)

COMPONENT = "mongodb"
PORT = 27017
DATA_PATH = "/data/db"
UID = 999  # the mongo image's mongodb user


def selector(name: str) -> dict[str, str]:
    return {**instance_labels(name), "app.kubernetes.io/component": COMPONENT}


def _meta(obj: KubeObject, name: str) -> ChildMeta:
    return child_metadata(obj, name, child_labels(obj["metadata"]["name"], COMPONENT))


def service_name(name: str) -> str:
    return f"{name}-svc"


def hosts(obj: KubeObject, members: int) -> list[str]:
    meta = obj["metadata"]
    return rs.hosts(meta["name"], service_name(meta["name"]), meta["namespace"], PORT, members)


def image(spec: MongoDBCommunitySpec) -> str:
    return f"{spec.image or DEFAULT_IMAGE}:{spec.version}"


def user_config(users: list[User]) -> list[bootstrap.UserConfig]:
    """The users as the bootstrap creates them: roles as MongoDB spells them."""
    return [
        {"name": u.name, "db": u.db, "roles": [{"role": r.name, "db": r.db} for r in u.roles]}
        for u in users
    ]


def config_map(obj: KubeObject, spec: MongoDBCommunitySpec) -> Manifest:
    meta = obj["metadata"]
    suffix = f".{service_name(meta['name'])}.{meta['namespace']}.svc:{PORT}"
    members = rs.replica_set(meta["name"], hosts(obj, spec.members))
    document = bootstrap.config(members, suffix, user_config(spec.users))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(obj, f"{meta['name']}-replicaset"),
        "data": {
            boot.SCRIPT_KEY: bootstrap.script(PORT),
            boot.CONFIG_KEY: json.dumps(document, indent=2, sort_keys=True),
        },
    }


def service(obj: KubeObject) -> Manifest:
    name = obj["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(obj, service_name(name)),
        "spec": {
            "clusterIP": "None",
            "selector": selector(name),
            "ports": [{"name": "mongodb", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
            "publishNotReadyAddresses": True,
        },
    }


def _user_volumes(users: list[User]) -> tuple[list[VolumeMountDict], list[VolumeDict]]:
    """Each user's password as ``/users/<i>/password`` (optional: the Secret may come later)."""
    mounts: list[VolumeMountDict] = []
    volumes: list[VolumeDict] = []
    for i, u in enumerate(users):
        ref = u.password_secret_ref
        path = f"{bootstrap.USERS_PATH}/{i}"
        mounts.append({"name": f"user-{i}", "mountPath": path, "readOnly": True})
        items: list[KeyToPathDict] = [{"key": ref.key, "path": "password"}]
        source: SecretVolume = {
            "secretName": ref.name,
            "items": items,
            "optional": True,
            "defaultMode": 0o440,
        }
        volumes.append({"name": f"user-{i}", "secret": source})
    return mounts, volumes


#: The claim template's name: the community operator's (claims ``data-volume-<pod>``).
CLAIM = "data-volume"
LEGACY_CLAIM = "data"  # appstack before 0.1.0's StatefulSets


def claim_of(existing: dict[str, Any] | None) -> str:
    """The claim template a StatefulSet has (immutable: kept), or :data:`CLAIM` for a new one."""
    templates = ((existing or {}).get("spec") or {}).get("volumeClaimTemplates") or []
    name = (templates[0].get("metadata") or {}).get("name") if templates else None
    return str(name) if name else CLAIM


def stateful_set(obj: KubeObject, spec: MongoDBCommunitySpec, claim: str = CLAIM) -> Manifest:
    name = obj["metadata"]["name"]
    mounts, volumes = _user_volumes(spec.users)
    members = rs.Members(
        set_name=name,
        image=image(spec),
        port=PORT,
        data_path=DATA_PATH,
        uid=UID,
        keyfile_secret=f"{name}-keyfile",
        config_map=f"{name}-replicaset",
        data_volume=claim,
        resources=user_resources(spec.resources) if spec.resources else None,
        shell=boot.shell_for(spec.version),
        sidecar_mounts=[
            {"name": "admin", "mountPath": bootstrap.ADMIN_PATH, "readOnly": True},
            {"name": "podinfo", "mountPath": bootstrap.PODINFO_PATH, "readOnly": True},
            *mounts,
        ],
        volumes=[
            {"name": "admin", "secret": {"secretName": f"{name}-admin", "defaultMode": 0o440}},
            {
                "name": "podinfo",
                "downwardAPI": {
                    "items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]
                },
            },
            *volumes,
        ],
    )
    security = security_context(None, {"runAsUser": UID, "runAsGroup": UID})
    pod = rs.pod_spec(members, security)
    pod["automountServiceAccountToken"] = False  # a database never talks to the API
    claim_name = claim
    wanted: ClaimSpec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.storage.size}},
    }
    if spec.storage.storage_class_name:
        wanted["storageClassName"] = spec.storage.storage_class_name
    labels = child_labels(name, COMPONENT)  # the selector's labels and managed-by
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(obj, name),
        "spec": {
            "serviceName": service_name(name),
            "replicas": spec.members,
            "selector": {"matchLabels": selector(name)},
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": "Delete",
                "whenScaled": "Retain",
            },
            "template": {"metadata": {"labels": labels}, "spec": pod},
            "volumeClaimTemplates": [{"metadata": {"name": claim_name}, "spec": wanted}],
        },
    }


def children(obj: KubeObject, spec: MongoDBCommunitySpec, claim: str = CLAIM) -> list[Manifest]:
    """Every child but the generated and per-user Secrets (``appstack render`` prints these);
    ``claim``: the StatefulSet's claim template (:func:`claim_of` an existing one)."""
    name = obj["metadata"]["name"]
    budget = rs.disruption_budget(_meta(obj, name), spec.members, selector(name))
    return [service(obj), config_map(obj, spec), *budget, stateful_set(obj, spec, claim)]


def generated_secrets(obj: KubeObject) -> list[Manifest]:
    """Created once and kept (owned: they go with the object and its volumes)."""
    name = obj["metadata"]["name"]
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": _meta(obj, f"{name}-keyfile"),
            "stringData": rs.keyfile_data(),
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": _meta(obj, f"{name}-admin"),
            "stringData": {"username": ADMIN_USER, "password": secrets.token_urlsafe(24)},
        },
    ]
