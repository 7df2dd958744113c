"""Kubernetes core types, one Pydantic model each, for any kind's spec (appstack's own and
yours): the base :class:`KubeModel`; a container's ports, environment (:class:`EnvVar`,
:class:`EnvFromSource`), :class:`ResourceRequirements`, :class:`Probe` and
:class:`SecurityContext`; a pod's volumes (:class:`Volume`, :class:`VolumeMount`) and
scheduling (``nodeSelector``: :data:`NodeSelectorMap`, :class:`Toleration`,
:class:`Affinity` and its parts, :class:`TopologySpreadConstraint`, :class:`LabelSelector`);
:class:`LocalObjectReference`, :class:`Condition` — with the bounds the API server enforces.

This is the one home of these types (issue #47): every kind that has a field of one of them
uses the model from here, so the field is validated the same way everywhere (a test walks
every kind's spec and fails on a second definition). It is the module a kind's author
already imports :class:`KubeModel` from, and it sits below the controller kit, so both a
kind's spec and the code writing its children (:mod:`appstack.sdk.kit.parts`: the models'
wire forms, ``user_probe``, ``user_volumes``, ...) can use it. Users import the names from
:mod:`appstack.sdk`.

Field names are camelCase on the wire (``targetPort``), snake_case in Python. Extra
``json_schema_extra`` keys (``x-kubernetes-*``) flow into the generated CRD schema
(:mod:`appstack.sdk.schema`). What a rule can decide from the object alone is written once,
in CEL, and checked at admission and by the models client-side (:mod:`appstack.sdk.cel`).

A volume is one of four sources — ``configMap``, ``secret``, ``persistentVolumeClaim``,
``emptyDir`` — of the object's own namespace: there is no field for ``hostPath`` or any other
source, so none can be asked for (an unknown field is refused by ``kubectl``'s strict
validation and pruned by the API server), and nothing here goes beyond the Pod Security
baseline (:mod:`appstack.sdk.guards.pods`). :class:`Volume`'s rule,
:data:`TOLERATION_RULES` and :func:`mount_rules` are CEL; ``nodeSelector`` keys are checked
by the models only (a schema cannot bound a map's keys, so a CEL rule matching each key risks
the API server's cost estimate); what remains (an affinity term's values for its operator)
is the API server's, when the workload is applied. Types only, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core.core_schema import CoreSchema

from appstack.sdk.names import DNS_LABEL, ObjectName

QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
INT_OR_STRING: dict[str, Any] = {"x-kubernetes-int-or-string": True}

Port = Annotated[int, Field(ge=1, le=65535)]
ServiceType = Literal["ClusterIP", "NodePort", "LoadBalancer"]
IntOrString = Annotated[int | str, Field(json_schema_extra=INT_OR_STRING)]
Quantity = Annotated[int | str, Field(json_schema_extra={**INT_OR_STRING, "pattern": QUANTITY})]


class KubeModel(BaseModel):
    """Base: camelCase aliases, unknown fields rejected (as ``kubectl --validate=strict``),
    validators built on first use."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_attribute_docstrings=True,
        # Validators are built on first use, not at import: the operator builds those of
        # the kinds that have objects only (2.5 MiB less when only AppServices exist).
        defer_build=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase, without unset optional fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class ServicePort(KubeModel):
    """A port the application listens on, exposed by its Service."""

    name: str | None = Field(
        default=None,
        max_length=15,
        pattern=DNS_LABEL,
        description="Name of the port (IANA_SVC_NAME); required when there is more than one port.",
    )
    protocol: Literal["TCP", "UDP", "SCTP"] = Field("TCP", description="Protocol of the port.")
    port: Port = Field(description="Port the Service exposes.")
    target_port: IntOrString | None = Field(
        default=None,
        description="Port (number or container port name) on the pods; defaults to port.",
    )
    node_port: int | None = Field(
        default=None,
        ge=30000,
        le=32767,
        description="Port on every node (30000-32767); needs serviceType NodePort or LoadBalancer.",
    )
    app_protocol: str | None = Field(
        default=None,
        max_length=256,
        description="Application protocol (e.g. http, kubernetes.io/h2c).",
    )


