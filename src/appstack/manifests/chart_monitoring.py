"""The Helm chart's monitoring templates (pure; used by :mod:`appstack.manifests.chart`):
the metrics Service's ServiceMonitor and its reader binding, the ``helm test`` pod that
GETs ``/metrics``, the PrometheusRule and the Grafana dashboard ConfigMap — each from the
same function as deploy/monitoring/ (:mod:`appstack.manifests.monitoring`,
:mod:`appstack.manifests.dashboard`), with Helm's control flow where values choose.

``metrics.secure`` (HTTPS, the default) and ``metrics.certSecret`` (a mounted certificate
instead of the self-signed one) decide the ServiceMonitor's ``scheme`` and ``tlsConfig``.
"""

from __future__ import annotations

from appstack.manifests import crds, dashboard, grafana, monitoring, rbac, workload
from appstack.manifests.helmtext import (
    IMAGE,
    METRICS_CERT_VALUES,
    METRICS_SCHEME,
    NAMESPACES,
    NS,
    RELEASE_NS,
    conditional_text,
    dump,
    file_entries,
    files_text,
    literal_braces,
    metrics_ca_text,
    metrics_scheme,
    metrics_test_pod,
    pod_extras,
    sentinel,
    substitute,
)


def _scheme_and_tls(text: str) -> str:
    """``scheme: https`` → https with the tlsConfig the values choose, or http (the SDK's
    :func:`~appstack.sdk.HelmText.metrics_scheme`, as every operator's chart)."""
    checked = monitoring.tls_config(NS, sentinel("CERT_SECRET"))
    return metrics_scheme(text, checked, monitoring.tls_config(NS))


def service_monitor() -> str:
    """The ServiceMonitor and the binding that lets its token read /metrics."""
    account = ".Values.metrics.serviceMonitor.prometheusServiceAccount"
    binding = monitoring.reader_binding(NS, sentinel("ACCOUNT"), sentinel("ACCOUNT_NS"))
    text = "---\n".join(
        [
            _scheme_and_tls(dump(monitoring.service_monitor(NS, sentinel("INTERVAL")))),
            dump(binding),
        ]
    )
    extra = {
        "INTERVAL": "{{ .Values.metrics.serviceMonitor.interval }}",
        "ACCOUNT": f"{{{{ {account}.name }}}}",
        "ACCOUNT_NS": f"{{{{ {account}.namespace }}}}",
        **METRICS_CERT_VALUES,
    }
    return conditional_text(
        "and .Values.metrics.enabled .Values.metrics.serviceMonitor.enabled",
        substitute(text, {**NAMESPACES, **extra}),
    )


def test_pod() -> str:
    """``helm test``'s Pod: GETs /metrics through the metrics Service (the SDK's
    :func:`~appstack.sdk.HelmText.metrics_test_pod`, as every operator's chart)."""
    url = f"{sentinel('SCHEME')}://{workload.METRICS_SERVICE}.{RELEASE_NS}.svc:8080/metrics"
    pod = metrics_test_pod(
        f"{rbac.NAME}-test-metrics", NS, url, crds.LABELS, ca_secret=sentinel("CERT_SECRET")
    )
    # the operator's image: pulled as the operator's is (a private registry's Secret)
    text = metrics_ca_text(pod_extras(dump(pod)))
    extra = {"IMAGE": IMAGE, "SCHEME": METRICS_SCHEME, **METRICS_CERT_VALUES}
    return conditional_text(".Values.metrics.enabled", substitute(text, extra))


def prometheus_rule() -> str:
    """The alerts; their own templates (``{{ $labels.x }}``, ``{{ $value | ... }}``) pass
    through Helm as literals, whatever line YAML folded them onto
    (:func:`appstack.sdk.helmtext.literal_braces`, as a scaffolded project's chart)."""
    text = literal_braces(dump(dashboard.prometheus_rule(NS)))  # before the chart's own
    return conditional_text(".Values.metrics.prometheusRule.enabled", text)


def dashboard_configmap() -> str:
    """One ConfigMap holding every dashboard file (chart ``dashboards/``), each key read
    with ``.Files.Get`` so the JSON is shipped as generated (the SDK's
    :func:`~appstack.sdk.HelmText.files_text`, as every operator's chart)."""
    names = list(grafana.dashboards())
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{rbac.NAME}-dashboard",
            "namespace": NS,
            "labels": {**crds.LABELS, "grafana_dashboard": "1"},
        },
        "data": file_entries(names),
    }
    text = files_text(dump(configmap), names, "dashboards")
    return conditional_text(".Values.metrics.grafanaDashboard.enabled", text)
