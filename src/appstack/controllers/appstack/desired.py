"""AppStack members → the objects we want (pure, unit-tested).

Components: ConfigMaps (``config``: ``-config``; ``configs``: ``<stack>-<name>`` each),
Deployment (env, injected connections, the ConfigMaps mounted, a hash of what they hold on
the pod template so a change rolls this component's pods and no other's, and
:func:`secrets_version` — which version of each Secret it reads or mounts, never their
data; the component's own volumes, command and scheduling fields),
Service. Middleware: :mod:`.middleware`. Names and labels: :mod:`.labels`.
:func:`children` — every member's children — is what ``appstack render`` prints; the
reconciler applies the same per-member functions (:func:`component_children`,
:func:`appstack.controllers.appstack.middleware.children`) wave by wave.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from appstack.api.appstack import AppStackSpec
from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.api.security import PodSecurityLevel
from appstack.controllers.appstack import labels
from appstack.controllers.appstack.connections import (
    connection_env,
    credentials_secret,
    member_service,
    service_name,
)
from appstack.controllers.appstack.middleware import children as middleware_children
from appstack.controllers.appstack.mongodb import uri_env
from appstack.controllers.util.meta import MANAGED_BY
from appstack.controllers.util.workloads import (
    container,
    security_context,
)
from appstack.sdk import (
    Container,
    EnvVarDict,
    KubeObject,
    Manifest,
    ServicePortSpec,
    VolumeDict,
    VolumeMountDict,
    user_env,
    user_mounts,
    user_volumes,
)

Members = Mapping[str, Middleware | Component]  # what ``uses`` may name


def config_maps(owner: KubeObject, c: Component) -> list[Manifest]:
    """The ConfigMaps we write for ``c``: ``<stack>-<c>-config`` (``config``), or
    ``<stack>-<name>`` for each entry of ``configs`` with files."""
    stack = owner["metadata"]["name"]
    if c.config is not None:
        entries = [(f"{service_name(stack, c.name)}-config", c.config.files)]
    else:
        entries = [(service_name(stack, m.name), m.files) for m in c.configs or [] if m.files]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": labels.metadata(owner, c.name, name),
            "data": dict(files),
        }
        for name, files in entries
    ]


def used_config_maps(c: Component) -> list[str]:
    """Existing ConfigMaps ``c`` mounts (``configs[].configMap``, ``volumes[].configMap``): a
    change of one rolls it."""
    names = {m.config_map for m in c.configs or [] if m.config_map}
    names |= {v.config_map.name for v in c.volumes or [] if v.config_map is not None}
    return sorted(names)


def _mount_configs(
    stack: str, c: Component, main: Container, spec: dict[str, Any], versions: str | None
) -> str | None:
    """Mount the component's ConfigMaps (config/configs, then its own volumes); the digest
    of what they hold and of ``versions`` (None: neither)."""
    if c.config is not None:  # the short form, digest unchanged since it was the only one
        main["volumeMounts"] = [
            {"name": "config", "mountPath": c.config.mount_path, "readOnly": True}
        ]
        spec["volumes"] = [
            {"name": "config", "configMap": {"name": f"{service_name(stack, c.name)}-config"}}
        ]
        _mount_volumes(c, main, spec)
        if versions is None:
            return labels.digest(c.config.files)
        return labels.digest([c.config.files, versions])
    _mount_volumes(c, main, spec)
    if not c.configs:
        return None if versions is None else labels.digest([versions])
    mounts: list[VolumeMountDict] = []
    volumes: list[VolumeDict] = []
    for m in c.configs:
        mount: VolumeMountDict = {"name": m.name, "mountPath": m.mount_path, "readOnly": True}
        if m.sub_path:
            mount["subPath"] = m.sub_path
        mounts.append(mount)
        source = m.config_map or service_name(stack, m.name)
        volumes.append({"name": m.name, "configMap": {"name": source}})
    main["volumeMounts"] = mounts + main.get("volumeMounts", [])
    spec["volumes"] = volumes + spec.get("volumes", [])
    content = [[m.name, m.files] for m in c.configs] + [versions]
    return labels.digest(content)


def _mount_volumes(c: Component, main: Container, spec: dict[str, Any]) -> None:
    """The component's own volumes and volumeMounts, after those of config/configs."""
    if c.volume_mounts:
        main["volumeMounts"] = main.get("volumeMounts", []) + user_mounts(c.volume_mounts)
    if c.volumes:
        spec["volumes"] = spec.get("volumes", []) + user_volumes(c.volumes)


