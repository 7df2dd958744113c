"""A local cluster's state file is replaced whole, never rewritten in place: a parallel test
worker reads it without the cluster's lock (``is_up`` while another worker starts the
cluster), and a file truncated for its rewrite read empty — every test of that worker's
phase errored at setup (a ``.ci/run`` of the 1.30 phase: 529 errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from appstack_testbed.cluster import LocalCluster


def test_a_reader_of_the_old_state_file_keeps_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPSTACK_CACHE", str(tmp_path))
    cluster = LocalCluster("state")
    cluster.directory.mkdir(parents=True)
    state = cluster.directory / "state.json"
    cluster._write_state({"ports": {"etcd": 1}, "nodes": 1})
    with state.open() as before:  # a reader that opened the file before the next write
        cluster._write_state({"ports": {"etcd": 2}, "nodes": 1, "real_nodes": 1})
        assert json.loads(before.read()) == {"ports": {"etcd": 1}, "nodes": 1}
    assert json.loads(state.read_text())["real_nodes"] == 1
    assert sorted(p.name for p in cluster.directory.iterdir()) == ["state.json"]