class KeySelector(KubeModel):
    name: ObjectName = Field(description="Name of the object.")
    key: str = Field(min_length=1, max_length=253, description="Key in the object's data.")
    optional: bool | None = Field(
        default=None, description="Do not fail if the object or key is missing."
    )


class FieldSelector(KubeModel):
    field_path: str = Field(max_length=256, description="Pod field, e.g. metadata.name.")
    api_version: str | None = Field(default=None, max_length=64)


class ResourceFieldSelector(KubeModel):
    resource: str = Field(max_length=64, description="e.g. limits.cpu, requests.memory.")
    container_name: str | None = Field(default=None, max_length=63)
    divisor: Quantity | None = None


class EnvVarSource(KubeModel):
    """Where an environment variable's value comes from (exactly one)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "[has(self.secretKeyRef), has(self.configMapKeyRef), "
                    "has(self.fieldRef), has(self.resourceFieldRef)].filter(x, x).size() == 1",
                    "message": "valueFrom needs exactly one of secretKeyRef, configMapKeyRef, "
                    "fieldRef, resourceFieldRef",
                }
            ]
        }
    )

    secret_key_ref: KeySelector | None = Field(default=None, description="A key of a Secret.")
    config_map_key_ref: KeySelector | None = Field(
        default=None, description="A key of a ConfigMap."
    )
    field_ref: FieldSelector | None = Field(default=None, description="A field of the pod.")
    resource_field_ref: ResourceFieldSelector | None = Field(
        default=None, description="A resource limit or request of the container."
    )


E = TypeVar("E", bound="EnvVar")
ENV_VAR_RULES: list[Any] = [
    {
        "rule": "!(has(self.value) && has(self.valueFrom))",
        "message": "set either value or valueFrom, not both",
    }
]


class EnvVar(KubeModel):
    """An environment variable of the application's container."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": ENV_VAR_RULES})

    name: str = Field(
        min_length=1, max_length=256, pattern=r"^[^=]+$", description="Variable name (no '=')."
    )
    value: str | None = Field(default=None, max_length=32768, description="Literal value.")
    value_from: EnvVarSource | None = Field(
        default=None,
        description="Value from a Secret, ConfigMap "
        "or the pod (Secrets are referenced, never copied).",
    )


def unique_env_names(env: list[E]) -> list[E]:
    """A list of EnvVar whose names are unique (else a ValueError naming the repeated)."""
    names = [e.name for e in env]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"duplicate environment variable names: {', '.join(twice)}")
    return env


# A list of EnvVar keyed by name: the API server refuses a repeated name ("Duplicate value")
# at admission, as it would in a Pod; server-side apply could not merge it (HTTP 500).
EnvList = Annotated[
    list[EnvVar],
    AfterValidator(unique_env_names),
    Field(
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
    ),
]


class EnvFromReference(KubeModel):
    name: ObjectName = Field(description="Name of the object.")
    optional: bool | None = Field(default=None, description="Do not fail if it is missing.")


_ONE_ENV_SOURCE = "envFrom needs exactly one of configMapRef, secretRef"


class EnvFromSource(KubeModel):
    """Every key of a ConfigMap or Secret as an environment variable (exactly one)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.configMapRef) != has(self.secretRef)",
                    "message": _ONE_ENV_SOURCE,
                }
            ]
        }
    )

    prefix: str | None = Field(
        default=None, max_length=253, description="Put before every variable's name."
    )
    config_map_ref: EnvFromReference | None = Field(default=None, description="A ConfigMap.")
    secret_ref: EnvFromReference | None = Field(
        default=None, description="A Secret (referenced, never copied)."
    )


class ResourceRequirements(KubeModel):
    """CPU/memory requests and limits of the application's container."""

    limits: dict[str, Quantity] | None = Field(
        default=None,
        max_length=16,
        description="Maximum resources, e.g. {cpu: 500m, memory: 256Mi}.",
    )
    requests: dict[str, Quantity] | None = Field(
        default=None, max_length=16, description="Guaranteed resources, used for scheduling."
    )


class HTTPGetAction(KubeModel):
    path: str | None = Field(default=None, max_length=2048)
    port: IntOrString = Field(description="Port number or name.")
    scheme: Literal["HTTP", "HTTPS"] | None = None


class TCPSocketAction(KubeModel):
    port: IntOrString = Field(description="Port number or name.")


