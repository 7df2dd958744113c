"""AppStack middleware → the objects we want (pure, unit-tested through :mod:`.desired`;
mongodb's replica set: :mod:`.mongodb`).

* managed: headless Service ``-hl`` (StatefulSet identity), client Service, StatefulSet with
  a data ``volumeClaimTemplate`` (retained on delete by default) and the credentials from
  the generated Secret ``-credentials`` (:func:`credentials`, created once by the
  reconciler, kept exactly as long as the volume, never part of :func:`children` and
  never printed by ``appstack render``); the version of that Secret on the pod template,
  so that a change of it (a rotated password) restarts the instance, whose readiness probe
  logs in with it (:mod:`.catalog`);
* managed ``configFiles`` (mysql): ConfigMap ``-config`` mounted read-only where the
  engine reads its configuration; a digest of the files on the pod template restarts the
  instance when they change (:func:`config_map`);
* external: an ExternalName Service (host name) or a selector-less Service plus an
  EndpointSlice (IP, however spelt: :func:`.addresses.address`; the slice holds its
  canonical form), so consumers always use ``<stack>-<member>``;
* a third-party service given by URL: nothing (its consumers get the URL itself).
"""

from __future__ import annotations

import secrets
from typing import Any

from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack import labels, mongodb
from appstack.controllers.appstack.addresses import address
from appstack.controllers.appstack.catalog import CATALOG, image
from appstack.controllers.appstack.connections import (
    credentials_secret,
    member_service,
    service_name,
)
from appstack.controllers.util.meta import MANAGED_BY, SLICE_MANAGER
from appstack.controllers.util.workloads import security_context
from appstack.sdk import (
    SLICE_MANAGER_LABEL,
    ClaimSpec,
    Container,
    EnvVarDict,
    KubeObject,
    Manifest,
    ProbeDict,
    TemplateMeta,
    VolumeDict,
    VolumeMountDict,
    secret_env,
    user_resources,
)


def credentials(owner: KubeObject, mw: Middleware) -> Manifest:
    """Generated once; the controller creates it only if absent and never overwrites it.

    It lives exactly as long as the data volume it unlocks: when the volume is retained
    (``retainOnDelete``, the default) the Secret has no owner either, so deleting the
    stack keeps both and a re-created stack adopts them (the same password for the
    already-initialised database); otherwise the stack owns it and it goes with the
    stack, like the volume goes with the StatefulSet.
    """
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    engine = CATALOG[mw.type]
    data = {"password": secrets.token_urlsafe(24), "root-password": secrets.token_urlsafe(24)}
    if engine.default_user:
        data["username"] = engine.default_user
    stack = owner["metadata"]["name"]
    meta = labels.metadata(owner, mw.name, credentials_secret(stack, mw.name))
    if mw.managed.storage.retain_on_delete:
        del meta["ownerReferences"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta,
        "stringData": data,
    }


def managed_services(owner: KubeObject, mw: Middleware) -> list[Manifest]:
    stack = owner["metadata"]["name"]
    port = CATALOG[mw.type].port
    ports = [{"name": mw.type, "port": port, "targetPort": port, "protocol": "TCP"}]
    sel = labels.selector(stack, mw.name)
    return [
        labels.service(
            owner,
            mw.name,
            f"{service_name(stack, mw.name)}-hl",
            {
                "clusterIP": "None",
                "selector": sel,
                "ports": ports,
                "publishNotReadyAddresses": True,
            },
        ),
        labels.service(
            owner,
            mw.name,
            member_service(stack, mw),
            {"type": "ClusterIP", "selector": sel, "ports": ports},
        ),
    ]


def _middleware_env(stack: str, mw: Middleware) -> list[EnvVarDict]:
    engine = CATALOG[mw.type]
    secret = credentials_secret(stack, mw.name)

    def ref(name: str, key: str) -> EnvVarDict:
        return secret_env(name, secret, key)

    env = [ref(engine.password_env, "password")]
    if engine.user_env:
        env.append(ref(engine.user_env, "username"))
    if mw.type == "mysql":
        env += [
            ref("MYSQL_ROOT_PASSWORD", "root-password"),
            {"name": "MYSQL_DATABASE", "value": "app"},
        ]
    if mw.type == "postgres":
        env += [
            {"name": "POSTGRES_DB", "value": "app"},
            # a directory of its own on the volume: the volume's root belongs to root (and
            # may hold lost+found), while PostgreSQL wants its data directory its own, 0700
            {"name": "PGDATA", "value": f"{engine.data_path}/pgdata"},
            # the readiness probe logs in over the pod's address (the loopback is trusted)
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ]
    return env


def readiness_probe(engine_type: str) -> ProbeDict:
    """The engine's own answer: a login and a query (:mod:`.catalog`), every 5 s."""
    engine = CATALOG[engine_type]
    if engine.ready is None:
        return {"tcpSocket": {"port": engine.port}, "periodSeconds": 5}
    return {
        "exec": {"command": ["sh", "-c", engine.ready]},
        "periodSeconds": 5,
        "timeoutSeconds": 5,
    }


