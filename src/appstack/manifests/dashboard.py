"""The PrometheusRule alerts users are warned by, from the metrics the operator exports
(controller-runtime's names, :mod:`appstack.runtime.metrics`, and what users run, per kind,
:mod:`appstack.controllers.kind_metrics`): the operator's own here, then those each kind
declares on its registration (``alerts``: :func:`appstack.sdk.alert_rules`, as in any
operator built on the SDK); the Grafana dashboards are
:mod:`appstack.manifests.grafana`. Generated into ``deploy/monitoring/`` and the Helm chart;
a unit test checks that every metric they reference is one the operator's registry exports
(:func:`expressions`). Pure."""

from __future__ import annotations

from typing import Any

from appstack.controllers.registry import ALL
from appstack.manifests import grafana
from appstack.manifests.crds import LABELS
from appstack.manifests.grafana import LEADER
from appstack.manifests.rbac import NAME, NAMESPACE
from appstack.sdk import OperatorOptions, alert_rules
from appstack.sdk import prometheus_rule as sdk_prometheus_rule

#: A sharded install's lease (its replicas run with the default): a key that waits
#: unassigned longer than that is not waiting for a shard gone to expire.
LEASE = OperatorOptions().lease_duration

#: The operator's own alerts: its workqueues, leadership, readiness, shards.
OPERATOR_ALERTS: list[dict[str, Any]] = [
    {
        "alert": "AppstackReconcileErrors",
        "expr": "sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) > 0",
        "for": "15m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "appstack controller {{ $labels.controller }} keeps failing to reconcile",
            "description": "Reconcile errors for 15 minutes: see the operator's log and the "
            "objects' Ready condition (kubectl get appstack-all -A -o wide).",
        },
    },
    {
        "alert": "AppstackWorkqueueStuck",
        # A standby replica (leader_election_master_status 0) queues what its warm cache
        # sees and works on none of it until it leads: its depth is not a stuck queue.
        "expr": "max by (name) (workqueue_depth unless on (instance) "
        f"({LEADER} == 0)) > 0 and "
        "sum by (name) (rate(workqueue_work_duration_seconds_count[10m])) == 0",
        "for": "15m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "appstack workqueue {{ $labels.name }} has items but processes none",
        },
    },
    {
        "alert": "AppstackNoLeader",
        "expr": f"(max({LEADER}) or vector(0)) < 1",
        "for": "5m",
        "labels": {"severity": "critical"},
        "annotations": {
            "summary": "No appstack operator replica holds the leader Lease: nothing reconciles",
        },
    },
    # What users run (controllers/kind_metrics.py). ``max by`` keeps one series per object
    # when both replicas are scraped (each exports what its cache holds).
    {
        "alert": "AppstackObjectNotReady",
        "expr": "max by (kind, namespace, name) (appstack_object_ready) == 0",
        "for": "15m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} has not "
            "been Ready for 15 minutes",
            "description": "Its Ready condition and Events say why (kubectl describe, or "
            "appstack status KIND/NAME).",
        },
    },
    {
        "alert": "AppstackShardKeysUnassigned",
        # Sharded installs only (docs/sharding.md): the coordinator assigns a new key
        # within a look and a gone shard's keys as soon as its Lease expires.
        "expr": f"max by (resource) ({grafana.SHARD_WAIT}) > {LEASE:g}",
        "for": "1m",
        "labels": {"severity": "warning"},
        "annotations": {
            # short: the chart's escaping of {{ $value ... }} needs it on one line
            "summary": "{{ $labels.resource }}: keys unassigned for "
            "{{ $value | humanizeDuration }}",
            "description": "Objects no shard reconciles, the oldest waiting longer than a "
            "lease. No Ready shard takes them: are the replicas running and their "
            "shard Leases renewed (kubectl get leases -A -l "
            "appstack.dev/shard-of), or are the coordinator's label patches refused (its log: "
            "label patch refused)? See docs/sharding.md.",
        },
    },
]
#: The operator's alerts, then those its kinds declare on their registrations
#: (:func:`appstack.sdk.alert_rules`).
ALERTS: list[dict[str, Any]] = [*OPERATOR_ALERTS, *alert_rules(ALL)]


def prometheus_rule(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The alerts as a Prometheus Operator PrometheusRule (:func:`appstack.sdk.prometheus_rule`)."""
    return sdk_prometheus_rule(NAME, namespace, labels=LABELS, groups={NAME: ALERTS})


def expressions() -> list[str]:
    """Every PromQL expression of the dashboards and the alerts (for the tests)."""
    return grafana.expressions() + [a["expr"] for a in ALERTS]
