"""Prometheus Operator objects for the operator's metrics (pure): a ServiceMonitor scraping
the metrics Service with the scraper's own ServiceAccount token, and the
ClusterRoleBinding that lets that ServiceAccount read ``/metrics`` (optional in the Helm
chart, ``metrics.serviceMonitor.enabled``; in deploy/monitoring/ otherwise).

``/metrics`` is guarded by a TokenReview and a SubjectAccessReview (``--metrics-auth``, the
default): a scrape without a token gets 401, one whose ServiceAccount is not bound to the
metrics-reader ClusterRole 403. So the ServiceMonitor sends the token Prometheus' pod has
mounted (``bearerTokenFile``), and :func:`reader_binding` binds the metrics-reader role to
Prometheus' ServiceAccount (kube-prometheus' ``monitoring/prometheus-k8s`` by default).

``/metrics`` is served over HTTPS (``--metrics-secure``, the default): with a self-signed
certificate made at start-up, which nothing can verify — the scrape encrypts but skips
verification (``insecureSkipVerify``) and relies on the bearer token check — or with a
certificate from a Secret (``--metrics-cert-dir``, e.g. issued by cert-manager), verified
against the Secret's ``ca.crt`` for the Service's DNS name (:func:`tls_config`).
"""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import METRICS_READER, NAME, NAMESPACE, cluster_name, metrics_reader
from appstack.manifests.workload import METRICS_SERVICE, SELECTOR
from appstack.sdk import SERVICE_ACCOUNT_TOKEN, binding, metrics_endpoint, metrics_tls
from appstack.sdk import service_monitor as sdk_service_monitor

#: The token every pod has mounted (Prometheus' own ServiceAccount's).
TOKEN_FILE = SERVICE_ACCOUNT_TOKEN
#: kube-prometheus' Prometheus ServiceAccount, the default scraper bound to read /metrics.
PROMETHEUS_ACCOUNT = {"name": "prometheus-k8s", "namespace": "monitoring"}


def server_name(namespace: str = NAMESPACE) -> str:
    """The metrics Service's DNS name: what a mounted certificate must name."""
    return f"{METRICS_SERVICE}.{namespace}.svc"


def tls_config(namespace: str = NAMESPACE, cert_secret: str | None = None) -> dict[str, Any]:
    """How Prometheus checks the operator's certificate: against ``ca.crt`` of
    ``cert_secret`` (in the operator's namespace, as cert-manager writes it), or not at all
    for the self-signed default (the SDK's :func:`~appstack.sdk.metrics_tls`)."""
    return metrics_tls(cert_secret, server_name(namespace) if cert_secret else None)


def service_monitor(
    namespace: str = NAMESPACE,
    interval: str = "30s",
    *,
    secure: bool = True,
    cert_secret: str | None = None,
) -> dict[str, Any]:
    """Scrape ``/metrics`` of every Pod behind the metrics Service, with Prometheus' token,
    over HTTPS unless ``secure`` is False (``--no-metrics-secure``): the SDK's endpoint
    (:func:`~appstack.sdk.metrics_endpoint`), as a scaffolded project's
    ``config/prometheus``."""
    endpoint = metrics_endpoint(
        "metrics",
        secure=secure,
        interval=interval,
        ca_secret=cert_secret,
        server_name=server_name(namespace) if cert_secret else None,
    )
    return sdk_service_monitor(
        NAME,
        namespace,
        labels=LABELS,
        selector=SELECTOR,
        endpoints=[endpoint],
        namespaces=[namespace],
    )


def reader_binding(
    namespace: str = NAMESPACE,
    account: str = PROMETHEUS_ACCOUNT["name"],
    account_namespace: str = PROMETHEUS_ACCOUNT["namespace"],
) -> dict[str, Any]:
    """Bind the metrics-reader ClusterRole of the install in ``namespace`` to the scraper's
    ServiceAccount (a ClusterRoleBinding: non-resource URLs cannot be granted by a Role)."""
    return binding(
        cluster_name(METRICS_READER, namespace),
        metrics_reader(namespace),
        (account_namespace, account),
        LABELS,
    )
