"""The chart's ``sharding.enabled`` with the real ``helm`` (``helm template``, offline; the
test bed's binary, built if missing as tests/unit/scaffold/test_chart.py does): release
``appstack`` renders exactly the objects ``appstack manifests --shards N`` writes (the
same functions make both; cluster-wide and with watched namespaces), and with default
values exactly the unsharded install's (but for the labels, the pods' selector and the
arguments at their defaults: ``helm_chart.alike``); another release's sharded objects follow its
names; the values schema refuses a sharded install without leader election or with fewer
than two replicas (and the template says why when the schema is skipped)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.manifests.install import InstallOptions, install
from tests.unit.manifests.helm_chart import (
    CHART,
    KUBE,
    NS,
    SHARDED,
    alike,
    helm_template,
    run_helm,
)

Obj = dict[str, Any]


def _helm(helm: Path, release: str, *values: str) -> subprocess.CompletedProcess[str]:
    return helm_template(helm, release, *values, tests=False)


def template(helm: Path, release: str, *values: str) -> list[Obj]:
    proc = _helm(helm, release, *values)
    assert proc.returncode == 0, proc.stderr
    return sorted((o for o in yaml.safe_load_all(proc.stdout) if o), key=_key)


def refused(helm: Path, *values: str) -> str:
    proc = _helm(helm, "appstack", *values)
    assert proc.returncode != 0, f"accepted: {values}"
    return proc.stderr


def _key(obj: Obj) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def generated(options: InstallOptions) -> list[Obj]:
    """``appstack manifests`` with ``options``, as the chart renders it: no Namespace (the
    release's), compared :func:`~tests.unit.manifests.helm_chart.alike`."""
    objects = install(options).objects()
    return sorted((alike(o) for o in objects if o["kind"] != "Namespace"), key=_key)


@pytest.mark.parametrize(
    ("values", "options"),
    [
        ((), InstallOptions()),
        ((SHARDED,), InstallOptions(shards=2)),
        ((SHARDED, "--set=replicas=3"), InstallOptions(shards=3)),
        (
            (SHARDED, "--set=watchNamespaces={team-a,team-b}"),
            InstallOptions(shards=2, watch_namespaces=("team-a", "team-b")),
        ),
        (("--set=watchNamespaces={team-a}",), InstallOptions(watch_namespaces=("team-a",))),
        (
            (SHARDED, "--set=autoscaling.enabled=true", "--set=autoscaling.maxReplicas=6"),
            InstallOptions(shards=2, autoscale=(2, 6)),
        ),
    ],
    ids=["defaults", "sharded", "sharded-3", "sharded-watching", "watching", "autoscaled"],
)
def test_the_chart_renders_the_objects_of_appstack_manifests(
    helm: Path, values: tuple[str, ...], options: InstallOptions
) -> None:
    assert [alike(o) for o in template(helm, "appstack", *values)] == generated(options)


def test_sharding_changes_only_what_a_sharded_install_needs(helm: Path) -> None:
    """Sharded, the chart differs from its defaults exactly where ``--shards`` differs from
    the unsharded install: the Deployment's flag, the operator's roles, the kinds policy,
    and the shard-labels policy with its binding."""
    plain = {_key(o): o for o in template(helm, "appstack")}
    sharded = {_key(o): o for o in template(helm, "appstack", SHARDED)}
    changed = {key for key in plain if plain[key] != sharded.get(key)}
    added = set(sharded) - set(plain)
    assert changed == {
        ("Deployment", NS, "appstack-operator"),
        ("ClusterRole", "", f"appstack-operator-{NS}"),
        ("Role", NS, "appstack-operator-leader-election"),
        ("ValidatingAdmissionPolicy", "", f"appstack-operator-kinds-{NS}"),
    }
    assert added == {
        ("ValidatingAdmissionPolicy", "", f"appstack-shard-labels-{NS}"),
        ("ValidatingAdmissionPolicyBinding", "", f"appstack-shard-labels-{NS}"),
    }
    (container,) = sharded["Deployment", NS, "appstack-operator"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert "--sharding" in container["args"]


def test_another_release_shards_under_its_own_names(helm: Path) -> None:
    objects = template(helm, "a", SHARDED, "--set=watchNamespaces={team-a}")
    kinds = sorted(o["kind"] for o in objects)
    sharded = generated(InstallOptions(shards=2, watch_namespaces=("team-a",)))
    assert kinds == sorted(o["kind"] for o in sharded)
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition":  # named by their kinds
            continue
        assert obj["metadata"]["name"].startswith("a-appstack-"), _key(obj)
        if obj["kind"] == "ValidatingAdmissionPolicyBinding":
            assert obj["spec"]["policyName"] == obj["metadata"]["name"]
    (deployment,) = (o for o in objects if o["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    # its shard Leases are labelled with its own election Lease: apart from another release's
    assert {"--sharding", "--leader-election-id=a-appstack-operator"} <= set(args)


def test_helm_lint_strict_passes_sharded(helm: Path) -> None:
    for values in ((SHARDED,), (SHARDED, "--set=replicas=4", "--set=watchNamespaces={team-a}")):
        proc = run_helm(helm, "lint", "--strict", str(CHART), KUBE, *values)
        assert proc.returncode == 0, (values, proc.stdout, proc.stderr)


def test_a_sharded_install_without_its_coordinator_or_its_shards_is_refused(
    helm: Path,
) -> None:
    no_election = (SHARDED, "--set=leaderElection.enabled=false")
    assert "/leaderElection/enabled" in refused(helm, *no_election)
    for replicas in ("1", "0"):
        assert "/replicas" in refused(helm, SHARDED, f"--set=replicas={replicas}")
    # the schema skipped, the template refuses it too, saying why
    skipped = refused(helm, "--skip-schema-validation", SHARDED, "--set=replicas=1")
    assert "sharding.enabled=true needs leaderElection.enabled=true" in skipped
    # unsharded, one replica without leader election is still an install
    single = template(helm, "appstack", "--set=leaderElection.enabled=false", "--set=replicas=1")
    assert [o["spec"]["replicas"] for o in single if o["kind"] == "Deployment"] == [1]


AUTOSCALED = (SHARDED, "--set=autoscaling.enabled=true")


def test_autoscaled_a_horizontal_pod_autoscaler_sets_the_shards_and_the_deployment_leaves_them(
    helm: Path,
) -> None:
    """``autoscaling.enabled`` (sharded): the chart adds a HorizontalPodAutoscaler of the
    operator's Deployment — between its min and max, at the CPU target or the metrics given,
    at the pace of its behavior — and the Deployment has no replicas of its own (an
    upgrade leaves the autoscaler's choice); nothing else changes."""
    sharded = {_key(o): o for o in template(helm, "appstack", SHARDED)}
    scaled = {_key(o): o for o in template(helm, "appstack", *AUTOSCALED)}
    assert set(scaled) - set(sharded) == {("HorizontalPodAutoscaler", NS, "appstack-operator")}
    changed = {key for key in sharded if sharded[key] != scaled[key]}
    assert changed == {("Deployment", NS, "appstack-operator")}
    deployment = scaled["Deployment", NS, "appstack-operator"]
    assert "replicas" not in deployment["spec"]
    before = dict(sharded["Deployment", NS, "appstack-operator"]["spec"])
    assert before.pop("replicas") == 2
    assert deployment["spec"] == before
    hpa = scaled["HorizontalPodAutoscaler", NS, "appstack-operator"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    spec = hpa["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "appstack-operator",
    }
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 4)
    cpu = {"type": "Utilization", "averageUtilization": 80}
    assert spec["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": cpu}}]
    assert spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 300
    assert spec["behavior"]["scaleUp"]["policies"] == [
        {"type": "Pods", "value": 1, "periodSeconds": 60}
    ]
    assert hpa["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"

    # another release's autoscaler scales its own Deployment; custom metrics replace the CPU
    custom = [
        *AUTOSCALED,
        "--set=autoscaling.minReplicas=3",
        "--set=autoscaling.maxReplicas=6",
        "--set=autoscaling.metrics[0].type=Pods",
        "--set=autoscaling.metrics[0].pods.metric.name=workqueue_depth",
        "--set=autoscaling.metrics[0].pods.target.type=AverageValue",
        "--set=autoscaling.metrics[0].pods.target.averageValue=30",
    ]
    (other,) = (o for o in template(helm, "b", *custom) if o["kind"] == "HorizontalPodAutoscaler")
    assert other["metadata"]["name"] == other["spec"]["scaleTargetRef"]["name"]
    assert other["metadata"]["name"] == "b-appstack-operator"
    assert (other["spec"]["minReplicas"], other["spec"]["maxReplicas"]) == (3, 6)
    assert [m["type"] for m in other["spec"]["metrics"]] == ["Pods"]
    assert other["spec"]["metrics"][0]["pods"]["metric"]["name"] == "workqueue_depth"
    proc = run_helm(helm, "lint", "--strict", str(CHART), KUBE, *custom)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)


def test_autoscaling_an_unsharded_operator_or_below_two_shards_is_refused(helm: Path) -> None:
    """An autoscaler of an unsharded operator would only add standbys: refused, by the
    schema and (schema skipped) by the template, saying why; so are fewer than two shards
    and a maximum below the minimum. ``replicas`` no longer counts once autoscaled."""
    alone = "--set=autoscaling.enabled=true"
    assert "/sharding/enabled" in refused(helm, alone)
    skipped = refused(helm, "--skip-schema-validation", alone)
    assert "autoscaling.enabled=true needs sharding.enabled=true" in skipped
    assert "/autoscaling/minReplicas" in refused(
        helm, *AUTOSCALED, "--set=autoscaling.minReplicas=1"
    )
    upside_down = ("--set=autoscaling.minReplicas=5", "--set=autoscaling.maxReplicas=3")
    assert "maxReplicas is below autoscaling.minReplicas" in refused(
        helm, *AUTOSCALED, *upside_down
    )
    kinds = [o["kind"] for o in template(helm, "appstack", *AUTOSCALED, "--set=replicas=1")]
    assert "HorizontalPodAutoscaler" in kinds
