"""Pinned versions of the test-bed components and where their builds are cached.

Used by :mod:`appstack_testbed.build` (what to build) and :mod:`appstack_testbed.cluster`
(where the binaries are). Bumping a version here changes the cache directory, so an old
build is never mixed with a new one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

KUBERNETES = "v1.36.3"
# The oldest supported release (admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy
# is GA from 1.30): `make test` runs the e2e suite on it too (`make e2e-oldest`).
OLDEST_KUBERNETES = "v1.30.14"
# Another release for the test bed: APPSTACK_K8S_VERSION=v1.30.14 builds and runs it with
# that version (its own cache directory; README, "Install" -> Kubernetes versions).
K8S_VERSION_ENV = "APPSTACK_K8S_VERSION"


def kubernetes_version() -> str:
    """``$APPSTACK_K8S_VERSION`` or :data:`KUBERNETES`."""
    return os.environ.get(K8S_VERSION_ENV) or KUBERNETES


ETCD = "v3.6.16"
KWOK = "v0.8.0"
HELM = "v3.22.0"  # built on demand (the Helm chart tests), not by `appstack cluster build`
# Versity S3 Gateway (github.com/versity/versitygw; its go.mod: go 1.25), the S3 server of the
# etcd backup tests: built on demand (appstack_testbed.versitygw), like Helm.
VERSITYGW = "v1.8.0"
# The real node's cluster services, the same for every Kubernetes version (built once into
# SharedTools, not per toolchain): cluster DNS and the local image registry.
COREDNS = "v1.14.7"
REGISTRY = "v3.0.0"  # github.com/distribution/distribution/v3, the CNCF registry


def cache_root() -> Path:
    """``$APPSTACK_CACHE`` or ``~/.cache/appstack``: heavy things live here, not in the repo."""
    env = os.environ.get("APPSTACK_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "appstack"


class CacheDirectory:
    """A build's directory in the cache, ``$APPSTACK_CACHE/<key>``, binaries in ``bin/``."""

    @property
    def key(self) -> str:
        raise NotImplementedError

    @property
    def root(self) -> Path:
        return cache_root() / self.key

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def binary(self, name: str) -> Path:
        return self.bin_dir / name


@dataclass(frozen=True)
class Toolchain(CacheDirectory):
    """The set of binaries of one version combination."""

    kubernetes: str = field(default_factory=kubernetes_version)
    etcd: str = ETCD
    kwok: str = KWOK

    @property
    def key(self) -> str:
        return f"k8s-{self.kubernetes}_etcd-{self.etcd}_kwok-{self.kwok}"


@dataclass(frozen=True)
class SharedTools(CacheDirectory):
    """Binaries that do not depend on the Kubernetes version (CoreDNS, the registry): built
    once for every toolchain, in ``$APPSTACK_CACHE/tools-<versions>``."""

    coredns: str = COREDNS
    registry: str = REGISTRY

    @property
    def key(self) -> str:
        return f"tools_coredns-{self.coredns}_registry-{self.registry}"