class ExecAction(KubeModel):
    command: list[Annotated[str, Field(max_length=4096)]] = Field(max_length=64)


class GRPCAction(KubeModel):
    port: Port
    service: str | None = Field(default=None, max_length=256)


class Probe(KubeModel):
    """A readiness or liveness check (exactly one of httpGet, tcpSocket, exec, grpc)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "[has(self.httpGet), has(self.tcpSocket), has(self.exec), "
                    "has(self.grpc)].filter(x, x).size() == 1",
                    "message": "a probe needs exactly one of httpGet, tcpSocket, exec, grpc",
                }
            ]
        }
    )

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        handlers = (self.http_get, self.tcp_socket, self.exec, self.grpc)
        if sum(h is not None for h in handlers) != 1:
            raise ValueError("a probe needs exactly one of httpGet, tcpSocket, exec, grpc")
        return self

    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    exec: ExecAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: int | None = Field(default=None, ge=0, le=3600)
    period_seconds: int | None = Field(default=None, ge=1, le=3600)
    timeout_seconds: int | None = Field(default=None, ge=1, le=3600)
    success_threshold: int | None = Field(default=None, ge=1, le=100)
    failure_threshold: int | None = Field(default=None, ge=1, le=100)


class LocalObjectReference(KubeModel):
    name: ObjectName


# --- Pods: volumes, scheduling, security context ----------------------------------------

#: A label key: an optional DNS-subdomain prefix and '/', then a name of at most 63.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
# A relative path without '..' elements (a key's file, a subPath).
_SEGMENT = r"(\.?[-_a-zA-Z0-9][-._a-zA-Z0-9]*|\.\.[-._a-zA-Z0-9]+)"
RELATIVE_PATH = rf"^{_SEGMENT}(/{_SEGMENT})*$"

LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=LABEL_KEY)]
LabelValue = Annotated[str, Field(max_length=63, pattern=LABEL_VALUE)]
MountPath = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^/")]
RelativePath = Annotated[str, Field(min_length=1, max_length=1024, pattern=RELATIVE_PATH)]
FileMode = Annotated[int, Field(ge=0, le=0o777)]

MAX_VOLUMES = 16  # volumes and volumeMounts each: the CEL rules compare every pair


class KeyToPath(KubeModel):
    """One key of the ConfigMap or Secret, as a file."""

    key: str = Field(min_length=1, max_length=253, description="The key.")
    path: RelativePath = Field(description="The file, relative to the mount path.")
    mode: FileMode | None = Field(default=None, description="The file's mode bits (0-0777).")


class ConfigMapVolumeSource(KubeModel):
    """A ConfigMap of the namespace, its keys as files."""

    name: ObjectName = Field(description="The ConfigMap.")
    items: list[KeyToPath] | None = Field(
        default=None, max_length=64, description="Only these keys (default: every key)."
    )
    default_mode: FileMode | None = Field(default=None, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start even if it is missing.")


class SecretVolumeSource(KubeModel):
    """A Secret of the namespace, its keys as files."""

    secret_name: ObjectName = Field(description="The Secret.")
    items: list[KeyToPath] | None = Field(
        default=None, max_length=64, description="Only these keys (default: every key)."
    )
    default_mode: FileMode | None = Field(default=None, description="Mode bits of the files.")
    optional: bool | None = Field(default=None, description="Start even if it is missing.")


class PersistentVolumeClaimVolumeSource(KubeModel):
    """A PersistentVolumeClaim of the namespace."""

    claim_name: ObjectName = Field(description="The claim.")
    read_only: bool | None = Field(default=None, description="Mount it read-only.")


class EmptyDirVolumeSource(KubeModel):
    """A directory that lives as long as the pod."""

    medium: Literal["", "Memory"] | None = Field(
        default=None, description="Memory for a tmpfs (default: the node's disk)."
    )
    size_limit: Quantity | None = Field(default=None, description="At most this much, e.g. 1Gi.")


_SOURCES = ("configMap", "secret", "persistentVolumeClaim", "emptyDir")
_ONE_SOURCE = "a volume needs exactly one of configMap, secret, persistentVolumeClaim, emptyDir"


class Volume(KubeModel):
    """A volume of the pod: a ConfigMap, Secret, PersistentVolumeClaim or emptyDir only."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "["
                    + ", ".join(f"has(self.{s})" for s in _SOURCES)
                    + "].filter(x, x).size() == 1",
                    "message": _ONE_SOURCE,
                }
            ]
        }
    )

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="Named by volumeMounts.")
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    empty_dir: EmptyDirVolumeSource | None = None


