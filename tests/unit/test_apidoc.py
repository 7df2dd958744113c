"""docs/runtime-api.md is generated from appstack.runtime's docstrings and kept current."""

from __future__ import annotations

from appstack import apidoc, runtime
from tests.support.paths import REPO_ROOT

REFERENCE = REPO_ROOT / "docs" / "runtime-api.md"


def test_the_committed_reference_is_current() -> None:
    assert REFERENCE.read_text() == apidoc.render(), "run `make docs` and commit the result"


def test_every_exported_name_has_a_section() -> None:
    text = apidoc.render()
    for name in runtime.__all__:
        assert f"`{name}" in text, name
