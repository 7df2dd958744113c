"""The Grafana dashboards users watch appstack with: the SDK's, as every operator built on
it gets them (:func:`appstack.sdk.operator_dashboards`) — one for the operator itself (its
controllers, workqueues, leader, API requests, CPU and memory; installed sharded, its
shards) and one per registered kind (:data:`appstack.controllers.registry.ALL`), each kind's
with the panels of its own metrics that its registration declares (``dashboard``, in each
kind's ``metrics`` module). Generated into ``deploy/monitoring/dashboards/`` and the Helm
chart (:mod:`appstack.manifests.bundle`, :mod:`appstack.manifests.chart`); a
unit test checks that every expression only names metrics the operator exports. Pure."""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.sdk import dashboard_expressions, operator_dashboards


def dashboards() -> dict[str, dict[str, Any]]:
    """File name → dashboard: ``appstack-operator.json``, then ``appstack-<kind>.json`` for
    every kind the operator serves."""
    return operator_dashboards(IDENTITY, ALL)


def expressions() -> list[str]:
    """Every PromQL expression of every dashboard (panels and tables; the variables'
    queries aside)."""
    return dashboard_expressions(dashboards())
