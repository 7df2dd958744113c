"""One version: ``appstack.__version__``. The package reads it (pyproject's dynamic
version), the chart and the image label are generated from it; the test bed's
distribution, the Dockerfile and the pages' commands (``dist/appstack-X.tgz``,
``.../appstack:X``) repeat it, checked here."""

from __future__ import annotations

import re

import tomllib

from appstack import __version__
from tests.support.paths import REPO_ROOT as ROOT


def test_every_place_says_the_same_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert project["dynamic"] == ["version"]
    testbed = tomllib.loads((ROOT / "testbed" / "pyproject.toml").read_text())["project"]
    assert testbed["version"] == __version__
    label = re.search(
        r'org.opencontainers.image.version="([^"]+)"', (ROOT / "Dockerfile").read_text()
    )
    assert label is not None
    assert label.group(1) == __version__
    makefile = (ROOT / "Makefile").read_text()  # IMG's default tag
    assert "VERSION := $(shell sed -n 's/^__version__ = " in makefile
    assert "src/appstack/__init__.py)" in makefile
    chart = (ROOT / "charts" / "appstack" / "Chart.yaml").read_text()
    assert f"version: {__version__}" in chart
    assert f"appVersion: {__version__}" in chart


def test_the_pages_name_this_version() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    other = {
        f"{page.relative_to(ROOT)}: {found.group(0)}"
        for page in pages
        for found in re.finditer(r"\bappstack[-:](\d+\.\d+\.\d+)\b", page.read_text())
        if found.group(1) != __version__
    }
    assert not other
