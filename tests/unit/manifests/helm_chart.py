"""appstack's Helm chart (``charts/appstack``) rendered offline by the test bed's helm, for
the chart's unit tests (test_chart_names.py, test_chart_sharding.py,
test_chart_shutdown.py): the chart, the namespace and Kubernetes version they render for,
the helm binary (built once by the test bed; without a test bed the tests skip) and
``helm template``. The binary, ``run_helm`` and the Kubernetes version serve a scaffolded
project's chart tests too (tests/unit/scaffold/test_chart.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from appstack_testbed.build import GoBuilder
from appstack_testbed.helm import helm_component
from appstack_testbed.versions import Toolchain
from tests.support.paths import REPO_ROOT

CHART = REPO_ROOT / "charts" / "appstack"
NS = "appstack-system"
KUBE = "--kube-version=1.30.0"  # offline helm assumes 1.20; the chart needs 1.30
SHARDED = "--set=sharding.enabled=true"


def helm_binary() -> Path:
    """The test bed's helm, built if the test bed is (``appstack cluster build``); else the
    calling test is skipped."""
    toolchain = Toolchain()
    if not toolchain.binary("kubectl").is_file():  # no test bed here (a bare machine)
        pytest.skip("the test bed is not built yet (appstack cluster build)")
    return GoBuilder(toolchain).ensure(helm_component())


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``helm`` with ``args``, offline (no home, no plugins), its output captured."""
    env = {"HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(helm), *args], capture_output=True, text=True, env=env, check=False)


def helm_template(
    helm: Path, release: str, *values: str, namespace: str = NS, tests: bool = True
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart as ``release`` in ``namespace`` with ``values``
    (``tests=False``: without the ``helm test`` pod)."""
    skip = () if tests else ("--skip-tests",)
    args = ("template", release, str(CHART), f"--namespace={namespace}", *skip, KUBE)
    return run_helm(helm, *args, *values)
