"""``AppService``: one application — image, size, ports, env,
resources — run as a Deployment and exposed by a Service.

Spec-compatible with the seed operator's sample (``size``, ``image``, ``ports``, ``envs``,
``resources``), plus what production users need (service type, command/args, probes, pod
labels/annotations, image pull secrets, service account, volumes, scheduling: the SDK's
models of the Kubernetes types, :mod:`appstack.sdk.model`). Validation that can be decided
from the object alone is declared here once, enforced at admission by the generated CRD
(OpenAPI bounds and CEL rules) and by the model client-side (:mod:`appstack.sdk.cel`); the
controller reports the rest as ``Ready=False``.
Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from appstack.api.kind import custom_kind
from appstack.api.security import POD_SECURITY, SECURITY, PodSecurityLevel
from appstack.sdk import (
    AGE,
    DNS_1035,
    POD_FIELD_DOCS,
    WIDE_READY,
    Condition,
    CustomObject,
    EnvList,
    Image,
    KubeModel,
    ObjectName,
    PodScheduling,
    Probe,
    PullSecrets,
    ResourceRequirements,
    SecurityContext,
    ServicePort,
    ServiceType,
    VolumeMounts,
    Volumes,
    default_service_type,
    mount_rules,
    name_rules,
)

ShortString = Annotated[str, Field(max_length=4096)]
LabelMap = Annotated[dict[str, Annotated[str, Field(max_length=63)]], Field(max_length=64)]
AnnotationMap = Annotated[dict[str, Annotated[str, Field(max_length=8192)]], Field(max_length=64)]

_SPEC_RULES: list[Any] = [
    {
        "rule": "!has(self.ports) || size(self.ports) <= 1 || "
        "self.ports.all(p, has(p.name) && p.name != '')",
        "message": "every port needs a name when there is more than one port",
        "fieldPath": ".ports",
    },
    {
        "rule": "!has(self.ports) || self.ports.all(p, !has(p.name) || "
        "self.ports.exists_one(q, has(q.name) && q.name == p.name))",
        "message": "port names must be unique",
        "fieldPath": ".ports",
    },
    {
        "rule": "!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port "
        "&& q.protocol == p.protocol))",
        "message": "port numbers must be unique per protocol",
        "fieldPath": ".ports",
    },
    {
        "rule": "!has(self.serviceType) || self.serviceType != 'ClusterIP' || !has(self.ports) || "
        "!self.ports.exists(p, has(p.nodePort))",
        "message": "nodePort needs serviceType NodePort or LoadBalancer, not ClusterIP",
        "fieldPath": ".serviceType",
    },
    *mount_rules(),
]


class AppServiceSpec(PodScheduling):
    """The desired state of an application."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _SPEC_RULES})

    size: int = Field(1, ge=0, le=10000, description="Number of replicas (pods).")
    image: Image = Field(description="Container image, e.g. nginx:1.27.")
    ports: list[ServicePort] | None = Field(
        default=None,
        max_length=64,
        description="Ports of the application, exposed by its Service (ServicePort fields).",
    )
    envs: EnvList | None = Field(
        default=None, max_length=256, description="Environment variables of the container."
    )
    resources: ResourceRequirements | None = Field(
        default=None, description="CPU/memory requests and limits of the container."
    )
    security_context: SecurityContext | None = Field(default=None, description=SECURITY)
    pod_security: PodSecurityLevel | None = Field(default=None, description=POD_SECURITY)
    service_type: ServiceType | None = Field(
        default=None,
        description="Service type; default NodePort when a port sets nodePort, "
        "otherwise ClusterIP.",
    )
    command: list[ShortString] | None = Field(
        default=None, max_length=64, description="Entrypoint (replaces the image's ENTRYPOINT)."
    )
    args: list[ShortString] | None = Field(
        default=None, max_length=256, description="Arguments (replace the image's CMD)."
    )
    readiness_probe: Probe | None = Field(
        default=None, description="When a pod is ready for traffic."
    )
    liveness_probe: Probe | None = Field(default=None, description="When a pod must be restarted.")
    pod_labels: LabelMap | None = Field(default=None, description="Extra labels for the pods.")
    pod_annotations: AnnotationMap | None = Field(
        default=None, description="Annotations for the pods."
    )
    image_pull_secrets: PullSecrets | None = Field(
        default=None, description=POD_FIELD_DOCS["imagePullSecrets"]
    )
    service_account_name: ObjectName | None = Field(
        default=None, description="ServiceAccount the pods run as."
    )
    volumes: Volumes | None = Field(default=None, description=POD_FIELD_DOCS["volumes"])
    volume_mounts: VolumeMounts | None = Field(
        default=None, description=POD_FIELD_DOCS["volumeMounts"]
    )

    def effective_service_type(self) -> ServiceType:
        return default_service_type(self.service_type, self.ports)


class AppServiceStatus(KubeModel):
    """The observed state, written by the operator."""

    replicas: int | None = Field(default=None, description="Pods (any state) of the Deployment.")
    ready_replicas: int | None = Field(default=None, description="Pods that are Ready.")
    available_replicas: int | None = Field(
        default=None, description="Pods ready for minReadySeconds."
    )
    updated_replicas: int | None = Field(default=None, description="Pods of the current template.")
    unavailable_replicas: int | None = Field(default=None, description="Pods still missing.")
    ready: str | None = Field(
        default=None, description="ready/desired, e.g. 2/2 (printed by kubectl)."
    )
    selector: str | None = Field(default=None, description="Label selector of the pods (scale).")
    observed_generation: int | None = Field(default=None, description="Generation last reconciled.")
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready, Available (the Deployment's), Progressing and Degraded.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="appservices",
    short_names=("appsvc",),
    subresources={
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    },
    printer_columns=(
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": ".status.ready",
            "description": "Ready pods / desired size",
        },
        {"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas"},
        {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
        {"name": "Image", "type": "string", "jsonPath": ".spec.image"},
        *WIDE_READY,
        AGE,
    ),
)
class AppService(CustomObject):
    """An application: a Deployment and a Service kept in sync with this spec."""

    NAME_RULES = name_rules(DNS_1035, 63, "it names the Service and is a label value")

    spec: AppServiceSpec
    status: AppServiceStatus | None = None
