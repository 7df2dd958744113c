"""``AppStack`` middleware types: managed by us (StatefulSet, storage, generated credentials)
or external ("third party", given a stable in-cluster name). Used by
:mod:`appstack.api.appstack` and the AppStack controller. Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from appstack.api.appstack_rules import IMMUTABLE_TYPE, STORAGE_RULES, immutable
from appstack.api.core import KubeModel, Quantity, ResourceRequirements
from appstack.api.managed_rules import MANAGED_RULES, MAX_MEMBERS, REPLICAS, managed_problem
from appstack.api.names import DNS_1035, TAG, Image, ObjectName
from appstack.api.security import SECURITY, SecurityContext

MemberName = Annotated[str, Field(min_length=1, max_length=40, pattern=DNS_1035)]
MiddlewareType = Literal["mysql", "postgres", "redis", "mongodb"]


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
    replicas: int = Field(1, ge=1, le=MAX_MEMBERS, description=REPLICAS)
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
                *MANAGED_RULES,
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
        problem = managed_problem(self.type, self.managed)
        if problem:
            raise ValueError(f"middleware {self.name}: {problem}")
        return self
