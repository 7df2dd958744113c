"""Managed ``mongodb`` middleware → a replica set of ``managed.replicas`` members (pure;
used by :mod:`.middleware`, :mod:`.connections` and the reconciler).

* StatefulSet ``<stack>-<member>`` (pods ``-0``, ``-1``, ... started in order, each with its
  own ``data`` volume from the claim template), whose members are named through the
  headless Service ``-hl`` (``<pod>.<stack>-<member>-hl.<namespace>.svc``, published before
  they are ready so that they find each other) and reached by clients through all of them;
* ``mongod --replSet <stack>-<member> --keyFile ...``: the keyfile comes from the generated
  Secret ``-keyfile`` (:func:`keyfile_secret`, created once like the credentials Secret)
  (mounted readable by the pods' group, ``fsGroup``) and is copied by an init container into
  a memory volume with mode 0400, as mongod demands;
* the ``rs-bootstrap`` sidecar (:mod:`.mongodb_bootstrap`) initiates the set, creates the
  users and follows scaling, from the ConfigMap ``-replicaset`` (:func:`config_map`);
* a member is ready when it is the primary or a secondary (an exec readiness probe);
* with more than one member, a PodDisruptionBudget ``<stack>-<member>`` keeps a majority of
  them running through voluntary disruptions (node drains), so a drain never costs the set
  its primary election (:func:`disruption_budget`).
"""

from __future__ import annotations

import base64
import json
import secrets
from copy import deepcopy
from typing import Any

from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack import labels
from appstack.controllers.appstack import mongodb_bootstrap as boot
from appstack.controllers.appstack.catalog import CATALOG, image
from appstack.controllers.appstack.connections import credentials_secret, prefix, service_name

KEYFILE_KEY = "keyfile"
KEYFILE_PATH = "/keyfile"
DATABASE = "app"
HOME = {"name": "HOME", "value": "/tmp"}  # noqa: S108 - the container's own /tmp


def keyfile_secret_name(stack: str, member: str) -> str:
    return f"{stack}-{member}-keyfile"


def hosts(owner: dict[str, Any], mw: Middleware) -> list[str]:
    """Every member's stable host:port, in ordinal order."""
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    meta = owner["metadata"]
    sts = service_name(meta["name"], mw.name)
    port = CATALOG[mw.type].port
    return [
        f"{sts}-{i}.{sts}-hl.{meta['namespace']}.svc:{port}" for i in range(mw.managed.replicas)
    ]


def replica_set(owner: dict[str, Any], mw: Middleware) -> dict[str, Any]:
    """The desired members: ``_id`` is the pod's ordinal, so it stays when others change."""
    name = service_name(owner["metadata"]["name"], mw.name)
    return {"_id": name, "members": [{"_id": i, "host": h} for i, h in enumerate(hosts(owner, mw))]}


def uri_env(owner: dict[str, Any], mw: object) -> list[dict[str, Any]]:
    """``<NAME>_URI`` for a consumer of managed mongodb (nothing for any other member): every
    member and the set's name, the credentials as ``$(VAR)`` references to the secretKeyRef
    env ``<NAME>_USERNAME``/``_PASSWORD`` injected before it (expanded by the kubelet, so
    the Deployment never holds them)."""
    if not isinstance(mw, Middleware) or mw.type != "mongodb" or mw.managed is None:
        return []
    name = service_name(owner["metadata"]["name"], mw.name)
    p = prefix(mw.name)
    login = f"$({p}_USERNAME):$({p}_PASSWORD)"
    value = (
        f"mongodb://{login}@{','.join(hosts(owner, mw))}/{DATABASE}"
        f"?replicaSet={name}&authSource=admin"
    )
    return [{"name": f"{p}_URI", "value": value}]


def keyfile_secret(owner: dict[str, Any], mw: Middleware) -> dict[str, Any]:
    """The members' shared key: 756 base64 characters (mongod's limit is 1024). Generated
    once, kept like the credentials Secret (no owner while the volumes are retained)."""
    assert mw.managed is not None  # noqa: S101
    stack = owner["metadata"]["name"]
    meta = labels.metadata(owner, mw.name, keyfile_secret_name(stack, mw.name))
    if mw.managed.storage.retain_on_delete:
        del meta["ownerReferences"]
    key = base64.b64encode(secrets.token_bytes(567)).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta,
        "stringData": {KEYFILE_KEY: key},
    }


