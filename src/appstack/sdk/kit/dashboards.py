"""The Grafana dashboards every operator built on the SDK gets, from its registrations:
:func:`operator_dashboards` — one for the operator itself (its controllers' reconciles and
workqueues, its leader Lease, its API requests, CPU and memory: the runtime's
controller-runtime names, :mod:`appstack.runtime.metrics`; its objects per kind; a sharded
install's shards) and one per kind of its own, each opening with a table of the objects
not Ready now (:func:`~appstack.sdk.kit.kind_metrics.ready_metric`), then the rows every
kind has (its objects' readiness, its controller), then the panels its registration
declares (``dashboard``: :data:`~appstack.sdk.kit.observers.Panels`). Every series is the
operator's own, as its alerts' (:func:`~appstack.sdk.kit.kind_metrics.operator_alerts`):
its controllers' names, its Lease, its metric prefix — another operator scraped by the same
Prometheus shows on none of its panels. :func:`dashboard_expressions`: every PromQL
expression in them, for a test that each names only metrics the operator exports.

Written by a scaffolded project's ``make manifests`` into ``config/grafana/`` (a ConfigMap
for Grafana's dashboard sidecar; its chart's ``metrics.grafanaDashboard``) and by
appstack's ``appstack manifests`` into ``deploy/monitoring/dashboards/`` and its chart.
Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from appstack.sdk.identity import OperatorIdentity
from appstack.sdk.install import config_map
from appstack.sdk.kit.kind_metrics import matching, ready_metric
from appstack.sdk.kit.observers import Panel
from appstack.sdk.kit.registration import Registration

#: The label Grafana's dashboard sidecar finds dashboards' ConfigMaps by (value ``"1"``).
SIDECAR_LABEL = "grafana_dashboard"

#: The template variables of a kind's dashboard, in its selectors (given to each kind's own
#: panels: its registration's ``dashboard``).
WHO = 'namespace=~"$namespace", name=~"$name"'

_SOURCE = {"type": "prometheus", "uid": "${datasource}"}
_TABLE_HEIGHT = 8


def _operator_panels(
    identity: OperatorIdentity, controllers: Sequence[Registration]
) -> list[Panel]:
    """The operator's dashboard's rows: its controllers, workqueues, leader, API requests,
    CPU and memory, its objects per kind (with kinds of its own)."""
    names = matching(c.name for c in controllers)
    mine, queues = f'controller=~"{names}"', f'name=~"{names}"'
    leader = f'leader_election_master_status{{name="{identity.lease_name}"}}'
    panels: list[Panel] = [
        (
            "Reconciles / s",
            "ops",
            [
                "sum by (controller, result) "
                f"(rate(controller_runtime_reconcile_total{{{mine}}}[5m]))"
            ],
        ),
        (
            "Reconcile errors / s",
            "ops",
            [
                "sum by (controller) "
                f"(rate(controller_runtime_reconcile_errors_total{{{mine}}}[5m]))"
            ],
        ),
        (
            "Reconcile time (p50, p99)",
            "s",
            [
                f"histogram_quantile({q}, sum by (le, controller) "
                f"(rate(controller_runtime_reconcile_time_seconds_bucket{{{mine}}}[5m])))"
                for q in ("0.5", "0.99")
            ],
        ),
        ("Workqueue depth", "short", [f"sum by (name) (workqueue_depth{{{queues}}})"]),
        (
            "Workqueue wait (p99)",
            "s",
            [
                "histogram_quantile(0.99, sum by (le, name) "
                f"(rate(workqueue_queue_duration_seconds_bucket{{{queues}}}[5m])))"
            ],
        ),
        (
            "Workqueue retries / s",
            "ops",
            [f"sum by (name) (rate(workqueue_retries_total{{{queues}}}[5m]))"],
        ),
        ("Leader (1 = this replica leads)", "short", [leader]),
        (
            "API requests / s by method and code",
            "reqps",
            ["sum by (method, code) (rate(rest_client_requests_total[5m]))"],
        ),
        ("Memory (RSS)", "bytes", ["process_resident_memory_bytes"]),
        ("CPU", "percentunit", ["rate(process_cpu_seconds_total[5m])"]),
    ]
    if any(c.custom for c in controllers):
        ready = ready_metric(identity)
        panels.append(
            (
                "Objects per kind: Ready / not Ready",
                "short",
                [f"sum by (kind) ({ready})", f"count by (kind) ({ready} == 0)"],
            )
        )
    return panels


def _shard_panels(identity: OperatorIdentity) -> list[Panel]:
    """The sharding panels, last on the operator's dashboard: empty unless installed sharded
    (docs/sharding.md; ``max``: only the coordinating replica has the coordinator's gauges)."""
    prefix = identity.metric_prefix
    return [
        ("Shards: keys per shard", "short", [f"max by (resource, shard) ({prefix}_shard_keys)"]),
        (
            "Shards: keys unassigned, drains in flight, handovers (5m)",
            "short",
            [
                f"max by (resource) ({prefix}_shard_unassigned_keys)",
                f"max by (resource) ({prefix}_shard_drains_in_flight)",
                f"sum by (resource, reason) (increase({prefix}_shard_handovers_total[5m]))",
            ],
        ),
        (
            "Shards: the oldest unassigned key's wait",
            "s",
            [f"max by (resource) ({prefix}_shard_oldest_unassigned_seconds)"],
        ),
    ]


def _not_ready(identity: OperatorIdentity, kind: str | None) -> str:
    """The table's query: the objects not Ready now — of every kind (``max by``: one row per
    object when several replicas are scraped), or of ``kind`` in the chosen namespaces."""
    if kind is None:
        return f"max by (kind, namespace, name) ({ready_metric(identity)}) == 0"
    return f'max by (namespace, name) ({ready_metric(identity)}{{kind="{kind}", {WHO}}}) == 0'


def _kind_panels(identity: OperatorIdentity, kind: str, controller: str) -> list[Panel]:
    """What every kind's dashboard shows: its objects' readiness and its controller."""
    ready = f'{ready_metric(identity)}{{kind="{kind}", {WHO}}}'
    mine = f'controller="{controller}"'
    return [
        (f"{kind}s Ready / not Ready", "short", [f"sum({ready})", f"count({ready} == 0)"]),
        (
            "Reconciles / s by result",
            "ops",
            [f"sum by (result) (rate(controller_runtime_reconcile_total{{{mine}}}[5m]))"],
        ),
        (
            "Reconcile time (p50, p99)",
            "s",
            [
                f"histogram_quantile({q}, sum by (le) "
                f"(rate(controller_runtime_reconcile_time_seconds_bucket{{{mine}}}[5m])))"
                for q in ("0.5", "0.99")
            ],
        ),
        (
            "Workqueue depth and retries / s",
            "short",
            [
                f'sum(workqueue_depth{{name="{controller}"}})',
                f'sum(rate(workqueue_retries_total{{name="{controller}"}}[5m]))',
            ],
        ),
    ]


def _own_panels(controller: Registration) -> list[Panel]:
    """The panels of the kind's own metrics (its registration's ``dashboard``), if any."""
    return list(controller.dashboard(WHO)) if controller.dashboard else []


def _table(title: str, expr: str) -> dict[str, Any]:
    """A table panel, the whole width at the top: one row per series of an instant query,
    its labels as columns (the time and the value hidden)."""
    return {
        "id": 1,
        "type": "table",
        "title": title,
        "datasource": _SOURCE,
        "gridPos": {"h": _TABLE_HEIGHT, "w": 24, "x": 0, "y": 0},
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {"showHeader": True},
        "targets": [
            {"refId": "A", "expr": expr, "datasource": _SOURCE, "instant": True, "format": "table"}
        ],
        "transformations": [
            {"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}
        ],
    }


def _panel(index: int, top: int, title: str, unit: str, exprs: list[str]) -> dict[str, Any]:
    """A time series panel, two per row from ``top`` down."""
    return {
        "id": index + 2,
        "type": "timeseries",
        "title": title,
        "datasource": _SOURCE,
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": top + 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "datasource": _SOURCE}
            for i, expr in enumerate(exprs)
        ],
    }


def _variables(identity: OperatorIdentity, kind: str | None) -> list[dict[str, Any]]:
    variables: list[dict[str, Any]] = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}
    ]
    if kind is None:
        return variables
    ready = f'{ready_metric(identity)}{{kind="{kind}"'
    for name, query in (
        ("namespace", f"label_values({ready}}}, namespace)"),
        ("name", f'label_values({ready}, namespace=~"$namespace"}}, name)'),
    ):
        variables.append(
            {
                "name": name,
                "type": "query",
                "label": name.capitalize(),
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "query": {"query": query, "refId": name},
                "refresh": 2,
                "includeAll": True,
                "allValue": ".*",
                "multi": True,
                "current": {"text": "All", "value": "$__all"},
            }
        )
    return variables


