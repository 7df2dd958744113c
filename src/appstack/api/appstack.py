"""``AppStack`` (``appstack.dev/v1``) types: a whole system in one resource — middleware
(managed by us, or external) plus components started in dependency order.

Not yet served: the controller (issue #6) is still to be written, so no CRD is generated
for this kind. The models and their validation are complete and unit-tested: names unique
across middleware and components (DNS-1035), every ``dependsOn``/``uses`` reference known,
no dependency cycles (the cycle is spelled out), ``uses`` only middleware, external
credentials only by ``secretRef``. Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from appstack.api.core import (
    EnvVar,
    KubeModel,
    Probe,
    Quantity,
    ResourceRequirements,
)
from appstack.api.graph import find_cycle

DNS_1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
MemberName = Annotated[str, Field(min_length=1, max_length=40, pattern=DNS_1035)]
MiddlewareType = Literal["mysql", "postgres", "redis"]


class Storage(KubeModel):
    size: Quantity = Field("1Gi", description="Size of the data volume.")
    storage_class_name: str | None = Field(
        None, max_length=253, description="StorageClass (default: the cluster's)."
    )
    retain_on_delete: bool = Field(
        True, description="Keep the data volumes when the middleware or the stack is deleted."
    )


class ManagedMiddleware(KubeModel):
    """Deployed by appstack: StatefulSet, Services, a generated credentials Secret, storage."""

    image: str | None = Field(None, max_length=1024, description="Override the catalog image.")
    version: str | None = Field(None, max_length=64, description="Override the image tag.")
    replicas: int = Field(1, ge=1, le=1, description="Instances (one; no clustering yet).")
    storage: Storage = Field(default_factory=lambda: Storage.model_validate({}))
    init_scripts_config_map: str | None = Field(
        None, max_length=253, description="ConfigMap whose files run on first start."
    )
    resources: ResourceRequirements | None = None


class SecretRef(KubeModel):
    name: str = Field(min_length=1, max_length=253, description="Secret in the stack's namespace.")
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


class Middleware(KubeModel):
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
    name: str | None = Field(None, max_length=15)
    port: int = Field(ge=1, le=65535)
    target_port: int | None = Field(None, ge=1, le=65535)
    node_port: int | None = Field(None, ge=30000, le=32767)


class ConfigFiles(KubeModel):
    mount_path: str = Field(min_length=1, max_length=1024, pattern=r"^/")
    files: dict[str, Annotated[str, Field(max_length=262144)]] = Field(max_length=64)


class Component(KubeModel):
    name: MemberName
    image: str = Field(min_length=1, max_length=1024)
    replicas: int = Field(1, ge=0, le=1000)
    ports: list[ComponentPort] | None = Field(None, max_length=32)
    env: dict[str, str] | None = Field(None, max_length=128, description="Literal variables.")
    envs: list[EnvVar] | None = Field(None, max_length=128, description="EnvVar entries.")
    config: ConfigFiles | None = Field(None, description="Files mounted from a ConfigMap.")
    resources: ResourceRequirements | None = None
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None
    service_type: Literal["ClusterIP", "NodePort", "LoadBalancer"] | None = None
    depends_on: list[MemberName] | None = Field(None, max_length=64)
    uses: list[MemberName] | None = Field(
        None,
        max_length=16,
        description="Middleware whose connection details are injected (implies dependsOn).",
    )

    def dependencies(self) -> list[str]:
        return sorted(set(self.depends_on or []) | set(self.uses or []))


class AppStackSpec(KubeModel):
    middleware: list[Middleware] | None = Field(None, max_length=32)
    components: list[Component] = Field(min_length=1, max_length=128)

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
