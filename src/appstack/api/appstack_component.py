"""``AppStack`` component types: a Deployment with ports, env, config files, probes, its
own command, volumes and scheduling (the SDK's models of the Kubernetes types,
:mod:`appstack.sdk.model`) and its dependencies on other members. Used by
:mod:`appstack.api.appstack` and the AppStack controller. Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from appstack.api.appstack_middleware import SERVICE_NAME, MemberName, ServiceName
from appstack.api.appstack_rules import (
    COMPONENT_RULES,
    CONFIG_RULES,
    component_problem,
)
from appstack.api.security import SECURITY
from appstack.sdk import (
    DNS_LABEL,
    POD_FIELD_DOCS,
    EnvList,
    Image,
    KubeModel,
    MountPath,
    ObjectName,
    PodScheduling,
    Probe,
    PullSecrets,
    ResourceRequirements,
    SecurityContext,
    ServiceType,
    VolumeMounts,
    Volumes,
    default_service_type,
)


class ComponentPort(KubeModel):
    name: str | None = Field(default=None, max_length=15, pattern=DNS_LABEL)
    port: int = Field(ge=1, le=65535)
    target_port: int | None = Field(default=None, ge=1, le=65535)
    node_port: int | None = Field(default=None, ge=30000, le=32767)


Files = dict[str, Annotated[str, Field(max_length=262144)]]
ShortString = Annotated[str, Field(max_length=4096)]


class ConfigFiles(KubeModel):
    """The single-ConfigMap form (``config``): files mounted at one path."""

    mount_path: MountPath
    files: Files = Field(max_length=64)


class ConfigMount(KubeModel):
    """One of several ConfigMaps (``configs``): files we write to ``<stack>-<name>``, or an
    existing ConfigMap, mounted at ``mountPath`` (one key of it with ``subPath``)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": CONFIG_RULES})

    name: str = Field(
        max_length=59,
        pattern=DNS_LABEL,
        description="The volume; with files also the ConfigMap <stack>-<name>, so it is the "
        "component's name or starts with it and '-' (web, web-template).",
    )
    mount_path: MountPath
    files: Files | None = Field(default=None, max_length=64, description="Files we write.")
    config_map: ObjectName | None = Field(
        default=None, description="An existing ConfigMap of the namespace (not written by us)."
    )
    sub_path: str | None = Field(
        default=None,
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="Mount only this key, as the file mountPath.",
    )


class Component(PodScheduling):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": COMPONENT_RULES})

    name: MemberName
    service_name: ServiceName | None = Field(default=None, description=SERVICE_NAME)
    image: Image
    command: list[ShortString] | None = Field(
        default=None, max_length=64, description="Entrypoint (replaces the image's ENTRYPOINT)."
    )
    args: list[ShortString] | None = Field(
        default=None, max_length=256, description="Arguments (replace the image's CMD)."
    )
    image_pull_secrets: PullSecrets | None = Field(
        default=None, description=POD_FIELD_DOCS["imagePullSecrets"]
    )
    replicas: int = Field(1, ge=0, le=1000)
    ports: list[ComponentPort] | None = Field(default=None, max_length=32)
    env: dict[str, str] | None = Field(
        default=None, max_length=128, description="Literal variables."
    )
    envs: EnvList | None = Field(default=None, max_length=128, description="EnvVar entries.")
    config: ConfigFiles | None = Field(
        default=None, description="Files mounted from one ConfigMap (the short form of configs)."
    )
    configs: list[ConfigMount] | None = Field(
        default=None,
        max_length=16,
        description="Several ConfigMaps at several paths; a change rolls this component only.",
    )
    volumes: Volumes | None = Field(
        default=None,
        description=POD_FIELD_DOCS["volumes"]
        + " A change of a ConfigMap or Secret mounted rolls this component.",
    )
    volume_mounts: VolumeMounts | None = Field(
        default=None,
        description=POD_FIELD_DOCS["volumeMounts"] + " config/configs are mounted already.",
    )
    resources: ResourceRequirements | None = None
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None
    security_context: SecurityContext | None = Field(default=None, description=SECURITY)
    service_type: ServiceType | None = None
    depends_on: list[MemberName] | None = Field(default=None, max_length=16)
    uses: list[MemberName] | None = Field(
        default=None,
        max_length=8,
        description="Middleware, or components with ports, whose connection details are "
        "injected (implies dependsOn).",
    )

    @model_validator(mode="after")
    def _beyond_cel(self) -> Component:
        problem = component_problem(self)
        if problem:
            raise ValueError(f"component {self.name}: {problem}")
        return self

    def config_maps_written(self, stack: str) -> list[str]:
        """The ConfigMaps we write for this component."""
        if self.config is not None:
            return [f"{stack}-{self.name}-config"]
        return [f"{stack}-{m.name}" for m in self.configs or [] if m.files is not None]

    def dependencies(self) -> list[str]:
        return sorted(set(self.depends_on or []) | set(self.uses or []))

    def effective_service_type(self) -> ServiceType:
        return default_service_type(self.service_type, self.ports)
