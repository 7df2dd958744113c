"""``make venv APPSTACK_WHEELS=<dir>`` of a scaffolded project, run by the real ``make``
with a stand-in Python that records what pip is asked: appstack and its test bed are
installed from their wheel files, never by name (appstack is on no package index: a name
would let an index — and whoever registers the name there — choose what is installed, the
hole issue #47 found in the generated Dockerfile); a directory without exactly one wheel of
each is refused in one line, before pip runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")

#: A Python that records its arguments (one line per call) and does nothing else.
STUB = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../calls"
"""


def _venv(project: Path, wheels: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    venv = project / "stub-venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    python.write_text(STUB)
    python.chmod(0o755)
    proc = subprocess.run(
        ["make", "venv", f"VENV={venv}", f"APPSTACK_WHEELS={wheels}"],
        check=False,
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
        timeout=60,
    )
    calls = venv / "calls"
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_appstack_is_installed_from_its_wheel_files_never_by_name(
    project: Path, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    app = wheels / "appstack-0.1.0-py3-none-any.whl"
    bed = wheels / "appstack_testbed-0.1.0-py3-none-any.whl"
    for wheel in (app, bed):
        wheel.write_bytes(b"")
    proc, calls = _venv(project, wheels)
    assert proc.returncode == 0, proc.stderr
    (installed,) = [c for c in calls if str(app) in c]
    assert installed.split() == ["-m", "pip", "install", "-q", f"{app}[cel]", str(bed)]
    for call in calls:  # no other call names appstack for an index to resolve
        words = call.split()
        assert "--find-links" not in words, call
        assert not {"appstack", "appstack[cel]", "appstack-testbed"} & set(words), call


@pytest.mark.parametrize(
    "present",
    [
        ("appstack_testbed-0.1.0",),
        ("appstack-0.1.0",),
        ("appstack-0.1.0", "appstack-0.2.0", "appstack_testbed-0.1.0"),
    ],
    ids=["no-appstack", "no-testbed", "two-versions"],
)
def test_a_wheel_directory_without_one_of_each_is_refused_before_pip(
    project: Path, tmp_path: Path, present: tuple[str, ...]
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in present:
        (wheels / f"{name}-py3-none-any.whl").write_bytes(b"")
    proc, calls = _venv(project, wheels)
    assert proc.returncode != 0
    assert "needs one appstack-*.whl and one appstack_testbed-*.whl" in proc.stderr
    assert not [c for c in calls if "install -q" in c and "whl" in c]
