"""``AppStack`` component types: a Deployment with ports, env, config files, probes and
its dependencies on other members. Used by :mod:`appstack.api.appstack` and the AppStack
controller. Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from appstack.api.appstack_middleware import MemberName
from appstack.api.appstack_rules import COMPONENT_RULES, component_problem
from appstack.api.core import (
    EnvList,
    KubeModel,
    Probe,
    ResourceRequirements,
    ServiceType,
    default_service_type,
)
from appstack.api.names import DNS_LABEL, Image
from appstack.api.security import SECURITY, SecurityContext


class ComponentPort(KubeModel):
    name: str | None = Field(None, max_length=15, pattern=DNS_LABEL)
    port: int = Field(ge=1, le=65535)
    target_port: int | None = Field(None, ge=1, le=65535)
    node_port: int | None = Field(None, ge=30000, le=32767)


class ConfigFiles(KubeModel):
    mount_path: str = Field(min_length=1, max_length=1024, pattern=r"^/")
    files: dict[str, Annotated[str, Field(max_length=262144)]] = Field(max_length=64)


class Component(KubeModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": COMPONENT_RULES})

    name: MemberName
    image: Image
    replicas: int = Field(1, ge=0, le=1000)
    ports: list[ComponentPort] | None = Field(None, max_length=32)
    env: dict[str, str] | None = Field(None, max_length=128, description="Literal variables.")
    envs: EnvList | None = Field(None, max_length=128, description="EnvVar entries.")
    config: ConfigFiles | None = Field(None, description="Files mounted from a ConfigMap.")
    resources: ResourceRequirements | None = None
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None
    security_context: SecurityContext | None = Field(None, description=SECURITY)
    service_type: ServiceType | None = None
    depends_on: list[MemberName] | None = Field(None, max_length=16)
    uses: list[MemberName] | None = Field(
        None,
        max_length=8,
        description="Middleware whose connection details are injected (implies dependsOn).",
    )

    @model_validator(mode="after")
    def _same_rules_as_admission(self) -> Component:
        problem = component_problem(self)
        if problem:
            raise ValueError(f"component {self.name}: {problem}")
        return self

    def dependencies(self) -> list[str]:
        return sorted(set(self.depends_on or []) | set(self.uses or []))

    def effective_service_type(self) -> ServiceType:
        return default_service_type(self.service_type, self.ports)