def stateful_set(
    owner: KubeObject, mw: Middleware, credentials_version: str | None = None
) -> Manifest:
    """The instance; ``credentials_version``: :func:`.desired.secrets_version` of its
    credentials Secret (None: not known here, as for ``appstack render``)."""
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    stack = owner["metadata"]["name"]
    engine = CATALOG[mw.type]
    managed = mw.managed
    # restricted, as the image's own user (its entrypoint would switch to it anyway)
    security = security_context(
        managed.security_context, {"runAsUser": engine.uid, "runAsGroup": engine.uid}
    )
    mounts: list[VolumeMountDict] = [{"name": "data", "mountPath": engine.data_path}]
    volumes: list[VolumeDict] = []
    template_meta: TemplateMeta = {"labels": {**labels.selector(stack, mw.name), **MANAGED_BY}}
    if managed.config_files and engine.config_dir:
        mounts.append({"name": "config", "mountPath": engine.config_dir, "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": _config_name(stack, mw)}})
        files_digest = labels.digest(managed.config_files)[:16]
        template_meta["annotations"] = {labels.CONFIG_HASH: files_digest}
    if credentials_version:
        template_meta.setdefault("annotations", {})[labels.SECRETS_HASH] = credentials_version
    if managed.init_scripts_config_map:
        mounts.append(
            {"name": "init", "mountPath": "/docker-entrypoint-initdb.d", "readOnly": True}
        )
        volumes.append({"name": "init", "configMap": {"name": managed.init_scripts_config_map}})
    container: Container = {
        "name": mw.type,
        "image": image(mw.type, managed.image, managed.version),
        "ports": [{"name": mw.type, "containerPort": engine.port, "protocol": "TCP"}],
        "env": _middleware_env(stack, mw),
        "volumeMounts": mounts,
        "readinessProbe": readiness_probe(mw.type),
        "securityContext": security,
    }
    if engine.args:
        container["args"] = list(engine.args)
    if managed.resources:
        container["resources"] = user_resources(managed.resources)
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "securityContext": {"fsGroup": engine.uid},  # the data volume writable by that user
    }
    if volumes:
        pod_spec["volumes"] = volumes
    if mw.type == "mongodb":
        pod_spec = mongodb.pod_spec(owner, mw, security)
    # a database never talks to the Kubernetes API: no token in its pods
    pod_spec["automountServiceAccountToken"] = False
    claim_spec: ClaimSpec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": managed.storage.size}},
    }
    if managed.storage.storage_class_name:
        claim_spec["storageClassName"] = managed.storage.storage_class_name
    retain = "Retain" if managed.storage.retain_on_delete else "Delete"
    sel = labels.selector(stack, mw.name)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": labels.metadata(owner, mw.name, service_name(stack, mw.name)),
        "spec": {
            "serviceName": f"{service_name(stack, mw.name)}-hl",
            "replicas": managed.replicas,
            "selector": {"matchLabels": sel},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": retain, "whenScaled": "Retain"},
            "template": {"metadata": template_meta, "spec": pod_spec},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
        },
    }


def external(owner: KubeObject, mw: Middleware) -> list[Manifest]:
    assert mw.external is not None  # noqa: S101
    host, port_number = mw.external.host, mw.external.port
    if host is None or port_number is None:  # given by URL: nothing to create
        return []
    stack = owner["metadata"]["name"]
    name = member_service(stack, mw)
    port = {"name": mw.type, "port": port_number, "protocol": "TCP"}
    ip = address(host)  # however spelt: 10.96.0.1. and 0x7f.1 are addresses, not names
    if ip is None:
        return [
            labels.service(
                owner,
                mw.name,
                name,
                {"type": "ExternalName", "externalName": host, "ports": [port]},
            )
        ]
    slice_meta = labels.metadata(owner, mw.name, f"{name}-external")
    slice_meta["labels"]["kubernetes.io/service-name"] = name
    slice_meta["labels"][SLICE_MANAGER_LABEL] = SLICE_MANAGER
    return [
        labels.service(
            owner,
            mw.name,
            name,
            {"type": "ClusterIP", "ports": [{**port, "targetPort": port_number}]},
        ),
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": slice_meta,
            "addressType": "IPv4" if ip.version == 4 else "IPv6",
            "endpoints": [{"addresses": [str(ip)], "conditions": {"ready": True}}],
            "ports": [{"name": mw.type, "port": port_number, "protocol": "TCP"}],
        },
    ]


def generated_secrets(owner: KubeObject, mw: Middleware) -> list[Manifest]:
    """The Secrets managed middleware generates once: credentials (and mongodb's keyfile)."""
    if mw.type == "mongodb":
        return [credentials(owner, mw), mongodb.keyfile_secret(owner, mw)]
    return [credentials(owner, mw)]


def _config_name(stack: str, mw: Middleware) -> str:
    return f"{service_name(stack, mw.name)}-config"


def config_map(owner: KubeObject, mw: Middleware) -> list[Manifest]:
    """The engine's configuration files (``managed.configFiles``), if any."""
    if mw.managed is None or not mw.managed.config_files:
        return []
    name = _config_name(owner["metadata"]["name"], mw)
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": labels.metadata(owner, mw.name, name),
            "data": dict(mw.managed.config_files),
        }
    ]


def children(
    owner: KubeObject, mw: Middleware, credentials_version: str | None = None
) -> list[Manifest]:
    """Every child of one middleware member (without its generated Secrets);
    ``credentials_version``: see :func:`stateful_set`."""
    if mw.external is not None:
        return external(owner, mw)
    extra = (
        [mongodb.config_map(owner, mw), *mongodb.disruption_budget(owner, mw)]
        if mw.type == "mongodb"
        else []
    )
    return [
        *managed_services(owner, mw),
        *extra,
        *config_map(owner, mw),
        stateful_set(owner, mw, credentials_version),
    ]
