"""The chart's names, ServiceAccount and pod values with the real ``helm`` (``helm lint
--strict`` and ``helm template``, offline; the binary the test bed builds for
tests/e2e/test_helm.py, skipped until it is built): the default release keeps the generated
install's names; every object's name follows ``fullnameOverride`` / ``nameOverride``; every
reference to the ServiceAccount follows ``serviceAccount.*``; pull secrets, pull policy,
annotations and labels reach the pods; two releases in one namespace collide on no object,
cluster-scoped ones included (the second with ``crd.enable=false``: the CRDs are the
first's)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.manifests import chart
from appstack.manifests.install import install
from appstack.manifests.rbac import NAME
from tests.unit.manifests.helm_chart import CHART, KUBE, NS, helm_template, run_helm

CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "FlowSchema",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
#: Every optional object on, so that every name is rendered.
EVERYTHING = (
    "--set=metrics.serviceMonitor.enabled=true",
    "--set=metrics.prometheusRule.enabled=true",
    "--set=metrics.grafanaDashboard.enabled=true",
)
Obj = dict[str, Any]
Key = tuple[str, str, str]


def template(helm: Path, release: str, *values: str, namespace: str = NS) -> list[Obj]:
    proc = helm_template(helm, release, *values, namespace=namespace)
    assert proc.returncode == 0, proc.stderr
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


def refused(helm: Path, *values: str) -> str:
    proc = helm_template(helm, "a", *values)
    assert proc.returncode != 0, f"accepted: {values}"
    return proc.stderr


def key(obj: Obj, namespace: str = NS) -> Key:
    scoped = obj["kind"] in CLUSTER_SCOPED
    return obj["kind"], "" if scoped else obj["metadata"].get("namespace", namespace), name(obj)


def name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def one(objects: list[Obj], kind: str) -> Obj:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def pod_of(objects: list[Obj]) -> Obj:
    return dict(one(objects, "Deployment")["spec"]["template"])


def account_references(objects: list[Obj], namespace: str = NS) -> Iterator[str]:
    """Every name by which the release refers to its operator's ServiceAccount."""
    for obj in objects:
        kind = obj["kind"]
        if kind == "ServiceAccount":
            yield name(obj)
        if kind == "Deployment":
            yield obj["spec"]["template"]["spec"]["serviceAccountName"]
        for subject in obj.get("subjects") or []:
            if subject["kind"] == "ServiceAccount" and subject["namespace"] == namespace:
                yield subject["name"]
        if kind == "FlowSchema":
            for rule in obj["spec"]["rules"]:
                for subject in rule["subjects"]:
                    yield subject["serviceAccount"]["name"]


def lease_names(objects: list[Obj]) -> tuple[set[str], list[str]]:
    """The Lease the leader-election Role grants by name, and the operator's flag for it."""
    granted = {
        lease
        for o in objects
        if o["kind"] == "Role"
        for rule in o["rules"]
        for lease in rule.get("resourceNames") or []
    }
    (container,) = pod_of(objects)["spec"]["containers"]
    flags = [a for a in container["args"] if a.startswith("--leader-election-id=")]
    return granted, flags


def test_the_names_in_the_template_text_all_follow_the_helpers() -> None:
    """No generated name, and no reference to the ServiceAccount, is left as generated."""
    for path, text in chart.render().items():
        if not path.startswith("templates/"):
            continue
        for line in text.split("\n"):
            stripped = line.strip()
            assert not re.search(rf"\b{NAME}-[a-z-]*-?\{{\{{ \$?\.Release", line), (path, line)
            if stripped.startswith(("name:", "- name:", "serviceAccountName:", "policyName:")):
                assert not stripped.endswith(f": {NAME}"), (path, line)


def test_helm_lint_strict_passes_with_each_value_set(helm: Path) -> None:
    for values in (
        (),
        ("--set=nameOverride=stack",),
        ("--set=fullnameOverride=team-a",),
        ("--set=image.pullPolicy=Always",),
        ("--set=imagePullSecrets[0].name=regcred",),
        ("--set=serviceAccount.create=false", "--set=serviceAccount.name=ops"),
        ("--set=serviceAccount.name=ops", "--set=serviceAccount.annotations.role=arn"),
        ("--set=podAnnotations.team=a", "--set=podLabels.team=a"),
        ("--set=watchNamespaces={team-a}", *EVERYTHING),
        (
            "--set=commonLabels.team=a",
            "--set=revisionHistoryLimit=3",
            "--set=image.digest=sha256:" + "ab" * 32,
            "--set=extraEnv[0].name=A",
            "--set=extraVolumes[0].name=scratch",
            "--set=extraVolumeMounts[0].name=scratch",
            "--set=extraVolumeMounts[0].mountPath=/scratch",
            "--set=livenessProbe.failureThreshold=6",
            "--set=topologySpreadConstraints[0].maxSkew=1",
            "--set=topologySpreadConstraints[0].topologyKey=zone",
            "--set=topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
            *EVERYTHING,
        ),
    ):
        proc = run_helm(helm, "lint", "--strict", str(CHART), KUBE, *values)
        assert proc.returncode == 0, (values, proc.stdout, proc.stderr)


