"""A real Prometheus (built from Go modules by the test bed) scrapes `appstack run` with the
shipped ServiceMonitor's endpoint settings and evaluates the shipped alert rules: no alert
on a healthy operator; the no-leader alert once the operator is gone."""

from __future__ import annotations

import copy
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests import monitoring, rbac
from appstack.runtime.client import Client
from appstack.runtime.resources import SERVICE_ACCOUNT, Resource
from appstack_testbed import prometheus_server
from appstack_testbed.prometheus import Binaries
from appstack_testbed.prometheus_config import alert_names, rule_groups, scrape_config
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import appstack_run, program
from tests.e2e.scrape_installed import shipped_documents

# Serial (on a quiet machine): 1 s scrapes, and no alert may fire while it runs.
pytestmark = pytest.mark.serial

CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
LEADER = 'leader_election_master_status{name="appstack-operator"}'
RECONCILES = 'controller_runtime_reconcile_total{controller="appservice",result="success"}'
# The copy of AppstackNoLeader whose `for:` is shortened for this test (the shipped one's
# is 5 minutes; that it waits is proven by promtool, tests/integration/test_alert_rules.py).
SHORT_FOR = "5s"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rule_files() -> dict[str, dict[str, Any]]:
    """The shipped groups unchanged, plus the no-leader alert again with a short ``for:``
    and a label telling it apart."""
    (rule,) = shipped_documents("prometheus-rule.yaml")
    shipped = rule_groups(rule)
    (no_leader,) = [
        copy.deepcopy(r)
        for g in shipped["groups"]
        for r in g["rules"]
        if r.get("alert") == "AppstackNoLeader"
    ]
    no_leader["for"] = SHORT_FOR
    no_leader["labels"]["e2e"] = "short-for"
    short = {"groups": [{"name": "appstack-e2e-short-for", "rules": [no_leader]}]}
    return {"operator.rules.yaml": shipped, "short-for.rules.yaml": short}


