"""The Grafana dashboards users watch appstack with: one for the operator itself (its
controllers, workqueues, leader, API requests, CPU and memory: controller-runtime's names,
:mod:`appstack.runtime.metrics`; installed sharded, its shards) and one per registered kind
(:data:`appstack.controllers.registry.ALL`). Each opens with a table of the objects not
Ready now (every kind's on the operator's; the kind's on its own), then the rows every kind
has — its objects' readiness (:mod:`appstack.controllers.kind_metrics`) and its controller
— then the rows of its own metrics, which its registration declares (``dashboard``, in
each kind's ``metrics`` module). Generated into ``deploy/monitoring/dashboards/`` and the Helm chart
(:mod:`appstack.manifests.bundle`, :mod:`appstack.manifests.chart_monitoring`); a unit test
checks that every expression only names metrics the operator exports. Pure."""

from __future__ import annotations

from typing import Any

from appstack.controllers.registry import ALL
from appstack.manifests.rbac import NAME
from appstack.sdk import Panel, Registration

LEADER = f'leader_election_master_status{{name="{NAME}"}}'

OPERATOR: list[Panel] = [
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
    (
        "Objects per kind: Ready / not Ready",
        "short",
        [
            "sum by (kind) (appstack_object_ready)",
            "count by (kind) (appstack_object_ready == 0)",
        ],
    ),
]

#: How long the key unassigned longest has waited, per kind (a sharded install's
#: coordinator: runtime/sharding.py; ``max``: only the coordinating replica has it).
SHARD_WAIT = "appstack_shard_oldest_unassigned_seconds"

#: The sharding panels, last on the operator's dashboard (the first beside the objects per
#: kind, the other two a row): empty unless installed sharded (docs/sharding.md).
SHARDS: list[Panel] = [
    (
        "Shards: keys per shard",
        "short",
        ["max by (resource, shard) (appstack_shard_keys)"],
    ),
    (
        "Shards: keys unassigned, drains in flight, handovers (5m)",
        "short",
        [
            "max by (resource) (appstack_shard_unassigned_keys)",
            "max by (resource) (appstack_shard_drains_in_flight)",
            "sum by (resource, reason) (increase(appstack_shard_handovers_total[5m]))",
        ],
    ),
    (
        "Shards: the oldest unassigned key's wait",
        "s",
        [f"max by (resource) ({SHARD_WAIT})"],
    ),
]

#: The table at the top of the operator's dashboard: which objects are not Ready now, of
#: every kind (``max by``: one row per object when several replicas are scraped).
NOT_READY = "max by (kind, namespace, name) (appstack_object_ready) == 0"

# The template variables of a kind's dashboard, in its selectors (given to each kind's own
# panels: its registration's ``dashboard``).
WHO = 'namespace=~"$namespace", name=~"$name"'


def _not_ready(kind: str) -> str:
    """A kind's dashboard's table: its objects not Ready now (in the chosen namespaces)."""
    return f'max by (namespace, name) (appstack_object_ready{{kind="{kind}", {WHO}}}) == 0'


def _kind_panels(kind: str, controller: str) -> list[Panel]:
    """What every kind's dashboard shows: its objects' readiness and its controller."""
    ready = f'appstack_object_ready{{kind="{kind}", {WHO}}}'
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


_SOURCE = {"type": "prometheus", "uid": "${datasource}"}
_TABLE_HEIGHT = 8


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


def _panel(index: int, title: str, unit: str, exprs: list[str]) -> dict[str, Any]:
    """A time series panel, two per row below the table."""
    source = _SOURCE
    return {
        "id": index + 2,
        "type": "timeseries",
        "title": title,
        "datasource": source,
        "gridPos": {
            "h": 8,
            "w": 12,
            "x": 12 * (index % 2),
            "y": _TABLE_HEIGHT + 8 * (index // 2),
        },
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "datasource": source}
            for i, expr in enumerate(exprs)
        ],
    }


def _variables(kind: str | None) -> list[dict[str, Any]]:
    variables: list[dict[str, Any]] = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}
    ]
    if kind is None:
        return variables
    ready = f'appstack_object_ready{{kind="{kind}"'
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
    uid: str, title: str, kind: str | None, table: dict[str, Any], panels: list[Panel]
) -> dict[str, Any]:
    """A Grafana dashboard (schema 39) with a Prometheus data source variable: ``table``
    at the top, then ``panels``."""
    return {
        "uid": uid,
        "title": title,
        "tags": ["appstack", "kubernetes", "operator"] + ([kind] if kind else []),
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": _variables(kind)},
        "panels": [table, *(_panel(i, *panel) for i, panel in enumerate(panels))],
    }


def dashboards() -> dict[str, dict[str, Any]]:
    """File name → dashboard: ``appstack-operator.json``, then ``appstack-<kind>.json`` for
    every kind the operator serves (:data:`appstack.controllers.registry.ALL`)."""
    table = _table("Objects not Ready (kind, namespace, name)", NOT_READY)
    operator = _dashboard(NAME, "appstack operator", None, table, OPERATOR + SHARDS)
    out = {"appstack-operator.json": operator}
    for controller in ALL:
        kind = controller.kind.resource.kind
        panels = _kind_panels(kind, controller.name) + _own_panels(controller)
        out[f"appstack-{controller.name}.json"] = _dashboard(
            f"appstack-{controller.name}",
            f"appstack {kind}",
            kind,
            _table(f"{kind}s not Ready (namespace, name)", _not_ready(kind)),
            panels,
        )
    return out


def expressions() -> list[str]:
    """Every PromQL expression of every dashboard (panels and tables; the variables'
    queries aside)."""
    tables = [NOT_READY] + [_not_ready(c.kind.resource.kind) for c in ALL]
    return (
        tables
        + [e for _, _, exprs in OPERATOR + SHARDS for e in exprs]
        + [
            e
            for c in ALL
            for _, _, exprs in _kind_panels(c.kind.resource.kind, c.name) + _own_panels(c)
            for e in exprs
        ]
    )
