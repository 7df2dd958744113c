"""``AppStack`` types: a whole system in one resource — middleware
(managed by us, or external) plus components started in dependency order.

Validation: names unique across middleware and components (DNS-1035), every
``dependsOn``/``uses`` reference known, ``uses`` only middleware, exactly one of
managed/external, external credentials only by ``secretRef`` — all checked at admission
(CEL) and by these models; dependency cycles are found by the models (the controller
reports them as ``Ready=False``, reason ``InvalidSpec``, with the cycle spelled out).
Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from appstack.api.appstack_rules import (
    COMPONENT_RULES,
    IMMUTABLE_TYPE,
    MEMBER_NAME_RULES,
    STORAGE_RULES,
    component_problem,
    immutable,
)
from appstack.api.core import (
    Condition,
    EnvList,
    KubeModel,
    Probe,
    Quantity,
    ResourceRequirements,
    ServiceType,
    default_service_type,
)
from appstack.api.graph import find_cycle
from appstack.api.kind import AGE, READY_MESSAGE, READY_REASON, CustomObject, custom_kind
from appstack.api.names import DNS_1035, DNS_LABEL, TAG, Image, ObjectName, name_rules
from appstack.api.security import SECURITY, SecurityContext

MemberName = Annotated[str, Field(min_length=1, max_length=40, pattern=DNS_1035)]
MiddlewareType = Literal["mysql", "postgres", "redis"]


class Storage(KubeModel):
    """The data volume; its size and class cannot change (the StatefulSet's claim template
    is immutable)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": STORAGE_RULES})

    size: Quantity = Field(
        "1Gi",
        description="Size of the data volume.",
        json_schema_extra=immutable("managed.storage.size"),
    )
    storage_class_name: ObjectName | None = Field(
        None,
        description="StorageClass (default: the cluster's).",
        json_schema_extra=immutable("managed.storage.storageClassName"),
    )
    retain_on_delete: bool = Field(
        True,
        description=(
            "Keep the data volumes, and the generated credentials Secret that opens them, "
            "when the middleware or the stack is deleted (a re-created stack reuses both)."
        ),
    )


class ManagedMiddleware(KubeModel):
    """Deployed by appstack: StatefulSet, Services, a generated credentials Secret, storage."""

    image: Image | None = Field(None, description="Override the catalog image.")
    version: str | None = Field(
        None, max_length=128, pattern=f"^{TAG}$", description="Override the image tag."
    )
    replicas: int = Field(1, ge=1, le=1, description="Instances (one; no clustering yet).")
    storage: Storage = Field(default_factory=lambda: Storage.model_validate({}))
    init_scripts_config_map: ObjectName | None = Field(
        None, description="ConfigMap whose files run on first start."
    )
    resources: ResourceRequirements | None = None
    security_context: SecurityContext | None = Field(None, description=SECURITY)


class SecretRef(KubeModel):
    name: ObjectName = Field(description="Secret in the stack's namespace.")
    username_key: str = Field("username", max_length=253)
    password_key: str = Field("password", max_length=253)


class ExternalMiddleware(KubeModel):
    """Run by someone else ("third party"): we give it a stable in-cluster name."""

    host: str = Field(
        min_length=1,
        max_length=253,
        description="Host name (ExternalName Service) or IP (Service + EndpointSlice).",
    )
    port: int = Field(ge=1, le=65535)
    secret_ref: SecretRef | None = Field(None, description="Credentials; never inline.")

    password: str | None = Field(
        None,
        max_length=1024,
        description="Not allowed: credentials go in a Secret (secretRef).",
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "false", "message": "credentials are never inline: use secretRef"}
            ]
        },
    )

    @model_validator(mode="after")
    def _no_inline_password(self) -> ExternalMiddleware:
        if self.password is not None:
            raise ValueError("credentials are never inline: use secretRef")
        return self