async def _scraper_token(client: Client, namespace: str) -> str:
    """A token of a ServiceAccount bound to the metrics-reader ClusterRole by the shipped
    ClusterRoleBinding (its subject swapped for this test's account)."""
    (binding,) = [
        d for d in shipped_documents("service-monitor.yaml") if d["kind"] == "ClusterRoleBinding"
    ]
    assert binding["roleRef"]["name"] == rbac.metrics_reader()["metadata"]["name"]
    binding["metadata"]["name"] = f"prometheus-{namespace}"
    binding["subjects"] = [{"kind": "ServiceAccount", "name": "prometheus", "namespace": namespace}]
    meta = {"name": "prometheus", "namespace": namespace}
    await client.create(
        SERVICE_ACCOUNT, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    )
    await client.create(CLUSTER_ROLE_BINDING, binding)
    answer = await client.request(
        "POST",
        SERVICE_ACCOUNT.path(namespace, "prometheus", "token"),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(answer["status"]["token"])


def _value(server: prometheus_server.PrometheusServer, expr: str) -> float | None:
    rows = server.query(expr)
    return float(rows[0]["value"][1]) if rows else None


def _seen(server: prometheus_server.PrometheusServer) -> str:
    """What Prometheus saw, for a wait that timed out: targets with their last error,
    alerts, its log."""
    return (
        f"targets: {server.targets()}\nalerts: {server.alerts()}\n"
        f"prometheus log:\n{server.log_tail()}"
    )


async def shipped_scrape(
    client: Client, namespace: str, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """A Prometheus scrape job with the shipped ServiceMonitor's endpoint settings (its
    scraper's token, read by a ServiceAccount of the test's bound to the metrics reader),
    scraping an operator of this machine on a free port instead of the Service's Pods: the
    endpoint, the job and the port. Only the interval is shortened (30 s shipped), so that a
    test takes seconds."""
    (monitor,) = [
        d for d in shipped_documents("service-monitor.yaml") if d["kind"] == "ServiceMonitor"
    ]
    (endpoint,) = monitor["spec"]["endpoints"]
    token = tmp_path / "token"
    token.write_text(await _scraper_token(client, namespace))
    metrics = _free_port()
    job = scrape_config(
        "appstack-operator",
        endpoint,
        [f"127.0.0.1:{metrics}"],
        files={monitoring.TOKEN_FILE: token},
        overrides={"scrape_interval": "1s", "scrape_timeout": "1s"},
    )
    return endpoint, job, metrics


# The operator holds a Lease of its own in the test's namespace (leases_here), not the
# session's shared appstack-system/appstack-operator.
@pytest.mark.usefixtures("leases_here")
async def test_prometheus_scrapes_the_operator_and_alerts_only_once_it_is_gone(
    client: Client,
    namespace: str,
    operator_kubeconfig: Path,
    tmp_path: Path,
    prometheus_binaries: Binaries,  # built before the clock starts
) -> None:
    endpoint, job, metrics = await shipped_scrape(client, namespace, tmp_path)
    argv = appstack_run(
        operator_kubeconfig,
        namespace,
        "--leader-elect",
        f"--leader-election-namespace={namespace}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{_free_port()}",
    )
    started = time.monotonic()  # the times printed at the end count from the operator's start
    try:
        with (
            program(argv, tmp_path / "operator.log") as operator,
            prometheus_server.running(tmp_path / "prometheus", [job], _rule_files()) as server,
        ):
            await client.create(
                APP_SERVICE,
                {
                    "apiVersion": "appstack.dev/v1",
                    "kind": "AppService",
                    "metadata": {"name": "scraped", "namespace": namespace},
                    "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
                },
            )

            def up() -> bool:
                assert operator.proc.poll() is None, operator.tail()
                targets = server.targets()  # empty until discovery has synced
                return [t["health"] for t in targets] == ["up"]

            await eventually(
                up, timeout=60, what="the target up", interval=0.2, diagnose=lambda: _seen(server)
            )
            first_up = time.monotonic() - started
            (target,) = server.targets()  # scraped as the ServiceMonitor says (http or https)
            assert target["scrapeUrl"] == (
                f"{endpoint.get('scheme', 'http')}://127.0.0.1:{metrics}{endpoint['path']}"
            )
            await eventually(
                lambda: _value(server, LEADER) == 1 and (_value(server, RECONCILES) or 0) > 0,
                timeout=90,
                what="the leader gauge and a reconcile in Prometheus",
                interval=0.2,
                diagnose=lambda: _seen(server),
            )
            # What users run, per kind (controllers/kind_metrics.py): the AppService Ready.
            ready = f'appstack_object_ready{{kind="AppService",namespace="{namespace}"}}'
            await eventually(
                lambda: _value(server, ready) == 1,
                timeout=60,
                what="the AppService Ready",
                interval=0.2,
                diagnose=lambda: _seen(server),
            )
            healthy_at = time.time()
            await eventually(
                lambda: server.evaluated_since(healthy_at),
                timeout=30,
                what="a rule evaluation of the healthy operator's metrics",
                interval=0.2,
                diagnose=lambda: _seen(server),
            )
            healthy = time.monotonic() - started
            rules = [r for g in server.rule_groups() for r in g["rules"]]
            assert sorted(r["name"] for r in rules) == sorted(
                [*alert_names(_rule_files()["operator.rules.yaml"]), "AppstackNoLeader"]
            )
            assert all(r["health"] == "ok" for r in rules), rules
            assert server.alerts() == [], server.alerts()  # nothing pending or firing

            operator.proc.send_signal(signal.SIGTERM)  # the operator goes away
            assert operator.proc.wait(30) == 0, operator.tail()
            stopped = time.monotonic()

            def no_leader_alerts() -> dict[str, str]:
                return {
                    a["labels"].get("e2e", "shipped"): a["state"]
                    for a in server.alerts()
                    if a["labels"]["alertname"] == "AppstackNoLeader"
                }

            await eventually(
                lambda: no_leader_alerts() == {"short-for": "firing", "shipped": "pending"},
                timeout=60,
                what="the no-leader alert pending (shipped) and firing (short for:)",
                interval=0.2,
                diagnose=lambda: _seen(server),
            )
            fired_after = time.monotonic() - stopped
            assert {a["labels"]["alertname"] for a in server.alerts()} == {"AppstackNoLeader"}
            (target,) = server.targets()
            assert target["health"] == "down"
            print(
                f"\nfirst scrape up after {first_up:.1f}s, rules evaluated on the leader's "
                f"metrics after {healthy:.1f}s; no-leader firing "
                f"({SHORT_FOR} for:) {fired_after:.1f}s after the operator stopped"
            )
    finally:
        await client.delete(CLUSTER_ROLE_BINDING, f"prometheus-{namespace}")