class VolumeMount(KubeModel):
    """Where the container sees a volume."""

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="A volume of volumes.")
    mount_path: MountPath = Field(description="An absolute path in the container.")
    sub_path: RelativePath | None = Field(
        default=None,
        description="Mount only this path of the volume (its files are then not updated when "
        "the ConfigMap or Secret changes).",
    )
    read_only: bool | None = Field(default=None, description="Mount it read-only.")


def mount_rules(
    other_names: str | None = None, other_paths: str | None = None
) -> list[dict[str, str]]:
    """The CEL rules on an object with ``volumes`` and ``volumeMounts``: unique names, every
    mount naming a volume, unique mount paths. ``other_names``/``other_paths``: CEL of the
    object's own volume names and mount paths (``v``, ``m`` the volume and mount checked)
    that must not be repeated (an AppStack component's configs)."""
    rules = [
        {
            "rule": "!has(self.volumes) || "
            "self.volumes.all(v, self.volumes.exists_one(w, w.name == v.name))",
            "message": "volume names must be unique",
            "fieldPath": ".volumes",
        },
        {
            "rule": "!has(self.volumeMounts) || self.volumeMounts.all(m, "
            "has(self.volumes) && self.volumes.exists(v, v.name == m.name))",
            "message": "every volumeMount must name a volume of volumes",
            "fieldPath": ".volumeMounts",
        },
        {
            "rule": "!has(self.volumeMounts) || "
            "self.volumeMounts.all(m, self.volumeMounts.exists_one(n, n.mountPath == m.mountPath))",
            "message": "volumeMounts: mount paths must be unique",
            "fieldPath": ".volumeMounts",
        },
    ]
    if other_names:
        rules.append(
            {
                "rule": f"!has(self.volumes) || self.volumes.all(v, {other_names})",
                "message": "volumes: a volume may not have the name of a config "
                "(config, configs[].name)",
                "fieldPath": ".volumes",
            }
        )
    if other_paths:
        rules.append(
            {
                "rule": f"!has(self.volumeMounts) || self.volumeMounts.all(m, {other_paths})",
                "message": "volumeMounts: a mount path may not be one of config or configs",
                "fieldPath": ".volumeMounts",
            }
        )
    return rules


def _label_keys(selector: dict[str, str]) -> dict[str, str]:
    for key in selector:
        prefix, _, name = key.rpartition("/")
        if not re.fullmatch(LABEL_KEY, key) or len(prefix) > 253 or len(name) > 63:
            raise ValueError(
                f"nodeSelector: {key!r} is not a label key (an optional DNS subdomain prefix "
                "and '/', then at most 63 of A-Z a-z 0-9 - _ ., starting and ending with a "
                "letter or digit)"
            )
    return selector


NodeSelectorMap = Annotated[
    dict[str, LabelValue],
    Field(max_length=64),
    AfterValidator(_label_keys),
]


_TOLERATION_EXISTS = "operator must be Exists when key is empty (it then tolerates every taint)"
_TOLERATION_VALUE = "value must be empty when operator is Exists"
_TOLERATION_SECONDS = "tolerationSeconds needs effect NoExecute"
TOLERATION_RULES: list[Any] = [
    {
        "rule": "has(self.key) || (has(self.operator) && self.operator == 'Exists')",
        "message": _TOLERATION_EXISTS,
        "fieldPath": ".operator",
    },
    {
        "rule": "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || "
        "self.value == ''",
        "message": _TOLERATION_VALUE,
        "fieldPath": ".value",
    },
    {
        "rule": "!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
        "message": _TOLERATION_SECONDS,
        "fieldPath": ".tolerationSeconds",
    },
]