def _dashboard(
    identity: OperatorIdentity,
    *,
    uid: str,
    title: str,
    kind: str | None,
    table: dict[str, Any] | None,
    panels: list[Panel],
) -> dict[str, Any]:
    """A Grafana dashboard (schema 39) with a Prometheus data source variable: ``table``
    (if any) at the top, then ``panels``."""
    top = _TABLE_HEIGHT if table else 0
    return {
        "uid": uid,
        "title": title,
        "tags": [identity.project, "kubernetes", "operator"] + ([kind] if kind else []),
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": _variables(identity, kind)},
        "panels": [
            *([table] if table else []),
            *(_panel(i, top, *panel) for i, panel in enumerate(panels)),
        ],
    }


def operator_dashboards(
    identity: OperatorIdentity, controllers: Sequence[Registration]
) -> dict[str, dict[str, Any]]:
    """File name → Grafana dashboard: ``<project>-operator.json`` (the operator, its shards
    last), then ``<project>-<controller>.json`` for each controller of a kind of its own
    (its objects not Ready, its readiness and controller, its registration's panels)."""
    project = identity.project
    custom = [c for c in controllers if c.custom]
    table = (
        _table("Objects not Ready (kind, namespace, name)", _not_ready(identity, None))
        if custom
        else None
    )
    panels = _operator_panels(identity, controllers) + _shard_panels(identity)
    out = {
        f"{project}-operator.json": _dashboard(
            identity,
            uid=f"{project}-operator",
            title=f"{project} operator",
            kind=None,
            table=table,
            panels=panels,
        )
    }
    for controller in custom:
        kind = controller.kind.resource.kind
        out[f"{project}-{controller.name}.json"] = _dashboard(
            identity,
            uid=f"{project}-{controller.name}",
            title=f"{project} {kind}",
            kind=kind,
            table=_table(f"{kind}s not Ready (namespace, name)", _not_ready(identity, kind)),
            panels=_kind_panels(identity, kind, controller.name) + _own_panels(controller),
        )
    return out


def dashboard_expressions(dashboards: dict[str, dict[str, Any]]) -> list[str]:
    """Every PromQL expression of ``dashboards`` (panels and tables; the variables' queries
    aside)."""
    return [
        target["expr"]
        for dashboard in dashboards.values()
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def dashboards_config_map(
    name: str, namespace: str, dashboards: Mapping[str, Any], labels: Mapping[str, str]
) -> dict[str, Any]:
    """One ConfigMap of ``dashboards`` (file name → dashboard, as
    :func:`operator_dashboards` gives them) as JSON files, labelled for Grafana's dashboard
    sidecar: what ``config/grafana`` makes, and what a chart's
    ``metrics.grafanaDashboard.enabled`` renders (:func:`appstack.sdk.chart_files` ships the
    files in the chart's ``dashboards/``)."""
    files = {file: json.dumps(board, indent=2) + "\n" for file, board in dashboards.items()}
    return config_map(name, namespace, files, {**labels, SIDECAR_LABEL: "1"})
