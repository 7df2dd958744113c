"""The PrometheusRule alerts users are warned by, from the metrics the operator exports
(controller-runtime's names, :mod:`appstack.runtime.metrics`, and what users run, per kind,
:mod:`appstack.controllers.kind_metrics`): the operator's own here, then those each kind
declares on its registration (``alerts``), both as any operator built on the SDK gets them
(:func:`appstack.sdk.alerting_rules`); the Grafana dashboards are
:mod:`appstack.manifests.grafana`. Generated into ``deploy/monitoring/`` and the Helm chart;
a unit test checks that every metric they reference is one the operator's registry exports
(:func:`expressions`). Pure."""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.manifests import grafana
from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.sdk import alerting_rules
from appstack.sdk import prometheus_rule as sdk_prometheus_rule

#: The operator's alerts — those every SDK operator gets (:func:`appstack.sdk.operator_alerts`:
#: its workqueues, leadership, readiness, shards) — then those its kinds declare on their
#: registrations (:func:`appstack.sdk.alert_rules`); a sharded install's replicas run
#: with the default lease, which the unassigned-keys alert waits for.
ALERTS: list[dict[str, Any]] = alerting_rules(IDENTITY, ALL)


def prometheus_rule(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The alerts as a Prometheus Operator PrometheusRule (:func:`appstack.sdk.prometheus_rule`)."""
    return sdk_prometheus_rule(NAME, namespace, labels=LABELS, groups={NAME: ALERTS})


def expressions() -> list[str]:
    """Every PromQL expression of the dashboards and the alerts (for the tests)."""
    return grafana.expressions() + [a["expr"] for a in ALERTS]
