"""The Helm chart ``charts/appstack`` with a real ``helm`` (built from Go modules, cached),
on a cluster of its own (the chart owns cluster-wide objects the session shares):
``helm lint``; ``helm template`` with default values renders exactly the generated install
(minus the Namespace — Helm's is the release namespace —, with Helm's standard labels on
every object and the release in the pods' selector: ``helm_chart.alike``; the CRDs are
templates, ``crd.enable``, kept on uninstall, ``crd.keep``); ``helm install``; ``helm test``
(its hook pod completes through a kwok stage: there is no kubelet, so this proves the
hook's wiring, not the HTTP call it makes); ``helm upgrade`` to other values; ``helm
uninstall`` (which keeps the CRDs, as documented); two releases side by side in one
namespace (tests/unit/manifests/test_chart_names.py renders every name offline).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, KubeConfig
from lightkube import Client as LightClient
from lightkube.core.resource_registry import resource_registry
from lightkube.models.authorization_v1 import ResourceAttributes, SubjectAccessReviewSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.authorization_v1 import SubjectAccessReview
from lightkube.resources.core_v1 import Namespace, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRole, Role

from appstack.api.namespaces import ENABLED
from appstack.controllers.rbac import MARKER, MARKER_GROUP, MARKER_RESOURCE
from appstack.manifests import crds, dashboard, grafana, monitoring, workload
from appstack.manifests.admission import enabled_check
from appstack.manifests.install import install
from appstack.sdk import METRICS_CERT_DIR
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.helm import Helm
from tests.unit.manifests.helm_chart import alike

CHART = Path(__file__).resolve().parents[2] / "charts" / "appstack"
NS = "appstack-system"
# Offline, helm template assumes Kubernetes 1.20; the chart needs 1.30 (its kubeVersion).
KUBE = "--kube-version=1.30.0"


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _progress(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)  # a cold helm build takes minutes


@pytest.fixture(scope="module")
def helm(fresh_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm.ensure(fresh_cluster.kubeconfig, tmp_path_factory.mktemp("helm"), _progress)


def test_helm_lint_and_template_equal_the_generated_install(helm: Helm) -> None:
    helm("lint", "--strict", str(CHART))
    out = helm("template", "appstack", str(CHART), f"--namespace={NS}", "--skip-tests", KUBE).stdout
    rendered = sorted((d for d in yaml.safe_load_all(out) if d), key=_key)
    expected = [o for o in install().objects() if o["kind"] != "Namespace"]
    assert [alike(o) for o in rendered] == sorted((alike(o) for o in expected), key=_key)
    helm_labels = {
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/instance": "appstack",
        "app.kubernetes.io/part-of": "appstack",
    }
    for obj in rendered:  # Helm's standard labels on every object, from one helper
        assert obj["metadata"]["labels"].items() >= helm_labels.items(), obj["metadata"]
    chart_crds = [alike(o) for o in rendered if o["kind"] == "CustomResourceDefinition"]
    assert chart_crds == sorted(
        (alike(c) for c in crds.all_crds()), key=lambda c: c["metadata"]["name"]
    )
    for crd in rendered:  # kept by helm uninstall (crd.keep)
        if crd["kind"] == "CustomResourceDefinition":
            assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_helm_template_renders_the_optional_monitoring_objects(helm: Helm) -> None:
    out = helm(
        "template",
        "appstack",
        str(CHART),
        f"--namespace={NS}",
        KUBE,
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.prometheusRule.enabled=true",
        "--set=metrics.grafanaDashboard.enabled=true",
    ).stdout
    rendered = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    assert alike(rendered["ServiceMonitor"]) == alike(monitoring.service_monitor(NS))
    assert alike(rendered["PrometheusRule"]) == alike(dashboard.prometheus_rule(NS))
    boards = {k: json.loads(v) for k, v in rendered["ConfigMap"]["data"].items()}
    assert boards == grafana.dashboards()
    assert rendered["Pod"]["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # The test pod is not selected as the operator by the Service, the PDB or the tests.
    assert rendered["Pod"]["metadata"]["labels"]["app.kubernetes.io/name"] == "appstack-test"


def _template(helm: Helm, release: str, *sets: str, check: bool = True) -> Any:
    return helm(
        "template",
        release,
        str(CHART),
        f"--namespace={NS}",
        "--skip-tests",
        KUBE,
        *sets,
        check=check,
    )


def _deployment(out: str) -> dict[str, Any]:
    (found,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    return dict(found)


def test_a_release_of_any_name_spreads_its_own_replicas(helm: Helm) -> None:
    """Issue #51: the default anti-affinity named appstack-operator, so release `ops` was
    spread by nothing (and kept off another release's nodes instead)."""
    deployment = _deployment(_template(helm, "ops").stdout)
    pod = deployment["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    selector = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "appstack", "app.kubernetes.io/instance": "ops"}
    # the user's own affinity instead
    own = _deployment(_template(helm, "ops", "--set=affinity.nodeAffinity.x=y").stdout)["spec"][
        "template"
    ]["spec"]["affinity"]
    assert own == {"nodeAffinity": {"x": "y"}}


def test_values_that_cannot_work_together_fail_at_render(helm: Helm) -> None:
    refused = _template(helm, "appstack", "--set=leaderElection.enabled=false", check=False)
    assert refused.returncode != 0
    assert "leaderElection.enabled=false with replicas > 1" in refused.stderr
    single = _deployment(
        _template(helm, "appstack", "--set=leaderElection.enabled=false", "--set=replicas=1").stdout
    )
    (container,) = single["spec"]["template"]["spec"]["containers"]
    assert "--leader-elect" not in container["args"]


def test_monitoring_labels_security_contexts_and_resources_are_values(helm: Helm) -> None:
    out = _template(
        helm,
        "appstack",
        "--set=metrics.serviceMonitor.enabled=true",
        "--set=metrics.serviceMonitor.labels.release=kps",
        "--set=metrics.prometheusRule.enabled=true",
        "--set=metrics.prometheusRule.labels.release=kps",
        # OpenShift's restricted-v2: the namespace's range assigns the user
        "--set=podSecurityContext.runAsUser=null",
        "--set=podSecurityContext.runAsGroup=null",
        "--set=resources.limits.memory=1Gi",
    ).stdout
    rendered = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert rendered[kind]["metadata"]["labels"]["release"] == "kps", kind
    pod = rendered["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["resources"]["limits"] == {"memory": "1Gi"}  # no CPU limit to survive


DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_pod_extensions_common_labels_and_probe_timing_are_values(
    helm: Helm, tmp_path: Path
) -> None:
    """Issue #51: topologySpreadConstraints (beside the default anti-affinity), image.digest
    (the tag ignored), commonLabels (every object, never a selector; podLabels and a
    ServiceMonitor's labels win on a shared key), revisionHistoryLimit (0 too), extraEnv,
    extraVolumes/extraVolumeMounts (beside the metrics certificate's) and the probes' timing
    merged over the defaults (null drops one)."""
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {
            "matchLabels": {
                "app.kubernetes.io/name": "appstack",
                "app.kubernetes.io/instance": "appstack",
            }
        },
    }
    values = {
        "commonLabels": {"team": "platform", "release": "common"},
        "podLabels": {"team": "pods"},
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "kps"}},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
            "certSecret": "metrics-tls",
        },
        "image": {"repository": "registry.example.com/appstack", "tag": "9.9", "digest": DIGEST},
        "revisionHistoryLimit": 0,
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
        "extraVolumes": [{"name": "scratch", "emptyDir": {}}],
        "extraVolumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        "livenessProbe": {"timeoutSeconds": 3, "failureThreshold": 6},
        "readinessProbe": {"periodSeconds": 20, "initialDelaySeconds": None},
        "topologySpreadConstraints": [spread],
    }
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    out = helm("template", "appstack", str(CHART), f"--namespace={NS}", KUBE, "-f", str(file))
    objects = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert len(objects) > 20
    for obj in objects:  # every object, the test pod's and the cluster-scoped ones too
        labels = obj["metadata"]["labels"]
        assert labels["team"] == "platform", (obj["kind"], obj["metadata"]["name"])
        wanted = "kps" if obj["kind"] == "ServiceMonitor" else "common"
        assert labels["release"] == wanted, obj["kind"]
    rendered = {d["kind"]: d for d in objects}
    deployment = rendered["Deployment"]
    assert deployment["spec"]["revisionHistoryLimit"] == 0
    selector = {"app.kubernetes.io/name": "appstack", "app.kubernetes.io/instance": "appstack"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector  # never a selector
    for kind in ("Service", "PodDisruptionBudget"):
        selected = rendered[kind]["spec"]["selector"]
        assert selected.get("matchLabels", selected) == selector, kind
    assert rendered["ServiceMonitor"]["spec"]["selector"]["matchLabels"] == selector
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "pods"  # podLabels win
    assert template["metadata"]["labels"]["release"] == "common"
    pod = template["spec"]
    assert pod["topologySpreadConstraints"] == [spread]
    assert "podAntiAffinity" in pod["affinity"]  # the default stays
    (container,) = pod["containers"]
    image = f"registry.example.com/appstack@{DIGEST}"
    assert container["image"] == image
    assert rendered["Pod"]["spec"]["containers"][0]["image"] == image
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[workload.BACKUP_IMAGE_ENV] == image
    assert container["env"][-1] == {"name": "HTTPS_PROXY", "value": "http://proxy:3128"}
    wanted_pod = workload.deployment(namespace=NS, metrics_cert_secret="metrics-tls")["spec"][
        "template"
    ]["spec"]
    (wanted,) = wanted_pod["containers"]
    assert container["volumeMounts"] == [
        *wanted["volumeMounts"],
        {"name": "scratch", "mountPath": "/scratch"},
    ]
    assert pod["volumes"] == [*wanted_pod["volumes"], {"name": "scratch", "emptyDir": {}}]
    assert container["livenessProbe"] == {
        **wanted["livenessProbe"],
        "timeoutSeconds": 3,
        "failureThreshold": 6,
    }
    readiness = {k: v for k, v in wanted["readinessProbe"].items() if k != "initialDelaySeconds"}
    assert container["readinessProbe"] == {**readiness, "periodSeconds": 20}
    # the extra volumes alone (no certificate); a tag without a digest; a misspelt probe
    # field and a digest that is not one are refused
    alone = _deployment(
        _template(
            helm,
            "appstack",
            "--set=extraVolumes[0].name=scratch",
            "--set=extraVolumes[0].emptyDir.medium=Memory",
            "--set=extraVolumeMounts[0].name=scratch",
            "--set=extraVolumeMounts[0].mountPath=/scratch",
            "--set=image.tag=1.2.3",
        ).stdout
    )["spec"]["template"]["spec"]
    assert alone["volumes"] == [{"name": "scratch", "emptyDir": {"medium": "Memory"}}]
    assert alone["containers"][0]["volumeMounts"] == [{"name": "scratch", "mountPath": "/scratch"}]
    assert alone["containers"][0]["image"] == "appstack:1.2.3"
    for wrong, named in (  # a property name refused: named by itself (not by its path)
        ("--set=livenessProbe.timeout=3", "'timeout'"),
        ("--set=image.digest=latest", "/image/digest"),
        ("--set=commonLabels.helm\\.sh/chart=x", "'helm.sh/chart'"),
        ("--set=extraEnv[0].value=x", "/extraEnv/0"),
    ):
        refused = _template(helm, "appstack", wrong, check=False)
        assert refused.returncode != 0, wrong
        assert named in refused.stderr, (wrong, refused.stderr)


def test_metrics_tls_values_choose_the_certificate_and_the_scrape_scheme(helm: Helm) -> None:
    """metrics.certSecret mounts a TLS Secret for /metrics and the ServiceMonitor verifies it
    by its CA for the Service's name; metrics.secure=false scrapes plain HTTP."""
    common = ("template", "appstack", str(CHART), f"--namespace={NS}", KUBE)
    monitor = "--set=metrics.serviceMonitor.enabled=true"
    out = helm(*common, monitor, "--set=metrics.certSecret=metrics-tls").stdout
    rendered = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    assert alike(rendered["ServiceMonitor"]) == alike(
        monitoring.service_monitor(NS, cert_secret="metrics-tls")
    )
    wanted = workload.deployment(namespace=NS, metrics_cert_secret="metrics-tls")
    pod, wanted_pod = (d["spec"]["template"]["spec"] for d in (rendered["Deployment"], wanted))
    assert pod["volumes"] == wanted_pod["volumes"]
    assert pod["containers"][0]["volumeMounts"] == wanted_pod["containers"][0]["volumeMounts"]
    assert f"--metrics-cert-dir={METRICS_CERT_DIR}" in pod["containers"][0]["args"]
    out = helm(*common, monitor, "--set=metrics.secure=false").stdout
    rendered = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    assert alike(rendered["ServiceMonitor"]) == alike(monitoring.service_monitor(NS, secure=False))
    assert (
        "--no-metrics-secure"
        in rendered["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert rendered["Pod"]["spec"]["containers"][0]["env"][0]["value"].startswith("http://")


def test_values_are_checked_by_their_schema_and_every_flag_has_one(helm: Helm) -> None:
    """values.schema.json (from the values model): a misspelt or mistyped value fails at
    install with its path named; the operator's flags and the scheduling settings render."""
    typo = helm("template", "a", str(CHART), KUBE, "--set=logLevl=debug", check=False)
    assert typo.returncode != 0
    assert "additional properties 'logLevl' not allowed" in typo.stderr
    wrong = helm("template", "a", str(CHART), KUBE, "--set=replicas=many", check=False)
    assert "/replicas" in wrong.stderr
    out = helm(
        "template",
        "a",
        str(CHART),
        f"--namespace={NS}",
        KUBE,
        "--set=logLevel=debug",
        "--set=concurrency=8",
        "--set=allowExternalIPs=true",
        "--set=externalDenyCIDRs={10.96.0.0/12,10.244.0.0/16}",
        "--set=allowExternalClusterNames=true",
        "--set=extraArgs={--graceful-shutdown-timeout=30s}",
        "--set=nodeSelector.pool=system",
        "--set=tolerations[0].key=dedicated",
        "--set=tolerations[0].operator=Exists",
        "--set=priorityClassName=system-cluster-critical",
    ).stdout
    (deployment,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    for flag in (
        "--log-level=debug",
        "--concurrency=8",
        "--allow-external-ips",
        "--external-deny-cidr=10.96.0.0/12",
        "--external-deny-cidr=10.244.0.0/16",
        "--allow-external-cluster-names",
        "--graceful-shutdown-timeout=30s",
    ):
        assert flag in args
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]
    assert pod["priorityClassName"] == "system-cluster-critical"


#: Each chart value an installer sets, and the `appstack manifests` flag of the same meaning.
INSTALLER_SETTINGS = [
    ("--set=replicas=3", "--replicas=3"),
    ("--set=logLevel=debug", "--log-level=debug"),
    ("--set=concurrency=8", "--concurrency=8"),
    ("--set=syncPeriod=5m", "--sync-period=5m"),
    ("--set=allowExternalIPs=true", "--allow-external-ips"),
    ("--set=externalDenyCIDRs={10.96.0.0/12}", "--external-deny-cidr=10.96.0.0/12"),
    ("--set=allowExternalClusterNames=true", "--allow-external-cluster-names"),
    ("--set=enableAllNamespaces=true", "--enable-all-namespaces"),
    (
        "--set=extraArgs={--graceful-shutdown-timeout=30s}",
        "--extra-arg=--graceful-shutdown-timeout=30s",
    ),
    ("--set=metrics.secure=false", "--no-metrics-secure"),
    ("--set=metrics.certSecret=metrics-tls", "--metrics-cert-secret=metrics-tls"),
    ("--set=imagePullSecrets[0].name=regcred", "--image-pull-secret=regcred"),
    ("--set=image.pullPolicy=Always", "--image-pull-policy=Always"),
    ("--set=watchNamespaces={team-a}", "--watch-namespace=team-a"),
]


def test_appstack_manifests_has_a_flag_for_each_value_an_installer_sets(helm: Helm) -> None:
    """The chart with every value of :data:`INSTALLER_SETTINGS` set, and `appstack manifests`
    with the matching flags, give the operator the same Deployment (arguments, replicas,
    volumes, pull settings): one rendering each."""
    values = [value for value, _ in INSTALLER_SETTINGS]
    out = helm("template", "appstack", str(CHART), f"--namespace={NS}", KUBE, *values).stdout
    (charted,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    flags = [flag for _, flag in INSTALLER_SETTINGS]
    listed = subprocess.run(
        [sys.executable, "-m", "appstack", "manifests", "-o", "-", f"--namespace={NS}", *flags],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (generated,) = [d for d in yaml.safe_load_all(listed) if d and d["kind"] == "Deployment"]
    chart_pod, pod = (d["spec"]["template"]["spec"] for d in (charted, generated))
    assert charted["spec"]["replicas"] == generated["spec"]["replicas"] == 3
    args = pod["containers"][0]["args"]
    charted_args = [  # the chart names the Lease after the release, always
        a
        for a in chart_pod["containers"][0]["args"]
        if a != "--leader-election-id=appstack-operator"
    ]
    assert sorted(charted_args) == sorted(args)  # in another order
    for wanted in (
        "--log-level=debug",
        "--concurrency=8",
        "--sync-period=5m",
        "--allow-external-ips",
        "--external-deny-cidr=10.96.0.0/12",
        "--allow-external-cluster-names",
        "--enable-all-namespaces",
        "--graceful-shutdown-timeout=30s",
        "--no-metrics-secure",
        "--namespace=team-a",
    ):
        assert wanted in args  # each setting made a difference, on both sides alike
    for key in ("imagePullPolicy", "volumeMounts", "env"):
        assert chart_pod["containers"][0].get(key) == pod["containers"][0].get(key), key
    assert pod["containers"][0]["imagePullPolicy"] == "Always"
    assert chart_pod.get("imagePullSecrets") == pod.get("imagePullSecrets")
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert chart_pod.get("volumes") == pod.get("volumes")


def test_enable_all_namespaces_sets_the_flag_and_the_policies_alike(helm: Helm) -> None:
    """``enableAllNamespaces``: the operator's flag and the admission policies' "enabled"
    variable follow one value, so the two never disagree (the operator acting where its
    policies refuse it, or the other way round); the default asks for the label."""

    def rendered(*values: str) -> tuple[list[str], set[str]]:
        out = helm("template", "a", str(CHART), f"--namespace={NS}", KUBE, *values).stdout
        objects = [o for o in yaml.safe_load_all(out) if o]
        (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
        enabled = {
            v["expression"]
            for o in objects
            if o["kind"] == "ValidatingAdmissionPolicy"
            for v in o["spec"].get("variables") or []
            if v["name"] == "enabled"
        }
        return deployment["spec"]["template"]["spec"]["containers"][0]["args"], enabled

    args, enabled = rendered()
    assert "--enable-all-namespaces" not in args
    assert enabled == {enabled_check()}
    args, enabled = rendered("--set=enableAllNamespaces=true")
    assert "--enable-all-namespaces" in args
    assert enabled == {"true"}


def test_helm_install_test_upgrade_uninstall(helm: Helm, fresh_cluster: LocalCluster) -> None:
    kube = LightClient(config=KubeConfig.from_file(str(fresh_cluster.kubeconfig)))
    kube.create(Namespace(metadata=ObjectMeta(name="team-a", labels={ENABLED: "true"})))
    release = ("appstack", str(CHART), f"--namespace={NS}")

    helm("install", *release, "--create-namespace", "--wait", "--timeout=2m")
    deployment = kube.get(Deployment, "appstack-operator", namespace=NS)
    assert deployment.spec.replicas == 2
    for crd in crds.all_crds():
        assert kube.get(CustomResourceDefinition, crd["metadata"]["name"])
    assert kube.get(ClusterRole, f"appstack-operator-{NS}")  # named after the namespace

    tested = helm("test", "appstack", f"--namespace={NS}", "--timeout=2m")
    assert "Phase:          Succeeded" in tested.stdout, tested.stdout

    helm(
        "upgrade",
        *release,
        "--set=replicas=3",
        "--set=watchNamespaces={team-a}",
        "--set=image.tag=1.2.3",
        "--wait",
        "--timeout=2m",
    )
    deployment = kube.get(Deployment, "appstack-operator", namespace=NS)
    assert deployment.spec.replicas == 3
    (container,) = deployment.spec.template.spec.containers
    assert container.image == "appstack:1.2.3"
    assert "--namespace=team-a" in container.args
    assert kube.get(Role, f"appstack-operator-{NS}", namespace="team-a")  # the install's
    with pytest.raises(ApiError):
        kube.get(ClusterRole, f"appstack-operator-{NS}")  # namespaced now
    assert kube.get(ClusterRole, f"appstack-operator-metrics-auth-{NS}")  # the /metrics reviews

    helm("uninstall", "appstack", f"--namespace={NS}", "--wait", "--timeout=2m")
    for res, name, namespace in (
        (Deployment, "appstack-operator", NS),
        (ServiceAccount, "appstack-operator", NS),
        (Role, f"appstack-operator-{NS}", "team-a"),
    ):
        with pytest.raises(ApiError):
            kube.get(res, name, namespace=namespace)
    for crd in crds.all_crds():  # kept by helm uninstall (crd.keep)
        assert kube.get(CustomResourceDefinition, crd["metadata"]["name"])


SIDE_NS = "ops"


def _allowed(kube: LightClient, account: str, verb: str, resource: str, **attrs: str) -> bool:
    """Whether ServiceAccount ``ops/<account>`` may ``verb`` ``resource`` (a
    SubjectAccessReview: what the API server's authorizer answers, RBAC included)."""
    group, _, plural = resource.rpartition("/")
    review = SubjectAccessReview(
        spec=SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{SIDE_NS}:{account}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{SIDE_NS}"],
            resourceAttributes=ResourceAttributes(verb=verb, group=group, resource=plural, **attrs),
        )
    )
    status = kube.create(review).status
    return bool(status and status.allowed)


def test_two_releases_install_side_by_side_in_one_namespace(
    helm: Helm, fresh_cluster: LocalCluster
) -> None:
    """``helm install a`` and ``helm install b`` in one namespace, each watching its own
    namespace: both install (Helm refuses an object another release owns, so a single
    shared name would fail the second), each operator runs as its own ServiceAccount, which
    its own bindings grant its own watched namespace, its own Lease and the admission
    policies' marker there only; uninstalling ``a`` leaves every object of ``b``."""
    kube = LightClient(config=KubeConfig.from_file(str(fresh_cluster.kubeconfig)))
    for name in ("team-a", "team-b"):
        with contextlib.suppress(ApiError):  # team-a: made by the test above
            kube.create(Namespace(metadata=ObjectMeta(name=name, labels={ENABLED: "true"})))
    releases = {"a": "team-a", "b": "team-b"}
    for release, watched in releases.items():
        helm(
            "install",
            release,
            str(CHART),
            f"--namespace={SIDE_NS}",
            "--create-namespace",
            f"--set=watchNamespaces={{{watched}}}",
            "--set=crd.enable=false",  # the CRDs are there (kept by the test above's release)
            "--wait",
            "--timeout=2m",
        )
    manifests = {
        release: [
            o
            for o in yaml.safe_load_all(
                helm("get", "manifest", release, f"--namespace={SIDE_NS}").stdout
            )
            if o
        ]
        for release in releases
    }
    keys = {release: {_key(o) for o in objs} for release, objs in manifests.items()}
    assert not keys["a"] & keys["b"]
    for release, watched in releases.items():
        other = next(w for w in releases.values() if w != watched)
        operator = f"{release}-appstack-operator"
        deployment = kube.get(Deployment, operator, namespace=SIDE_NS)
        assert deployment.spec.template.spec.serviceAccountName == operator
        assert (
            f"--leader-election-id={operator}" in deployment.spec.template.spec.containers[0].args
        )
        assert deployment.spec.selector.matchLabels == {
            "app.kubernetes.io/name": "appstack",
            "app.kubernetes.io/instance": release,
        }
        assert kube.get(ServiceAccount, operator, namespace=SIDE_NS)
        # its own Lease, not the other release's
        for lease, allowed in ((operator, True), (f"{_other(release)}-appstack-operator", False)):
            got = _allowed(
                kube,
                operator,
                "update",
                "coordination.k8s.io/leases",
                namespace=SIDE_NS,
                name=lease,
            )
            assert got is allowed, (operator, lease)
        # its own watched namespace only — and the admission policies' marker with it
        for namespace, allowed in ((watched, True), (other, False)):
            assert (
                _allowed(kube, operator, "create", "apps/deployments", namespace=namespace)
                is allowed
            )
            marker = _allowed(
                kube, operator, MARKER, f"{MARKER_GROUP}/{MARKER_RESOURCE}", namespace=namespace
            )
            assert marker is allowed, (operator, namespace)

    helm("uninstall", "a", f"--namespace={SIDE_NS}", "--wait", "--timeout=2m")
    with pytest.raises(ApiError):
        kube.get(Deployment, "a-appstack-operator", namespace=SIDE_NS)
    for obj in manifests["b"]:  # every object of b is still there
        kind, namespace, name = _key(obj)
        resource = resource_registry.load(obj["apiVersion"], kind)
        assert resource is not None, kind
        if namespace:
            kube.get(resource, name, namespace=namespace)
        else:
            kube.get(resource, name)
    helm("uninstall", "b", f"--namespace={SIDE_NS}", "--wait", "--timeout=2m")


def _other(release: str) -> str:
    return "b" if release == "a" else "a"
