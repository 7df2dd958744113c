"""AppStack members → the objects we want (pure, unit-tested).

Every child is named ``<stack>-<member>[-suffix]``, labelled with ``appstack.dev/stack`` and
``appstack.dev/member`` (prune and selection) and the recommended ``app.kubernetes.io/*``
labels, and carries a controller ownerReference to the AppStack.

* managed middleware: headless Service ``-hl`` (StatefulSet identity), client Service,
  StatefulSet with a data ``volumeClaimTemplate`` (retained on delete by default) and the
  credentials from the generated Secret ``-credentials``;
* external middleware: an ExternalName Service (host name) or a selector-less Service plus
  an EndpointSlice (IP), so consumers always use ``<stack>-<member>``;
* components: ConfigMap ``-config`` (files), Deployment (env, injected connections, the
  config mounted, a hash of it on the pod template so a change rolls the pods), Service.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import secrets
from typing import Any

from appstack.api.appstack import Component, Middleware
from appstack.controllers.appstack.catalog import CATALOG, image
from appstack.controllers.appstack.connections import (
    connection_env,
    credentials_secret,
    service_name,
)
from appstack.controllers.children import MANAGED_BY, owner_reference

STACK_LABEL = "appstack.dev/stack"
MEMBER_LABEL = "appstack.dev/member"
CONFIG_HASH = "appstack.dev/config-hash"
SECRETS_HASH = "appstack.dev/secrets-hash"


def selector(stack: str, member: str) -> dict[str, str]:
    return {STACK_LABEL: stack, MEMBER_LABEL: member}


def _meta(owner: dict[str, Any], member: str, name: str) -> dict[str, Any]:
    stack = owner["metadata"]["name"]
    return {
        "name": name,
        "namespace": owner["metadata"]["namespace"],
        "labels": {
            **selector(stack, member),
            **MANAGED_BY,
            "app.kubernetes.io/name": member,
            "app.kubernetes.io/part-of": stack,
        },
        "ownerReferences": [owner_reference(owner)],
    }


def _service(owner: dict[str, Any], member: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(owner, member, name),
        "spec": spec,
    }


# ---------------------------------------------------------------------------- middleware
def credentials(owner: dict[str, Any], mw: Middleware) -> dict[str, Any]:
    """Generated once; the controller creates it only if absent and never overwrites it."""
    kind = CATALOG[mw.type]
    data = {"password": secrets.token_urlsafe(24), "root-password": secrets.token_urlsafe(24)}
    if kind.default_user:
        data["username"] = kind.default_user
    stack = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(owner, mw.name, credentials_secret(stack, mw.name)),
        "stringData": data,
    }


def managed_services(owner: dict[str, Any], mw: Middleware) -> list[dict[str, Any]]:
    stack = owner["metadata"]["name"]
    port = CATALOG[mw.type].port
    ports = [{"name": mw.type, "port": port, "targetPort": port, "protocol": "TCP"}]
    sel = selector(stack, mw.name)
    return [
        _service(
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
        _service(
            owner,
            mw.name,
            service_name(stack, mw.name),
            {"type": "ClusterIP", "selector": sel, "ports": ports},
        ),
    ]


def _middleware_env(stack: str, mw: Middleware) -> list[dict[str, Any]]:
    kind = CATALOG[mw.type]
    secret = credentials_secret(stack, mw.name)

    def ref(name: str, key: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}

    env = [ref(kind.password_env, "password")]
    if kind.user_env:
        env.append(ref(kind.user_env, "username"))
    if mw.type == "mysql":
        env += [
            ref("MYSQL_ROOT_PASSWORD", "root-password"),
            {"name": "MYSQL_DATABASE", "value": "app"},
        ]
    if mw.type == "postgres":
        env.append({"name": "POSTGRES_DB", "value": "app"})
    return env


def stateful_set(owner: dict[str, Any], mw: Middleware) -> dict[str, Any]:
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    stack = owner["metadata"]["name"]
    kind = CATALOG[mw.type]
    managed = mw.managed
    mounts: list[dict[str, Any]] = [{"name": "data", "mountPath": kind.data_path}]
    volumes: list[dict[str, Any]] = []
    if managed.init_scripts_config_map:
        mounts.append(
            {"name": "init", "mountPath": "/docker-entrypoint-initdb.d", "readOnly": True}
        )
        volumes.append({"name": "init", "configMap": {"name": managed.init_scripts_config_map}})
    container: dict[str, Any] = {
        "name": mw.type,
        "image": image(mw.type, managed.image, managed.version),
        "ports": [{"name": mw.type, "containerPort": kind.port, "protocol": "TCP"}],
        "env": _middleware_env(stack, mw),
        "volumeMounts": mounts,
        "readinessProbe": {"tcpSocket": {"port": kind.port}, "periodSeconds": 5},
    }
    if managed.resources:
        container["resources"] = managed.resources.to_dict()
    pod_spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = volumes
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": managed.storage.size}},
    }
    if managed.storage.storage_class_name:
        claim_spec["storageClassName"] = managed.storage.storage_class_name
    retain = "Retain" if managed.storage.retain_on_delete else "Delete"
    sel = selector(stack, mw.name)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(owner, mw.name, service_name(stack, mw.name)),
        "spec": {
            "serviceName": f"{service_name(stack, mw.name)}-hl",
            "replicas": managed.replicas,
            "selector": {"matchLabels": sel},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": retain, "whenScaled": "Retain"},
            "template": {"metadata": {"labels": {**sel, **MANAGED_BY}}, "spec": pod_spec},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
        },
    }


def external(owner: dict[str, Any], mw: Middleware) -> list[dict[str, Any]]:
    assert mw.external is not None  # noqa: S101
    stack = owner["metadata"]["name"]
    name = service_name(stack, mw.name)
    port = {"name": mw.type, "port": mw.external.port, "protocol": "TCP"}
    try:
        ip = ipaddress.ip_address(mw.external.host)
    except ValueError:
        return [
            _service(
                owner,
                mw.name,
                name,
                {"type": "ExternalName", "externalName": mw.external.host, "ports": [port]},
            )
        ]
    slice_meta = _meta(owner, mw.name, f"{name}-external")
    slice_meta["labels"]["kubernetes.io/service-name"] = name
    slice_meta["labels"]["endpointslice.kubernetes.io/managed-by"] = "appstack.dev"
    return [
        _service(
            owner,
            mw.name,
            name,
            {"type": "ClusterIP", "ports": [{**port, "targetPort": mw.external.port}]},
        ),
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": slice_meta,
            "addressType": "IPv4" if ip.version == 4 else "IPv6",
            "endpoints": [{"addresses": [str(ip)], "conditions": {"ready": True}}],
            "ports": [{"name": mw.type, "port": mw.external.port, "protocol": "TCP"}],
        },
    ]


# ---------------------------------------------------------------------------- components
def config_map(owner: dict[str, Any], c: Component) -> dict[str, Any] | None:
    if c.config is None:
        return None
    stack = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(owner, c.name, f"{service_name(stack, c.name)}-config"),
        "data": dict(c.config.files),
    }


def used_secrets(c: Component, middleware: dict[str, Middleware]) -> list[str]:
    """Secrets whose change must roll the component: external credentials it uses and
    secretKeyRefs of its own env (generated credentials never change)."""
    names = {
        ref.name
        for ref in (e.value_from.secret_key_ref for e in c.envs or [] if e.value_from is not None)
        if ref is not None
    }
    for used in c.uses or []:
        external = middleware[used].external
        if external is not None and external.secret_ref is not None:
            names.add(external.secret_ref.name)
    return sorted(names)


def deployment(
    owner: dict[str, Any],
    c: Component,
    middleware: dict[str, Middleware],
    secrets_hash: str | None = None,
) -> dict[str, Any]:
    stack = owner["metadata"]["name"]
    env = [{"name": k, "value": v} for k, v in sorted((c.env or {}).items())]
    env += [e.to_dict() for e in c.envs or []]
    for used in c.uses or []:
        env += connection_env(stack, middleware[used])
    container: dict[str, Any] = {"name": c.name, "image": c.image}
    if c.ports:
        container["ports"] = [
            {"containerPort": p.target_port or p.port, "protocol": "TCP"} for p in c.ports
        ]
    if env:
        container["env"] = env
    if c.resources:
        container["resources"] = c.resources.to_dict()
    if c.readiness_probe:
        container["readinessProbe"] = c.readiness_probe.to_dict()
    if c.liveness_probe:
        container["livenessProbe"] = c.liveness_probe.to_dict()
    sel = selector(stack, c.name)
    template: dict[str, Any] = {
        "metadata": {"labels": {**sel, **MANAGED_BY}},
        "spec": {"containers": [container]},
    }
    if c.config is not None:
        container["volumeMounts"] = [
            {"name": "config", "mountPath": c.config.mount_path, "readOnly": True}
        ]
        template["spec"]["volumes"] = [
            {"name": "config", "configMap": {"name": f"{service_name(stack, c.name)}-config"}}
        ]
        digest = hashlib.sha256(json.dumps(c.config.files, sort_keys=True).encode()).hexdigest()
        template["metadata"]["annotations"] = {CONFIG_HASH: digest[:16]}
    if secrets_hash:
        template["metadata"].setdefault("annotations", {})[SECRETS_HASH] = secrets_hash
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(owner, c.name, service_name(stack, c.name)),
        "spec": {"replicas": c.replicas, "selector": {"matchLabels": sel}, "template": template},
    }


def component_service(owner: dict[str, Any], c: Component) -> dict[str, Any] | None:
    if not c.ports:
        return None
    stack = owner["metadata"]["name"]
    service_type = c.service_type or (
        "NodePort" if any(p.node_port for p in c.ports) else "ClusterIP"
    )
    ports = []
    for p in c.ports:
        entry: dict[str, Any] = {
            "name": p.name or f"p{p.port}",
            "port": p.port,
            "targetPort": p.target_port or p.port,
            "protocol": "TCP",
        }
        if p.node_port and service_type != "ClusterIP":
            entry["nodePort"] = p.node_port
        ports.append(entry)
    return _service(
        owner,
        c.name,
        service_name(stack, c.name),
        {"type": service_type, "selector": selector(stack, c.name), "ports": ports},
    )
