"""Prometheus Operator objects for the operator's metrics (pure): a ServiceMonitor scraping
the metrics Service with the scraper's own ServiceAccount token, and the
ClusterRoleBinding that lets that ServiceAccount read ``/metrics`` (optional in the Helm
chart, ``metrics.serviceMonitor.enabled``; in deploy/monitoring/ otherwise).

``/metrics`` is guarded by a TokenReview and a SubjectAccessReview (``--metrics-auth``, the
default): a scrape without a token gets 401, one whose ServiceAccount is not bound to the
metrics-reader ClusterRole 403. So the ServiceMonitor sends the token Prometheus' pod has
mounted (``bearerTokenFile``), and :func:`reader_binding` binds the metrics-reader role to
Prometheus' ServiceAccount (kube-prometheus' ``monitoring/prometheus-k8s`` by default).
"""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import METRICS_READER, NAME, NAMESPACE, cluster_name
from appstack.manifests.workload import SELECTOR

#: The token every pod has mounted (Prometheus' own ServiceAccount's).
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105 - a path
#: kube-prometheus' Prometheus ServiceAccount, the default scraper bound to read /metrics.
PROMETHEUS_ACCOUNT = {"name": "prometheus-k8s", "namespace": "monitoring"}


def service_monitor(namespace: str = NAMESPACE, interval: str = "30s") -> dict[str, Any]:
    """Scrape ``/metrics`` of every Pod behind the metrics Service, with Prometheus' token."""
    endpoint = {
        "port": "metrics",
        "path": "/metrics",
        "interval": interval,
        "bearerTokenFile": TOKEN_FILE,
    }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
        "spec": {
            "selector": {"matchLabels": dict(SELECTOR)},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [endpoint],
        },
    }


def reader_binding(
    namespace: str = NAMESPACE,
    account: str = PROMETHEUS_ACCOUNT["name"],
    account_namespace: str = PROMETHEUS_ACCOUNT["namespace"],
) -> dict[str, Any]:
    """Bind the metrics-reader ClusterRole of the install in ``namespace`` to the scraper's
    ServiceAccount (a ClusterRoleBinding: non-resource URLs cannot be granted by a Role)."""
    name = cluster_name(METRICS_READER, namespace)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": account_namespace}],
    }