def test_the_default_release_keeps_every_name_of_the_generated_install(helm: Path) -> None:
    rendered = {key(o) for o in template(helm, "appstack", "--skip-tests")}
    generated = {key(o) for o in install().objects() if o["kind"] != "Namespace"}
    assert rendered == generated
    objects = template(helm, "appstack")
    assert set(account_references(objects)) == {NAME}
    assert lease_names(objects) == ({NAME}, [f"--leader-election-id={NAME}"])
    pod = pod_of(objects)
    assert "annotations" not in pod["metadata"]
    assert "imagePullSecrets" not in pod["spec"]
    assert "imagePullPolicy" not in pod["spec"]["containers"][0]


def test_pull_secrets_and_pull_policy_reach_the_operator_and_the_test_pod(helm: Path) -> None:
    objects = template(
        helm,
        "a",
        "--set=imagePullSecrets[0].name=regcred",
        "--set=imagePullSecrets[1].name=mirror",
        "--set=image.pullPolicy=Always",
        "--set=image.repository=registry.example.com/appstack",
    )
    test_pod = one(objects, "Pod")
    for spec in (pod_of(objects)["spec"], test_pod["spec"]):
        assert spec["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]
        (container,) = spec["containers"]
        assert container["imagePullPolicy"] == "Always"
        assert container["image"].startswith("registry.example.com/appstack:")
    assert "/image/pullPolicy" in refused(helm, "--set=image.pullPolicy=Sometimes")
    for wrong in ("--set=imagePullSecrets[0].name=Reg_Cred", "--set=imagePullSecrets[0].nam=x"):
        assert "/imagePullSecrets/0" in refused(helm, wrong)


def test_pod_annotations_and_labels_go_on_the_operator_pods_only(helm: Path) -> None:
    objects = template(
        helm,
        "a",
        "--set-string=podAnnotations.prometheus\\.io/scrape=false",
        "--set=podLabels.team=platform",
    )
    meta = pod_of(objects)["metadata"]
    assert meta["annotations"] == {"prometheus.io/scrape": "false"}
    assert meta["labels"]["team"] == "platform"
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"].items() <= meta["labels"].items()
    assert "team" not in deployment["metadata"]["labels"]
    assert "team" not in deployment["spec"]["selector"]["matchLabels"]
    # the chart's own labels (the selector's among them) cannot be overridden
    for label in ("app.kubernetes.io/instance", "app.kubernetes.io/name", "helm.sh/chart"):
        escaped = label.replace(".", "\\.")
        assert label in refused(helm, f"--set=podLabels.{escaped}=x")


def test_the_service_account_is_created_or_named_and_every_reference_follows(
    helm: Path,
) -> None:
    objects = template(helm, "a", "--set=serviceAccount.annotations.iam\\.example/role=ops")
    account = one(objects, "ServiceAccount")
    assert name(account) == "a-appstack-operator"
    assert account["metadata"]["annotations"] == {"iam.example/role": "ops"}
    assert set(account_references(objects)) == {"a-appstack-operator"}

    objects = template(helm, "a", "--set=serviceAccount.name=ops")
    assert name(one(objects, "ServiceAccount")) == "ops"
    assert set(account_references(objects)) == {"ops"}
    assert name(one(objects, "Deployment")) == "a-appstack-operator"  # only the account

    # not created: an existing one, named, which the bindings and the pod use
    objects = template(
        helm, "a", "--set=serviceAccount.create=false", "--set=serviceAccount.name=ops"
    )
    assert not [o for o in objects if o["kind"] == "ServiceAccount"]
    references = list(account_references(objects))
    assert set(references) == {"ops"}
    assert len(references) >= 4  # the pod, the ClusterRoleBinding, the Lease's, the FlowSchema's
    # ... and required then: the schema refuses an empty one
    for values in (
        ("--set=serviceAccount.create=false",),
        ("--set=serviceAccount.create=false", "--set=serviceAccount.name="),
    ):
        assert "/serviceAccount" in refused(helm, *values)
    assert "serviceAccount" in refused(helm, "--set=serviceAccount.name=Not_A_Name")


@pytest.mark.parametrize(
    ("release", "values", "fullname"),
    [
        ("a", ("--set=fullnameOverride=ops",), "ops"),
        ("a", ("--set=nameOverride=stack",), "a-stack"),
        ("appstack-prod", (), "appstack-prod"),  # the release names the chart: not repeated
        ("a", (), "a-appstack"),
    ],
)
def test_every_object_name_follows_the_fullname(
    helm: Path, release: str, values: tuple[str, ...], fullname: str
) -> None:
    for watched in ((), ("--set=watchNamespaces={team-a}",)):
        objects = template(helm, release, *values, *watched, *EVERYTHING)
        for obj in objects:
            if obj["kind"] == "CustomResourceDefinition":  # named by their kinds
                continue
            assert name(obj).startswith(f"{fullname}-"), (obj["kind"], name(obj))
            if obj["kind"] in CLUSTER_SCOPED:
                assert name(obj).endswith(f"-{NS}"), name(obj)
            if obj["kind"] == "ValidatingAdmissionPolicyBinding":
                assert obj["spec"]["policyName"] == name(obj)
            if "roleRef" in obj:  # the reader's binding to Prometheus: named after it too
                assert obj["roleRef"]["name"] == name(obj).replace("-prometheus", ""), name(obj)
        assert set(account_references(objects)) == {f"{fullname}-operator"}
        assert lease_names(objects) == (
            {f"{fullname}-operator"},
            [f"--leader-election-id={fullname}-operator"],
        )
        service = one(objects, "Service")
        url = one(objects, "Pod")["spec"]["containers"][0]["env"][0]["value"]
        assert f"//{name(service)}.{NS}.svc:" in url
        rule = one(objects, "PrometheusRule")
        exprs = " ".join(r["expr"] for g in rule["spec"]["groups"] for r in g["rules"])
        assert f'leader_election_master_status{{name="{fullname}-operator"}}' in exprs
    assert "fullnameOverride" in refused(helm, "--set=fullnameOverride=" + "x" * 47)
    assert "nameOverride" in refused(helm, "--set=nameOverride=Stack")


def test_two_releases_in_one_namespace_collide_on_nothing(helm: Path) -> None:
    """``helm install a`` and ``helm install b`` in one namespace, each watching its own
    namespaces (and both cluster-wide, and beside release ``appstack``): no two objects of
    the same kind and name (in the same namespace), cluster-scoped ones included; each
    release binds, schedules and names in its FlowSchema its own ServiceAccount, elects on
    its own Lease and selects only its own pods."""
    crds = "--set=crd.enable=false"  # the first release's CRDs serve the second
    pairs = [
        (("a", "--set=watchNamespaces={team-a}"), ("b", "--set=watchNamespaces={team-b}", crds)),
        (
            ("a", "--set=watchNamespaces={team-a,shared}"),
            ("b", "--set=watchNamespaces={shared}", crds),
        ),
        (("a",), ("b", crds)),
        (("appstack",), ("b", f"--set=watchNamespaces={{{NS}}}", crds)),
    ]
    for first, second in pairs:
        releases = {args[0]: template(helm, *args, *EVERYTHING) for args in (first, second)}
        (one_release, objects_one), (other, objects_other) = releases.items()
        shared = {key(o) for o in objects_one} & {key(o) for o in objects_other}
        assert not shared, (first, second, shared)
        accounts = [set(account_references(objs)) for objs in releases.values()]
        assert len(accounts[0]) == len(accounts[1]) == 1
        assert accounts[0] != accounts[1]
        leases = [lease_names(objs)[0] for objs in releases.values()]
        assert leases[0] != leases[1]
        for release, objects in releases.items():
            selectors = [
                one(objects, "Deployment")["spec"]["selector"]["matchLabels"],
                one(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                one(objects, "Service")["spec"]["selector"],
                one(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"],
            ]
            operator = one(objects, "Deployment")["metadata"]["name"]
            assert operator == (NAME if release == "appstack" else f"{release}-appstack-operator")
            for selector in selectors:
                assert selector == {
                    "app.kubernetes.io/name": "appstack",
                    "app.kubernetes.io/instance": release,
                }
            labels = pod_of(objects)["metadata"]["labels"]
            assert labels["app.kubernetes.io/instance"] == release
        assert {one_release, other} == set(releases)


def test_helm_tests_pod_is_there_and_no_selector_of_the_operators_pods_takes_it(
    helm: Path,
) -> None:
    """appstack's pods carry no label beyond the chart's selector: helm test's Pod is
    labelled ``<name>-test``, which neither the Deployment's selector (its ReplicaSet would
    adopt the Pod) nor the metrics Service's matches."""
    objects = template(helm, "appstack")
    pod = one(objects, "Pod")
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "appstack-test"
    assert labels["app.kubernetes.io/instance"] == "appstack"
    selectors = [
        one(objects, "Deployment")["spec"]["selector"]["matchLabels"],
        one(objects, "Service")["spec"]["selector"],
    ]
    assert not [s for s in selectors if s.items() <= labels.items()]
