"""Versity S3 Gateway (``versitygw``), an S3-compatible object store, built from Go modules.

The e2e tests of etcd backups to S3 need a real S3 server on the local cluster; no public
registry is reachable, so the image ``versity/versitygw:<version>``
(:func:`appstack_testbed.images.catalog.versitygw`) is made of this binary, built once (with
progress, through :class:`~appstack_testbed.build.GoBuilder`) into
``$APPSTACK_CACHE/versitygw-<version>/bin``. ``github.com/versity/versitygw`` has no build
tags that leave backends out (posix, ScoutFS, Azure and the S3 proxy are always in), so the
whole command is built. Running it in a namespace is :mod:`appstack_testbed.objectstore`.

Used by the image builds (on demand only, not by ``appstack cluster up``) and ``appstack
cluster build --versitygw``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.build import GoBuilder, GoComponent, Printer, _stderr
from appstack_testbed.versions import VERSITYGW, CacheDirectory

VERSION = VERSITYGW  # the newest release the Go module proxy served when this was written
MODULE = "github.com/versity/versitygw"
BINARY = "versitygw"


def component(version: str = VERSION) -> GoComponent:
    """``versitygw`` of ``version`` (``versitygw --version`` names it)."""
    return GoComponent(
        name="versitygw",
        module=MODULE,
        version=version,
        packages=(f"{MODULE}/cmd/versitygw",),
        ldflags=(f"-X main.Version={version}", "-X main.Build=module-proxy"),
    )


@dataclass(frozen=True)
class VersityBuild(CacheDirectory):
    """The cache directory of one versitygw version (a build root for :class:`GoBuilder`)."""

    version: str = VERSION

    @property
    def key(self) -> str:
        return f"versitygw-{self.version}"


def ensure(version: str = VERSION, printer: Printer = _stderr) -> Path:
    """Build ``version`` unless cached (minutes the first time); the binary."""
    return GoBuilder(VersityBuild(version), printer).ensure(component(version))


def built(version: str = VERSION) -> Path | None:
    """The binary if ``version`` is built already, else None (never builds)."""
    build = VersityBuild(version)
    return build.binary(BINARY) if GoBuilder(build).is_built(component(version)) else None
