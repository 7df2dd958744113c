"""A scaffolded project's Helm chart (``appstack generate chart``, ``make helm``; the SDK's
:func:`appstack.sdk.chart_files`) with the real ``helm`` and ``kubectl kustomize`` (the test
bed's binaries, offline; skipped where the test bed is not built, helm built if missing):
``helm lint --strict`` passes; two releases in one namespace collide on no object and each
selects only its own pods (the bug class of issue #51: selectors and anti-affinity keyed to
the release); release ``<project>`` keeps every name of kustomize's install; the values
change what they say (the pods' grace period and the operator's graceful shutdown timeout
below it, checked at render, included); a project that serves webhooks gets its Service, flag and
configurations following the release; an edited chart file is kept by the next generation."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.scaffold import commands, manifests
from appstack.sdk import (
    ChartError,
    OperatorIdentity,
    chart_files,
    operator_command,
    process_rules,
    within_namespaces,
)
from appstack.sdk.config import operator_rules
from appstack_testbed.versions import Toolchain
from tests.unit.manifests.helm_chart import KUBE, helm_binary, run_helm

NS = "team-a"
FLAGS = ("--log-level", "--concurrency", "--sync-period")
IDENTITY = OperatorIdentity(project="guestbook", domain="example.com")
Obj = dict[str, Any]
WEBHOOK = """

def _check(review: WebhookReview):
    return allow()


CONTROLLER = replace(CONTROLLER, webhooks=(Validator(_check),))
"""


@pytest.fixture(scope="module")
def tools() -> tuple[Path, Path]:
    """(helm, kubectl): the test bed's, helm built from the module proxy if missing (skipped
    where the test bed is not built: make test-unit on a bare machine)."""
    helm = helm_binary()
    return helm, Toolchain().binary("kubectl")


def _guestbook(directory: Path, webhook: bool = False) -> Path:
    commands.create_api(directory, group="webapp", version="v1", kind="Guestbook")
    if webhook:
        controller = directory / "src/guestbook/controllers/guestbook.py"
        original = controller.read_text().replace("from __future__ import annotations\n", "")
        controller.write_text(
            "from dataclasses import replace\n\nfrom appstack.runtime import allow\n"
            "from appstack.sdk import Validator, WebhookReview\n" + original + WEBHOOK
        )
    commands.generate_manifests(directory)
    return directory


@pytest.fixture
def chart(project: Path, tools: tuple[Path, Path]) -> Path:
    """The guestbook project's chart, as make helm writes it."""
    _guestbook(project)
    commands.generate_chart(project, "registry.example/guestbook:v1", str(tools[1]))
    return project / "dist" / "chart"


def template(helm: Path, chart: Path, release: str, *values: str, namespace: str = NS) -> list[Obj]:
    proc = run_helm(
        helm, "template", release, str(chart), f"--namespace={namespace}", KUBE, *values
    )
    assert proc.returncode == 0, proc.stderr
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


def refused(helm: Path, chart: Path, *values: str) -> str:
    proc = run_helm(helm, "template", "a", str(chart), f"--namespace={NS}", KUBE, *values)
    assert proc.returncode != 0, f"{values} rendered"
    return proc.stderr


def one(objects: list[Obj], kind: str, contains: str = "") -> Obj:
    (found,) = [o for o in objects if o["kind"] == kind and contains in o["metadata"]["name"]]
    return found


