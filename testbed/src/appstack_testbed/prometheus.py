"""Prometheus and promtool for the monitoring tests, built from Go modules like the test bed.

``github.com/prometheus/prometheus`` is published on the Go module proxy as ``v0.3XX.Y``
for Prometheus ``3.XX.Y``; :data:`VERSION` pins one. Both commands are built once (with
progress, through :class:`~appstack_testbed.build.GoBuilder`) into
``$APPSTACK_CACHE/prometheus-<version>/bin`` and reused afterwards. The build leaves out
the cloud service discoveries (tag ``remove_all_sd``; static, file and HTTP discovery
stay) and the web UI's assets (not embedded without ``builtinassets``): the tests need
the HTTP API, not the UI.

:func:`ensure` builds (once) and returns the binaries; :meth:`Binaries.promtool` runs
promtool. Running a server is :mod:`appstack_testbed.prometheus_server`. Used by the
operator's monitoring tests and ``appstack cluster build --prometheus``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.build import GoBuilder, GoComponent, Printer, _stderr
from appstack_testbed.versions import CacheDirectory

# github.com/prometheus/prometheus v0.316.0 is Prometheus 3.16.0 (its VERSION file).
VERSION = "v0.316.0"
MODULE = "github.com/prometheus/prometheus"


def release_name(version: str = VERSION) -> str:
    """``v0.316.0`` -> ``3.16.0`` (the Prometheus release a module version stands for)."""
    minor_patch = version.removeprefix("v0.")
    minor, patch = minor_patch.split(".", 1)
    return f"{int(minor) // 100}.{int(minor) % 100}.{patch}"


def component(version: str = VERSION) -> GoComponent:
    """``prometheus`` and ``promtool`` of ``version``."""
    return GoComponent(
        name="prometheus",
        module=MODULE,
        version=version,
        packages=(f"{MODULE}/cmd/prometheus", f"{MODULE}/cmd/promtool"),
        tags=("remove_all_sd",),
        ldflags=(
            f"-X github.com/prometheus/common/version.Version={release_name(version)}",
            "-X github.com/prometheus/common/version.Branch=module-proxy",
        ),
    )


@dataclass(frozen=True)
class PrometheusBuild(CacheDirectory):
    """The cache directory of one Prometheus version (a build root for :class:`GoBuilder`)."""

    version: str = VERSION

    @property
    def key(self) -> str:
        return f"prometheus-{self.version}"


@dataclass(frozen=True)
class Binaries:
    """The built ``prometheus`` and ``promtool``."""

    prometheus: Path
    promtool_binary: Path

    def promtool(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``promtool <args>`` (not checked: callers assert on the return code and output)."""
        return subprocess.run(
            [str(self.promtool_binary), *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )


def ensure(version: str = VERSION, printer: Printer = _stderr) -> Binaries:
    """Build ``version`` unless cached (about 8 minutes on 2 shared cores); its binaries."""
    build = PrometheusBuild(version)
    GoBuilder(build, printer).ensure(component(version))
    return Binaries(build.binary("prometheus"), build.binary("promtool"))


def built(version: str = VERSION) -> Binaries | None:
    """The binaries if ``version`` is built already, else None (never builds)."""
    build = PrometheusBuild(version)
    if not GoBuilder(build).is_built(component(version)):
        return None
    return Binaries(build.binary("prometheus"), build.binary("promtool"))
