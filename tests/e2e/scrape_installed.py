"""A real Prometheus scraping an *installed* operator exactly as the shipped
``deploy/monitoring`` says: the ServiceMonitor's Service selector, namespace, port name,
scheme, TLS settings and bearer token, and its ClusterRoleBinding unchanged (its subject,
``monitoring/prometheus-k8s``, is created as a kube-prometheus install has it). Targets are
the ready endpoints of the Services the ServiceMonitor selects, as the Prometheus Operator
discovers them; the host reaches pod addresses on the test bed's real node. Used by
tests/e2e/test_real_node_install.py after ``deploy/install.yaml`` is applied: the operator's
pods are scraped over HTTPS with a token the metrics auth accepts, and the shipped alert
rules evaluate on them with nothing pending or firing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from appstack_testbed import prometheus_server
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.prometheus_config import alert_names, rule_groups, scrape_config
from appstack_testbed.serviceproxy import endpoint_targets
from appstack_testbed.waiting import WaitTimeout, eventually_sync

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
LEADER = 'sum(leader_election_master_status{name="appstack-operator"})'


def shipped_documents(name: str) -> list[dict[str, Any]]:
    """The documents of a shipped ``deploy/monitoring`` file (also read by
    tests/e2e/test_monitoring_scrape.py)."""
    return [d for d in yaml.safe_load_all((MONITORING / name).read_text()) if d]


def _get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", "-o", "json", *args).stdout)


def _targets(cluster: LocalCluster, monitor: dict[str, Any]) -> list[str]:
    """``ip:port`` of every ready endpoint of the Services ``monitor`` selects, on the port
    its (only) endpoint names."""
    spec = monitor["spec"]
    (port_name,) = [e["port"] for e in spec["endpoints"]]
    selector = ",".join(f"{k}={v}" for k, v in spec["selector"]["matchLabels"].items())
    out: list[str] = []
    for namespace in spec["namespaceSelector"]["matchNames"]:
        for service in _get(cluster, "services", "-n", namespace, "-l", selector)["items"]:
            (number,) = [p["port"] for p in service["spec"]["ports"] if p.get("name") == port_name]
            name = service["metadata"]["name"]
            slices = _get(
                cluster,
                "endpointslices",
                "-n",
                namespace,
                "-l",
                f"kubernetes.io/service-name={name}",
            )["items"]
            out += [f"{ip}:{port}" for ip, port in endpoint_targets(service, slices, number)]
    return sorted(out)


def _scraper_token(cluster: LocalCluster, binding: dict[str, Any], directory: Path) -> Path:
    """Create the shipped binding's subject and the binding itself; a token of the subject."""
    (subject,) = binding["subjects"]
    namespace, name = subject["namespace"], subject["name"]
    if cluster.kubectl("get", "namespace", namespace, check=False).returncode != 0:
        cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("-n", namespace, "create", "serviceaccount", name)
    manifest = directory / "binding.yaml"
    manifest.write_text(yaml.safe_dump(binding))
    cluster.kubectl("apply", "-f", str(manifest))
    token = directory / "token"
    token.write_text(cluster.kubectl("-n", namespace, "create", "token", name).stdout.strip())
    return token


def scrape_installed(cluster: LocalCluster, directory: Path, replicas: int) -> str:
    """Scrape the installed operator's ``replicas`` pods with the shipped settings until
    every target is up, one of them leads and the shipped rules have been evaluated on
    that; fail unless every rule is healthy and no alert is pending or firing. Returns a
    line of what was measured."""
    directory.mkdir(parents=True, exist_ok=True)
    docs = shipped_documents("service-monitor.yaml")
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (binding,) = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    (endpoint,) = monitor["spec"]["endpoints"]
    token = _scraper_token(cluster, binding, directory)

    def all_ready() -> list[str]:
        found = _targets(cluster, monitor)
        return found if len(found) == replicas else []

    targets = eventually_sync(
        all_ready,
        timeout=60,
        what=f"{replicas} ready endpoints behind the ServiceMonitor's Service",
    )
    job = scrape_config(
        "appstack-operator",
        endpoint,
        targets,
        files={endpoint["bearerTokenFile"]: token},
        # Only the pace is changed (30 s shipped), so that the test takes seconds.
        overrides={"scrape_interval": "1s", "scrape_timeout": "1s"},
    )
    (rule,) = shipped_documents("prometheus-rule.yaml")
    rules = {"operator.rules.yaml": rule_groups(rule)}
    started = time.monotonic()
    with prometheus_server.running(directory / "prometheus", [job], rules) as server:

        def value(expr: str) -> float | None:
            rows = server.query(expr)
            return float(rows[0]["value"][1]) if rows else None

        try:
            eventually_sync(
                lambda: sorted(t["health"] for t in server.targets()) == ["up"] * replicas,
                timeout=60,
                what="every operator pod scraped (up)",
            )
            up = time.monotonic() - started
            eventually_sync(lambda: value(LEADER) == 1, timeout=60, what="one leader in Prometheus")
            healthy_at = time.time()
            eventually_sync(
                lambda: server.evaluated_since(healthy_at),
                timeout=30,
                what="a rule evaluation after the install was seen healthy",
            )
        except WaitTimeout as timed_out:
            raise AssertionError(
                f"{timed_out}\ntargets: {server.targets()}\nprometheus log:\n{server.log_tail()}"
            ) from timed_out
        for target in server.targets():
            assert target["scrapeUrl"].startswith(f"{endpoint['scheme']}://"), target
        evaluated = [r for g in server.rule_groups() for r in g["rules"]]
        assert sorted(r["name"] for r in evaluated) == sorted(
            alert_names(rules["operator.rules.yaml"])
        )
        assert all(r["health"] == "ok" for r in evaluated), evaluated
        assert server.alerts() == [], server.alerts()  # nothing pending or firing
    return f"installed operator: {replicas} pods scraped over {endpoint['scheme']} after {up:.1f}s"
