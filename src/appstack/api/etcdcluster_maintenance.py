"""The EtcdCluster's day-2 settings: ``compaction``, ``quotaBackendBytes``,
``defragmentation``, ``recoverFromNoSpace``, ``extraArgs`` and ``env`` — types, defaults and
admission rules only; used by :mod:`appstack.api.etcdcluster` and by the controller's
:mod:`~appstack.controllers.etcdcluster.desired` (the flags every member gets) and
:mod:`~appstack.controllers.etcdcluster.maintenance` (defragmentation and NOSPACE).

``extraArgs`` and ``env`` pass anything else to etcd, except what appstack owns:
:data:`OWNED_FLAGS` (names, URLs, data directory, cluster state and token, TLS files, and the
flags ``compaction`` and ``quotaBackendBytes`` set) as a flag, or as the ``ETCD_*``
variable etcd reads for the same flag. Each is refused at admission naming the flag.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from appstack.api.cron import cron_problem
from appstack.api.cron_rules import cron_rules
from appstack.sdk import ENV_VAR_RULES, EnvVar, KubeModel, unique_env_names

MIB = 1 << 20
GIB = 1 << 30
#: etcd's own default quota (2 GiB), passed explicitly when ``quotaBackendBytes`` is unset.
DEFAULT_QUOTA = 2 * GIB
MIN_QUOTA = 16 * MIB
MAX_QUOTA = 8 * GIB  # etcd's suggested maximum
DEFAULT_COMPACTION_RETENTION = "1h"

#: The flags appstack sets on every member, and why a user may not set them.
OWNED_FLAGS: dict[str, str] = {
    **dict.fromkeys(
        (
            "name",
            "data-dir",
            "wal-dir",
            "listen-client-urls",
            "listen-client-http-urls",
            "advertise-client-urls",
            "listen-peer-urls",
            "initial-advertise-peer-urls",
            "initial-cluster",
            "initial-cluster-state",
            "initial-cluster-token",
            "discovery",
            "discovery-srv",
            "discovery-proxy",
            "force-new-cluster",
            "config-file",
        ),
        "membership, addresses and data of members are the operator's",
    ),
    **dict.fromkeys(
        (
            "cert-file",
            "key-file",
            "trusted-ca-file",
            "client-cert-auth",
            "client-crl-file",
            "auto-tls",
            "peer-cert-file",
            "peer-key-file",
            "peer-trusted-ca-file",
            "peer-client-cert-auth",
            "peer-crl-file",
            "peer-auto-tls",
        ),
        "TLS comes from spec.tls",
    ),
    "auto-compaction-mode": "set it with spec.compaction",
    "auto-compaction-retention": "set it with spec.compaction",
    "quota-backend-bytes": "set it with spec.quotaBackendBytes",
}
#: The variables appstack sets on members (the pod's own name and address).
OWNED_ENV = ("POD_NAME", "POD_IP")


def env_name(flag: str) -> str:
    """The variable etcd reads for ``flag`` (``data-dir`` -> ``ETCD_DATA_DIR``)."""
    return "ETCD_" + flag.upper().replace("-", "_")


_OWNED_ENV_NAMES = sorted([*OWNED_ENV, *(env_name(f) for f in OWNED_FLAGS)])
FLAG_NAME = r"^[a-z0-9][a-z0-9.-]*$"
_FLAG_LIST = "[" + ", ".join(f"'{f}'" for f in sorted(OWNED_FLAGS)) + "]"
_ENV_LIST = "[" + ", ".join(f"'{e}'" for e in _OWNED_ENV_NAMES) + "]"
OWNED_MESSAGE = "extraArgs may not set a flag appstack owns"
ENV_MESSAGE = "env may not set a variable appstack owns"
EXTRA_ARGS_RULES: list[Any] = [
    {
        "rule": f"self.all(k, k.matches('{FLAG_NAME}'))",
        "message": "extraArgs: a flag's name is lowercase letters, digits, dots and dashes, "
        "without the leading -- (e.g. snapshot-count)",
    },
    {
        "rule": f"self.all(k, !(k in {_FLAG_LIST}))",
        "message": OWNED_MESSAGE,
        "messageExpression": f"'{OWNED_MESSAGE}: --' + self.filter(k, k in {_FLAG_LIST})[0] + "
        "' (names, URLs, data directory, cluster state and token, TLS files; compaction and "
        "quota have their own fields)'",
    },
]
ENV_RULES: list[Any] = [
    {
        "rule": f"!(self.name in {_ENV_LIST})",
        "message": ENV_MESSAGE,
        "messageExpression": f"'{ENV_MESSAGE}: ' + self.name",
        "fieldPath": ".name",
    },
]

_PERIODIC = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
_REVISIONS = r"^[1-9][0-9]*$"
COMPACTION_RULES: list[Any] = [
    {
        "rule": f"self.mode == 'revision' ? self.retention.matches('{_REVISIONS}') : "
        f"self.retention.matches('{_PERIODIC}')",
        "message": "compaction.retention: with mode periodic a duration such as 30m, 1h or "
        "72h; with mode revision a number of revisions such as 10000",
        "fieldPath": ".retention",
    },
]


ExtraArgs = Annotated[
    dict[str, Annotated[str, Field(max_length=1024)]],
    Field(max_length=32),
    Field(json_schema_extra={"x-kubernetes-validations": EXTRA_ARGS_RULES}),
]


class MemberEnvVar(EnvVar):
    """An environment variable of the etcd container (not one appstack sets)."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [*ENV_VAR_RULES, *ENV_RULES]}
    )


