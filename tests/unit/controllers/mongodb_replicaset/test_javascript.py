"""The bootstrap scripts are JavaScript files (package data), checked as JavaScript: each
parses under node (``node --check``), and what the operator ships is exactly those files
with its values filled in (their placeholders sit inside string literals, so the templates
parse too)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodbcommunity import bootstrap as mdbc
from tests.support.paths import REPO_ROOT

SOURCES = sorted((REPO_ROOT / "src" / "appstack").glob("controllers/*/js/*.js"))
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def _check(path: Path) -> None:
    argv = [str(NODE), "--check", str(path)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    assert done.returncode == 0, f"{path}: {done.stderr}"


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_every_script_file_parses(path: Path) -> None:
    _check(path)


def test_the_scripts_shipped_parse(tmp_path: Path) -> None:
    assert len(SOURCES) == 4
    for name, text in (("replicaset.js", boot.script(27017)), ("mdbc.js", mdbc.script(27017))):
        (tmp_path / name).write_text(text)
        _check(tmp_path / name)