def config_map(owner: dict[str, Any], mw: Middleware) -> dict[str, Any]:
    """The bootstrap script and the desired members it reads on every pass."""
    stack = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": labels.metadata(owner, mw.name, f"{service_name(stack, mw.name)}-replicaset"),
        "data": {
            boot.SCRIPT_KEY: boot.script(CATALOG[mw.type].port),
            boot.CONFIG_KEY: json.dumps(replica_set(owner, mw), indent=2, sort_keys=True),
        },
    }


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def pod_spec(owner: dict[str, Any], mw: Middleware, security: dict[str, Any]) -> dict[str, Any]:
    """mongod, the keyfile init container and the bootstrap sidecar, all as the image's
    user (``security``: the restricted container securityContext for it)."""
    assert mw.managed is not None  # noqa: S101
    stack = owner["metadata"]["name"]
    engine = CATALOG[mw.type]
    name = service_name(stack, mw.name)
    img = image(mw.type, mw.managed.image, mw.managed.version)
    keyfile = f"{KEYFILE_PATH}/{KEYFILE_KEY}"
    mongod: dict[str, Any] = {
        "name": "mongod",
        "image": img,
        "command": ["mongod", "--replSet", name, "--bind_ip_all", "--port", str(engine.port)],
        "args": ["--dbpath", engine.data_path, "--keyFile", keyfile],
        "env": [dict(HOME)],  # mongosh (the readiness probe) keeps its logs there, not in the data
        "ports": [{"name": "mongodb", "containerPort": engine.port, "protocol": "TCP"}],
        "volumeMounts": [
            {"name": "data", "mountPath": engine.data_path},
            {"name": "keyfile", "mountPath": KEYFILE_PATH, "readOnly": True},
        ],
        "readinessProbe": boot.readiness_probe(),
        "securityContext": deepcopy(security),
    }
    if mw.managed.resources:
        mongod["resources"] = mw.managed.resources.to_dict()
    credentials = credentials_secret(stack, mw.name)
    member_host = f"$(POD_NAME).{name}-hl.{owner['metadata']['namespace']}.svc:{engine.port}"
    sidecar = {
        "name": "rs-bootstrap",
        "image": img,
        "command": boot.loop_command(),
        "env": [
            dict(HOME),
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "MEMBER_HOST", "value": member_host},
            _secret_env("ROOT_PASSWORD", credentials, "root-password"),
            _secret_env("APP_USERNAME", credentials, "username"),
            _secret_env("APP_PASSWORD", credentials, "password"),
        ],
        "volumeMounts": [{"name": "replicaset", "mountPath": boot.MOUNT_PATH, "readOnly": True}],
        "securityContext": deepcopy(security),
    }
    copy = {
        "name": "keyfile",
        "image": img,
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
        "securityContext": {"fsGroup": engine.uid},
        "volumes": [
            {"name": "keyfile", "emptyDir": {"medium": "Memory"}},
            {
                "name": "keyfile-secret",
                "secret": {"secretName": keyfile_secret_name(stack, mw.name), "defaultMode": 0o440},
            },
            {"name": "replicaset", "configMap": {"name": f"{name}-replicaset"}},
        ],
    }


def disruption_budget(owner: dict[str, Any], mw: Middleware) -> list[dict[str, Any]]:
    """A majority of the members available through voluntary disruptions (none for a single
    member: a budget that forbids evicting it would block every node drain)."""
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    if mw.managed.replicas < 2:
        return []
    stack = owner["metadata"]["name"]
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": labels.metadata(owner, mw.name, service_name(stack, mw.name)),
            "spec": {
                "minAvailable": mw.managed.replicas // 2 + 1,
                "selector": {"matchLabels": labels.selector(stack, mw.name)},
            },
        }
    ]
