"""Kubernetes core types our resources embed (ServicePort, EnvVar, EnvFromSource,
ResourceRequirements, Probe, LocalObjectReference), as Pydantic models with the bounds the
API server enforces.

Field names are camelCase on the wire (``targetPort``), snake_case in Python. Extra
``json_schema_extra`` keys (``x-kubernetes-*``) flow into the generated CRD schema
(:mod:`appstack.sdk.schema`). Types only, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

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
