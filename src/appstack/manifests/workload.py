"""The operator's workload — its own Namespace, its metrics Service and its Deployment: two
replicas with leader election, probes, resources, and a locked-down security context
(non-root, read-only root filesystem, seccomp RuntimeDefault, all capabilities dropped).
Built by the SDK's builders (:mod:`appstack.sdk.install`, as a scaffolded project's
``config/manager``), with options any operator built on the SDK has too (the replicas on
different nodes, the PodDisruptionBudget, pull secrets and policy, a mounted certificate);
only appstack's values are here: its names, flags, resources and the backup image."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from appstack import __version__
from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.sdk import (
    METRICS_CERT_DIR,
    HelmText,
    cpu_utilization,
    manager_args,
    manager_container,
    manager_deployment,
    manager_pod_security,
    namespace_object,
    spread_affinity,
)
from appstack.sdk import autoscaler as sdk_autoscaler
from appstack.sdk import disruption_budget as sdk_disruption_budget
from appstack.sdk import metrics_service as sdk_metrics_service

IMAGE = f"appstack:{__version__}"
BACKUP_IMAGE_ENV = "APPSTACK_BACKUP_IMAGE"  # appstack run --backup-image
CONCURRENCY = defaults.CONCURRENCY


def namespace(name: str = NAMESPACE) -> dict[str, Any]:
    """The operator's Namespace, enforcing the ``restricted`` Pod Security level."""
    return namespace_object(name, LABELS, pod_security="restricted")


METRICS_SERVICE = f"{NAME}-metrics"
#: The operator's /metrics (HTTPS unless --no-metrics-secure) and health probes' ports.
METRICS_PORT = 8080
HEALTH_PORT = 8081
SELECTOR = {"app.kubernetes.io/name": NAME}
#: The CPU target of an autoscaled install (% of the requests): the chart's default too.
AUTOSCALE_CPU = int(HelmText.autoscaling_values()["targetCPUUtilizationPercentage"])


def metrics_service(namespace: str = NAMESPACE) -> dict[str, Any]:
    """A Service in front of the operator's /metrics (for Prometheus / a ServiceMonitor)."""
    return sdk_metrics_service(
        METRICS_SERVICE,
        namespace,
        labels={**LABELS, **SELECTOR},
        selector=SELECTOR,
        port=METRICS_PORT,
        port_name="metrics",
        target_port="metrics",
    )


@dataclass(frozen=True)
class OperatorFlags:
    """What an installer sets beyond the namespace, image and sync period — the chart's
    values of the same names, as ``appstack manifests`` flags (pure data)."""

    leader_election: bool = True  # leaderElection.enabled
    metrics_secure: bool = True  # metrics.secure
    allow_external_ips: bool = False  # allowExternalIPs
    external_deny_cidrs: tuple[str, ...] = ()  # externalDenyCIDRs
    allow_external_cluster_names: bool = False  # allowExternalClusterNames
    extra_args: tuple[str, ...] = ()  # extraArgs
    image_pull_secrets: tuple[str, ...] = ()  # imagePullSecrets
    image_pull_policy: str | None = None  # image.pullPolicy

    def args(self) -> list[str]:
        """The operator's flags these add (after the common ones)."""
        return [
            *([] if self.metrics_secure else ["--no-metrics-secure"]),
            *(["--allow-external-ips"] if self.allow_external_ips else []),
            *(f"--external-deny-cidr={cidr}" for cidr in self.external_deny_cidrs),
            *(["--allow-external-cluster-names"] if self.allow_external_cluster_names else []),
            *self.extra_args,
        ]


def deployment(
    image: str = IMAGE,
    *,
    namespace: str = NAMESPACE,
    watch_namespaces: tuple[str, ...] = (),
    replicas: int | None = 2,
    sync_period: str = DEFAULT_SYNC_PERIOD,
    log_level: str = defaults.LOG_LEVEL,
    concurrency: int | str = defaults.CONCURRENCY,
    metrics_cert_secret: str | None = None,
    enable_all_namespaces: bool = False,
    flags: OperatorFlags | None = None,
    sharding: bool = False,
) -> dict[str, Any]:
    """The operator's Deployment; it watches ``watch_namespaces`` (none: all) and resyncs
    every ``sync_period``. /metrics is HTTPS with a self-signed certificate made at
    start-up, or with ``metrics_cert_secret`` (a ``kubernetes.io/tls`` Secret) mounted.
    ``flags``: the rest of what an installer sets (the chart's values of the same names);
    ``sharding``: every replica a shard (``--sharding``, docs/sharding.md); ``replicas``
    None: none of its own (its :func:`autoscaler` sets them)."""
    flags = flags or OperatorFlags()
    certs = (
        {"name": "metrics-certs", "secret": {"secretName": metrics_cert_secret}}
        if metrics_cert_secret
        else None
    )
    mounts = (
        [{"name": "metrics-certs", "mountPath": METRICS_CERT_DIR, "readOnly": True}]
        if certs
        else []
    )
    container = manager_container(
        "operator",
        image,
        [
            "run",
            *manager_args(
                metrics_port=METRICS_PORT,
                health_port=HEALTH_PORT,
                leader_elect=flags.leader_election,
                sharding=sharding,
                sync_period=sync_period,
                log_level=log_level,
                concurrency=concurrency,
                metrics_cert_dir=METRICS_CERT_DIR if certs else None,
                namespaces=watch_namespaces,
                enable_all_namespaces=enable_all_namespaces,
            ),
            *flags.args(),
        ],
        # no CPU limit: a throttled operator falls behind its watches and its Lease
        # renewals while the node has CPU to spare; memory is bounded
        resources={
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        metrics_port=METRICS_PORT,
        health_port=HEALTH_PORT,
        # the image EtcdCluster backups to an object store run: the operator's own
        env=[{"name": BACKUP_IMAGE_ENV, "value": image}],
        image_pull_policy=flags.image_pull_policy,
        volume_mounts=mounts,
    )
    return manager_deployment(
        NAME,
        namespace,
        labels=LABELS,
        selector=SELECTOR,
        container=container,
        pod_security=manager_pod_security(),
        service_account=NAME,
        replicas=replicas,
        # the replicas on different nodes where there are several: a node lost takes the
        # leader or the standby, not both
        affinity=spread_affinity(SELECTOR),
        image_pull_secrets=flags.image_pull_secrets,
        volumes=[certs] if certs else [],
    )


def autoscaler(
    minimum: int, maximum: int, namespace: str = NAMESPACE, cpu_percent: int = AUTOSCALE_CPU
) -> dict[str, Any]:
    """The HorizontalPodAutoscaler of a sharded install (``--autoscale MIN:MAX``, the
    chart's ``autoscaling``): between ``minimum`` and ``maximum`` shards at
    ``cpu_percent`` % of the pods' CPU requests, at the SDK's pace for shards."""
    return sdk_autoscaler(
        NAME,
        namespace,
        labels={**LABELS, **SELECTOR},
        deployment=NAME,
        min_replicas=minimum,
        max_replicas=maximum,
        metrics=cpu_utilization(cpu_percent),
    )


def disruption_budget(namespace: str = NAMESPACE) -> dict[str, Any]:
    """At most one replica evicted at a time (a drain leaves the other to lead)."""
    return sdk_disruption_budget(NAME, namespace, labels=LABELS, selector=SELECTOR)
