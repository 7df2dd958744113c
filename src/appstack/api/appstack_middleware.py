"""``AppStack`` middleware types: managed by us (StatefulSet, storage, generated credentials)
or external ("third party": a host and port given a stable in-cluster name, or the URL of
any service with its auth method and credentials by ``secretRef``). Used by
:mod:`appstack.api.appstack` and the AppStack controller. Types only, no I/O.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from appstack.api.appstack_rules import IMMUTABLE_TYPE, STORAGE_RULES, immutable
from appstack.api.managed_rules import (
    CONFIG_FILES,
    MANAGED_RULES,
    MAX_MEMBERS,
    REPLICAS,
)
from appstack.api.security import SECURITY
from appstack.api.urls import EXAMPLE, URL_RULES, url_problem
from appstack.sdk import (
    DNS_1035,
    TAG,
    Image,
    KubeModel,
    ObjectName,
    Quantity,
    ResourceRequirements,
    SecurityContext,
)

MemberName = Annotated[str, Field(min_length=1, max_length=40, pattern=DNS_1035)]
ServiceName = Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_1035)]
SERVICE_NAME = (
    "The name of the member's Service (what others find it by and what uses injects as "
    "<MEMBER>_HOST), instead of <stack>-<member>: e.g. mysql-dataservice or api-manager, as "
    "configuration files written for the seed expect. Unique in the stack; not starting with "
    "'<stack>-' (the stack's own names)."
)
MiddlewareType = Literal["mysql", "postgres", "redis", "mongodb", "service"]
AuthMethod = Literal["none", "basic", "bearer", "apiKey"]


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
        default=None,
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

    image: Image | None = Field(default=None, description="Override the catalog image.")
    version: str | None = Field(
        default=None, max_length=128, pattern=f"^{TAG}$", description="Override the image tag."
    )
    replicas: int = Field(1, ge=1, le=MAX_MEMBERS, description=REPLICAS)
    storage: Storage = Field(default_factory=lambda: Storage.model_validate({}))
    init_scripts_config_map: ObjectName | None = Field(
        default=None, description="ConfigMap whose files run on first start."
    )
    config_files: dict[str, Annotated[str, Field(max_length=262144)]] | None = Field(
        default=None, max_length=16, description=CONFIG_FILES
    )
    resources: ResourceRequirements | None = None
    security_context: SecurityContext | None = Field(default=None, description=SECURITY)


class SecretRef(KubeModel):
    """A Secret the consumers read credentials from (by ``secretKeyRef``, never copied)."""

    name: ObjectName = Field(description="Secret in the stack's namespace.")
    username_key: str = Field("username", max_length=253)
    password_key: str = Field("password", max_length=253)
    token_key: str = Field(
        "token", max_length=253, description="The key of the token (authMethod bearer, apiKey)."
    )


_EXTERNAL_RULES: list[Any] = [
    {
        "rule": "has(self.host) != has(self.url)",
        "message": "set exactly one of host (with port) or url",
    },
    {
        "rule": "has(self.host) == has(self.port)",
        "message": "host needs port (url carries its own)",
    },
    {
        "rule": "!has(self.authMethod) || has(self.url)",
        "message": "authMethod goes with url; host/port consumers get USERNAME/PASSWORD",
        "fieldPath": ".authMethod",
    },
    {
        "rule": "!has(self.url) || has(self.secretRef) == "
        "(has(self.authMethod) && self.authMethod != 'none')",
        "message": "authMethod basic, bearer or apiKey needs secretRef; none (or no authMethod) "
        "takes no secretRef",
        "fieldPath": ".secretRef",
    },
]


class ExternalMiddleware(KubeModel):
    """Run by someone else ("third party"): a host and port we give a stable in-cluster name,
    or the URL of any service, injected as ``<NAME>_URL`` with its credential references."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _EXTERNAL_RULES})

    host: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Host name (ExternalName Service) or IP (Service + EndpointSlice).",
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="The port of host.")
    url: str | None = Field(
        default=None,
        max_length=2048,
        description=f"The URL of the service ({EXAMPLE}); nothing is created for it.",
        json_schema_extra={"x-kubernetes-validations": URL_RULES},
    )
    auth_method: AuthMethod | None = Field(
        default=None,
        description="How consumers authenticate (with url): basic injects USERNAME and "
        "PASSWORD, bearer and apiKey inject TOKEN, all by secretKeyRef.",
    )
    secret_ref: SecretRef | None = Field(default=None, description="Credentials; never inline.")

    password: str | None = Field(
        default=None,
        max_length=1024,
        description="Not allowed: credentials go in a Secret (secretRef).",
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "false", "message": "credentials are never inline: use secretRef"}
            ]
        },
    )

    @field_validator("url")
    @classmethod
    def _beyond_cel(cls, url: str | None) -> str | None:
        problem = None if url is None else url_problem(url)
        if problem is not None:
            raise ValueError(problem)
        return url


class Middleware(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.managed) != has(self.external)",
                    "message": "set exactly one of managed, external",
                },
                {
                    "rule": "self.type != 'service' || (has(self.external) && "
                    "has(self.external.url))",
                    "message": "type service is a third-party service: give external.url",
                    "fieldPath": ".type",
                },
                IMMUTABLE_TYPE,
                *MANAGED_RULES,
            ]
        }
    )

    name: MemberName
    service_name: ServiceName | None = Field(default=None, description=SERVICE_NAME)
    type: MiddlewareType
    managed: ManagedMiddleware | None = None
    external: ExternalMiddleware | None = None
