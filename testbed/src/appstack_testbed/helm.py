"""``helm``, for the chart tests: built from Go modules like the test bed (a wrapper module
pinning ``helm.sh/helm/v3`` at :data:`~appstack_testbed.versions.HELM`, cached next to the
test bed's binaries, progress shown), and run against a kubeconfig."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.build import GoBuilder, GoComponent, Printer, _stderr
from appstack_testbed.versions import HELM, Toolchain


def helm_component(version: str = HELM) -> GoComponent:
    """``helm`` (built on demand, not by ``appstack cluster build``)."""
    return GoComponent(
        name="helm",
        module="helm.sh/helm/v3",
        version=version,
        packages=("helm.sh/helm/v3/cmd/helm",),
        ldflags=(f"-X helm.sh/helm/v3/internal/version.version={version}",),
    )


@dataclass(frozen=True)
class Helm:
    """The helm binary, with its state kept in ``home`` (not the user's ~/.config/helm)."""

    binary: Path
    kubeconfig: Path
    home: Path

    @classmethod
    def ensure(cls, kubeconfig: Path, home: Path, printer: Printer = _stderr) -> Helm:
        binary = GoBuilder(Toolchain(), printer).ensure(helm_component())
        return cls(binary, kubeconfig, home)

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {
            "HOME": str(self.home),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
            "PATH": "/usr/bin:/bin",
        }
        cmd = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"helm {' '.join(args)} failed:\n{proc.stderr}{proc.stdout}")
        return proc
