"""What users watch the operator with, from the metrics it exports (controller-runtime's
names, :mod:`appstack.runtime.metrics`, and what users run, per kind,
:mod:`appstack.controllers.kind_metrics`): a Grafana dashboard (JSON) and PrometheusRule
alerts. Generated into ``deploy/monitoring/`` and the Helm chart; a unit test checks that
every metric they reference is one the operator's registry exports. Pure."""

from __future__ import annotations

from typing import Any

from appstack.manifests.crds import LABELS
from appstack.manifests.rbac import NAME, NAMESPACE

LEADER = f'leader_election_master_status{{name="{NAME}"}}'
PANELS: list[tuple[str, str, list[str]]] = [
    # title, unit, expressions (legend from the labels kept by the aggregation)
    (
        "Reconciles / s",
        "ops",
        ["sum by (controller, result) (rate(controller_runtime_reconcile_total[5m]))"],
    ),
    (
        "Reconcile errors / s",
        "ops",
        ["sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m]))"],
    ),
    (
        "Reconcile time (p50, p99)",
        "s",
        [
            f"histogram_quantile({q}, sum by (le, controller) "
            "(rate(controller_runtime_reconcile_time_seconds_bucket[5m])))"
            for q in ("0.5", "0.99")
        ],
    ),
    ("Workqueue depth", "short", ["sum by (name) (workqueue_depth)"]),
    (
        "Workqueue wait (p99)",
        "s",
        [
            "histogram_quantile(0.99, sum by (le, name) "
            "(rate(workqueue_queue_duration_seconds_bucket[5m])))"
        ],
    ),
    ("Workqueue retries / s", "ops", ["sum by (name) (rate(workqueue_retries_total[5m]))"]),
    ("Leader (1 = this replica leads)", "short", [LEADER]),
    (
        "API requests / s by method and code",
        "reqps",
        ["sum by (method, code) (rate(rest_client_requests_total[5m]))"],
    ),
    ("Memory (RSS)", "bytes", ["process_resident_memory_bytes"]),
    ("CPU", "percentunit", ["rate(process_cpu_seconds_total[5m])"]),
    # What users run (controllers/kind_metrics.py): one row of panels per kind.
    (
        "Objects per kind: Ready / not Ready",
        "short",
        [
            "sum by (kind) (appstack_object_ready)",
            "count by (kind) (appstack_object_ready == 0)",
        ],
    ),
    (
        "AppStack members by state",
        "short",
        ["sum by (namespace, name, state) (appstack_appstack_members)"],
    ),
    (
        "EtcdCluster healthy voters / members",
        "short",
        [
            "max by (namespace, name) (appstack_etcdcluster_ready_members)",
            "max by (namespace, name) (appstack_etcdcluster_members)",
        ],
    ),
    (
        "EtcdCluster quorum and leader (1 = yes)",
        "short",
        [
            "min by (namespace, name) (appstack_etcdcluster_quorum)",
            "min by (namespace, name) (appstack_etcdcluster_has_leader)",
        ],
    ),
    (
        "EtcdCluster age of the newest snapshot",
        "s",
        ["time() - max by (namespace, name) (appstack_etcdcluster_last_backup_timestamp_seconds)"],
    ),
    (
        "CronTabs whose newest run failed",
        "short",
        ["max by (namespace, name) (appstack_crontab_last_run_failed) == 1"],
    ),
]


def _panel(index: int, title: str, unit: str, exprs: list[str]) -> dict[str, Any]:
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "expr": expr,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
            }
            for i, expr in enumerate(exprs)
        ],
    }


def grafana_dashboard() -> dict[str, Any]:
    """A Grafana dashboard (schema 39) with a Prometheus data source variable."""
    return {
        "uid": "appstack-operator",
        "title": "appstack operator",
        "tags": ["appstack", "kubernetes", "operator"],
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "label": "Data source",
                }
            ]
        },
        "panels": [_panel(i, *panel) for i, panel in enumerate(PANELS)],
    }


ALERTS: list[dict[str, Any]] = [
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
        "alert": "AppstackEtcdQuorumLost",
        "expr": "min by (namespace, name) (appstack_etcdcluster_quorum) == 0",
        "for": "2m",
        "labels": {"severity": "critical"},
        "annotations": {
            "summary": "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }} has lost its "
            "quorum: it takes no writes",
            "description": "Fewer than half of its voters are healthy. With "
            "spec.disasterRecovery enabled it is rebuilt from the newest snapshot; see "
            "docs/etcdcluster.md.",
        },
    },
    {
        "alert": "AppstackEtcdBackupOverdue",
        "expr": "time() - max by (namespace, name) "
        "(appstack_etcdcluster_next_backup_due_timestamp_seconds) > 1800",
        "for": "10m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "EtcdCluster {{ $labels.namespace }}/{{ $labels.name }}: a scheduled "
            "snapshot is more than 30 minutes overdue",
            "description": "Its backup Jobs do not complete (kubectl get jobs -n "
            "{{ $labels.namespace }}); the newest snapshot is getting old.",
        },
    },
    {
        "alert": "AppstackCronTabFailing",
        "expr": "max by (namespace, name) (appstack_crontab_last_run_failed) == 1",
        "for": "5m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "CronTab {{ $labels.namespace }}/{{ $labels.name }}: its newest run failed",
        },
    },
]


def prometheus_rule(namespace: str = NAMESPACE) -> dict[str, Any]:
    """The alerts as a Prometheus Operator PrometheusRule."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
        "spec": {"groups": [{"name": "appstack-operator", "rules": ALERTS}]},
    }


def expressions() -> list[str]:
    """Every PromQL expression of the dashboard and the alerts (for the tests)."""
    return [e for _, _, exprs in PANELS for e in exprs] + [a["expr"] for a in ALERTS]
