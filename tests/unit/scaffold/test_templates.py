"""The scaffolder's templates are package data (``appstack.scaffold.templates``): every
template file the code names exists, every template file is named by the code (no orphan),
each is filled only from plain named fields (so ``str.format_map`` looks up nothing but the
values it is given, and a brace of the generated Python, YAML or Makefile is ``{{``/``}}``),
and the wheel's package data takes every one of them (hidden files included)."""

from __future__ import annotations

import ast
import glob
import string
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import tomllib

from appstack.scaffold import templates

if TYPE_CHECKING:
    from importlib.abc import Traversable

ROOT = Path(__file__).resolve().parents[3]


def _on_disk(folder: Traversable, prefix: str = "") -> set[str]:
    found = set()
    for entry in folder.iterdir():
        if entry.is_dir():
            found |= _on_disk(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".tmpl"):
            found.add(prefix + entry.name)
    return found


TEMPLATE_FILES = _on_disk(files(templates))


def _named_by_the_code() -> set[str]:
    """The ``.tmpl`` names in the module's code (each a string constant)."""
    source = Path(templates.__file__).read_text()
    return {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.endswith(".tmpl")
    }


def test_every_template_the_code_names_exists_and_every_file_is_used() -> None:
    named = _named_by_the_code()
    assert named - TEMPLATE_FILES == set(), "named by the code, missing on disk"
    assert TEMPLATE_FILES - named == set(), "orphan template files: nothing renders them"
    assert "Makefile.tmpl" in TEMPLATE_FILES
    assert ".gitignore.tmpl" in TEMPLATE_FILES


@pytest.mark.parametrize("name", sorted(TEMPLATE_FILES))
def test_a_template_has_only_plain_named_fields(name: str) -> None:
    for _, field, spec, conversion in string.Formatter().parse(templates.template(name)):
        if field is None:
            continue
        assert field.isidentifier(), f"{name}: {{{field}}} is not a plain name"
        assert not spec, f"{name}: {{{field}}} has a format spec"
        assert conversion is None, f"{name}: {{{field}}} has a conversion"


def test_the_wheel_takes_every_template() -> None:
    """setuptools' ``package-data`` globs for ``appstack`` (as setuptools expands them:
    ``*`` skips hidden files) match every template file."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["appstack"]
    package = ROOT / "src" / "appstack"
    matched = {
        str(Path(path).relative_to(package / "scaffold" / "templates"))
        for pattern in patterns
        for path in glob.glob(str(package / pattern), recursive=True)
        if "scaffold/templates/" in path
    }
    assert matched == TEMPLATE_FILES
