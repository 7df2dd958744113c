"""``MongoDBCommunity`` (short name ``mdbc``): a MongoDB replica set with SCRAM users, the kind
of the MongoDB community operator that seed 004 installs, served under ``appstack.dev/v1``.

The seed's sample (``members: 3``, ``type: ReplicaSet``, ``version: "4.2.6"``, SCRAM, one user
with a password Secret and roles) is valid as written once its ``apiVersion`` is ours. Only
replica sets (``type: ReplicaSet``) and SCRAM authentication are served; other values are
refused at admission with the field named. ``version`` is a MongoDB release from 4.2 on:
the members' bootstrap runs in the image's own shell — the legacy ``mongo`` shell before 5.0,
``mongosh`` from 5.0 — and 4.0 and older are refused (their shell lacks the JavaScript the
bootstrap is written in). Types only, no I/O; the controller is
``controllers/mongodbcommunity``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from appstack.api.kind import custom_kind
from appstack.sdk import (
    AGE,
    DNS_1035,
    WIDE_READY,
    Condition,
    CustomObject,
    KubeModel,
    ObjectName,
    Quantity,
    ResourceRequirements,
    name_rules,
)

MAX_MEMBERS = 7  # voting members of one replica set
DEFAULT_IMAGE = "mongo"  # Docker's official image: <repository>:<version>
# A release the bootstrap can run in: 4.2 and later 4.x, 5.x to 8.x.
SUPPORTED_VERSION = r"^(4[.]([2-9]|[1-9][0-9])|[5-8][.][0-9]+)[.][0-9]+$"
VERSION_MESSAGE = (
    "version must be a MongoDB release from 4.2 to 8.x, e.g. 4.2.6 or 8.0.4 (before 5.0 the "
    "members are bootstrapped with the image's legacy mongo shell; 4.0 and older are not "
    "supported)"
)
_VERSION_RULES: list[Any] = [
    {"rule": f"self.matches('{SUPPORTED_VERSION}')", "message": VERSION_MESSAGE},
]


class SecretKeyRef(KubeModel):
    """A key of a Secret in the object's namespace."""

    name: ObjectName = Field(description="The Secret's name.")
    key: str = Field(
        "password",
        min_length=1,
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="The key holding the password (default password).",
    )


class Role(KubeModel):
    """A MongoDB role granted to a user."""

    name: str = Field(min_length=1, max_length=128, description="Role, e.g. readWrite.")
    db: str = Field(min_length=1, max_length=64, description="Database the role is defined in.")


ADMIN_USER = "appstack-admin"  # the bootstrap's own administrator, in admin
_ADMIN_MESSAGE = f"{ADMIN_USER} in admin is the members' bootstrap administrator: use another name"


class User(KubeModel):
    """A database user the members create and keep as written (roles and password)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": f"!(self.name == '{ADMIN_USER}' && self.db == 'admin')",
                    "message": _ADMIN_MESSAGE,
                    "fieldPath": ".name",
                }
            ]
        }
    )

    name: str = Field(min_length=1, max_length=128, description="The user's name.")
    db: str = Field(
        "admin", min_length=1, max_length=64, description="Authentication database (admin)."
    )
    password_secret_ref: SecretKeyRef = Field(
        description="Secret and key holding the password; read by the members, never copied "
        "except into this user's connection-string Secret."
    )
    roles: list[Role] = Field(min_length=1, max_length=64, description="Roles granted.")
    scram_credentials_secret_name: ObjectName | None = Field(
        default=None,
        max_length=200,
        description="The Secret <this>-scram-credentials gets the user's SCRAM-SHA-256 "
        "salted credentials (salt, iterations, storedKey, serverKey).",
    )


class Authentication(KubeModel):
    modes: list[Literal["SCRAM", "SCRAM-SHA-256", "SCRAM-SHA-1"]] = Field(
        ["SCRAM"],
        min_length=1,
        max_length=3,
        description="SCRAM only (SCRAM means both SHA-1 and SHA-256).",
    )


class Security(KubeModel):
    authentication: Authentication = Field(
        default_factory=lambda: Authentication.model_validate({})
    )


class Storage(KubeModel):
    """Each member's data volume."""

    size: Quantity = Field("10Gi", description="Size of each member's data volume.")
    storage_class_name: ObjectName | None = Field(
        default=None, description="StorageClass (default)."
    )


class MongoDBCommunitySpec(KubeModel):
    """The desired replica set."""

    members: int = Field(3, ge=1, le=MAX_MEMBERS, description="Members (1 to 7; odd is best).")
    type: Literal["ReplicaSet"] = Field(
        description="ReplicaSet (the only topology served; sharded clusters are not)."
    )
    version: str = Field(
        max_length=32,
        description=VERSION_MESSAGE,
        json_schema_extra={"x-kubernetes-validations": _VERSION_RULES},
    )
    image: str | None = Field(
        default=None,
        max_length=512,
        pattern=r"^[a-z0-9.:/_-]+$",
        description="Image repository (default mongo); the image is <image>:<version>.",
    )
    security: Security = Field(default_factory=lambda: Security.model_validate({}))
    users: list[User] = Field(
        default_factory=list,
        max_length=32,
        description="Users the members create and keep.",
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(u, self.exists_one(v, v.name == u.name && v.db == u.db))",
                    "message": "users: each name and db pair appears once",
                }
            ]
        },
    )
    storage: Storage = Field(default_factory=lambda: Storage.model_validate({}))
    resources: ResourceRequirements | None = Field(default=None, description="mongod's resources.")


class UserStatus(KubeModel):
    name: str
    db: str
    connection_string_secret_name: str | None = Field(
        default=None, description="Secret with connectionString.standard(Srv), username, password."
    )


class MongoDBCommunityStatus(KubeModel):
    """The observed replica set, written by the operator."""

    phase: Literal["Running", "Pending", "Failed"] | None = None
    members: int | None = Field(default=None, description="Members ready (primary or secondary).")
    replicas: int | None = Field(default=None, description="Member pods (scale).")
    selector: str | None = Field(
        default=None, description="Label selector of the member pods (scale)."
    )
    version: str | None = None
    mongo_uri: str | None = Field(default=None, description="The members, without credentials.")
    users: list[UserStatus] | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


@custom_kind(
    plural="mongodbcommunity",
    short_names=("mdbc",),
    subresources={
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.members",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    },
    printer_columns=(
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Members", "type": "integer", "jsonPath": ".spec.members"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.members"},
        {"name": "Version", "type": "string", "jsonPath": ".spec.version"},
        AGE,
        *WIDE_READY,
    ),
)
class MongoDBCommunity(CustomObject):
    """A MongoDB replica set: a StatefulSet of members with their volumes, a headless
    Service, the bootstrap's ConfigMap, a PodDisruptionBudget, and per user a
    connection-string Secret."""

    NAME_RULES = name_rules(
        DNS_1035, 40, "it names the Service <name>-svc and the members <name>-<index>"
    )

    spec: MongoDBCommunitySpec
    status: MongoDBCommunityStatus | None = None


__all__ = ["MongoDBCommunity", "MongoDBCommunitySpec", "MongoDBCommunityStatus", "User"]
