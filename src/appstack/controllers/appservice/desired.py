"""AppService → the Deployment and Service we want (pure functions, unit-tested).

Children are named after the AppService, carry the recommended ``app.kubernetes.io/*``
labels and a controller ownerReference (so the garbage collector deletes them with it),
and contain only the fields we own — server-side apply leaves the rest (ClusterIP,
allocated nodePorts, defaults) to the API server.
"""

from __future__ import annotations

from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.api.core import ServicePort
from appstack.controllers.children import MANAGED_BY, owner_reference

CONTAINER = "app"


def selector_labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name}


def child_labels(name: str) -> dict[str, str]:
    return {**selector_labels(name), **MANAGED_BY, "app.kubernetes.io/component": "appservice"}


def _metadata(app: dict[str, Any]) -> dict[str, Any]:
    meta = app["metadata"]
    return {
        "name": meta["name"],
        "namespace": meta["namespace"],
        "labels": child_labels(meta["name"]),
        "ownerReferences": [owner_reference(app)],
    }


def _container_port(port: ServicePort) -> dict[str, Any]:
    out: dict[str, Any] = {"protocol": port.protocol}
    if isinstance(port.target_port, str):  # a named port: the container declares the name
        out.update(name=port.target_port, containerPort=port.port)
    else:
        out["containerPort"] = port.target_port or port.port
        if port.name:
            out["name"] = port.name
    return out


def deployment(app: dict[str, Any], spec: AppServiceSpec) -> dict[str, Any]:
    name = app["metadata"]["name"]
    container: dict[str, Any] = {"name": CONTAINER, "image": spec.image}
    if spec.ports:
        container["ports"] = [_container_port(p) for p in spec.ports]
    if spec.envs:
        container["env"] = [e.to_dict() for e in spec.envs]
    if spec.resources:
        container["resources"] = spec.resources.to_dict()
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    if spec.readiness_probe:
        container["readinessProbe"] = spec.readiness_probe.to_dict()
    if spec.liveness_probe:
        container["livenessProbe"] = spec.liveness_probe.to_dict()
    pod_spec: dict[str, Any] = {"containers": [container]}
    if spec.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [s.to_dict() for s in spec.image_pull_secrets]
    if spec.service_account_name:
        pod_spec["serviceAccountName"] = spec.service_account_name
    template_meta: dict[str, Any] = {
        # Selector labels last: pod labels cannot break the selector.
        "labels": {**(spec.pod_labels or {}), **child_labels(name)},
    }
    if spec.pod_annotations:
        template_meta["annotations"] = dict(spec.pod_annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(app),
        "spec": {
            "replicas": spec.size,
            "selector": {"matchLabels": selector_labels(name)},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def service(app: dict[str, Any], spec: AppServiceSpec) -> dict[str, Any] | None:
    """The Service, or None when the application exposes no ports (nothing to serve)."""
    if not spec.ports:
        return None
    service_type = spec.effective_service_type()
    ports = []
    for port in spec.ports or []:
        entry: dict[str, Any] = {
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
        "selector": selector_labels(app["metadata"]["name"]),
        "ports": ports,
    }
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(app), "spec": svc_spec}
