"""Issue #47's last step, kept measured: the SDK's chart generator
(:func:`appstack.sdk.chart_files`, what ``make helm`` writes a scaffolded operator's chart
with) given appstack's own install — ``install()``'s objects with deploy/monitoring/'s,
the sharded install beside it, appstack's own flags — renders, as release ``appstack``, the
objects ``charts/appstack`` renders (its CRDs included), value set by value set, with the
real ``helm``; but for what the switch to one chart still has to settle (docs/design.md,
"How far that is"): the operator pods' selector and labels, the objects' labels, the order
of the operator's arguments and those passed at their defaults, ``helm test``'s Pod, the
reader binding's name. A change to either chart that makes it render differently fails
here: the two cannot drift apart meanwhile."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.api.flags import own_chart_command
from appstack.api.identity import IDENTITY
from appstack.manifests import dashboard, monitoring
from appstack.manifests.bundle import dashboard_files
from appstack.manifests.crds import LABELS
from appstack.manifests.install import InstallOptions, install
from appstack.sdk import chart_files, chart_flags
from appstack.sdk.kit.dashboards import SIDECAR_LABEL
from tests.unit.manifests.helm_chart import CHART, KUBE, NS, helm_binary, run_helm

Obj = dict[str, Any]
Key = tuple[str, str, str]
#: The operator's arguments appstack's chart passes at their defaults (the SDK's only when
#: they differ from them), and the Lease's name, the default's for release ``appstack``.
AT_DEFAULTS = frozenset(
    {
        "--sync-period=10m",
        "--log-level=info",
        "--concurrency=32",
        f"--leader-election-id={IDENTITY.lease_name}",
    }
)
SELECTED = ("Deployment", "PodDisruptionBudget", "Service", "ServiceMonitor")
VALUE_SETS = (
    (),
    ("--set=enableAllNamespaces=true",),
    (
        "--set=allowExternalIPs=true",
        "--set=externalDenyCIDRs={10.0.0.0/8,10.96.0.0/12}",
        "--set=allowExternalClusterNames=true",
    ),
    ("--set=leaderElection.enabled=false", "--set=replicas=1"),
    ("--set=logLevel=debug", "--set=concurrency=8", "--set=syncPeriod=5m"),
    (
        "--set=nodeSelector.pool=system",
        "--set=tolerations[0].key=dedicated",
        "--set=tolerations[0].operator=Exists",
        "--set=priorityClassName=system-cluster-critical",
        "--set=podAnnotations.a=b",
        "--set=imagePullSecrets[0].name=regcred",
        "--set=resources.limits.memory=1Gi",
    ),
    ("--set=serviceAccount.create=false", "--set=serviceAccount.name=ops"),
    ("--set=sharding.enabled=true", "--set=replicas=3"),
    ("--set=sharding.enabled=true", "--set=autoscaling.enabled=true"),
    (
        "--set=extraArgs={--x}",
        "--set=extraEnv[0].name=A",
        "--set=extraEnv[0].value=b",
        "--set=gracefulShutdownTimeout=40s",
        "--set=terminationGracePeriodSeconds=60",
    ),
    ("--set=image.tag=v2", "--set=image.pullPolicy=Always"),
    ("--set=fullnameOverride=ops",),
    ("--set=watchNamespaces={a,b}",),
    ("--set=watchNamespaces={a,appstack-system}", "--set=sharding.enabled=true"),
    (
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.serviceMonitor.interval=15s",
        "--set=metrics.serviceMonitor.labels.release=kps",
        "--set=metrics.prometheusRule.enabled=true",
        "--set=metrics.prometheusRule.labels.release=kps",
        "--set=metrics.grafanaDashboard.enabled=true",
    ),
    (
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.certSecret=metrics-tls",
    ),
    ("--set=metrics.serviceMonitor.enabled=true", "--set=metrics.secure=false"),
    ("--set=metrics.enabled=false",),
)
#: Named otherwise by the two charts (the same binding of the metrics reader to Prometheus's
#: ServiceAccount): appstack's after the install's reader, the SDK's after the release.
READER_BINDINGS = {
    ("ClusterRoleBinding", f"appstack-metrics-reader-{NS}", ""),
    ("ClusterRoleBinding", "appstack-metrics-reader-prometheus", ""),
}


def _monitoring() -> list[dict[str, Any]]:
    """deploy/monitoring/'s ServiceMonitor and PrometheusRule, and the ConfigMap of the
    dashboards config/grafana makes of them (labelled for Grafana's sidecar)."""
    dashboards = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "appstack-operator-dashboard",
            "namespace": NS,
            "labels": {**LABELS, SIDECAR_LABEL: "1"},
        },
        "data": dashboard_files(),
    }
    return [monitoring.service_monitor(), dashboard.prometheus_rule(), dashboards]


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(helm, the SDK's chart of appstack's install, written to a directory)."""
    helm = helm_binary()
    files = chart_files(
        [*install().objects(), *_monitoring()],
        IDENTITY,
        toggled=[*install(InstallOptions(shards=2)).objects(), *_monitoring()],
        flags=chart_flags(own_chart_command()),
    )
    root = tmp_path_factory.mktemp("sdk-chart")
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return helm, root


def _rendered(helm: Path, chart: Path, *values: str) -> dict[Key, Obj]:
    proc = run_helm(
        helm, "template", "appstack", str(chart), f"--namespace={NS}", "--skip-tests",
        "--include-crds", KUBE, *values,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    objects = [o for o in yaml.safe_load_all(proc.stdout) if o]
    return {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", "")): o for o in objects
    }


def _alike(obj: Obj) -> Obj:
    """``obj`` without what the two charts may still do differently."""
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("labels", None)
    obj["metadata"].pop("annotations", None)
    spec = obj.get("spec") or {}
    if obj["kind"] in SELECTED:
        spec.pop("selector", None)
    if "template" in spec:
        spec["template"]["metadata"].pop("labels", None)
        pod = spec["template"]["spec"]
        terms = (
            pod.get("affinity", {})
            .get("podAntiAffinity", {})
            .get("preferredDuringSchedulingIgnoredDuringExecution", [])
        )
        for term in terms:
            term["podAffinityTerm"].pop("labelSelector", None)
        for container in pod["containers"]:
            args = container.get("args") or []
            container["args"] = sorted(a for a in args if a not in AT_DEFAULTS)
    return obj


@pytest.mark.parametrize("values", VALUE_SETS, ids=lambda v: " ".join(v) or "defaults")
def test_the_sdks_chart_of_appstacks_install_renders_appstacks_chart(
    charts: tuple[Path, Path], values: tuple[str, ...]
) -> None:
    helm, sdk_chart = charts
    appstacks = _rendered(helm, CHART, *values)
    sdks = _rendered(helm, sdk_chart, *values)
    bindings = [o for k, o in (*appstacks.items(), *sdks.items()) if k in READER_BINDINGS]
    if bindings:  # one in each, binding the same role to the same account
        first, second = (_alike(b) for b in bindings)
        first["metadata"].pop("name"), second["metadata"].pop("name")
        assert first == second
    assert sorted(set(appstacks) - READER_BINDINGS) == sorted(set(sdks) - READER_BINDINGS)
    for key, obj in appstacks.items():
        if key not in READER_BINDINGS:
            assert _alike(obj) == _alike(sdks[key]), key


def test_helm_tests_pod_is_there_and_no_selector_of_the_operators_pods_takes_it(
    charts: tuple[Path, Path],
) -> None:
    """appstack's pods carry no label beyond the chart's selector: helm test's Pod (before:
    left out of such a chart) is labelled ``<name>-test``, which neither the Deployment's
    selector (its ReplicaSet would adopt the Pod) nor the metrics Service's matches."""
    helm, sdk_chart = charts
    proc = run_helm(
        helm, "template", "appstack", str(sdk_chart), f"--namespace={NS}", KUBE
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    objects = [o for o in yaml.safe_load_all(proc.stdout) if o]
    (pod,) = [o for o in objects if o["kind"] == "Pod"]
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "appstack-test"
    assert labels["app.kubernetes.io/instance"] == "appstack"
    selectors = [
        o["spec"]["selector"].get("matchLabels", o["spec"]["selector"])
        for o in objects
        if o["kind"] in ("Deployment", "Service")
    ]
    assert selectors
    assert not [s for s in selectors if s.items() <= labels.items()]
