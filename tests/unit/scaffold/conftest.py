"""The scaffolder's unit tests share ``project``: an empty directory ``guestbook`` after
``appstack init`` (kubebuilder's tutorial domain and repo), as each test's starting point."""

from __future__ import annotations

from pathlib import Path

import pytest

from appstack.scaffold import commands


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "guestbook"
    directory.mkdir()
    commands.init(
        directory, domain="tutorial.kubebuilder.io", repo="tutorial.kubebuilder.io/project"
    )
    return directory
