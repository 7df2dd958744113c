"""The Helm chart's values as a model (pure): the defaults in values.yaml and the
``values.schema.json`` Helm checks every install and upgrade against, so a misspelt or
mistyped value fails at ``helm install`` with its path named instead of being ignored.

Every operator flag the docs tell an installer to set has a value here (log level,
concurrency, sync period, external addresses, watched namespaces, leader election, the
graceful shutdown timeout with the pods' grace period above it, extra arguments), and the
scheduling a platform team expects (nodeSelector, tolerations, affinity,
priorityClassName, resources). Used by :mod:`appstack.manifests.chart`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from appstack.core import defaults as operator_defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.manifests import monitoring, workload
from appstack.sdk import HelmText

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
DIGEST = r"^$|^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
#: The fewest replicas of a sharded install (one shard is an unsharded install, slower).
SHARDS_MIN = HelmText.SHARDS_MIN
#: The longest fullname: ``<fullname>-operator-metrics`` (the Service) stays a DNS label.
FULLNAME_MAX = 46
#: The pod labels the chart sets itself (podLabels may not set them: the selector's among them).
STANDARD_POD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)


class _Values(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Image(_Values):
    repository: str = Field(
        workload.IMAGE.split(":")[0], min_length=1, description="The operator image's repository."
    )
    tag: str = Field("", description="Default: the chart's appVersion.")
    digest: str = Field(
        "",
        pattern=DIGEST,
        description="A manifest digest (sha256:...): when set, the image is "
        "<repository>@<digest> and tag is ignored.",
    )
    pull_policy: Literal["", "Always", "IfNotPresent", "Never"] = Field(
        "",
        description="The operator's (and the helm test pod's) imagePullPolicy. Empty: "
        "Kubernetes' default (Always for a :latest tag, else IfNotPresent).",
    )


class PullSecret(_Values):
    name: str = Field(min_length=1, pattern=DNS_SUBDOMAIN, description="A Secret's name.")


class ServiceAccount(_Values):
    create: bool = Field(
        True, description="Create the operator's ServiceAccount (false: use serviceAccount.name)."
    )
    name: str = Field(
        "",
        max_length=253,
        pattern=f"^$|{DNS_SUBDOMAIN}",
        description="Its name. Empty: <fullname>-operator. Required with create=false (an "
        "existing ServiceAccount in the release namespace, bound to the operator's roles).",
    )
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description="Its annotations (e.g. a cloud IAM role), only when the chart creates it.",
    )


class Toggle(_Values):
    enabled: bool = False


class Sharding(_Values):
    enabled: bool = Field(
        False,
        description="--sharding: every replica active on its own share of the objects "
        "(docs/sharding.md), with the grants and guards that needs (as appstack manifests "
        "--shards). Needs leaderElection.enabled and replicas >= 2 (the shards).",
    )


#: ``autoscaling``'s defaults: the SDK's, as every operator's chart has them.
AUTOSCALING = HelmText.autoscaling_values()


class Autoscaling(_Values):
    enabled: bool = Field(
        False,
        description="A HorizontalPodAutoscaler sets the replicas — the shards — instead of "
        "replicas (needs sharding.enabled; docs/sharding.md): the Deployment then has no "
        "replicas of its own, so an upgrade does not undo the autoscaler's choice.",
    )
    min_replicas: int = Field(
        AUTOSCALING["minReplicas"], ge=SHARDS_MIN, description="The fewest shards."
    )
    max_replicas: int = Field(
        AUTOSCALING["maxReplicas"],
        ge=SHARDS_MIN,
        description="The most shards (not below minReplicas).",
    )
    target_cpu_utilization_percentage: int = Field(
        AUTOSCALING["targetCPUUtilizationPercentage"],
        ge=1,
        alias="targetCPUUtilizationPercentage",
        description="The pods' average CPU, in % of their request, the autoscaler keeps them "
        "at (needs the cluster's metrics-server); unused when metrics is set.",
    )
    metrics: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The HorizontalPodAutoscaler's own metrics (autoscaling/v2 MetricSpec), "
        "e.g. a queue's depth through a Prometheus adapter, instead of the CPU target.",
        json_schema_extra={"items": {"type": "object", "required": ["type"]}},
    )
    behavior: dict[str, Any] = Field(
        default_factory=lambda: dict(AUTOSCALING["behavior"]),
        description="How fast the shards change (autoscaling/v2 behavior). Default: one pod "
        "more or less a minute at most, scale-down after 5 minutes of less load — each "
        "step moves objects between shards.",
    )


class Account(_Values):
    name: str = Field(monitoring.PROMETHEUS_ACCOUNT["name"], min_length=1, description="Its name.")
    namespace: str = Field(
        monitoring.PROMETHEUS_ACCOUNT["namespace"], pattern=DNS_LABEL, description="Its namespace."
    )


class ServiceMonitor(_Values):
    enabled: bool = Field(
        False, description="A ServiceMonitor (needs the Prometheus Operator's CRDs)."
    )
    interval: str = Field("30s", pattern=DURATION, description="How often Prometheus scrapes.")
    prometheus_service_account: Account = Field(
        default_factory=lambda: Account.model_validate({}),
        description="Whose token Prometheus scrapes with; bound to the metrics-reader role.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="More labels of the ServiceMonitor: those the Prometheus Operator selects "
        "by (kube-prometheus-stack: release: <its release name>).",
    )


class Monitored(_Values):
    enabled: bool = False
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="More labels of the object: those the Prometheus Operator selects by "
        "(kube-prometheus-stack: release: <its release name>).",
    )


class Metrics(_Values):
    enabled: bool = Field(True, description="The metrics Service (and the helm test).")
    secure: bool = Field(
        True,
        description="Serve /metrics over HTTPS (false: plain HTTP, --no-metrics-secure).",
    )
    cert_secret: str = Field(
        "",
        description="A kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt; e.g. cert-manager's "
        "for the metrics Service's DNS name) to serve /metrics with, verified by the "
        "ServiceMonitor. Empty: a self-signed certificate made at start-up, not verified.",
    )
    service_monitor: ServiceMonitor = Field(
        default_factory=lambda: ServiceMonitor.model_validate({})
    )
    prometheus_rule: Monitored = Field(
        default_factory=lambda: Monitored.model_validate({}),
        description="The alerts, a PrometheusRule (needs the Prometheus Operator's CRDs).",
    )
    grafana_dashboard: Toggle = Field(
        default_factory=lambda: Toggle.model_validate({}),
        description=(
            "The Grafana dashboards (the operator's, one per kind), a ConfigMap labelled "
            "grafana_dashboard=1 (Grafana's sidecar)."
        ),
    )


def _resources() -> dict[str, Any]:
    (container,) = workload.deployment()["spec"]["template"]["spec"]["containers"]
    return dict(container["resources"])


def _pod_security() -> dict[str, Any]:
    return dict(workload.deployment()["spec"]["template"]["spec"]["securityContext"])


def _security() -> dict[str, Any]:
    (container,) = workload.deployment()["spec"]["template"]["spec"]["containers"]
    return dict(container["securityContext"])


def _grace_period() -> int:
    """The generated install's terminationGracePeriodSeconds (30)."""
    return int(workload.deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])