def used_secrets(c: Component, members: Members, stack: str) -> list[str]:
    """Secrets whose change must roll the component: the credentials of the middleware it
    uses — the user's ``secretRef`` (external) or the generated ``<stack>-<member>-
    credentials`` (managed: a rotated password) — secretKeyRefs of its own env and the
    Secrets its volumes mount."""
    names = {
        ref.name
        for ref in (e.value_from.secret_key_ref for e in c.envs or [] if e.value_from is not None)
        if ref is not None
    }
    names |= {v.secret.secret_name for v in c.volumes or [] if v.secret is not None}
    for used in c.uses or []:
        member = members[used]
        if not isinstance(member, Middleware):
            continue
        if member.managed is not None:
            names.add(credentials_secret(stack, member.name))
        elif member.external is not None and member.external.secret_ref is not None:
            names.add(member.external.secret_ref.name)
    return sorted(names)


def secrets_version(used: Sequence[tuple[str, dict[str, Any] | None]]) -> str:
    """A digest of each used Secret's name, uid and resourceVersion (None: missing).

    It changes whenever a Secret is replaced or written, so the pods roll; it is computed
    from metadata only, so the pod template (readable with ``view``) reveals nothing about
    the data — a digest of the data would let anyone test guesses of a password.
    """
    digest = hashlib.sha256()
    for name, secret in used:
        meta = (secret or {}).get("metadata") or {}
        digest.update(json.dumps([name, meta.get("uid"), meta.get("resourceVersion")]).encode())
    return digest.hexdigest()[:16]


def deployment(
    owner: KubeObject,
    c: Component,
    members: Members,
    secrets_hash: str | None = None,
    config_maps_version: str | None = None,
    *,
    level: PodSecurityLevel = "baseline",
) -> Manifest:
    """The component's Deployment; ``config_maps_version``: :func:`secrets_version` of the
    existing ConfigMaps it mounts; ``level``: the Pod Security level of its pods."""
    stack = owner["metadata"]["name"]
    env: list[EnvVarDict] = [{"name": k, "value": v} for k, v in sorted((c.env or {}).items())]
    env += user_env(c.envs or [])
    for used in c.uses or []:
        env += connection_env(stack, members[used]) + uri_env(owner, members[used])
    main = container(
        c.name,
        c.image,
        ports=[
            {"containerPort": p.target_port or p.port, "protocol": "TCP"} for p in c.ports or []
        ],
        env=env,
        resources=c.resources,
        command=c.command,
        args=c.args,
        readiness_probe=c.readiness_probe,
        liveness_probe=c.liveness_probe,
        security=security_context(c.security_context, level=level),
    )
    sel = labels.selector(stack, c.name)
    template: dict[str, Any] = {
        "metadata": {"labels": {**sel, **MANAGED_BY}},
        "spec": {"containers": [main]},
    }
    if c.image_pull_secrets:
        template["spec"]["imagePullSecrets"] = [s.to_dict() for s in c.image_pull_secrets]
    template["spec"].update(c.pod_scheduling())
    digest = _mount_configs(stack, c, main, template["spec"], config_maps_version)
    if digest is not None:
        template["metadata"]["annotations"] = {labels.CONFIG_HASH: digest[:16]}
    if secrets_hash:
        template["metadata"].setdefault("annotations", {})[labels.SECRETS_HASH] = secrets_hash
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": labels.metadata(owner, c.name, service_name(stack, c.name)),
        "spec": {"replicas": c.replicas, "selector": {"matchLabels": sel}, "template": template},
    }


def component_service(owner: KubeObject, c: Component) -> Manifest | None:
    if not c.ports:
        return None
    stack = owner["metadata"]["name"]
    service_type = c.effective_service_type()
    ports = []
    for p in c.ports:
        entry: ServicePortSpec = {
            "name": p.name or f"p{p.port}",
            "port": p.port,
            "targetPort": p.target_port or p.port,
            "protocol": "TCP",
        }
        if p.node_port and service_type != "ClusterIP":
            entry["nodePort"] = p.node_port
        ports.append(entry)
    return labels.service(
        owner,
        c.name,
        member_service(stack, c),
        {"type": service_type, "selector": labels.selector(stack, c.name), "ports": ports},
    )


def component_children(
    owner: KubeObject,
    c: Component,
    members: Members,
    secrets_hash: str | None = None,
    config_maps_version: str | None = None,
    *,
    level: PodSecurityLevel = "baseline",
) -> list[Manifest]:
    """Every child of one component: its ConfigMaps, Deployment, Service (if ports)."""
    objects = [
        *config_maps(owner, c),
        deployment(owner, c, members, secrets_hash, config_maps_version, level=level),
        component_service(owner, c),
    ]
    return [o for o in objects if o is not None]


def children(
    owner: KubeObject, spec: AppStackSpec, level: PodSecurityLevel = "baseline"
) -> list[Manifest]:
    """Every member's children: middleware first, then components (credentials Secrets are
    generated in the cluster, never here); ``level``: the namespace's Pod Security level
    (``spec.podSecurity`` wins)."""
    middleware = {m.name: m for m in spec.middleware or []}
    out = [child for mw in middleware.values() for child in middleware_children(owner, mw)]
    members: Members = {**middleware, **{c.name: c for c in spec.components}}
    for c in spec.components:
        out += component_children(owner, c, members, level=spec.pod_security or level)
    return out
