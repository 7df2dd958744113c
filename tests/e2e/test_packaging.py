"""The package builds cleanly: ``python -m build`` (sdist, then the wheel from it) and
``twine check --strict`` pass with no warning, the license is an SPDX expression with
its file, and the wheel carries ``py.typed`` and the scaffolder's templates but no tests
(but the templates of a generated project's) and no test bed (``appstack_testbed`` is
the distribution in ``testbed/``; the product's wheel has neither its code, nor its
dependencies, nor its ``appstack cluster`` command)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from appstack import __version__
from appstack_testbed.dist import source_build_lock

ROOT = Path(__file__).resolve().parents[2]


def test_sdist_and_wheel_build_without_warnings_and_pass_twine_check(tmp_path: Path) -> None:
    # Bytecode is disabled in some environments; setuptools then warns about skipping it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with source_build_lock():  # setuptools writes src/*.egg-info in the checkout
        build = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    output = build.stdout + build.stderr
    assert build.returncode == 0, output[-3000:]
    assert "warning" not in output.lower(), output[-3000:]
    wheel = tmp_path / f"appstack-{__version__}-py3-none-any.whl"
    sdist = tmp_path / f"appstack-{__version__}.tar.gz"

    twine = Path(sys.executable).with_name("twine")
    check = subprocess.run(
        [str(twine), "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2

    names = zipfile.ZipFile(wheel).namelist()
    assert "appstack/py.typed" in names
    assert "appstack/scaffold/templates/Makefile.tmpl" in names
    assert "appstack/scaffold/templates/.gitignore.tmpl" in names
    assert f"appstack-{__version__}.dist-info/licenses/LICENSE" in names
    # the scaffolder's templates of a generated project's tests are data, not appstack's tests
    tests = [n for n in names if n.startswith("tests/") or "/tests/" in n]
    assert not [n for n in tests if not n.startswith("appstack/scaffold/templates/tests/")]
    assert not [n for n in names if "testbed" in n or n.startswith("appstack/testing")]
    assert not [n for n in names if "procnode" in n or n.endswith("pytest_plugin.py")]
    entry_points = zipfile.ZipFile(wheel).read(f"appstack-{__version__}.dist-info/entry_points.txt")
    assert b"cluster" not in entry_points
    assert b"pytest11" not in entry_points
    metadata = zipfile.ZipFile(wheel).read(f"appstack-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "Typing :: Typed" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    for test_bed_dependency in ("lightkube", "httpx"):
        assert not [line for line in requires if test_bed_dependency in line], requires
    # cryptography is the product's too now: the self-signed /metrics certificate.
    assert "Requires-Dist: cryptography>=42" in requires
    assert b"kubectl-appstack = appstack.cli:kubectl_plugin" in entry_points
    with tarfile.open(sdist) as tar:
        assert f"appstack-{__version__}/LICENSE" in tar.getnames()
