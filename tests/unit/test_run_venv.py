"""``make install run RUN_VENV=DIR`` (issue #51): the seeds' light path with only the
operator's own dependencies — the wheel's, never the ``dev`` extra or the test bed — and
kubectl from ``PATH`` (the test bed's kubectl is found through the development environment).
Checked with ``make -n``: what the targets would run, nothing run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")

#: What a running make exports to its recipes.
_MAKE_ENV = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"}


def _plan(tmp_path: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-n", "install", "run", *args],
        cwd=REPO_ROOT,
        # as from a shell: not the settings of a make this test may run under (CI's make
        # test), which would make this one print "Entering/Leaving directory"
        env={
            **{k: v for k, v in os.environ.items() if k not in _MAKE_ENV},
            "PATH": path,
        },
        capture_output=True,
        text=True,
        check=False,
    )


def test_run_venv_installs_the_wheels_dependencies_only(tmp_path: Path) -> None:
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text("#!/bin/sh\n")
    kubectl.chmod(0o755)
    run_venv = tmp_path / "run"
    plan = _plan(tmp_path, f"{kubectl.parent}:/usr/bin:/bin", f"RUN_VENV={run_venv}")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    installs = [line for line in lines if " install " in line and "/pip " in line]
    assert installs == [
        f"{run_venv}/bin/pip install -q --upgrade pip",
        f"{run_venv}/bin/pip install -q -e .",
    ]
    assert f"{kubectl} apply --server-side -f deploy/crds/" in lines
    assert lines[-1] == f"{run_venv}/bin/appstack run"
    assert ".venv/" not in plan.stdout  # nothing of the development environment


def test_run_venv_without_kubectl_on_path_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    make = shutil.which("make")
    assert make is not None
    os.symlink(make, empty / "make")
    plan = _plan(tmp_path, str(empty), f"RUN_VENV={tmp_path / 'run'}")
    assert plan.returncode != 0
    assert "kubectl is not on PATH" in plan.stderr


def test_without_run_venv_the_development_environment_is_used(tmp_path: Path) -> None:
    plan = _plan(tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines()[-1] == ".venv/bin/appstack run"
