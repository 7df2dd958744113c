"""Prometheus Operator objects for the operator's metrics: a ServiceMonitor scraping the
metrics Service (optional in the Helm chart, ``metrics.serviceMonitor.enabled``). Pure."""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.manifests.workload import SELECTOR


def service_monitor(namespace: str = NAMESPACE, interval: str = "30s") -> dict[str, Any]:
    """Scrape ``/metrics`` of every Pod behind the metrics Service."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
        "spec": {
            "selector": {"matchLabels": dict(SELECTOR)},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": interval}],
        },
    }
