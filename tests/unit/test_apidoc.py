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


@pytest.mark.parametrize(
    ("docstring", "shown"),
    [
        (":meth:`~appstack.runtime.informer.Informer.served`", "`served`"),
        (":class:`ByObject`", "`ByObject`"),
        (":func:`appstack.sdk.operator.wire`", "`appstack.sdk.operator.wire`"),
        (":data:`~appstack.controllers.registry.ALL`", "`ALL`"),
        (":attr:`custom`, :mod:`.caching`", "`custom`, `caching`"),
        (":exc:`~appstack.sdk.MissingCRDs` (:py:func:`!plain`)", "`MissingCRDs` (`plain`)"),
        (":class:`the cache <appstack.runtime.Cache>`", "`the cache`"),
        (":meth:`~appstack.runtime.\n    Cache.get`", "`get`"),  # a role over two lines
        (":func:`appstack.sdk.\n    wire`", "`appstack.sdk.wire`"),
        ("``:meth:``, ``literal`` and `code`", "``:meth:``, ``literal`` and `code`"),
    ],
)
def test_sphinx_roles_are_shown_as_inline_code_of_the_name(docstring: str, shown: str) -> None:
    assert apidoc.markdown(docstring) == shown


@pytest.mark.parametrize("package", sorted(REFERENCES))
def test_no_sphinx_role_is_left_in_a_reference(package: str) -> None:
    text = apidoc.render(package)
    assert apidoc.ROLE.search(text) is None
    for role in ("meth", "class", "func", "data", "attr", "mod", "exc"):
        assert f":{role}:`" not in text, role


def test_no_sphinx_role_in_the_field_reference() -> None:
    """The CRDs' descriptions (``kubectl explain``, docs/crd-reference.md) come from the
    models' docstrings too: they say a name, never ``:class:`...```."""
    assert apidoc.ROLE.search((REPO_ROOT / "docs" / "crd-reference.md").read_text()) is None


def test_a_set_constant_is_shown_sorted() -> None:
    """A set's repr follows string hashing, different in every process: the reference
    must not change with it."""
    shown = apidoc._constant("GROUPS", frozenset({"b", "", "a"}))
    assert shown == "- **`GROUPS`** = `frozenset({'', 'a', 'b'})`"
    assert apidoc._constant("NONE", set()) == "- **`NONE`** = `set()`"
