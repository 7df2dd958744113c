"""Extra etcd releases for tests that run etcd as pods: etcd, etcdctl and etcdutl per version.

The control plane's own etcd is built with the toolchain (:mod:`appstack_testbed.build`);
the real nodes run pods of the image ``gcr.io/etcd-development/etcd:<version>``
(:mod:`appstack_testbed.images`), made of the binaries of that version, built here once into
``$APPSTACK_CACHE/etcd-<version>/bin`` (with progress, like the toolchain). Two versions
are offered so that upgrades can be tested: the test bed's etcd and the newest v3.5
release the Go module proxy served when this was written.

Used by the image builds and ``appstack cluster build --etcd-releases``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.build import GoBuilder, GoComponent, Printer, _stderr
from appstack_testbed.versions import ETCD, Toolchain

ETCD_PREVIOUS = "v3.5.35"
RELEASES = (ETCD, ETCD_PREVIOUS)
BINARIES = ("etcd", "etcdctl", "etcdutl")


@dataclass(frozen=True)
class EtcdRelease(Toolchain):
    """The cache directory of one etcd release (a :class:`Toolchain` of etcd alone)."""

    @property
    def key(self) -> str:
        return f"etcd-{self.etcd}"


def component(version: str) -> GoComponent:
    """etcd, etcdctl and etcdutl of ``version`` (v3.5 still has raft inside the repository)."""
    modules = ["api", "client/pkg", "client", "pkg", "etcdctl", "etcdutl"]
    if version.startswith("v3.5."):
        modules.append("raft")
    return GoComponent(
        name="etcd",
        module="go.etcd.io/etcd/server/v3",
        version=version,
        packages=(
            "go.etcd.io/etcd/server/v3",
            "go.etcd.io/etcd/etcdctl/v3",
            "go.etcd.io/etcd/etcdutl/v3",
        ),
        siblings=tuple(f"go.etcd.io/etcd/{m}/v3" for m in modules),
    )


def normalize(tag: str) -> str | None:
    """``v3.6.16``, ``3.6.16`` or ``v3.6.16-0`` -> ``v3.6.16``; None if not a release tag."""
    match = re.fullmatch(r"v?(\d+\.\d+\.\d+)(?:-\d+)?", tag)
    return f"v{match.group(1)}" if match else None


def ensure(version: str, printer: Printer = _stderr) -> Path:
    """Build ``version`` unless cached; the directory holding its three binaries."""
    release = EtcdRelease(etcd=version)
    GoBuilder(release, printer).ensure(component(version))
    return release.bin_dir


def built(version: str) -> Path | None:
    """The binaries' directory if ``version`` is built already, else None (no build)."""
    release = EtcdRelease(etcd=version)
    return release.bin_dir if GoBuilder(release).is_built(component(version)) else None