class Toleration(KubeModel):
    """The pods may run on nodes with a matching taint."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": TOLERATION_RULES})

    key: LabelKey | None = Field(default=None, description="The taint's key (empty: any).")
    operator: Literal["Exists", "Equal"] | None = Field(
        default=None, description="Equal (the default) or Exists (any value)."
    )
    value: LabelValue | None = Field(default=None, description="The taint's value, for Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="The taint's effect (empty: any)."
    )
    toleration_seconds: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="With NoExecute: how long the pod stays once tainted (default: forever).",
    )


_Values = list[Annotated[str, Field(max_length=317)]]


class NodeSelectorRequirement(KubeModel):
    key: LabelKey = Field(description="A node label, or with matchFields: metadata.name.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: _Values | None = Field(
        default=None,
        max_length=64,
        description="For In/NotIn: one or more; Gt/Lt: one integer; Exists/DoesNotExist: none.",
    )


class NodeSelectorTerm(KubeModel):
    """Node requirements, all of which must hold."""

    match_expressions: list[NodeSelectorRequirement] | None = Field(default=None, max_length=16)
    match_fields: list[NodeSelectorRequirement] | None = Field(default=None, max_length=16)


class NodeSelector(KubeModel):
    """Any one of the terms."""

    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1, max_length=16)


class PreferredSchedulingTerm(KubeModel):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        Field(default=None, max_length=16)
    )


class LabelSelectorRequirement(KubeModel):
    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: _Values | None = Field(default=None, max_length=64)


class LabelSelector(KubeModel):
    """Pods (or namespaces) by label: matchLabels and matchExpressions, all of which hold."""

    match_labels: dict[str, LabelValue] | None = Field(default=None, max_length=64)
    match_expressions: list[LabelSelectorRequirement] | None = Field(default=None, max_length=16)


_LabelKeys = list[Annotated[str, Field(max_length=317, pattern=LABEL_KEY)]]


class PodAffinityTerm(KubeModel):
    """Pods matching labelSelector, in the same topology domain (e.g. node, zone)."""

    label_selector: LabelSelector | None = None
    namespaces: list[Annotated[str, Field(max_length=63, pattern=DNS_LABEL)]] | None = Field(
        default=None, max_length=16, description="Default: the pod's own namespace."
    )
    topology_key: LabelKey = Field(description="e.g. kubernetes.io/hostname.")
    namespace_selector: LabelSelector | None = None
    match_label_keys: _LabelKeys | None = Field(default=None, max_length=16)
    mismatch_label_keys: _LabelKeys | None = Field(default=None, max_length=16)


class WeightedPodAffinityTerm(KubeModel):
    weight: int = Field(ge=1, le=100)
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = Field(
        default=None, max_length=16
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        Field(default=None, max_length=16)
    )


class Affinity(KubeModel):
    """Kubernetes' affinity: which nodes, and beside or away from which pods."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(KubeModel):
    """Spread the pods across topology domains (nodes, zones)."""

    max_skew: int = Field(ge=1, le=2**31 - 1, description="Most pods more in one domain.")
    topology_key: LabelKey = Field(description="e.g. topology.kubernetes.io/zone.")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = Field(default=None, ge=1, le=2**31 - 1)
    node_affinity_policy: Literal["Honor", "Ignore"] | None = None
    node_taints_policy: Literal["Honor", "Ignore"] | None = None
    match_label_keys: _LabelKeys | None = Field(default=None, max_length=16)


# The pod fields' descriptions, by wire name: the same for every kind that has the field
# (``Field(description=POD_FIELD_DOCS["tolerations"])``).
POD_FIELD_DOCS: dict[str, str] = {
    "imagePullSecrets": "Secrets of the namespace for pulling the image from a private registry.",
    "volumes": "Volumes of the pods: configMap, secret, persistentVolumeClaim or emptyDir (of "
    "this namespace; no other source).",
    "volumeMounts": "Where the container mounts volumes (each names one of volumes).",
    "nodeSelector": "Labels a node must have to run the pods.",
    "tolerations": "Taints of nodes the pods tolerate.",
    "affinity": "Node affinity, pod affinity and anti-affinity of the pods.",
    "topologySpreadConstraints": "How the pods spread across nodes or zones.",
}

PullSecrets = Annotated[list[LocalObjectReference], Field(max_length=16)]
Volumes = Annotated[list[Volume], Field(max_length=MAX_VOLUMES)]
VolumeMounts = Annotated[list[VolumeMount], Field(max_length=MAX_VOLUMES)]
# 32: the most any kind took before PodScheduling was the one model (EtcdCluster's), so no
# object valid then is refused now; the API server sets no bound of its own.
Tolerations = Annotated[list[Toleration], Field(max_length=32)]
SpreadConstraints = Annotated[list[TopologySpreadConstraint], Field(max_length=8)]


