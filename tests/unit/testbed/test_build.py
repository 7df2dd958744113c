"""The Go wrapper-module builder pins staging modules and names binaries right."""

from __future__ import annotations

from pathlib import Path

import pytest

from appstack_testbed import build
from appstack_testbed.versions import Toolchain

GOMOD = """module k8s.io/kubernetes

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/cri-api => ./staging/src/k8s.io/cri-api
)
"""


def test_every_staging_module_is_replaced_by_its_published_version() -> None:
    replaces = build.kubernetes_staging_replaces("v1.36.3")(GOMOD)
    assert replaces == [
        "k8s.io/api v0.0.0 => k8s.io/api v0.36.3",
        "k8s.io/client-go v0.0.0 => k8s.io/client-go v0.36.3",
        "k8s.io/cri-api v0.0.0 => k8s.io/cri-api v0.36.3",
    ]


def test_components_produce_the_binaries_the_cluster_runs() -> None:
    names = [b for c in build.components(Toolchain()) for b in build.installed_binaries(c)]
    assert names == [
        "etcd",
        "etcdctl",
        "kwok",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
    ]


def test_kubernetes_binaries_are_stamped_with_the_release_version() -> None:
    (kubernetes,) = [c for c in build.components(Toolchain()) if c.name == "kubernetes"]
    flags = " ".join(kubernetes.ldflags)
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion={Toolchain().kubernetes}" in flags
        assert f"-X {package}.gitMajor=1" in flags


def test_etcd_modules_are_all_pinned_to_one_release() -> None:
    (etcd,) = [c for c in build.components(Toolchain()) if c.name == "etcd"]
    assert "go.etcd.io/etcd/api/v3" in etcd.siblings
    assert "go.etcd.io/etcd/client/v3" in etcd.siblings


def test_the_cache_directory_follows_appstack_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("APPSTACK_CACHE", str(tmp_path))
    toolchain = Toolchain()
    assert toolchain.bin_dir == tmp_path / toolchain.key / "bin"
    assert "k8s-v1.36" in toolchain.key
