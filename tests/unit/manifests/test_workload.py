"""The operator's Deployment as `appstack manifests` writes it (pure): the installer's
settings beyond namespace, image and sync period (:class:`OperatorFlags`, the chart's values
of the same names; the chart and the flags are compared by tests/e2e/test_helm.py)."""

from __future__ import annotations

from click.testing import CliRunner

from appstack.cli import main
from appstack.manifests import workload


def test_the_defaults_add_nothing_the_chart_does_not() -> None:
    default = workload.deployment()
    container = default["spec"]["template"]["spec"]["containers"][0]
    assert "--leader-elect" in container["args"]
    assert not any(a.startswith(("--allow-", "--external-", "--no-")) for a in container["args"])
    assert "imagePullPolicy" not in container
    assert "imagePullSecrets" not in default["spec"]["template"]["spec"]
    # the image backups to an object store run: the operator's own
    assert {"name": "APPSTACK_BACKUP_IMAGE", "value": workload.IMAGE} in container["env"]


def test_each_flag_lands_where_the_charts_value_does() -> None:
    flags = workload.OperatorFlags(
        leader_election=False,
        metrics_secure=False,
        allow_external_ips=True,
        external_deny_cidrs=("10.0.0.0/8", "192.168.0.0/16"),
        allow_external_cluster_names=True,
        extra_args=("--lease-duration=30s",),
        image_pull_secrets=("regcred",),
        image_pull_policy="Always",
    )
    made = workload.deployment("registry.example.com/appstack:1", replicas=1, flags=flags)
    pod = made["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert "--leader-elect" not in args
    assert args[-6:] == [
        "--no-metrics-secure",
        "--allow-external-ips",
        "--external-deny-cidr=10.0.0.0/8",
        "--external-deny-cidr=192.168.0.0/16",
        "--allow-external-cluster-names",
        "--lease-duration=30s",
    ]
    assert pod["containers"][0]["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["APPSTACK_BACKUP_IMAGE"] == "registry.example.com/appstack:1"


def test_two_replicas_without_leader_election_are_refused() -> None:
    result = CliRunner().invoke(main, ["manifests", "-o", "-", "--no-leader-election"])
    assert result.exit_code == 2
    assert "--no-leader-election runs one replica only: add --replicas=1" in result.output
    single = CliRunner().invoke(
        main, ["manifests", "-o", "-", "--no-leader-election", "--replicas=1"]
    )
    assert single.exit_code == 0
    assert "--leader-elect" not in single.output