#: The probe fields the chart's livenessProbe and readinessProbe may set.
PROBE_TIMING = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold")


def _probe(kind: str) -> dict[str, int]:
    """The generated install's timing of the operator's ``kind`` probe (not its check)."""
    (container,) = workload.deployment()["spec"]["template"]["spec"]["containers"]
    return {key: value for key, value in container[kind].items() if key in PROBE_TIMING}


def _probe_field(kind: str, what: str) -> Any:
    return Field(
        default_factory=lambda: _probe(kind),
        description=f"The {what} probe's timing ({', '.join(PROBE_TIMING)}), merged over "
        "these defaults (a key left out keeps its default; null drops it: Kubernetes' "
        "default).",
        json_schema_extra={
            "propertyNames": {"enum": list(PROBE_TIMING)},
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
    )


def _objects(what: str, required: tuple[str, ...]) -> Any:
    return Field(
        default_factory=list,
        description=what,
        json_schema_extra={"items": {"type": "object", "required": list(required)}},
    )


class ChartValues(_Values):
    """Everything ``--set`` and ``-f values.yaml`` may say."""

    name_override: str = Field(
        "",
        max_length=FULLNAME_MAX,
        pattern=f"^$|{DNS_LABEL}",
        description="Replaces the chart's name (appstack) in the fullname and in the "
        "app.kubernetes.io/name label of the chart's objects (the operator's pods keep "
        "appstack-operator).",
    )
    fullname_override: str = Field(
        "",
        max_length=FULLNAME_MAX,
        pattern=f"^$|{DNS_LABEL}",
        description="The fullname every object's name starts with (<fullname>-operator, "
        "<fullname>-operator-<namespace>, ...). Default: the release name if it contains the "
        "chart's name (release appstack: appstack-operator, as before), else "
        "<release>-appstack; releases side by side in one namespace get their own names.",
    )
    image: Image = Field(default_factory=lambda: Image.model_validate({}))
    image_pull_secrets: list[PullSecret] = Field(
        default_factory=list,
        description="The operator pods' (and the helm test pod's) imagePullSecrets: "
        "[{name: regcred}], Secrets in the release namespace.",
    )
    service_account: ServiceAccount = Field(
        default_factory=lambda: ServiceAccount.model_validate({}),
        description="The ServiceAccount the operator runs as; its RBAC bindings, FlowSchema "
        "and admission policies follow it.",
    )
    pod_annotations: dict[str, str] = Field(
        default_factory=dict, description="Annotations of the operator's pods."
    )
    common_labels: dict[str, str] = Field(
        default_factory=dict,
        description="More labels of every object the chart renders (metadata.labels, the "
        "operator's pods' too; never a selector). Not the chart's own (app.kubernetes.io/*, "
        "helm.sh/chart); podLabels and metrics.*.labels win on a key they set too.",
        json_schema_extra={"propertyNames": {"not": {"enum": list(STANDARD_POD_LABELS)}}},
    )
    pod_labels: dict[str, str] = Field(
        default_factory=dict,
        description="More labels of the operator's pods (not the chart's own: "
        "app.kubernetes.io/*, helm.sh/chart).",
        json_schema_extra={"propertyNames": {"not": {"enum": list(STANDARD_POD_LABELS)}}},
    )
    replicas: int = Field(
        2, ge=0, le=10, description="Operator replicas (one leads; sharded: the shards, 2 or more)."
    )
    revision_history_limit: int | None = Field(
        None,
        ge=0,
        description="The Deployment's revisionHistoryLimit (old ReplicaSets kept). Null: "
        "Kubernetes' default (10).",
    )
    resources: dict[str, Any] = Field(
        default_factory=_resources, description="The operator container's resources."
    )
    watch_namespaces: list[str] = Field(
        default_factory=list,
        description="Empty: all namespaces (a ClusterRole); else a Role in each (--namespace).",
    )
    sync_period: str = Field(
        DEFAULT_SYNC_PERIOD,
        pattern=DURATION,
        description="--sync-period: every object reconciled again this often without an event.",
    )
    leader_election: Toggle = Field(
        default_factory=lambda: Toggle.model_validate({"enabled": True}),
        description="--leader-elect: only one replica reconciles.",
    )
    sharding: Sharding = Field(default_factory=lambda: Sharding.model_validate({}))
    autoscaling: Autoscaling = Field(default_factory=lambda: Autoscaling.model_validate({}))
    termination_grace_period_seconds: int = Field(
        default_factory=_grace_period,
        ge=1,
        description="The operator pods' terminationGracePeriodSeconds: how long Kubernetes "
        "waits after SIGTERM before it kills a replica. Must be above "
        "gracefulShutdownTimeout (the install fails otherwise). Raise both for a sharded "
        "operator of more than about 5,000 objects a shard (docs/sharding.md).",
    )
    graceful_shutdown_timeout: str = Field(
        operator_defaults.SHUTDOWN_TIMEOUT,
        pattern=DURATION,
        description="--graceful-shutdown-timeout (passed only when not its default, "
        f"{operator_defaults.SHUTDOWN_TIMEOUT}): on SIGTERM, how long in-flight reconciles "
        "may finish and a shard may hand its objects back. A duration with its unit (20s, "
        "1m30s, 500ms), below terminationGracePeriodSeconds.",
    )
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        "info", description="--log-level"
    )
    concurrency: int = Field(
        workload.CONCURRENCY, ge=1, le=1024, description="Concurrent reconciles per controller."
    )
    allow_external_ips: bool = Field(
        False, alias="allowExternalIPs", description="--allow-external-ips"
    )
    external_deny_cidrs: list[str] = Field(
        default_factory=list,
        alias="externalDenyCIDRs",
        description="--external-deny-cidr: give the cluster's pod and service ranges.",
    )
    allow_external_cluster_names: bool = Field(False, description="--allow-external-cluster-names")
    enable_all_namespaces: bool = Field(
        False,
        description="--enable-all-namespaces: act in every namespace, not only those labelled "
        "appstack.dev/enabled=true (single-team clusters; docs/security.md).",
    )
    extra_args: list[str] = Field(
        default_factory=list, description="More arguments of `appstack run`."
    )
    extra_env: list[dict[str, Any]] = _objects(
        "More environment variables of the operator container (EnvVar: name, value or "
        "valueFrom), after its own.",
        ("name",),
    )
    extra_volumes: list[dict[str, Any]] = _objects(
        "More volumes of the operator pods (Volume), mounted by extraVolumeMounts.", ("name",)
    )
    extra_volume_mounts: list[dict[str, Any]] = _objects(
        "More volumeMounts of the operator container (VolumeMount: name, mountPath; the root "
        "filesystem is read-only).",
        ("name", "mountPath"),
    )
    liveness_probe: dict[str, int] = _probe_field("livenessProbe", "liveness (/healthz)")
    readiness_probe: dict[str, int] = _probe_field("readinessProbe", "readiness (/readyz)")
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="The operator pods' nodeSelector."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=list, description="The operator pods' tolerations."
    )
    affinity: dict[str, Any] = Field(
        default_factory=dict,
        description="The operator pods' affinity. Empty: this release's replicas preferably "
        "on different nodes (selected by the release's own operator name label).",
    )
    pod_security_context: dict[str, Any] = Field(
        default_factory=_pod_security,
        description="The operator pods' securityContext (OpenShift's restricted-v2: drop "
        "runAsUser and runAsGroup, the namespace's range assigns them).",
    )
    security_context: dict[str, Any] = Field(
        default_factory=_security, description="The operator container's securityContext."
    )
    topology_spread_constraints: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The operator pods' topologySpreadConstraints, as given (their "
        "labelSelector: app.kubernetes.io/name: <fullname>-operator). Empty: none; the "
        "default affinity stays either way.",
        json_schema_extra={
            "items": {"type": "object", "required": ["maxSkew", "topologyKey", "whenUnsatisfiable"]}
        },
    )
    priority_class_name: str = Field("", description="The operator pods' priorityClassName.")
    metrics: Metrics = Field(default_factory=lambda: Metrics.model_validate({}))


def defaults() -> dict[str, Any]:
    """values.yaml: every value with its default."""
    return ChartValues.model_validate({}).model_dump(by_alias=True)


def schema() -> dict[str, Any]:
    """values.schema.json (JSON Schema 2020-12, which Helm 3.18 and later read)."""
    generated = ChartValues.model_json_schema(by_alias=True)
    for definition in generated.get("$defs", {}).values():
        definition.pop("title", None)
    # serviceAccount.name is required when the chart does not create the ServiceAccount
    account = generated["$defs"]["ServiceAccount"]
    account["if"] = {"properties": {"create": {"const": False}}, "required": ["create"]}
    account["then"] = {"properties": {"name": {"minLength": 1}}, "required": ["name"]}
    generated["allOf"] = HelmText.sharding_schema_rules()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **generated}
