"""The API reference pages (docs/sdk-api.md, docs/runtime-api.md) are rendered by
mkdocstrings from the docstrings of the names in appstack.sdk's and appstack.runtime's
``__all__`` when the site is built (``make docs-site``, strict, in ``make test``). Here,
without building it: griffe — what mkdocstrings reads the code with — finds every exported
name, each documented, with the pages' extension (docs/_griffe/sphinx_roles.py) leaving no
Sphinx role in a docstring."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import griffe
import pytest
import yaml

from appstack import runtime, sdk
from tests.support.paths import REPO_ROOT

PAGES = {"runtime": "runtime-api.md", "sdk": "sdk-api.md"}
EXTENSION = REPO_ROOT / "docs" / "_griffe" / "sphinx_roles.py"
#: The modules of Kubernetes' own types (container, probe, affinity...), as the SDK models
#: them for the kinds' specs and the children it writes.
KUBERNETES_TYPES = ("appstack.sdk.model", "appstack.sdk.kit.parts")


def _extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sphinx_roles", EXTENSION)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROLES = _extension()


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    """appstack as mkdocstrings sees it: read from the source, the roles extension on."""
    extensions = griffe.load_extensions(ROLES.SphinxRoles)
    loaded = griffe.load("appstack", search_paths=[str(REPO_ROOT / "src")], extensions=extensions)
    assert isinstance(loaded, griffe.Module)
    return loaded


def _loader(text: str) -> object:
    """mkdocs.yml's tags (``!!python/name:``) read as plain values: only its plugins matter."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_page_renders_its_package_with_the_roles_extension(name: str) -> None:
    page = (REPO_ROOT / "docs" / PAGES[name]).read_text()
    assert f"\n::: appstack.{name}\n" in page
    config = _loader((REPO_ROOT / "mkdocs.yml").read_text())
    assert isinstance(config, dict)
    (plugin,) = [p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict)]
    options = plugin["handlers"]["python"]["options"]
    assert options["extensions"] == ["docs/_griffe/sphinx_roles.py:SphinxRoles"]
    assert (REPO_ROOT / options["extensions"][0].split(":")[0]) == EXTENSION


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_exported_name_is_found_and_documented(package: griffe.Module, name: str) -> None:
    """Each name of the door resolves to what it names (an import griffe could not follow
    would be left out of the page) and says what it is — classes and functions; a constant
    may be its value alone, and Kubernetes' own types (:data:`KUBERNETES_TYPES`: named as
    the Kubernetes API names them, their fields shown) their fields: a docstring of theirs
    would become a description in every CRD that uses them."""
    module = package.modules[name]
    exported = {"runtime": runtime, "sdk": sdk}[name].__all__
    assert sorted(module.exports or []) == sorted(exported)
    undocumented = []
    for export in exported:
        member = module.members[export]
        target = member.final_target if member.is_alias else member
        if target.is_attribute or target.module.path in KUBERNETES_TYPES:
            continue
        if target.docstring is None:
            undocumented.append(export)
    assert undocumented == []


def test_no_docstring_keeps_a_sphinx_role(package: griffe.Module) -> None:
    left = []

    def visit(obj: griffe.Object | griffe.Alias) -> None:
        if obj.is_alias:
            return
        if obj.docstring is not None and ROLES.ROLE.search(obj.docstring.value):
            left.append(obj.path)
        for member in obj.members.values():
            visit(member)

    visit(package)
    assert left == []


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
    assert ROLES.markdown(docstring) == shown


def test_no_sphinx_role_in_the_field_reference() -> None:
    """The CRDs' descriptions (``kubectl explain``, docs/crd-reference.md) come from the
    models' docstrings too: they say a name, never ``:class:`...```."""
    assert ROLES.ROLE.search((REPO_ROOT / "docs" / "crd-reference.md").read_text()) is None
