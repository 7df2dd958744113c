"""The test bed's pytest plugin sharing one cluster between parallel workers
(appstack_testbed.pytest_plugin): the session that found it down stops it, once, and no one
else does — a worker, a nested pytest of another session, a run told to keep it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from appstack_testbed import pytest_plugin
from appstack_testbed.pytest_plugin import start_or_join, stop_if_started


class FakeCluster:
    """What the plugin asks of a LocalCluster: up, down, is_up and its directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.running = False
        self.starts = self.stops = 0

    def is_up(self) -> bool:
        return self.running

    def up(self) -> None:
        if not self.running:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.running, self.starts = True, self.starts + 1

    def down(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self.running, self.stops = False, self.stops + 1


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    monkeypatch.delenv("APPSTACK_KEEP_CLUSTER", raising=False)
    return FakeCluster(tmp_path / "clusters" / "appstack-test")


def test_the_workers_of_a_session_share_it_and_the_session_stops_it_once(
    cluster: FakeCluster,
) -> None:
    for _worker in range(3):
        start_or_join(cluster, "session-1")
    assert cluster.starts == 1
    assert not stop_if_started(cluster, "session-2")
    assert cluster.running
    assert stop_if_started(cluster, "session-1")
    assert (cluster.starts, cluster.stops, cluster.running) == (1, 1, False)
    assert not stop_if_started(cluster, "session-1")


def test_a_cluster_that_was_up_before_the_session_is_left_running(cluster: FakeCluster) -> None:
    cluster.up()
    start_or_join(cluster, "session-1")
    assert not stop_if_started(cluster, "session-1")
    assert cluster.running


def test_the_second_phase_stops_what_the_first_kept(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make test: the parallel phase keeps the cluster (APPSTACK_KEEP_CLUSTER=1), the serial
    phase, the same session, joins it and stops it."""
    monkeypatch.setenv("APPSTACK_KEEP_CLUSTER", "1")
    start_or_join(cluster, "make-1")
    assert not stop_if_started(cluster, "make-1")
    monkeypatch.delenv("APPSTACK_KEEP_CLUSTER")
    start_or_join(cluster, "make-1")
    assert stop_if_started(cluster, "make-1")
    assert (cluster.starts, cluster.stops) == (1, 1)


def test_a_session_id_is_set_before_the_workers_start(monkeypatch: pytest.MonkeyPatch) -> None:
    class Config:  # the controller's (or a lone process's) config: no workerinput
        pass

    monkeypatch.delenv(pytest_plugin.SESSION_ENV, raising=False)
    pytest_plugin.pytest_configure(Config())  # type: ignore[arg-type]
    first = os.environ[pytest_plugin.SESSION_ENV]
    pytest_plugin.pytest_configure(Config())  # type: ignore[arg-type]
    assert first
    assert os.environ[pytest_plugin.SESSION_ENV] == first
