"""The Grafana dashboards (one for the operator, one per kind) and the alerts only query
metrics the operator exports (its registry's families and the per-kind collector's), every
kind the operator serves has a dashboard filtered to that kind and its controller, and
every per-kind metric is shown on its kind's dashboard."""

from __future__ import annotations

import re
from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.kind_metrics import FAMILIES
from appstack.controllers.registry import ALL
from appstack.manifests import dashboard, grafana
from tests.support.exported_metrics import exported_samples

OURS = re.compile(
    r"\b((?:controller_runtime|workqueue|leader_election|rest_client|process|python|appstack)_\w+)"
)


def _exported_samples() -> set[str]:
    return exported_samples(IDENTITY.metric_prefix) | set(FAMILIES)


def _queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL text of a dashboard: the panels' targets and the variables' queries."""
    targets = [t["expr"] for panel in board["panels"] for t in panel["targets"]]
    variables = [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    return targets + variables


def test_every_query_names_only_metrics_the_operator_exports() -> None:
    exported = _exported_samples()
    boards = grafana.dashboards()
    queries = [q for board in boards.values() for q in _queries(board)]
    assert set(dashboard.expressions()) >= {q for q in queries if "label_values" not in q}
    for expr in queries + dashboard.expressions():
        names = OURS.findall(expr)
        assert names, expr
        assert set(names) <= exported, (expr, set(names) - exported)


def test_an_unknown_metric_name_is_caught() -> None:
    assert not set(OURS.findall("sum(appstack_object_redy)")) <= _exported_samples()


def test_one_dashboard_per_kind_and_one_for_the_operator() -> None:
    boards = grafana.dashboards()
    assert sorted(boards) == sorted(
        ["appstack-operator.json"] + [f"appstack-{c.name}.json" for c in ALL]
    )
    assert {c.kind.resource.kind for c in ALL} == {
        "AppService",
        "AppStack",
        "CronTab",
        "EtcdCluster",
        "MongoDBCommunity",
    }
    assert len({b["uid"] for b in boards.values()}) == len(boards)
    for board in boards.values():
        assert len({p["id"] for p in board["panels"]}) == len(board["panels"])


def test_a_kind_dashboard_shows_that_kind_its_controller_and_its_own_metrics() -> None:
    boards = grafana.dashboards()
    shown: set[str] = set()
    for controller in ALL:
        kind, name = controller.kind.resource.kind, controller.name
        queries = _queries(boards[f"appstack-{name}.json"])
        for query in queries:
            if "appstack_object_ready" in query:
                assert f'kind="{kind}"' in query, query
            if re.search(r"controller_runtime_\w+\{", query):
                assert f'controller="{name}"' in query, query
            if "workqueue_" in query:
                assert f'name="{name}"' in query, query
            for metric in OURS.findall(query):
                if metric.startswith("appstack_") and metric != "appstack_object_ready":
                    assert metric.startswith(f"appstack_{name}_"), (kind, metric)
                    shown.add(metric)
    assert shown == set(FAMILIES) - {"appstack_object_ready"}


def test_the_alerts() -> None:
    alerts = {r["alert"] for r in dashboard.prometheus_rule()["spec"]["groups"][0]["rules"]}
    assert alerts == {
        "AppstackReconcileErrors",
        "AppstackWorkqueueStuck",
        "AppstackNoLeader",
        "AppstackObjectNotReady",
        "AppstackEtcdQuorumLost",
        "AppstackEtcdNoSpace",
        "AppstackEtcdNearQuota",
        "AppstackEtcdBackupOverdue",
        "AppstackCronTabFailing",
        "AppstackShardKeysUnassigned",
    }


def test_every_dashboard_opens_with_a_table_of_the_objects_not_ready_now() -> None:
    """Issue #51: which objects are not Ready, at a glance — an instant query shown as a
    table (kind, namespace, name), not a graph of series to hover over."""
    boards = grafana.dashboards()
    for file, board in boards.items():
        table = board["panels"][0]
        assert table["type"] == "table", file
        assert table["gridPos"] == {"h": 8, "w": 24, "x": 0, "y": 0}
        (target,) = table["targets"]
        assert target["instant"] is True
        assert target["format"] == "table"
        assert "(appstack_object_ready" in target["expr"]
        assert target["expr"].endswith("== 0")
        assert all(p["gridPos"]["y"] >= 8 for p in board["panels"][1:]), file
    operator = boards["appstack-operator.json"]["panels"][0]["targets"][0]["expr"]
    assert operator.startswith("max by (kind, namespace, name) (")
    for controller in ALL:
        kind = controller.kind.resource.kind
        expr = boards[f"appstack-{controller.name}.json"]["panels"][0]["targets"][0]["expr"]
        assert expr.startswith("max by (namespace, name) (")
        assert f'kind="{kind}"' in expr
        assert 'namespace=~"$namespace"' in expr