MemberEnv = Annotated[
    list[MemberEnvVar],
    AfterValidator(unique_env_names),
    Field(
        max_length=32,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    ),
]


class CompactionSpec(KubeModel):
    """etcd's automatic compaction of old revisions (``--auto-compaction-*``)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": COMPACTION_RULES})

    mode: Literal["periodic", "revision"] = Field(
        "periodic",
        description="periodic: keep the revisions of the last retention (a duration); "
        "revision: keep the last retention revisions.",
    )
    retention: str = Field(
        DEFAULT_COMPACTION_RETENTION,
        min_length=1,
        max_length=16,
        description="A duration such as 30m, 1h or 72h (periodic), or a number of revisions "
        "such as 10000 (revision).",
    )


DEFRAG_SCHEDULE = "defragmentation.schedule"


class DefragmentationSpec(KubeModel):
    """Defragmentation on a schedule: one member at a time, followers first and the leader
    last, only while every member is healthy and the cluster at full strength."""

    schedule: str = Field(
        min_length=1,
        max_length=128,
        description="When to defragment, in UTC: five cron fields (e.g. '0 3 * * *') or a "
        "macro (@daily). A time missed while the cluster was unhealthy runs once it is back.",
        json_schema_extra={"x-kubernetes-validations": cron_rules(DEFRAG_SCHEDULE, seconds=False)},
    )
    free_space_percent: int = Field(
        10,
        ge=0,
        le=99,
        description="Defragment a member only when at least this share of its database file "
        "is free space (0: every member, every time).",
    )

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, value: str) -> str:
        problem = cron_problem(value, label=DEFRAG_SCHEDULE, seconds=False)
        if problem:
            raise ValueError(problem)
        return value


class MaintenanceFields(KubeModel):
    """The day-2 fields of ``EtcdClusterSpec`` (a base class: one place for them)."""

    compaction: CompactionSpec | None = Field(
        default=None,
        description="Automatic compaction of old revisions; default periodic, keeping 1h. "
        "Changing it restarts members one at a time, the leader last.",
    )
    quota_backend_bytes: int | None = Field(
        default=None,
        ge=MIN_QUOTA,
        le=MAX_QUOTA,
        description="The database size at which etcd raises the NOSPACE alarm and refuses "
        "writes (bytes, 16 MiB to 8 GiB; default 2 GiB, etcd's own). Changing it restarts "
        "members one at a time; a quota below what the database already holds is refused "
        "(QuotaBelowDatabaseSize) and members keep the old one.",
    )
    defragmentation: DefragmentationSpec | None = Field(
        default=None, description="Scheduled defragmentation (optional)."
    )
    recover_from_no_space: bool = Field(
        False,
        description="Opt-in: when etcd raises the NOSPACE alarm, compact to the current "
        "revision, defragment every member and disarm the alarm, so that writes resume. "
        "Default: the alarm is reported (Degraded, reason NoSpace), never acted on.",
    )
    extra_args: ExtraArgs | None = Field(
        default=None,
        description="More etcd flags, name (without --) to value, e.g. {snapshot-count: "
        "'10000'}; the flags appstack sets are refused. Changing them restarts members one "
        "at a time.",
    )
    env: MemberEnv | None = Field(
        default=None,
        description="Environment variables of the etcd container (e.g. GOMAXPROCS, or "
        "ETCD_* flags); those of flags appstack sets are refused.",
    )

    @property
    def quota(self) -> int:
        return self.quota_backend_bytes or DEFAULT_QUOTA

    @property
    def compaction_or_default(self) -> CompactionSpec:
        return self.compaction or CompactionSpec.model_validate({})
