"""Component command lines, health URLs and kwok configuration are built correctly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from appstack_testbed import control_plane, kwok, versions

PORTS = {name: 21000 + i for i, name in enumerate(control_plane.PORT_NAMES)}


def _layout(tmp_path: Path) -> control_plane.Layout:
    return control_plane.Layout(directory=tmp_path / "c", bin_dir=tmp_path / "bin", ports=PORTS)


def test_every_component_runs_a_binary_from_the_cache_and_listens_on_loopback(
    tmp_path: Path,
) -> None:
    layout = _layout(tmp_path)
    for name in control_plane.ORDER:
        command = control_plane.command(layout, name)
        assert Path(command[0]).parent == tmp_path / "bin"
        assert control_plane.health_url(layout, name).split("//")[1].startswith("127.0.0.1:")
        assert not any("0.0.0.0" in arg for arg in command)  # noqa: S104


def test_controller_manager_and_scheduler_are_sized_for_benchmarks(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    kcm = control_plane.command(layout, "kube-controller-manager")
    assert f"--kube-api-qps={control_plane.CLIENT_QPS}" in kcm
    assert control_plane.CLIENT_QPS >= 500
    assert "--enable-hostpath-provisioner=true" in kcm
    scheduler_config = control_plane.config_files(layout)[
        layout.path("config", "kube-scheduler.yaml")
    ]
    connection = yaml.safe_load(scheduler_config)["clientConnection"]
    assert connection["qps"] == control_plane.CLIENT_QPS
    assert connection["burst"] == control_plane.CLIENT_BURST


def test_the_api_server_uses_rbac_and_service_account_keys(tmp_path: Path) -> None:
    apiserver = control_plane.command(_layout(tmp_path), "kube-apiserver")
    assert "--authorization-mode=Node,RBAC" in apiserver
    (plugins,) = [a for a in apiserver if a.startswith("--enable-admission-plugins=")]
    assert plugins.split("=", 1)[1].split(",") == [
        "OwnerReferencesPermissionEnforcement",
        "NodeRestriction",
        "PodNodeSelector",
        "PodTolerationRestriction",
    ]
    assert any(arg.startswith("--service-account-signing-key-file=") for arg in apiserver)
    assert f"--service-cluster-ip-range={control_plane.SERVICE_CIDR}" in apiserver
    assert f"--etcd-servers=http://127.0.0.1:{PORTS['etcd']}" in apiserver
    # webhooks called at their Service's endpoints: the host has no kube-proxy
    assert "--enable-aggregator-routing=true" in apiserver


def test_the_api_server_audits_writes_only_with_a_bounded_log(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    apiserver = control_plane.command(layout, "kube-apiserver")
    policy_file = layout.path("config", "audit-policy.yaml")
    assert f"--audit-policy-file={policy_file}" in apiserver
    assert f"--audit-log-path={layout.path(*control_plane.AUDIT_LOG)}" in apiserver
    assert any(arg.startswith("--audit-log-maxsize=") for arg in apiserver)
    assert any(arg.startswith("--audit-log-maxbackup=") for arg in apiserver)
    rules = yaml.safe_load(control_plane.config_files(layout)[policy_file])["rules"]
    writes = [r for r in rules if r["level"] == "Metadata"]
    assert writes == [{"level": "Metadata", "verbs": control_plane.WRITE_VERBS}]
    assert "get" not in writes[0]["verbs"]
    assert "watch" not in writes[0]["verbs"]
    assert rules[-1] == {"level": "None"}  # nothing else is recorded


def test_extra_args_are_appended_to_one_component_only(tmp_path: Path) -> None:
    layout = control_plane.Layout(
        directory=tmp_path, bin_dir=tmp_path, ports=PORTS, extra_args={"etcd": ["--x=1"]}
    )
    assert control_plane.command(layout, "etcd")[-1] == "--x=1"
    assert "--x=1" not in control_plane.command(layout, "kwok")


def test_kwok_config_has_options_and_the_stages() -> None:
    documents = list(yaml.safe_load_all(kwok.kwok_config()))
    assert documents[0]["kind"] == "KwokConfiguration"
    assert documents[0]["options"]["nodeLeaseParallelism"] > 0
    # Catch-up of a node's pods by LIST: Kubernetes 1.30 refuses WatchList streams
    # (tests/e2e/test_testbed_kwok_catchup.py).
    assert documents[0]["options"]["enablePodsOnNodeSyncStreamWatch"] is False
    stages = {d["metadata"]["name"]: d for d in documents[1:]}
    assert set(stages) == {
        "node-initialize",
        "node-heartbeat",
        "pod-ready",
        "pod-complete",
        "pod-complete-helm-test",
        "pod-delete",
        "pod-pull-fails",
        "pod-pull-backoff",
        "pod-crashes",
    }
    assert stages["pod-delete"]["spec"]["next"] == {"delete": True}
    # pod-ready leaves the pods the failure stages play alone.
    keys = [e["key"] for e in stages["pod-ready"]["spec"]["selector"]["matchExpressions"]]
    assert any('endswith(":pull-fails")' in k for k in keys)
    assert any('endswith(":crashes")' in k for k in keys)
    assert stages["node-heartbeat"]["spec"]["delay"]["durationMilliseconds"] > 0


def test_fake_nodes_have_distinct_pod_cidrs_large_enough_for_their_capacity() -> None:
    nodes = [kwok.fake_node(i, pods=5000) for i in range(3)]
    cidrs = [n["spec"]["podCIDR"] for n in nodes]
    assert len(set(cidrs)) == 3
    for node, cidr in zip(nodes, cidrs, strict=True):
        prefix = int(cidr.split("/")[1])
        assert 2 ** (32 - prefix) > 5000
        assert node["status"]["capacity"]["pods"] == "5000"
        assert node["metadata"]["annotations"][kwok.NODE_ANNOTATION] == "fake"


def test_free_ports_are_distinct_and_below_the_ephemeral_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPSTACK_CACHE", str(tmp_path))
    ports = control_plane.free_ports(control_plane.PORT_NAMES)
    assert set(ports) == set(control_plane.PORT_NAMES)
    assert len(set(ports.values())) == len(ports)
    assert all(20000 <= p < 30000 for p in ports.values())


def test_free_ports_never_hands_out_a_claimed_or_recorded_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel test workers ask at once: a port just handed out (not bound yet), or one a
    cluster's state records (its component stopped for a restart), is not given again."""
    monkeypatch.setenv("APPSTACK_CACHE", str(tmp_path))
    recorded = tmp_path / "clusters" / "other" / "state.json"
    recorded.parent.mkdir(parents=True)
    # every port but 200 of the range is recorded by a cluster or already claimed
    every = list(range(20000, 29999))
    recorded.write_text(json.dumps({"ports": {str(p): p for p in every[:5000]}}))
    first = control_plane.free_ports(tuple(f"a{i}" for i in range(4000)))
    assert not set(first.values()) & set(every[:5000])
    second = control_plane.free_ports(tuple(f"b{i}" for i in range(150)))
    assert not set(second.values()) & (set(first.values()) | set(every[:5000]))


def test_the_kubernetes_version_can_be_chosen_by_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(versions.K8S_VERSION_ENV, raising=False)
    assert versions.Toolchain().kubernetes == versions.KUBERNETES
    monkeypatch.setenv(versions.K8S_VERSION_ENV, "v1.30.14")
    older = versions.Toolchain()
    assert older.kubernetes == "v1.30.14"
    assert older.key != versions.Toolchain(kubernetes=versions.KUBERNETES).key  # own cache


def test_kwok_reads_the_config_file_written_and_a_new_config_changes_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = _layout(tmp_path)
    path = control_plane.kwok_config_path(layout)
    assert control_plane.config_files(layout)[path] == kwok.kwok_config()
    assert f"--config={path}" in control_plane.command(layout, "kwok")
    # LocalCluster.up() restarts a component whose command line differs from its own.
    before = control_plane.command(layout, "kwok")
    monkeypatch.setattr(kwok, "kwok_config", lambda: "options: {}\n")
    assert control_plane.command(layout, "kwok") != before
