"""The seed's own controller as a peer of bench/peers.py (``bench/peerbench/seed.py``): its
binary and CRD taken by path (arguments, else environment), the CRD recognised as the
seed's, the ``kosmos.io`` AppServices the bench creates for it, how it is started, and the
labels: no peer but the seed's own controller is called the seed."""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

BENCH = REPO_ROOT / "bench"
sys.path.insert(0, str(BENCH))
from peerbench import seed, waves  # noqa: E402 - from bench/
from peerbench.operators import REIMPLEMENTATION, command, peers  # noqa: E402

_spec = importlib.util.spec_from_file_location("peers_cli", BENCH / "peers.py")
assert _spec is not None
assert _spec.loader is not None
peers_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers_cli)

# A CRD of the seed's shape, written here (nothing of the seed's repository is copied).
SEED_CRD = """\
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: appservices.kosmos.io
spec:
  group: kosmos.io
  names: {kind: AppService, listKind: AppServiceList, plural: appservices}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_paths_come_from_the_arguments_before_the_environment(tmp_path: Path) -> None:
    binary, crd = _executable(tmp_path / "simple-controller"), tmp_path / "crd.yaml"
    crd.write_text(SEED_CRD)
    other = _executable(tmp_path / "other")
    env = {seed.BINARY_ENV: str(other), seed.CRD_ENV: str(crd)}
    assert seed.paths(str(binary), None, env) == (binary, crd)
    assert seed.paths(None, None, env) == (other, crd)


@pytest.mark.parametrize("missing", ["--seed-binary", "--seed-crd"])
def test_a_missing_path_names_its_flag_its_variable_and_the_docs(
    tmp_path: Path, missing: str
) -> None:
    binary, crd = _executable(tmp_path / "bin"), tmp_path / "crd.yaml"
    crd.write_text(SEED_CRD)
    given = {"--seed-binary": str(binary), "--seed-crd": str(crd)}
    given[missing] = ""
    with pytest.raises(seed.SeedError) as err:
        seed.paths(given["--seed-binary"], given["--seed-crd"], {})
    var = seed.BINARY_ENV if missing == "--seed-binary" else seed.CRD_ENV
    assert missing in str(err.value)
    assert var in str(err.value)
    assert "docs/performance.md" in str(err.value)


def test_a_path_that_is_no_file_or_no_program_is_refused(tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(SEED_CRD)
    with pytest.raises(seed.SeedError, match="no such file"):
        seed.paths(str(tmp_path / "absent"), str(crd), {})
    plain = tmp_path / "plain"
    plain.write_text("")
    os.chmod(plain, 0o644)
    with pytest.raises(seed.SeedError, match="not executable"):
        seed.paths(str(plain), str(crd), {})


def test_the_seeds_crd_is_found_among_other_documents() -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n" + SEED_CRD + "---\n"
    crd = seed.read_crd(text)
    assert crd["metadata"]["name"] == "appservices.kosmos.io"
    assert crd["spec"]["group"] == seed.APP_SERVICE.group


def test_a_crd_that_is_not_the_seeds_is_refused() -> None:
    with pytest.raises(
        seed.SeedError, match=r"no CustomResourceDefinition appservices\.kosmos\.io"
    ):
        seed.read_crd(SEED_CRD.replace("appservices.kosmos.io", "appservices.appstack.dev"))
    with pytest.raises(seed.SeedError, match="serves"):
        seed.read_crd(SEED_CRD.replace("served: true", "served: false"))


def test_established_reads_the_condition() -> None:
    assert not seed.established({"status": {}})
    assert not seed.established({"status": {"conditions": [{"type": "Established"}]}})
    ok = {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
    assert seed.established(ok)


def test_the_bench_creates_the_seeds_kind_with_the_same_spec() -> None:
    ours = waves.app_object("app-00001", "ns", waves.FIRST_IMAGE)
    theirs = waves.app_object("app-00001", "ns", waves.FIRST_IMAGE, seed.APP_SERVICE)
    assert (theirs["apiVersion"], theirs["kind"]) == ("kosmos.io/v1", "AppService")
    assert ours["apiVersion"] == "appstack.dev/v1"
    assert theirs["spec"] == ours["spec"]
    assert theirs["metadata"] == ours["metadata"]
    # The seed's CRD requires image and size and a port per entry.
    assert theirs["spec"]["size"] == 1
    assert all("port" in p for p in theirs["spec"]["ports"])


def test_the_seed_peer_exists_only_with_its_binary_and_runs_it_without_flags() -> None:
    assert "seed" not in peers(())
    peer = peers((), seed_binary="/opt/seed/simple-controller")["seed"]
    assert peer.app_resource == seed.APP_SERVICE
    assert peer.metrics_port == seed.METRICS_PORT == 8080
    assert not peer.writes_status
    assert peer.has_metrics
    # Its main.go parses no flags: the kubeconfig comes from $KUBECONFIG.
    assert command(peer, "/k/config", "ns", 8080) == ["/opt/seed/simple-controller"]


def test_only_the_seeds_own_controller_is_called_the_seed() -> None:
    known = peers(("--concurrency=16",), seed_binary="/x")
    assert "go-seed" not in known
    assert "kosmos-io/simple-controller" in known["seed"].label
    assert "re-implementation" in known[REIMPLEMENTATION].label
    others = [p.label for key, p in known.items() if key != "seed"]
    assert not [label for label in others if label.startswith("the seed")]


def test_older_records_of_the_re_implementation_are_relabelled() -> None:
    records: list[dict[str, Any]] = [
        {"peer": "go-seed", "label": "the seed's Go controller (controller-runtime 0.16.3)"},
        {"peer": "appstack-base", "label": "appstack, defaults, at /tmp/x"},
        {"peer": "seed", "label": seed.LABEL},
    ]
    peers_cli.relabel(records, "main a1b2c3d")
    assert records[0]["peer"] == REIMPLEMENTATION
    assert "re-implementation" in records[0]["label"]
    assert records[1]["label"] == "main a1b2c3d"
    assert records[2] == {"peer": "seed", "label": seed.LABEL}


def test_the_cli_resolves_the_seed_only_when_asked_for(tmp_path: Path) -> None:
    binary, crd = _executable(tmp_path / "simple-controller"), tmp_path / "crd.yaml"
    crd.write_text(SEED_CRD)
    args = argparse.Namespace(peers="floor,appstack,kopf", seed_binary=None, seed_crd=None)
    assert peers_cli.seed_peer(args) is None
    args = argparse.Namespace(peers="floor,seed", seed_binary=str(binary), seed_crd=str(crd))
    assert peers_cli.seed_peer(args)["metadata"]["name"] == "appservices.kosmos.io"
    args = argparse.Namespace(peers="seed", seed_binary=str(binary), seed_crd=None)
    if seed.CRD_ENV not in os.environ:
        with pytest.raises(seed.SeedError):
            peers_cli.seed_peer(args)


def test_port_free_sees_a_listener() -> None:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))  # noqa: S104 - as the seed binds its metrics port
        sock.listen()
        port = sock.getsockname()[1]
        assert not seed.port_free(port)
