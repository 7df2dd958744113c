"""AppStack members → the objects we want (pure, unit-tested).

Components: ConfigMap ``-config`` (files), Deployment (env, injected connections, the config
mounted, a hash of it on the pod template so a change rolls the pods, and
:func:`secrets_version` — which version of each Secret it reads, never their data),
Service. Middleware: :mod:`.middleware`. Names and labels: :mod:`.labels`.
:func:`children` — every member's children — is what ``appstack render`` prints; the
reconciler applies the same per-member functions (:func:`component_children`,
:func:`appstack.controllers.appstack.middleware.children`) wave by wave.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from appstack.api.appstack import AppStackSpec
from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack import labels
from appstack.controllers.appstack.connections import connection_env, service_name
from appstack.controllers.appstack.middleware import children as middleware_children
from appstack.controllers.appstack.mongodb import uri_env
from appstack.controllers.util.meta import MANAGED_BY
from appstack.controllers.util.workloads import container, security_context


def config_map(owner: dict[str, Any], c: Component) -> dict[str, Any] | None:
    if c.config is None:
        return None
    stack = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": labels.metadata(owner, c.name, f"{service_name(stack, c.name)}-config"),
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
    owner: dict[str, Any],
    c: Component,
    middleware: dict[str, Middleware],
    secrets_hash: str | None = None,
) -> dict[str, Any]:
    stack = owner["metadata"]["name"]
    env = [{"name": k, "value": v} for k, v in sorted((c.env or {}).items())]
    env += [e.to_dict() for e in c.envs or []]
    for used in c.uses or []:
        env += connection_env(stack, middleware[used]) + uri_env(owner, middleware[used])
    main = container(
        c.name,
        c.image,
        ports=[
            {"containerPort": p.target_port or p.port, "protocol": "TCP"} for p in c.ports or []
        ],
        env=env,
        resources=c.resources,
        readiness_probe=c.readiness_probe,
        liveness_probe=c.liveness_probe,
        security=security_context(c.security_context),
    )
    sel = labels.selector(stack, c.name)
    template: dict[str, Any] = {
        "metadata": {"labels": {**sel, **MANAGED_BY}},
        "spec": {"containers": [main]},
    }
    if c.config is not None:
        main["volumeMounts"] = [
            {"name": "config", "mountPath": c.config.mount_path, "readOnly": True}
        ]
        template["spec"]["volumes"] = [
            {"name": "config", "configMap": {"name": f"{service_name(stack, c.name)}-config"}}
        ]
        digest = hashlib.sha256(json.dumps(c.config.files, sort_keys=True).encode()).hexdigest()
        template["metadata"]["annotations"] = {labels.CONFIG_HASH: digest[:16]}
    if secrets_hash:
        template["metadata"].setdefault("annotations", {})[labels.SECRETS_HASH] = secrets_hash
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": labels.metadata(owner, c.name, service_name(stack, c.name)),
        "spec": {"replicas": c.replicas, "selector": {"matchLabels": sel}, "template": template},
    }


def component_service(owner: dict[str, Any], c: Component) -> dict[str, Any] | None:
    if not c.ports:
        return None
    stack = owner["metadata"]["name"]
    service_type = c.effective_service_type()
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
    return labels.service(
        owner,
        c.name,
        service_name(stack, c.name),
        {"type": service_type, "selector": labels.selector(stack, c.name), "ports": ports},
    )


def component_children(
    owner: dict[str, Any],
    c: Component,
    middleware: dict[str, Middleware],
    secrets_hash: str | None = None,
) -> list[dict[str, Any]]:
    """Every child of one component: its ConfigMap (if config), Deployment, Service (if ports)."""
    objects = [
        config_map(owner, c),
        deployment(owner, c, middleware, secrets_hash),
        component_service(owner, c),
    ]
    return [o for o in objects if o is not None]


def children(owner: dict[str, Any], spec: AppStackSpec) -> list[dict[str, Any]]:
    """Every member's children: middleware first, then components (credentials Secrets are
    generated in the cluster, never here)."""
    members = {m.name: m for m in spec.middleware or []}
    out = [child for mw in members.values() for child in middleware_children(owner, mw)]
    for c in spec.components:
        out += component_children(owner, c, members)
    return out
