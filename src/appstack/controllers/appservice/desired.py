"""AppService → the Deployment and Service we want (pure functions, unit-tested).

:func:`children` is what the reconciler applies and what ``appstack render`` prints.

Children are named after the AppService, carry the recommended ``app.kubernetes.io/*``
labels and a controller ownerReference (so the garbage collector deletes them with it),
and contain only the fields we own — server-side apply leaves the rest (ClusterIP,
allocated nodePorts, defaults) to the API server.
"""

from __future__ import annotations

from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.api.security import PodSecurityLevel
from appstack.controllers.util.meta import child_labels
from appstack.controllers.util.workloads import (
    container,
    security_context,
)
from appstack.sdk import (
    ChildMeta,
    ContainerPort,
    KubeObject,
    Manifest,
    ServicePort,
    ServicePortSpec,
    TemplateMeta,
    child_metadata,
    instance_labels,
    user_env,
    user_mounts,
    user_volumes,
)

CONTAINER = "app"
COMPONENT = "appservice"


def _metadata(app: KubeObject) -> ChildMeta:
    name = app["metadata"]["name"]
    return child_metadata(app, name, child_labels(name, COMPONENT))


def _container_port(port: ServicePort) -> ContainerPort:
    if isinstance(port.target_port, str):  # a named port: the container declares the name
        return {"protocol": port.protocol, "name": port.target_port, "containerPort": port.port}
    out: ContainerPort = {"protocol": port.protocol, "containerPort": port.target_port or port.port}
    if port.name:
        out["name"] = port.name
    return out


def deployment(
    app: KubeObject, spec: AppServiceSpec, level: PodSecurityLevel = "baseline"
) -> Manifest:
    name = app["metadata"]["name"]
    app_container = container(
        CONTAINER,
        spec.image,
        ports=[_container_port(p) for p in spec.ports or []],
        env=user_env(spec.envs or []),
        resources=spec.resources,
        command=spec.command,
        args=spec.args,
        readiness_probe=spec.readiness_probe,
        liveness_probe=spec.liveness_probe,
        security=security_context(spec.security_context, level=spec.pod_security or level),
    )
    if spec.volume_mounts:
        app_container["volumeMounts"] = user_mounts(spec.volume_mounts)
    pod_spec: dict[str, Any] = {"containers": [app_container]}
    if spec.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [s.to_dict() for s in spec.image_pull_secrets]
    if spec.service_account_name:
        pod_spec["serviceAccountName"] = spec.service_account_name
    if spec.volumes:
        pod_spec["volumes"] = user_volumes(spec.volumes)
    pod_spec.update(spec.pod_scheduling())
    template_meta: TemplateMeta = {
        # Selector labels last: pod labels cannot break the selector.
        "labels": {**(spec.pod_labels or {}), **child_labels(name, COMPONENT)},
    }
    if spec.pod_annotations:
        template_meta["annotations"] = dict(spec.pod_annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(app),
        "spec": {
            "replicas": spec.size,
            "selector": {"matchLabels": instance_labels(name)},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def service(app: KubeObject, spec: AppServiceSpec) -> Manifest | None:
    """The Service, or None when the application exposes no ports (nothing to serve)."""
    if not spec.ports:
        return None
    service_type = spec.effective_service_type()
    ports = []
    for port in spec.ports or []:
        entry: ServicePortSpec = {
            "protocol": port.protocol,
            "port": port.port,
            "targetPort": port.target_port if port.target_port is not None else port.port,
        }
        if port.name:
            entry["name"] = port.name
        if port.node_port and service_type != "ClusterIP":
            entry["nodePort"] = port.node_port
        if port.app_protocol:
            entry["appProtocol"] = port.app_protocol
        ports.append(entry)
    svc_spec: dict[str, Any] = {
        "type": service_type,
        "selector": instance_labels(app["metadata"]["name"]),
        "ports": ports,
    }
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(app), "spec": svc_spec}


def children(
    app: KubeObject, spec: AppServiceSpec, level: PodSecurityLevel = "baseline"
) -> list[Manifest]:
    """Every child the AppService wants: its Deployment, and its Service if it has ports.
    ``level``: the namespace's Pod Security level (``spec.podSecurity`` wins)."""
    service_ = service(app, spec)
    return [deployment(app, spec, level), *([service_] if service_ is not None else [])]
