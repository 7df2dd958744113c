"""appstack's Helm chart (``charts/appstack``) rendered offline by the test bed's helm, for
the chart's unit tests (test_chart_names.py, test_chart_sharding.py,
test_chart_shutdown.py): the chart, the namespace and Kubernetes version they render for,
the helm binary (built once by the test bed; without a test bed the tests skip),
``helm template``, and what the chart renders otherwise than ``deploy/`` by design
(:func:`alike`). The binary, ``run_helm`` and the Kubernetes version serve a scaffolded
project's chart tests too (tests/unit/scaffold/test_chart.py)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

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


#: The operator's arguments ``deploy/`` passes at their defaults and the chart only when a
#: value changes them (and the reverse: the Lease's name, which the chart always passes).
AT_DEFAULTS = frozenset({"--sync-period=10m", "--log-level=info", "--concurrency=32"})
#: What selects the operator's pods: by name in deploy/, by the chart's name and the
#: release in the chart (two releases in one namespace keep to their own pods).
SELECTING = ("Deployment", "PodDisruptionBudget", "Service", "ServiceMonitor")


def _at_default(arg: str) -> bool:
    return arg in AT_DEFAULTS or arg.startswith("--leader-election-id=")


def alike(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without what the chart renders otherwise than ``deploy/`` by design: the
    labels (Helm's standard ones) and annotations, the selectors of the operator's pods,
    the arguments at their defaults and their order."""
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("labels", None)
    obj["metadata"].pop("annotations", None)
    spec = obj.get("spec") or {}
    if obj["kind"] in SELECTING:
        spec.pop("selector", None)
    if "template" in spec:
        spec["template"]["metadata"].pop("labels", None)
        pod = spec["template"]["spec"]
        terms = (
            pod.get("affinity", {})
            .get("podAntiAffinity", {})
            .get("preferredDuringSchedulingIgnoredDuringExecution", [])
        )
        for term in terms:
            term["podAffinityTerm"].pop("labelSelector", None)
        for container in pod["containers"]:
            args = container.get("args") or []
            container["args"] = sorted(a for a in args if not _at_default(a))
    return obj