class Middleware(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.managed) != has(self.external)",
                    "message": "set exactly one of managed, external",
                },
                IMMUTABLE_TYPE,
            ]
        }
    )

    name: MemberName
    type: MiddlewareType
    managed: ManagedMiddleware | None = None
    external: ExternalMiddleware | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> Middleware:
        if (self.managed is None) == (self.external is None):
            raise ValueError(f"middleware {self.name}: set exactly one of managed, external")
        return self


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


_REFS = (
    "(self.components.exists(x, x.name == d) || (has(self.middleware) && "
    "self.middleware.exists(m, m.name == d)))"
)
_STACK_RULES: list[Any] = [
    {
        "rule": "self.components.all(c, self.components.exists_one(d, d.name == c.name))",
        "message": "component names must be unique",
        "fieldPath": ".components",
    },
    {
        "rule": "!has(self.middleware) || self.middleware.all(m, "
        "self.middleware.exists_one(n, n.name == m.name))",
        "message": "middleware names must be unique",
        "fieldPath": ".middleware",
    },
    {
        "rule": "!has(self.middleware) || self.components.all(c, "
        "!self.middleware.exists(m, m.name == c.name))",
        "message": "a component may not have the name of a middleware",
        "fieldPath": ".components",
    },
    {
        "rule": f"self.components.all(c, !has(c.dependsOn) || c.dependsOn.all(d, {_REFS}))",
        "message": "dependsOn must name members of this stack",
        "fieldPath": ".components",
    },
    {
        "rule": "self.components.all(c, !has(c.uses) || c.uses.all(u, has(self.middleware) && "
        "self.middleware.exists(m, m.name == u)))",
        "message": "uses must name middleware of this stack",
        "fieldPath": ".components",
    },
]


class AppStackSpec(KubeModel):
    """Middleware and components; components start when what they depend on is ready."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _STACK_RULES})

    middleware: list[Middleware] | None = Field(
        None,
        max_length=16,
        # Keyed by name, so that changes are compared per middleware (immutable fields).
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    components: list[Component] = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _graph(self) -> AppStackSpec:
        names = [m.name for m in self.middleware or []] + [c.name for c in self.components]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"member names must be unique: {', '.join(duplicates)}")
        middleware = {m.name for m in self.middleware or []}
        known = set(names)
        for component in self.components:
            for ref in component.depends_on or []:
                if ref not in known:
                    raise ValueError(
                        f"component {component.name}: dependsOn {ref!r} is not a "
                        f"member of this stack"
                    )
            for ref in component.uses or []:
                if ref not in middleware:
                    raise ValueError(
                        f"component {component.name}: uses {ref!r} is not middleware of this stack"
                    )
        cycle = find_cycle({c.name: c.dependencies() for c in self.components})
        if cycle:
            raise ValueError(f"dependency cycle: {' -> '.join(cycle)}")
        return self


class MemberStatus(KubeModel):
    name: str
    kind: str = Field(description="Component, or Middleware/<type>.")
    ready: str = Field(description="Ready replicas / desired, e.g. 1/1.")
    state: Literal["WaitingForDependencies", "Progressing", "Ready", "Failed"]
    message: str = ""


class AppStackStatus(KubeModel):
    """The observed state, written by the operator."""

    observed_generation: int | None = None
    ready_members: str | None = Field(None, description="Ready members / all, e.g. 9/11.")
    members: list[MemberStatus] | None = None
    conditions: list[Condition] | None = Field(
        None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="appstacks",
    short_names=("stack",),
    printer_columns=(
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": ".status.readyMembers",
            "description": "Ready members / all members",
        },
        {**READY_REASON, "name": "Status"},
        READY_MESSAGE,
        AGE,
    ),
)
class AppStack(CustomObject):
    """A whole system: middleware (managed or external) and components, started in order."""

    NAME_RULES = (
        *name_rules(DNS_1035, 63, "it starts the name of every Service of the stack"),
        *MEMBER_NAME_RULES,
    )

    spec: AppStackSpec
    status: AppStackStatus | None = None