def keys(objects: list[Obj]) -> set[tuple[str, str, str]]:
    return {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", "")) for o in objects}


def manager(objects: list[Obj]) -> tuple[Obj, Obj]:
    deployment = one(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return deployment, container


def _hook(obj: Obj) -> bool:
    """``helm test``'s Pod: the chart's, not the install's."""
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def _off(obj: Obj) -> bool:
    """An object of the install the chart renders only when a value turns it on (the
    release's namespace is Helm's): the monitoring — the ServiceMonitor, the alerts, the
    dashboards."""
    dashboards = (obj["metadata"].get("labels") or {}).get("grafana_dashboard") == "1"
    return obj["kind"] in {"Namespace", "ServiceMonitor", "PrometheusRule"} or dashboards


def test_the_chart_lints_and_two_releases_keep_to_their_own_pods(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    helm = tools[0]
    for values in ((), ("--set=metrics.serviceMonitor.enabled=true",)):
        proc = run_helm(helm, "lint", "--strict", str(chart), KUBE, *values)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # each template file named after its object as config/ names it, not a placeholder
    names = [p.name for p in (chart / "templates").rglob("*.yaml")]
    assert "controller-manager.yaml" in names
    assert not [name for name in names if "@" in name]
    monitor = "--set=metrics.serviceMonitor.enabled=true"
    first, second = template(helm, chart, "a", monitor), template(helm, chart, "b", monitor)
    crds = {o["metadata"]["name"] for o in first if o["kind"] == "CustomResourceDefinition"}
    shared = keys(first) & keys(second)
    assert {name for _, name, _ in shared} == crds  # cluster-wide by nature: crd.enable=false
    for release, objects in (("a", first), ("b", second)):
        deployment, container = manager(objects)
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector["app.kubernetes.io/instance"] == release
        pod = deployment["spec"]["template"]
        assert selector.items() <= pod["metadata"]["labels"].items()
        # the pods carry Kubernetes' recommended labels as every object of the release does
        recommended = deployment["metadata"]["labels"]
        assert recommended.items() <= pod["metadata"]["labels"].items()
        assert {"app.kubernetes.io/version", "helm.sh/chart"} <= recommended.keys()
        (term,) = pod["spec"]["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector
        assert one(objects, "Service")["spec"]["selector"] == selector
        assert one(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"] == selector
        account = pod["spec"]["serviceAccountName"]
        assert account == f"{release}-guestbook-controller-manager"
        bindings = [o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]
        for binding in bindings:
            scraper = binding["metadata"]["name"].endswith("-metrics-reader-prometheus")
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
                if scraper
                else {"kind": "ServiceAccount", "name": account, "namespace": NS}
            ]
            assert binding["roleRef"]["name"] in {o["metadata"]["name"] for o in objects}
        for policy in [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]:
            assert policy["spec"]["policyName"] == policy["metadata"]["name"]
            assert policy["metadata"]["name"].startswith(f"{release}-guestbook-")
        lease = one(objects, "Role", "leader-election")["rules"][0]["resourceNames"]
        assert lease == [f"{release}-guestbook-operator"]
        assert f"--leader-election-id={release}-guestbook-operator" in container["args"]
        assert container["image"] == "registry.example/guestbook:v1"


def test_release_named_after_the_project_keeps_kustomizes_names(
    chart: Path, project: Path, tools: tuple[Path, Path]
) -> None:
    installed = manifests.install_objects(project, str(tools[1]))
    objects = template(tools[0], chart, "guestbook", namespace="guestbook-system")
    expected = {(o["kind"], o["metadata"]["name"]) for o in installed if not _off(o)}
    assert {(o["kind"], o["metadata"]["name"]) for o in objects if not _hook(o)} == expected
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] == "Deployment"} == {
        "guestbook-system"
    }


def test_the_values_change_what_they_say(chart: Path, tools: tuple[Path, Path]) -> None:
    helm = tools[0]
    digest = "sha256:" + "a" * 64
    objects = template(
        helm,
        chart,
        "a",
        "--set=replicas=3",
        f"--set=image.digest={digest}",
        "--set=image.pullPolicy=Always",
        "--set=nodeSelector.disk=ssd",
        "--set=tolerations[0].key=dedicated,tolerations[0].operator=Exists",
        "--set=affinity.nodeAffinity.x=y",
        "--set=podSecurityContext.fsGroup=2000",
        "--set=securityContext.readOnlyRootFilesystem=false",
        "--set=resources.limits.memory=1Gi",
        "--set=podLabels.team=x,podAnnotations.note=y",
        "--set=extraArgs[0]=--log-level=debug",
        "--set=extraEnv[0].name=MINE,extraEnv[0].value=one",
        "--set=serviceAccount.annotations.iam=role",
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.serviceMonitor.labels.release=prom",
        "--set=crd.enable=false",
        "--set=priorityClassName=operators",
        "--set=topologySpreadConstraints[0].maxSkew=1,"
        "topologySpreadConstraints[0].topologyKey=zone,"
        "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
    )
    deployment, container = manager(objects)
    assert deployment["spec"]["template"]["spec"]["priorityClassName"] == "operators"
    assert deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
    ]
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 3
    assert container["image"] == f"registry.example/guestbook@{digest}"
    assert container["imagePullPolicy"] == "Always"
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert pod["spec"]["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert pod["spec"]["affinity"] == {"nodeAffinity": {"x": "y"}}
    assert pod["spec"]["securityContext"]["fsGroup"] == 2000
    assert container["securityContext"]["readOnlyRootFilesystem"] is False
    assert container["resources"]["limits"]["memory"] == "1Gi"
    assert pod["metadata"]["labels"]["team"] == "x"
    assert pod["metadata"]["annotations"] == {"note": "y"}
    assert container["args"][-1] == "--log-level=debug"
    assert container["env"][-1] == {"name": "MINE", "value": "one"}
    assert one(objects, "ServiceAccount")["metadata"]["annotations"] == {"iam": "role"}
    assert one(objects, "ServiceMonitor")["metadata"]["labels"]["release"] == "prom"
    assert not [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    crd = one(template(helm, chart, "a"), "CustomResourceDefinition")
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    plain = template(helm, chart, "a", "--set=leaderElection.enabled=false", "--set=replicas=1")
    args = manager(plain)[1]["args"]
    assert not [a for a in args if a.startswith("--leader-elect")]
    assert "every replica would reconcile" in refused(
        helm, chart, "--set=leaderElection.enabled=false", "--set=replicas=2"
    )
    off = template(helm, chart, "a", "--set=metrics.enabled=false")
    assert not [o for o in off if o["kind"] == "Service"]
    assert "replicas" in refused(helm, chart, "--set=replicas=many")
    assert "imagePullPolicy" in refused(helm, chart, "--set=imagePullPolicy=Always")  # misspelt
    assert "pullPolicy" in refused(helm, chart, "--set=image.pullPolicy=Sometimes")


def test_the_operators_own_flags_are_values_passed_when_not_its_defaults(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what appstack's chart has as values, every SDK chart has): ``logLevel``,
    ``concurrency`` and ``syncPeriod`` default to the install's setting — the operator's
    own, or what the user wrote in config/manager, taken out of the arguments — and are
    passed only when they differ from the operator's defaults (the default render is the
    install's); the project's operator reads what was passed; a bad one is refused."""
    helm, kubectl = tools
    _guestbook(project)
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert (values["logLevel"], values["concurrency"], values["syncPeriod"]) == (
        "info",
        32,
        DEFAULT_SYNC_PERIOD,
    )
    plain = manager(template(helm, chart, "a"))[1]["args"]
    assert not [a for a in plain if a.split("=")[0] in FLAGS]
    args = manager(
        template(
            helm, chart, "a", "--set=logLevel=debug", "--set=concurrency=8", "--set=syncPeriod=5m"
        )
    )[1]["args"]
    assert [a for a in args if a.split("=")[0] in FLAGS] == [
        "--log-level=debug",
        "--concurrency=8",
        "--sync-period=5m",
    ]
    with operator_command(list, IDENTITY).make_context("guestbook", list(args)) as ctx:
        read = (ctx.params["log_level"], ctx.params["concurrency"], ctx.params["sync_period"])
    assert read == ("debug", 8, "5m")
    for bad in ("logLevel=loud", "concurrency=0", "syncPeriod=often"):
        assert bad.split("=")[0] in refused(helm, chart, f"--set={bad}")
    # the user's own setting in config/manager is the chart's default
    manager_file = project / "config/manager/manager.yaml"
    manager_file.write_text(
        manager_file.read_text().replace(
            "- --log-format=json\n", "- --log-format=json\n        - --concurrency=4\n"
        )
    )
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    assert yaml.safe_load((chart / "values.yaml").read_text())["concurrency"] == 4
    args = manager(template(helm, chart, "a"))[1]["args"]
    assert [a for a in args if a.startswith("--concurrency")] == ["--concurrency=4"]


def test_the_pods_labels_are_the_charts_with_common_and_pod_labels(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    """The operator's pods carry their selector's labels, Kubernetes' recommended ones (as
    every object of the release: ``kubectl get pods -l app.kubernetes.io/managed-by=Helm``
    finds them), ``commonLabels`` and ``podLabels`` over them — and helm test's Pod none of
    the selector's."""
    objects = template(
        tools[0], chart, "a", "--set=commonLabels.team=payments", "--set=podLabels.tier=ops"
    )
    deployment, _ = manager(objects)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels == {
        **deployment["spec"]["selector"]["matchLabels"],
        "app.kubernetes.io/name": "guestbook",
        "app.kubernetes.io/instance": "a",
        "app.kubernetes.io/version": labels["app.kubernetes.io/version"],
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "guestbook",
        "helm.sh/chart": labels["helm.sh/chart"],
        "team": "payments",
        "tier": "ops",
    }
    assert labels["helm.sh/chart"].startswith("guestbook-")
    (test_pod,) = [o for o in objects if o["kind"] == "Pod"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert not selector.items() <= test_pod["metadata"]["labels"].items()


def test_the_pod_is_extended_as_the_values_say(chart: Path, tools: tuple[Path, Path]) -> None:
    """Issue #47 (what appstack's chart has, every SDK chart has): ``extraVolumes`` and
    ``extraVolumeMounts``, the probes' timing merged over the install's, and
    ``revisionHistoryLimit``; none of them by default (the install's Deployment)."""
    helm = tools[0]
    default_deployment, default_container = manager(template(helm, chart, "a"))
    default_pod = default_deployment["spec"]["template"]["spec"]
    assert "priorityClassName" not in default_pod
    assert "topologySpreadConstraints" not in default_pod
    assert "volumes" not in default_pod
    assert "volumeMounts" not in default_container
    assert "revisionHistoryLimit" not in default_deployment["spec"]
    assert default_container["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "health"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }
    extended, extended_container = manager(
        template(
            helm,
            chart,
            "a",
            "--set=extraVolumes[0].name=certs,extraVolumes[0].secret.secretName=ca",
            "--set=extraVolumeMounts[0].name=certs,extraVolumeMounts[0].mountPath=/certs",
            "--set=livenessProbe.timeoutSeconds=3",
            "--set=readinessProbe.periodSeconds=7",
            "--set=revisionHistoryLimit=2",
        )
    )
    assert extended["spec"]["revisionHistoryLimit"] == 2
    assert extended["spec"]["template"]["spec"]["volumes"] == [
        {"name": "certs", "secret": {"secretName": "ca"}}
    ]
    assert extended_container["volumeMounts"] == [{"name": "certs", "mountPath": "/certs"}]
    assert extended_container["livenessProbe"]["timeoutSeconds"] == 3
    assert extended_container["livenessProbe"]["periodSeconds"] == 10  # merged over
    assert extended_container["readinessProbe"]["periodSeconds"] == 7
    assert "livenessProbe" in refused(helm, chart, "--set=livenessProbe.delay=3")


def test_the_service_monitor_binds_prometheus_to_the_metrics_reader(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    """The ServiceMonitor's scrapes carry Prometheus's token, which /metrics lets in only
    with the metrics reader role: the chart binds it to
    ``metrics.serviceMonitor.prometheusServiceAccount`` (kube-prometheus's by default), with
    the ServiceMonitor; an empty name binds nothing."""
    helm = tools[0]
    # the ServiceMonitor's token may read /metrics: the reader role bound to Prometheus
    objects = template(helm, chart, "a", "--set=metrics.serviceMonitor.enabled=true")
    reader = one(objects, "ClusterRoleBinding", "metrics-reader-prometheus")
    assert reader["roleRef"]["name"] == "a-guestbook-metrics-reader"
    assert reader["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
    ]
    assert one(objects, "ClusterRole", "metrics-reader")["metadata"]["name"] == (
        "a-guestbook-metrics-reader"
    )
    unbound = template(
        helm,
        chart,
        "a",
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.serviceMonitor.prometheusServiceAccount.name=",
    )
    assert not [o for o in unbound if "metrics-reader-prometheus" in o["metadata"]["name"]]
    assert not [
        o
        for o in template(helm, chart, "a")
        if "metrics-reader-prometheus" in o["metadata"]["name"]
    ]


def test_the_operators_lease_requests_get_the_leader_election_priority(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Every SDK operator's install has the FlowSchema appstack's has (API Priority and
    Fairness: its Lease requests at the cluster's ``leader-election`` level, so renewals do
    not queue behind a busy server's writes), generated in config/rbac — which an older
    project's next ``make manifests`` writes too — with config/default's prefix and
    namespace followed into its ServiceAccount subject (kustomize does not know
    FlowSchemas: config/rbac/kustomizeconfig.yaml teaches it)."""
    _guestbook(project)
    objects = manifests.install_objects(project, str(tools[1]))
    schema = one(objects, "FlowSchema")
    assert schema["metadata"]["name"] == "guestbook-lease-flow-schema"
    assert schema["spec"]["priorityLevelConfiguration"] == {"name": "leader-election"}
    ((subject,),) = [rule["subjects"] for rule in schema["spec"]["rules"]]
    assert subject == {
        "kind": "ServiceAccount",
        "serviceAccount": {"name": "guestbook-controller-manager", "namespace": "guestbook-system"},
    }
    account = one(objects, "ServiceAccount")["metadata"]
    assert (account["name"], account["namespace"]) == (
        "guestbook-controller-manager",
        "guestbook-system",
    )


def test_the_service_account_may_be_one_that_exists(chart: Path, tools: tuple[Path, Path]) -> None:
    """``serviceAccount.create=false`` with ``serviceAccount.name``: no ServiceAccount
    rendered, and the operator's pods and every role binding of the operator's (the watched
    namespaces' too) name the given one; by default the release's own; no name refused."""
    helm = tools[0]
    default = template(helm, chart, "a")
    assert one(default, "ServiceAccount")["metadata"]["name"] == "a-guestbook-controller-manager"
    given = template(
        helm,
        chart,
        "a",
        "--set=serviceAccount.create=false",
        "--set=serviceAccount.name=platform-operator",
        "--set=watchNamespaces={team-b}",
    )
    assert not [o for o in given if o["kind"] == "ServiceAccount"]
    deployment, _ = manager(given)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "platform-operator"
    bindings = [o for o in given if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert len(bindings) >= 4  # leader election, metrics reviews, the watched namespace's two
    for bound in bindings:
        assert bound["subjects"] == [
            {"kind": "ServiceAccount", "name": "platform-operator", "namespace": NS}
        ]
    assert "/serviceAccount/name" in refused(helm, chart, "--set=serviceAccount.create=false")
    # the FlowSchema of the operator's Lease requests names it too
    for objects, account in (
        (default, "a-guestbook-controller-manager"),
        (given, "platform-operator"),
    ):
        ((subject,),) = [
            [s["serviceAccount"] for s in rule["subjects"]]
            for rule in one(objects, "FlowSchema")["spec"]["rules"]
        ]
        assert subject == {"name": account, "namespace": NS}


def shutdown_timeout(container: Obj) -> float:
    """The seconds the project's operator (``python -m guestbook``) reads from its
    arguments."""
    command = operator_command(list, IDENTITY)
    with command.make_context("guestbook", list(container["args"])) as ctx:
        return float(ctx.params["shutdown_timeout"])


def test_the_grace_period_and_the_shutdown_timeout_below_it(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #50: a sharded operator of many objects needs a longer graceful stop, and the
    pod a longer grace period above it; by default the install's 30 s and the operator's
    own 20 s (no flag)."""
    helm = tools[0]
    flag = "--graceful-shutdown-timeout"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert (values["terminationGracePeriodSeconds"], values["gracefulShutdownTimeout"]) == (
        30,
        "20s",
    )
    before, container = manager(template(helm, chart, "a"))
    assert before["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 30
    assert not [a for a in container["args"] if a.startswith(flag)]
    assert shutdown_timeout(container) == 20.0
    raised = ("--set=terminationGracePeriodSeconds=90", "--set=gracefulShutdownTimeout=1m")
    after, container = manager(template(helm, chart, "a", *raised, "--set=extraArgs={-v}"))
    assert container["args"][-2:] == [f"{flag}=1m", "-v"]  # extraArgs after: they win
    assert shutdown_timeout({"args": container["args"][:-1]}) == 60.0
    pod = after["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 90
    pod["terminationGracePeriodSeconds"], container["args"] = 30, container["args"][:-2]
    assert after == before  # nothing else changed
    for sets, message in (
        (("--set=gracefulShutdownTimeout=30s",), "=30s is not below terminationGracePeriod"),
        (
            ("--set=gracefulShutdownTimeout=1m", "--set=terminationGracePeriodSeconds=60"),
            "gracefulShutdownTimeout=1m is not below terminationGracePeriodSeconds=60",
        ),
        (("--set-string=gracefulShutdownTimeout=15",), "/gracefulShutdownTimeout"),
        (("--set=terminationGracePeriodSeconds=0",), "/terminationGracePeriodSeconds"),
        (
            ("--skip-schema-validation", "--set-string=gracefulShutdownTimeout=15"),
            "gracefulShutdownTimeout=15 is not a duration",
        ),
    ):
        assert message in refused(helm, chart, *sets), sets
    ok = template(helm, chart, "a", "--set=gracefulShutdownTimeout=29.5s")
    assert shutdown_timeout(manager(ok)[1]) == 29.5


@pytest.mark.parametrize(
    "flag", [["--graceful-shutdown-timeout", "45s"], ["--graceful-shutdown-timeout=45s"]]
)
def test_an_installs_own_shutdown_timeout_and_grace_period_are_the_defaults(
    project: Path, tools: tuple[Path, Path], tmp_path: Path, flag: list[str]
) -> None:
    """config/ edited to stop in 45 s within 60: the chart's defaults, the flag once."""
    helm, kubectl = tools
    _guestbook(project)
    objects = manifests.install_objects(project, str(kubectl))
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = 60
    pod["containers"][0]["args"] += flag
    chart = tmp_path / "chart"
    for path, text in chart_files(objects, IDENTITY).items():
        (chart / path).parent.mkdir(parents=True, exist_ok=True)
        (chart / path).write_text(text)
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert (values["terminationGracePeriodSeconds"], values["gracefulShutdownTimeout"]) == (
        60,
        "45s",
    )
    rendered, container = manager(template(helm, chart, "a"))
    assert rendered["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 60
    assert [a for a in container["args"] if "graceful" in a] == ["--graceful-shutdown-timeout=45s"]
    assert shutdown_timeout(container) == 45.0
    # the operator's own default: no flag
    _, container = manager(template(helm, chart, "a", "--set=gracefulShutdownTimeout=20s"))
    assert not [a for a in container["args"] if "graceful" in a]
    assert "=1m is not below terminationGracePeriodSeconds=60" in refused(
        helm, chart, "--set=gracefulShutdownTimeout=1m"
    )


def test_a_project_that_serves_webhooks_gets_them_following_the_release(
    project: Path, tools: tuple[Path, Path]
) -> None:
    helm, kubectl = tools
    _guestbook(project, webhook=True)
    commands.generate_chart(project, "", str(kubectl))
    chart = project / "dist" / "chart"
    assert run_helm(helm, "lint", "--strict", str(chart), KUBE).returncode == 0
    objects = template(helm, chart, "a")
    deployment, container = manager(objects)
    service = one(objects, "Service", "webhook-service")
    assert service["metadata"]["name"] == "a-guestbook-webhook-service"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert "--webhook-service=a-guestbook-webhook-service" in container["args"]
    configuration = one(objects, "ValidatingWebhookConfiguration")
    # the operator writes its CA bundle into it by this name
    assert configuration["metadata"]["name"] == "guestbook-validating-webhooks"
    for hook in configuration["webhooks"]:
        reference = hook["clientConfig"]["service"]
        assert (reference["name"], reference["namespace"]) == (service["metadata"]["name"], NS)


def test_an_edited_chart_file_is_kept_and_force_rewrites_it(
    chart: Path, project: Path, tools: tuple[Path, Path]
) -> None:
    kubectl = str(tools[1])
    values = chart / "values.yaml"
    values.write_text(values.read_text() + "# mine\n")
    mine = chart / "templates" / "extra.yaml"
    mine.write_text("# my own template\n")
    stale = chart / "templates" / "rbac" / "gone.yaml"
    record = json.loads((chart / manifests.CHART_RECORD).read_text())
    stale.write_text("x\n")
    record["templates/rbac/gone.yaml"] = manifests._digest("x\n")
    (chart / manifests.CHART_RECORD).write_text(json.dumps(record))
    written, kept = commands.generate_chart(project, "registry.example/guestbook:v2", kubectl)
    assert kept == [values]
    assert values.read_text().endswith("# mine\n")
    assert mine.read_text() == "# my own template\n"
    assert not stale.exists()
    assert set(written) == {chart / "Chart.yaml", chart / "README.md"}  # appVersion, tag: v2
    written, kept = commands.generate_chart(project, "registry.example/guestbook:v2", kubectl)
    assert (written, kept) == ([], [values])
    written, kept = commands.generate_chart(
        project, "registry.example/guestbook:v2", kubectl, force=True
    )
    assert (written, kept) == ([values], [])
    assert "tag: v2" in values.read_text()


def test_bad_input_is_refused_in_one_line(project: Path, tools: tuple[Path, Path]) -> None:
    with pytest.raises(ChartError, match="0 Deployments"):
        chart_files([{"kind": "ServiceAccount", "metadata": {"name": "x"}}], IDENTITY)
    with pytest.raises(commands.Refused, match="--image"):
        commands.generate_chart(project, "a b", str(tools[1]))
    with pytest.raises(commands.Refused, match="not found"):
        commands.generate_chart(project, "", str(project / "no-kubectl"))


def _content(obj: Obj) -> Obj:
    """What an object grants or checks (not its name or labels, which the chart sets)."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}


#: Flags of an install that its chart passes as values (after the install's own arguments).
MOVED = {"--enable-all-namespaces"}


def _same_install(rendered: list[Obj], installed: list[Obj]) -> None:
    """The chart rendered as release ``guestbook`` in guestbook-system is ``installed``
    (kustomize's build): the same objects by kind and name, each role's rules and each
    policy's and binding's spec alike, and the manager's arguments (the chart's flags
    following the release's names after them)."""
    expected = {(o["kind"], o["metadata"]["name"]): o for o in installed if not _off(o)}
    rendered = [o for o in rendered if not _hook(o)]
    assert {(o["kind"], o["metadata"]["name"]) for o in rendered} == set(expected)
    checked = ("ClusterRole", "Role", "ValidatingAdmissionPolicy")
    for obj in rendered:
        if obj["kind"] in checked or obj["kind"] == "ValidatingAdmissionPolicyBinding":
            assert _content(obj) == _content(expected[obj["kind"], obj["metadata"]["name"]])
    args = manager(rendered)[1]["args"]
    wanted = manager([o for o in installed if o["kind"] == "Deployment"])[1]["args"]
    # a flag that is a value of the chart is passed after the install's own
    own = [a for a in wanted if a not in MOVED]
    assert [a for a in args if a not in MOVED][: len(own)] == own
    assert MOVED & set(args) == MOVED & set(wanted)


def test_sharding_is_a_value_of_the_chart_rendering_the_sharded_install_or_not(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #50 (a scaffolded operator shards with one flag, in its chart too) and #47 (one
    way to turn an install into a chart: the SDK's, which appstack's chart uses for the
    same choice): ``sharding.enabled`` renders exactly the install config/sharding makes
    (its RBAC, guards and ``--sharding``), off the install without it, whichever the
    project's config/default chose as the default; refused without two shards or with
    autoscaling and no sharding."""
    helm, kubectl = tools
    _guestbook(project)
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["sharding"] == {"enabled": False}
    assert values["autoscaling"]["enabled"] is False
    plain = manifests.install_objects(project, str(kubectl))
    sharded = manifests.sharding_toggled(project, str(kubectl))
    assert sharded is not None
    release = (chart, "guestbook")
    default = template(helm, *release, namespace="guestbook-system")
    _same_install(default, plain)
    assert "--sharding" not in manager(default)[1]["args"]
    on = ("--set=sharding.enabled=true", "--set=replicas=3")
    rendered = template(helm, *release, *on, namespace="guestbook-system")
    _same_install(rendered, sharded)
    assert "--sharding" in manager(rendered)[1]["args"]
    assert manager(rendered)[0]["spec"]["replicas"] == 3
    assert {o["metadata"]["name"] for o in rendered} > {o["metadata"]["name"] for o in default}
    lint = run_helm(helm, "lint", "--strict", str(chart), KUBE, *on)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "/replicas" in refused(helm, chart, "--set=sharding.enabled=true", "--set=replicas=1")
    assert "/sharding" in refused(helm, chart, "--set=autoscaling.enabled=true")
    # the project's config/default turns the Component on: sharded by default, off on demand
    kustomization = project / "config/default/kustomization.yaml"
    text = kustomization.read_text()
    assert "#components: [../sharding]" in text
    kustomization.write_text(
        text.replace("#components: [../sharding]", "components: [../sharding]")
        + "replicas:\n- name: controller-manager\n  count: 3\n"
    )
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    assert yaml.safe_load((chart / "values.yaml").read_text())["sharding"] == {"enabled": True}
    _same_install(
        template(helm, *release, namespace="guestbook-system"),
        sharded_now := (manifests.install_objects(project, str(kubectl))),
    )
    assert "--sharding" in manager(sharded_now)[1]["args"]
    off = template(helm, *release, "--set=sharding.enabled=false", namespace="guestbook-system")
    _same_install(off, manifests.sharding_toggled(project, str(kubectl)) or [])
    assert "--sharding" not in manager(off)[1]["args"]


def _selectors(objects: list[Obj]) -> list[Obj]:
    """The namespace selector of every webhook of the admission webhook configurations."""
    return [
        hook["namespaceSelector"]
        for o in objects
        if o["kind"].endswith("WebhookConfiguration")
        for hook in o["webhooks"]
    ]


def test_enable_all_namespaces_is_a_value_rendering_either_install(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what appstack's chart offers, every SDK operator's chart offers, by the
    same code): ``enableAllNamespaces`` renders exactly the install ``appstack edit
    --enable-all-namespaces`` makes — the flag, the admission policies' ``enabled``
    variable, the webhooks' namespace selectors — and false the one without, whichever the
    project chose as the default; its NOTES say which."""
    helm, kubectl = tools
    _guestbook(project, webhook=True)
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    assert yaml.safe_load((chart / "values.yaml").read_text())["enableAllNamespaces"] is False
    labelled = manifests.install_objects(project, str(kubectl))
    commands.edit(project, enable_all_namespaces=True)
    commands.generate_manifests(project)
    everywhere = manifests.install_objects(project, str(kubectl))
    assert _selectors(labelled) != _selectors(everywhere)
    release = (chart, "guestbook")
    on = "--set=enableAllNamespaces=true"
    for values, install in (((), labelled), ((on,), everywhere)):
        rendered = template(helm, *release, *values, namespace="guestbook-system")
        _same_install(rendered, install)
        assert _selectors(rendered) == _selectors(install)
        assert ("--enable-all-namespaces" in manager(rendered)[1]["args"]) == bool(values)
    notes = (chart / "templates/NOTES.txt").read_text()
    assert "{{ if .Values.enableAllNamespaces -}}\nIt acts in every namespace" in notes
    # the project built to act everywhere: its chart's default, false on demand
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    assert yaml.safe_load((chart / "values.yaml").read_text())["enableAllNamespaces"] is True
    _same_install(template(helm, *release, namespace="guestbook-system"), everywhere)
    off = template(helm, *release, "--set=enableAllNamespaces=false", namespace="guestbook-system")
    _same_install(off, labelled)
    assert _selectors(off) == _selectors(labelled)
    assert "--no-enable-all-namespaces" not in manager(off)[1]["args"]


OWN_FLAGS = """

import click

GREETING = click.option("--greeting", default="hello", help="What the guestbook says.")
STRICT = click.option("--strict/--no-strict", default=False, help="Refuse unknown guests.")
HOSTS = click.option("--allowed-host", "allowed_hosts", multiple=True, help="A host allowed.")
main = operator_command(
    controllers,
    IDENTITY,
    version=__version__,
    flags=[GREETING, STRICT, HOSTS],
    controller_options=lambda **own: {"guestbook": own},
)
"""


def test_the_operators_own_flags_are_values_of_its_chart(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what an operator declares is read by SDK code, for any operator): the
    flags a project's run command adds to the SDK's (``operator_command(flags=...)``) are
    values of the chart ``make helm`` writes, with their defaults, types and help; set,
    they reach the operator's arguments as its command parses them; unset, the render is
    the install's."""
    helm, kubectl = tools
    _guestbook(project)
    main = project / "src/guestbook/__main__.py"
    text = main.read_text()
    main.write_text(
        text.replace('\nif __name__ == "__main__":', OWN_FLAGS + '\nif __name__ == "__main__":')
    )
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert (values["greeting"], values["strict"], values["allowedHost"]) == ("hello", False, [])
    readme = (chart / "README.md").read_text()
    assert '| `greeting` | `"hello"` | What the guestbook says. |' in readme
    plain = manager(template(helm, chart, "a"))[1]["args"]
    assert not [a for a in plain if a.startswith(("--greeting", "--strict", "--allowed-host"))]
    args = manager(
        template(
            helm,
            chart,
            "a",
            "--set=greeting=hi there",
            "--set=strict=true",
            "--set=allowedHost={a.example,b.example}",
        )
    )[1]["args"]
    own = [a for a in args if a.startswith(("--greeting", "--strict", "--allowed-host"))]
    assert own == [
        "--greeting=hi there",
        "--strict",
        "--allowed-host=a.example",
        "--allowed-host=b.example",
    ]
    # the project's own command parses them
    sys.path.insert(0, str(project / "src"))
    try:
        for name in [m for m in sys.modules if m == "guestbook" or m.startswith("guestbook.")]:
            del sys.modules[name]
        command = importlib.import_module("guestbook.__main__").main
    finally:
        sys.path.remove(str(project / "src"))
    with command.make_context("guestbook", list(args)) as ctx:
        parsed = (ctx.params["greeting"], ctx.params["strict"], ctx.params["allowed_hosts"])
    assert parsed == ("hi there", True, ("a.example", "b.example"))
    assert "strict" in refused(helm, chart, "--set=strict=maybe")


def test_watch_namespaces_grants_a_role_in_each_and_passes_their_flags(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what appstack's chart has, every SDK operator's chart has, made by the same
    code: :func:`appstack.sdk.HelmText.watching`): a cluster-wide operator's chart takes
    ``watchNamespaces`` — its ClusterRole and binding become a Role and RoleBinding in each
    listed namespace with the rules a namespaced install of the project has (the
    generator's own, not a copy), one Role of the process's rules in the release's
    namespace unless it is listed, and ``--namespace`` for each; empty, exactly the
    cluster-wide install; sharded, the Roles carry the shards' label patches; a namespace
    name that is not one, or twice, is refused by the schema."""
    helm, kubectl = tools
    _guestbook(project)
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["watchNamespaces"] == []
    loaded = manifests.load(project)
    default = template(helm, chart, "guestbook", namespace="guestbook-system")
    _same_install(default, manifests.install_objects(project, str(kubectl)))
    cluster_role = one(default, "ClusterRole", "manager-role")
    assert "--namespace" not in " ".join(manager(default)[1]["args"])

    watched = ("--set=watchNamespaces={team-a,team-b}",)
    rendered = template(helm, chart, "gb", *watched, namespace="ops")
    assert not [
        o
        for o in rendered
        if o["kind"].startswith("Cluster") and "manager" in o["metadata"]["name"]
    ]
    roles = {
        o["metadata"]["namespace"]: o
        for o in rendered
        if o["kind"] == "Role" and o["metadata"]["name"] == "gb-guestbook-manager-role"
    }
    assert set(roles) == {"team-a", "team-b", "ops"}
    namespaced = operator_rules(dataclasses.replace(loaded, namespaced=True))
    assert roles["team-a"]["rules"] == roles["team-b"]["rules"] == namespaced
    assert roles["team-a"]["rules"] == within_namespaces(cluster_role["rules"])
    assert roles["ops"]["rules"] == process_rules(cluster_wide=False)
    bindings = {
        o["metadata"]["namespace"]: o
        for o in rendered
        if o["kind"] == "RoleBinding"
        and o["metadata"]["name"] == "gb-guestbook-manager-rolebinding"
    }
    assert set(bindings) == {"team-a", "team-b", "ops"}
    for bound in bindings.values():
        assert bound["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "gb-guestbook-manager-role",
        }
        (subject,) = bound["subjects"]
        assert (subject["name"], subject["namespace"]) == ("gb-guestbook-controller-manager", "ops")
    args = manager(rendered)[1]["args"]
    assert [a for a in args if a.startswith("--namespace")] == [
        "--namespace=team-a",
        "--namespace=team-b",
    ]
    # the release's namespace listed: its Role is the watched one's
    own = template(helm, chart, "gb", "--set=watchNamespaces={ops}", namespace="ops")
    assert [
        o["metadata"]["namespace"]
        for o in own
        if o["kind"] == "Role" and "manager" in o["metadata"]["name"]
    ] == ["ops"]
    assert one(own, "Role", "manager-role")["rules"] == namespaced
    # sharded and watching: the shards' label patches in every watched Role
    shards = template(
        helm,
        chart,
        "gb",
        *watched,
        "--set=sharding.enabled=true",
        "--set=replicas=2",
        namespace="ops",
    )
    sharded_rules = operator_rules(dataclasses.replace(loaded, namespaced=True, sharded=True))
    watched_roles = [
        o
        for o in shards
        if o["kind"] == "Role"
        and o["metadata"]["name"] == "gb-guestbook-manager-role"
        and o["metadata"]["namespace"] != "ops"
    ]
    assert len(watched_roles) == 2
    assert all(o["rules"] == sharded_rules for o in watched_roles)
    lint = run_helm(helm, "lint", "--strict", str(chart), KUBE, *watched)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "watchNamespaces" in refused(helm, chart, "--set=watchNamespaces={Team_A}")
    assert "watchNamespaces" in refused(helm, chart, "--set=watchNamespaces={a,a}")
    readme = (chart / "README.md").read_text()
    assert "| `watchNamespaces` | `[]` |" in readme


def test_a_sharded_projects_chart_scales_its_shards_with_an_autoscaler(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #50 (replicas = shards, a HorizontalPodAutoscaler can change them): a project's
    chart has ``autoscaling`` values, off by default (the install's objects as before); on,
    with sharding, a HorizontalPodAutoscaler of the release's Deployment, which then leaves
    its replicas to it."""
    helm, kubectl = tools
    _guestbook(project)
    kustomization = project / "config/default/kustomization.yaml"
    text = kustomization.read_text()
    kustomization.write_text(
        text.replace("#components: [../sharding]", "components: [../sharding]")
    )
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))  # make helm
    chart = project / "dist" / "chart"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["autoscaling"]["enabled"] is False
    assert (values["autoscaling"]["minReplicas"], values["autoscaling"]["maxReplicas"]) == (2, 4)
    default = template(helm, chart, "a", "--set=replicas=2")
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in default}
    deployment, container = manager(default)
    assert "--sharding" in container["args"]
    assert "replicas" in deployment["spec"]

    scaled = template(helm, chart, "a", "--set=autoscaling.enabled=true")
    deployment, _ = manager(scaled)
    assert "replicas" not in deployment["spec"]
    hpa = one(scaled, "HorizontalPodAutoscaler")
    assert hpa["metadata"]["name"] == deployment["metadata"]["name"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["metadata"]["namespace"] == NS
    assert hpa["metadata"]["labels"]["app.kubernetes.io/instance"] == "a"
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    lint = run_helm(helm, "lint", "--strict", str(chart), KUBE, "--set=autoscaling.enabled=true")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "/autoscaling/minReplicas" in refused(
        helm, chart, "--set=autoscaling.enabled=true", "--set=autoscaling.minReplicas=1"
    )
    upside_down = ("--set=autoscaling.minReplicas=5", "--set=autoscaling.maxReplicas=3")
    assert "maxReplicas is below" in refused(
        helm, chart, "--set=autoscaling.enabled=true", *upside_down
    )


ALERT = """

CONTROLLER = replace(
    CONTROLLER,
    alerts=(
        Alert(
            "GuestbookNotReady",
            'max by (namespace, name) (guestbook_object_ready{kind="Guestbook"}) == 0',
            "Guestbook {{ $labels.namespace }}/{{ $labels.name }} is not Ready: "
            "{{ $value | humanize }}",
            for_="10m",
        ),
    ),
)
"""


def test_a_kinds_alerts_are_the_projects_prometheus_rule_and_the_charts(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """The operator's own alerts (every SDK operator's: reconcile errors, a stuck queue, no
    leader, an object not up, unassigned shard keys) are ``config/prometheus/alerts.yaml``,
    listed beside the user's ServiceMonitor; an alert declared on a registration
    (``Registration.alerts``) follows them there after ``make manifests``; the chart renders
    them with ``metrics.prometheusRule.enabled`` (and its labels), their Prometheus
    templates as declared, the leader alert naming the release's Lease; without the kind's
    alert the operator's stay."""
    helm, kubectl = tools
    _guestbook(project)
    own = [
        f"Guestbook{name}"
        for name in (
            "ReconcileErrors",
            "WorkqueueStuck",
            "NoLeader",
            "ObjectNotReady",
            "ShardKeysUnassigned",
        )
    ]
    prometheus = project / "config" / "prometheus"
    controller = project / "src/guestbook/controllers/guestbook.py"
    before = controller.read_text()
    original = before.replace("from __future__ import annotations\n", "")
    controller.write_text(
        "from dataclasses import replace\n\nfrom appstack.sdk import Alert\n" + original + ALERT
    )
    commands.generate_manifests(project)
    listed = yaml.safe_load((prometheus / "kustomization.yaml").read_text())["resources"]
    assert listed == ["monitor.yaml", "alerts.yaml"]
    (rule,) = yaml.safe_load_all((prometheus / "alerts.yaml").read_text())
    (group,) = rule["spec"]["groups"]
    assert (rule["kind"], group["name"]) == ("PrometheusRule", "guestbook")
    assert [r["alert"] for r in group["rules"]] == [*own, "GuestbookNotReady"]
    commands.generate_chart(project, "registry.example/guestbook:v1", str(kubectl))
    chart = project / "dist" / "chart"
    on = ("--set=metrics.prometheusRule.enabled=true", "--set=metrics.prometheusRule.labels.r=p")
    assert run_helm(helm, "lint", "--strict", str(chart), KUBE, *on).returncode == 0
    assert not [o for o in template(helm, chart, "a") if o["kind"] == "PrometheusRule"]
    objects = template(helm, chart, "a", *on)
    rendered = one(objects, "PrometheusRule")
    assert rendered["metadata"]["name"] == "a-guestbook-controller-manager-alerts"
    assert rendered["metadata"]["labels"]["r"] == "p"
    alerts = {a["alert"]: a for a in rendered["spec"]["groups"][0]["rules"]}
    assert list(alerts) == [*own, "GuestbookNotReady"]
    assert alerts["GuestbookNotReady"]["annotations"]["summary"] == (
        "Guestbook {{ $labels.namespace }}/{{ $labels.name }} is not Ready: {{ $value | humanize }}"
    )
    assert alerts["GuestbookNotReady"] == group["rules"][-1]
    args = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-election-id=a-guestbook-operator" in args
    assert (
        'leader_election_master_status{name="a-guestbook-operator"}'
        in (alerts["GuestbookNoLeader"]["expr"])
    )
    controller.write_text(before)
    commands.generate_manifests(project)
    (rule,) = yaml.safe_load_all((prometheus / "alerts.yaml").read_text())
    assert [r["alert"] for r in rule["spec"]["groups"][0]["rules"]] == own
    listed = yaml.safe_load((prometheus / "kustomization.yaml").read_text())["resources"]
    assert listed == ["monitor.yaml", "alerts.yaml"]


def test_metrics_tls_values_choose_the_certificate_and_the_scrape_scheme(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what appstack's chart offers, every SDK operator's chart offers):
    ``metrics.certSecret`` mounts a kubernetes.io/tls Secret for ``/metrics``
    (``--metrics-cert-dir``) and the ServiceMonitor checks it against its ``ca.crt`` for the
    release's metrics Service; ``metrics.secure=false`` serves and scrapes plain HTTP, ``helm
    test`` too; by default neither changes kustomize's install."""
    helm = tools[0]
    values = yaml.safe_load((chart / "values.yaml").read_text())["metrics"]
    assert (values["secure"], values["certSecret"]) == (True, "")
    monitor = "--set=metrics.serviceMonitor.enabled=true"
    default = template(helm, chart, "a", monitor)
    deployment, container = manager(default)
    assert "volumes" not in deployment["spec"]["template"]["spec"]
    assert "volumeMounts" not in container
    (endpoint,) = one(default, "ServiceMonitor")["spec"]["endpoints"]
    assert (endpoint["scheme"], endpoint["tlsConfig"]) == ("https", {"insecureSkipVerify": True})
    cert = ("--set=metrics.certSecret=metrics-tls", "--set=extraVolumes[0].name=x")
    objects = template(helm, chart, "a", monitor, *cert, "--set=extraVolumes[0].emptyDir=null")
    deployment, container = manager(objects)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "metrics-certs", "secret": {"secretName": "metrics-tls"}},
        {"name": "x", "emptyDir": None},
    ]
    (mount,) = container["volumeMounts"]
    assert mount == {"name": "metrics-certs", "mountPath": mount["mountPath"], "readOnly": True}
    assert f"--metrics-cert-dir={mount['mountPath']}" in container["args"]
    (endpoint,) = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    service = one(objects, "Service", "metrics-service")["metadata"]["name"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "metrics-tls", "key": "ca.crt"}},
        "serverName": f"{service}.{NS}.svc",
    }
    # helm test checks the served certificate against the Secret's ca.crt
    test_pod = one(objects, "Pod")["spec"]
    (volume,) = test_pod["volumes"]
    assert volume["secret"]["secretName"] == "metrics-tls"
    (ca_mount,) = test_pod["containers"][0]["volumeMounts"]
    ca = {e["name"]: e["value"] for e in test_pod["containers"][0]["env"]}["METRICS_CA"]
    assert ca == f"{ca_mount['mountPath']}/ca.crt"
    assert "volumes" not in one(default, "Pod")["spec"]
    lint = run_helm(helm, "lint", "--strict", str(chart), KUBE, monitor, *cert[:1])
    assert lint.returncode == 0, lint.stdout + lint.stderr
    plain = template(helm, chart, "a", monitor, "--set=metrics.secure=false")
    assert "--no-metrics-secure" in manager(plain)[1]["args"]
    (endpoint,) = one(plain, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "http"
    assert "tlsConfig" not in endpoint
    (url,) = [e["value"] for e in one(plain, "Pod")["spec"]["containers"][0]["env"]]
    assert url.startswith(f"http://{service}.{NS}.svc:")
    assert "/metrics/certSecret" in refused(helm, chart, "--set=metrics.certSecret=Not_A_Name")


def test_the_dashboards_are_a_configmap_for_grafanas_sidecar_when_asked(
    chart: Path, project: Path, tools: tuple[Path, Path]
) -> None:
    """Issue #47 (what a kind declares is read by SDK code for any operator): make
    manifests writes the operator's dashboards to config/grafana, and the chart renders
    them, byte for byte, as one ConfigMap labelled for Grafana's sidecar in the release's
    namespace when ``metrics.grafanaDashboard.enabled`` (off by default)."""
    helm = tools[0]
    assert yaml.safe_load((chart / "values.yaml").read_text())["metrics"]["grafanaDashboard"] == {
        "enabled": False
    }
    assert not [o for o in template(helm, chart, "a") if o["kind"] == "ConfigMap"]
    on = "--set=metrics.grafanaDashboard.enabled=true"
    lint = run_helm(helm, "lint", "--strict", str(chart), KUBE, on)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    configmap = one(template(helm, chart, "a", on), "ConfigMap")
    assert configmap["metadata"]["name"] == "a-guestbook-grafana-dashboards"
    assert configmap["metadata"]["namespace"] == NS
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    grafana = project / "config" / "grafana"
    written = {p.name: p.read_text() for p in grafana.glob("*.json")}
    assert sorted(written) == ["guestbook-guestbook.json", "guestbook-operator.json"]
    assert configmap["data"] == {name: text.rstrip("\n") for name, text in written.items()}
    board = json.loads(configmap["data"]["guestbook-operator.json"])
    assert board["uid"] == "guestbook-operator"


def test_helm_test_gets_metrics_through_the_releases_service(
    chart: Path, tools: tuple[Path, Path]
) -> None:
    """``helm test`` (as appstack's chart, the SDK's pod): a Pod hooked ``test`` that GETs
    /metrics through the release's metrics Service with the operator's image, pulled as
    the operator's is, that no selector of the release's takes for an operator pod; none
    with the metrics Service off."""
    helm = tools[0]
    objects = template(helm, chart, "a", "--set=imagePullSecrets[0].name=regcred")
    pod = one(objects, "Pod")
    assert pod["metadata"]["name"] == "a-guestbook-test-metrics"
    assert pod["metadata"]["namespace"] == NS
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "registry.example/guestbook:v1"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    service = one(objects, "Service", "metrics")
    port = service["spec"]["ports"][0]["port"]
    url = f"https://{service['metadata']['name']}.{NS}.svc:{port}/metrics"
    assert container["env"] == [{"name": "METRICS_URL", "value": url}]
    labels = pod["metadata"]["labels"]
    for selector in (
        manager(objects)[0]["spec"]["selector"]["matchLabels"],
        service["spec"]["selector"],
    ):
        assert not selector.items() <= labels.items()
    assert not [
        o for o in template(helm, chart, "a", "--set=metrics.enabled=false") if o["kind"] == "Pod"
    ]


def test_the_readme_lists_every_value_with_its_default_and_what_it_does(chart: Path) -> None:
    """The chart's README (as appstack's): how to install, test, upgrade and uninstall it,
    and a row per value of values.yaml — each leaf, the maps a user fills as one — with
    its default and a description."""
    text = (chart / "README.md").read_text()
    assert "helm install guestbook . --namespace guestbook-system" in text
    assert "helm test guestbook" in text
    values = yaml.safe_load((chart / "values.yaml").read_text())
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in text.splitlines()
        if line.startswith("| `")
    }
    expected = {
        "replicas",
        "image.repository",
        "sharding.enabled",
        "autoscaling.behavior",
        "resources",
        "metrics.serviceMonitor.interval",
        "metrics.grafanaDashboard.enabled",
        "crd.keep",
    }
    assert expected <= set(rows)
    assert "`" + json.dumps(values["replicas"]) + "`" in rows["replicas"]
    for path, row in rows.items():
        node: Any = values
        for key in path.split("."):
            node = node[key]  # every row is a value of values.yaml
        description = row.split("|")[3].strip()
        assert description, path
    assert len(rows) == len(set(rows))


def test_a_renamed_metrics_service_and_reader_are_found_by_what_they_are(
    project: Path, tools: tuple[Path, Path]
) -> None:
    """The chart finds the metrics Service (the one to the pods' /metrics port) and the
    metrics reader (the role granting ``get`` on /metrics) by what they are: a user who
    renamed them in config/ keeps ``metrics.*``, helm test's Pod and the reader binding."""
    helm = tools[0]
    _guestbook(project)
    service = project / "config/default/metrics_service.yaml"
    service.write_text(service.read_text().replace("controller-manager-metrics-service", "scrape"))
    reader = project / "config/rbac/metrics_reader_role.yaml"
    reader.write_text(reader.read_text().replace("name: metrics-reader", "name: scrapers"))
    for path in (project / "config").rglob("*.yaml"):  # what references them follows
        path.write_text(path.read_text().replace("name: metrics-reader\n", "name: scrapers\n"))
    commands.generate_chart(project, "registry.example/guestbook:v1", str(tools[1]))
    chart = project / "dist" / "chart"
    assert yaml.safe_load((chart / "values.yaml").read_text())["metrics"]["enabled"] is True
    objects = template(helm, chart, "a", "--set=metrics.serviceMonitor.enabled=true")
    scrape = one(objects, "Service", "scrape")
    assert scrape["metadata"]["name"] == "a-guestbook-scrape"
    (test_pod,) = [o for o in objects if _hook(o)]
    assert "a-guestbook-scrape." in json.dumps(test_pod)
    binding = one(objects, "ClusterRoleBinding", "-prometheus")
    assert binding["metadata"]["name"] == "a-guestbook-scrapers-prometheus"  # as its role
    assert binding["roleRef"]["name"] == "a-guestbook-scrapers"
    off = template(helm, chart, "a", "--set=metrics.enabled=false")
    assert not [o for o in off if o["kind"] == "Service" and "scrape" in o["metadata"]["name"]]


@pytest.mark.parametrize(
    ("values", "path"),
    [
        (("--set=imagePullSecrets[0].name=Reg_Cred",), "/imagePullSecrets/0/name"),
        (("--set=imagePullSecrets[0].nam=regcred",), "/imagePullSecrets/0"),
        (("--set=serviceAccount.create=false",), "/serviceAccount/name"),
        (("--set=serviceAccount.name=Ops",), "/serviceAccount/name"),
        (("--set=priorityClassName=High",), "/priorityClassName"),
        (("--set=metrics.serviceMonitor.interval=often",), "/metrics/serviceMonitor/interval"),
        (
            ("--set=metrics.serviceMonitor.prometheusServiceAccount.namespace=Mon",),
            "/metrics/serviceMonitor/prometheusServiceAccount/namespace",
        ),
    ],
)
def test_names_kubernetes_would_refuse_at_install_are_refused_at_render_by_their_path(
    chart: Path, tools: tuple[Path, Path], values: tuple[str, ...], path: str
) -> None:
    assert path in refused(tools[0], chart, *values)
