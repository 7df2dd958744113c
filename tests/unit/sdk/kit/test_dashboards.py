"""The Grafana dashboards every operator built on the SDK gets (issue #47: what a kind
declares on its registration, its dashboard panels and gauges, read by SDK code for any
operator): the guestbook operator's — not appstack — has one dashboard for the operator and
one for its kind; every query names only metrics that operator exports (the runtime's,
a sharded replica's, its readiness gauge and the gauges its registration declares), and
selects only its own series (its controllers, its Lease, its prefix); its kind's
dashboard shows the panels its registration declares; ``make manifests`` writes them to
config/grafana with a kustomization that makes them one ConfigMap for Grafana's sidecar."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml

from appstack.runtime.resources import SECRET
from appstack.sdk import (
    Gauges,
    ObjectReconciler,
    Registration,
    config,
    dashboard_expressions,
    metric_families,
    operator_dashboards,
)
from tests.support.exported_metrics import exported_samples
from tests.support.guestbook import IDENTITY, PROJECT, GuestbookReconciler

GAUGES = Gauges(
    families={"guestbook_entries": "Entries in a guestbook."},
    samples=lambda obj, labels: [("guestbook_entries", labels, 1.0)],
)
REGISTRATION = Registration(
    "guestbook",
    GuestbookReconciler,
    gauges=GAUGES,
    dashboard=lambda who: [("Entries", "short", [f"sum(guestbook_entries{{{who}}})"])],
)
METRIC = re.compile(
    r"\b((?:controller_runtime|workqueue|leader_election|rest_client|process|guestbook)_\w+)"
)


def _exported() -> set[str]:
    return exported_samples(IDENTITY.metric_prefix) | set(metric_families([REGISTRATION], IDENTITY))


def _boards() -> dict[str, dict[str, Any]]:
    return operator_dashboards(IDENTITY, [REGISTRATION])


def test_one_for_the_operator_and_one_per_kind_each_query_an_exported_metric() -> None:
    boards = _boards()
    assert sorted(boards) == ["guestbook-guestbook.json", "guestbook-operator.json"]
    assert {b["uid"] for b in boards.values()} == {"guestbook-operator", "guestbook-guestbook"}
    exported = _exported()
    expressions = dashboard_expressions(boards)
    assert expressions
    for expr in expressions:
        names = set(METRIC.findall(expr))
        assert names, expr
        assert names <= exported, (expr, names - exported)
    assert "appstack_object_ready" not in " ".join(expressions)


def test_its_series_are_its_own_and_its_kind_shows_its_declared_panels() -> None:
    boards = _boards()
    operator = dashboard_expressions({"o": boards["guestbook-operator.json"]})
    reconciles = [e for e in operator if "controller_runtime_reconcile_total" in e]
    assert reconciles == [
        "sum by (controller, result) "
        '(rate(controller_runtime_reconcile_total{controller=~"guestbook"}[5m]))'
    ]
    assert 'leader_election_master_status{name="guestbook-operator"}' in operator
    assert any("guestbook_shard_keys" in e for e in operator)
    kind = boards["guestbook-guestbook.json"]
    titles = [p["title"] for p in kind["panels"]]
    assert titles[0] == "Guestbooks not Ready (namespace, name)"
    assert titles[-1] == "Entries"
    assert kind["panels"][-1]["targets"][0]["expr"] == (
        'sum(guestbook_entries{namespace=~"$namespace", name=~"$name"})'
    )
    variables = [v["name"] for v in kind["templating"]["list"]]
    assert variables == ["datasource", "namespace", "name"]


class SecretWatcher(ObjectReconciler):
    """A controller of a kind the operator does not declare (Secrets)."""

    primary = SECRET


def test_an_operator_of_no_kind_of_its_own_has_no_readiness_table() -> None:
    boards = operator_dashboards(IDENTITY, [Registration("secrets", SecretWatcher)])
    assert sorted(boards) == ["guestbook-operator.json"]
    board = boards["guestbook-operator.json"]
    assert board["panels"][0]["type"] == "timeseries"
    assert board["panels"][0]["gridPos"]["y"] == 0
    assert not [e for e in dashboard_expressions(boards) if "object_ready" in e]


def test_make_manifests_writes_them_as_a_configmap_for_grafanas_sidecar() -> None:
    project = dataclasses.replace(PROJECT, controllers=[REGISTRATION])
    files = config.config_files(project)
    grafana = sorted(p for p in files if p.startswith("grafana/"))
    assert grafana == [
        "grafana/guestbook-guestbook.json",
        "grafana/guestbook-operator.json",
        "grafana/kustomization.yaml",
    ]
    kustomization = yaml.safe_load(files["grafana/kustomization.yaml"])
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == ["guestbook-operator.json", "guestbook-guestbook.json"]
    assert generator["options"]["labels"]["grafana_dashboard"] == "1"
    assert generator["options"]["disableNameSuffixHash"] is True
    assert yaml.safe_load(files["grafana/guestbook-guestbook.json"])["panels"][-1]["title"] == (
        "Entries"
    )
