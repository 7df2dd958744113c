"""`appstack cluster` and LocalCluster: idempotent start, status, kubeconfig, failure reports."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from click.testing import CliRunner
from lightkube import Client
from lightkube.resources.core_v1 import Node

from appstack.cli import main
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.process import ComponentError
from appstack_testbed.pytest_plugin import ClusterHandle

# Serial (alone on the cluster): it kills and restarts the session cluster's scheduler and times
# `up`.
pytestmark = pytest.mark.serial


def test_up_on_a_running_cluster_starts_nothing_and_returns_quickly(
    kube_cluster: ClusterHandle,
) -> None:
    local = kube_cluster.require_local()
    pids_before = {s.name: s.pid for s in local.status()}

    started = time.monotonic()
    local.up()

    assert time.monotonic() - started < 10
    assert {s.name: s.pid for s in local.status()} == pids_before


def test_a_crashed_component_is_restarted_by_up(kube_cluster: ClusterHandle, kube: Client) -> None:
    local = kube_cluster.require_local()
    local.stop("kube-scheduler", sig=signal.SIGKILL)
    assert {s.name: s.state for s in local.status()}["kube-scheduler"] == "stopped"

    local.up()

    assert all(s.healthy for s in local.status())
    assert len(list(kube.list(Node))) >= 2


def test_up_restarts_a_component_started_with_other_flags(kube_cluster: ClusterHandle) -> None:
    """A cluster left running by an older appstack (other flags) is brought up to date."""
    local = kube_cluster.require_local()
    before = {s.name: s.pid for s in local.status()}
    changed = LocalCluster(
        local.name, extra_args={"kube-scheduler": ["--v=2"]}, printer=lambda _m: None
    )
    try:
        changed.up()
        after = {s.name: s.pid for s in local.status()}
        assert after["kube-scheduler"] != before["kube-scheduler"]
        assert "--v=2" in (local.process("kube-scheduler").args() or [])
        assert {n: p for n, p in after.items() if n != "kube-scheduler"} == {
            n: p for n, p in before.items() if n != "kube-scheduler"
        }
    finally:
        local.up()  # back to this code's flags
    assert "--v=2" not in (local.process("kube-scheduler").args() or [])
    assert all(s.healthy for s in local.status())


def test_the_cli_reports_status_and_the_kubeconfig_path(kube_cluster: ClusterHandle) -> None:
    local = kube_cluster.require_local()
    runner = CliRunner()

    status = runner.invoke(main, ["cluster", "status", "--name", local.name])
    assert status.exit_code == 0, status.output
    for component in ("etcd", "kube-apiserver", "kube-controller-manager", "kwok"):
        assert f"{component}" in status.output
    assert "healthy" in status.output

    path = runner.invoke(main, ["cluster", "kubeconfig", "--name", local.name])
    assert path.exit_code == 0
    assert path.output.strip() == str(local.kubeconfig)
    assert local.kubeconfig.is_file()


def test_status_of_a_cluster_that_does_not_exist_fails() -> None:
    result = CliRunner().invoke(main, ["cluster", "status", "--name", f"nope-{uuid.uuid4().hex}"])
    assert result.exit_code == 1
    assert "stopped" in result.output


def test_a_component_that_fails_to_start_reports_its_log_tail(
    kube_cluster: ClusterHandle,
) -> None:
    kube_cluster.require_local()  # needs the locally built binaries
    broken = LocalCluster(
        f"broken-{uuid.uuid4().hex[:6]}",
        extra_args={"etcd": ["--no-such-flag"]},
        printer=lambda _message: None,
    )
    try:
        with pytest.raises(ComponentError) as caught:
            broken.up()
    finally:
        broken.down()

    assert caught.value.component == "etcd"
    message = str(caught.value)
    assert "exited during start-up" in message
    assert "last lines of the etcd log" in message
    assert "no-such-flag" in caught.value.log_tail
    assert not broken.directory.exists()
