"""The chart's ``sharding.enabled`` with the real ``helm`` (``helm template``, offline; the
test bed's binary, built if missing as tests/unit/scaffold/test_chart.py does): release
``appstack`` renders exactly the objects ``appstack manifests --shards N`` writes (the
same functions make both; cluster-wide and with watched namespaces), and with default
values exactly the unsharded install's; another release's sharded objects follow its
names; the values schema refuses a sharded install without leader election or with fewer
than two replicas (and the template says why when the schema is skipped)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.manifests.chart_labels import with_chart_labels
from appstack.manifests.install import InstallOptions, install
from tests.unit.manifests.helm_chart import CHART, KUBE, NS, SHARDED, helm_template, run_helm

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
    release's), no CRDs (in crds/), Helm's standard labels."""
    objects = install(options).objects()
    skipped = {"Namespace", "CustomResourceDefinition"}
    return sorted((with_chart_labels(o) for o in objects if o["kind"] not in skipped), key=_key)


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
    ],
    ids=["defaults", "sharded", "sharded-3", "sharded-watching", "watching"],
)
def test_the_chart_renders_the_objects_of_appstack_manifests(
    helm: Path, values: tuple[str, ...], options: InstallOptions
) -> None:
    assert template(helm, "appstack", *values) == generated(options)


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
