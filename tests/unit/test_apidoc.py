"""docs/runtime-api.md and docs/sdk-api.md are generated from the docstrings of the names in
appstack.runtime's and appstack.sdk's ``__all__`` and kept current."""

from __future__ import annotations

import pytest

from appstack import apidoc, runtime, sdk
from tests.doc_blocks import fenced, signature
from tests.support.paths import REPO_ROOT

REFERENCES = {"runtime": "runtime-api.md", "sdk": "sdk-api.md"}


@pytest.mark.parametrize("package", sorted(REFERENCES))
def test_the_committed_reference_is_current(package: str) -> None:
    committed = (REPO_ROOT / "docs" / REFERENCES[package]).read_text()
    assert committed == apidoc.render(package), "run `make docs` and commit the result"


@pytest.mark.parametrize("package", sorted(REFERENCES))
def test_every_exported_name_has_a_section_and_a_doc(package: str) -> None:
    text = apidoc.render(package)
    for name in {"runtime": runtime, "sdk": sdk}[package].__all__:
        assert f"`{name}" in text, name
    if package == "sdk":  # every name of the SDK's door and every public member says what it is
        assert "(undocumented)" not in text
    assert " at 0x" not in text  # the same text in every process


@pytest.mark.parametrize("package", sorted(REFERENCES))
def test_every_code_block_is_one_signature(package: str) -> None:
    """The pages' blocks are shown, never run (tests/e2e/test_doc_blocks.py runs any other
    Python block of a page on the cluster)."""
    blocks = [b for b in fenced(REPO_ROOT / "docs" / REFERENCES[package]) if b.language == "python"]
    assert blocks
    assert [b.lines for b in blocks if not signature(b)] == []