class PodScheduling(KubeModel):
    """Where a kind's pods may run: ``nodeSelector``, ``tolerations``, ``affinity`` and
    ``topologySpreadConstraints``, declared once with the same validation and descriptions
    for every kind that has them. Inherit it beside your own fields (``class
    WidgetSpec(PodScheduling)``); the generated CRD lists these fields after the kind's own,
    and :meth:`pod_scheduling` gives them in the pod spec's wire form.

    A kind whose controller fills in a field it leaves unset says so in
    ``__scheduling_defaults__`` (wire name → sentence, e.g. ``{"affinity": "Default: ..."}``):
    the sentence follows the field's shared description in the CRD, so ``kubectl explain``
    shows the kind's default while validation stays the same for every kind."""

    __schema_trailing__ = True
    __scheduling_defaults__: ClassVar[dict[str, str]] = {}

    node_selector: NodeSelectorMap | None = Field(
        default=None, description=POD_FIELD_DOCS["nodeSelector"]
    )
    tolerations: Tolerations | None = Field(default=None, description=POD_FIELD_DOCS["tolerations"])
    affinity: Affinity | None = Field(default=None, description=POD_FIELD_DOCS["affinity"])
    topology_spread_constraints: SpreadConstraints | None = Field(
        default=None, description=POD_FIELD_DOCS["topologySpreadConstraints"]
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        ours = {f.alias or n for n, f in PodScheduling.model_fields.items()}
        unknown = sorted(set(cls.__scheduling_defaults__) - ours)
        if unknown:
            raise TypeError(f"{cls.__name__}.__scheduling_defaults__ names no field: {unknown}")

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        properties = handler.resolve_ref_schema(schema).get("properties") or {}
        for wire, sentence in cls.__scheduling_defaults__.items():
            field = properties[wire]
            field["description"] = f"{field['description']} {sentence}"
        return schema

    def pod_scheduling(self) -> dict[str, Any]:
        """The fields set, as a pod spec has them (merge into the pod template's spec);
        none when unset, so a spec without them renders as before."""
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [t.to_dict() for t in self.tolerations]
        if self.affinity is not None and self.affinity.to_dict():
            out["affinity"] = self.affinity.to_dict()
        if self.topology_spread_constraints:
            out["topologySpreadConstraints"] = [
                s.to_dict() for s in self.topology_spread_constraints
            ]
        return out


class Capabilities(KubeModel):
    add: list[str] | None = Field(default=None, max_length=64, description="Capabilities to add.")
    drop: list[str] | None = Field(default=None, max_length=64, description="Capabilities to drop.")


class SeccompProfile(KubeModel):
    type: Literal["RuntimeDefault", "Localhost", "Unconfined"]
    localhost_profile: str | None = Field(default=None, max_length=4096)


class SecurityContext(KubeModel):
    """A container's securityContext as a spec may set it: overrides of the defaults the
    operator gives the container (unset fields keep them)."""

    run_as_non_root: bool | None = None
    run_as_user: int | None = Field(default=None, ge=0)
    run_as_group: int | None = Field(default=None, ge=0)
    allow_privilege_escalation: bool | None = None
    read_only_root_filesystem: bool | None = None
    privileged: bool | None = None
    capabilities: Capabilities | None = None
    seccomp_profile: SeccompProfile | None = None


class Condition(KubeModel):
    """A condition following the Kubernetes API conventions."""

    type: str = Field(max_length=316)
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(max_length=1024)
    message: str = Field("", max_length=32768)
    last_transition_time: str
    observed_generation: int | None = Field(default=None, ge=0)


class _MaybeNodePort(Protocol):
    @property
    def node_port(self) -> int | None: ...


def default_service_type(
    explicit: ServiceType | None, ports: Sequence[_MaybeNodePort] | None
) -> ServiceType:
    """The Service type asked for, else NodePort when a port sets ``nodePort``, else
    ClusterIP (AppService and AppStack components alike)."""
    if explicit:
        return explicit
    return "NodePort" if any(p.node_port for p in ports or []) else "ClusterIP"
