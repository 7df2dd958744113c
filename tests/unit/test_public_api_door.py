"""One door (issue #47): appstack's own operator, CLI and scaffolder reach the SDK and the
runtime only through their package roots — the names in their ``__all__`` — as a user's
operator does, so the path users take is the one appstack travels every day.

The import-linter contract in ``pyproject.toml`` ("One door: ...") is what fails on a
product import of a submodule (``make imports``); these tests keep that contract complete (it
must list every submodule, including one added later) and keep each package's lazy door
honest (what type checkers see is what runs)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
import tomllib

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("appstack.sdk", "appstack.runtime")
CONTRACT_PREFIX = "One door:"


def _contract() -> dict[str, object]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    (contract,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"].startswith(CONTRACT_PREFIX)
    ]
    return contract


def _submodules(package: str) -> set[str]:
    module = importlib.import_module(package)
    return {f"{package}.{m.name}" for m in pkgutil.iter_modules(module.__path__)}


def test_the_contract_forbids_every_submodule_and_covers_every_product_package() -> None:
    contract = _contract()
    assert contract["type"] == "forbidden"
    assert contract["allow_indirect_imports"] is True  # the root loads them: that is the door
    expected = set().union(*(_submodules(p) for p in PACKAGES))
    assert set(contract["forbidden_modules"]) == expected  # type: ignore[arg-type]
    product = {
        f"appstack.{m.name}"
        for m in pkgutil.iter_modules(importlib.import_module("appstack").__path__)
        if m.name not in ("sdk", "runtime", "core", "__main__")
    }
    assert set(contract["source_modules"]) == product  # type: ignore[arg-type]


def _type_checking_names(package: str) -> dict[str, str]:
    """``public name -> home`` as the package's ``if TYPE_CHECKING:`` block imports them."""
    path = Path(importlib.import_module(package).__file__ or "")
    tree = ast.parse(path.read_text())
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    ]
    names = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        assert node.module
        home = node.module.removeprefix(f"{package}.")
        for alias in node.names:
            public = alias.asname or alias.name
            names[public] = home if public == alias.name else f"{home}:{alias.name}"
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_what_type_checkers_see_is_what_the_lazy_door_loads(package: str) -> None:
    module = importlib.import_module(package)
    assert _type_checking_names(package) == module._HOMES
    assert set(module.__all__) == set(module._HOMES)
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_no_product_module_imports_a_submodule(tmp_path: Path) -> None:
    """The contract's check, done again from the source (no import-linter needed): every
    ``from appstack.sdk.x import`` / ``from appstack.runtime.x import`` or ``from appstack.sdk
    import x`` (a submodule by name) in the product is a failure."""
    submodules = {p: {s.rpartition(".")[2] for s in _submodules(p)} for p in PACKAGES}
    found = []
    for path in sorted((REPO_ROOT / "src" / "appstack").rglob("*.py")):
        relative = path.relative_to(REPO_ROOT / "src").as_posix()
        if relative.startswith(("appstack/sdk/", "appstack/runtime/", "appstack/core/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith(tuple(f"{p}." for p in PACKAGES)):
                    found.append(f"{relative}:{node.lineno} {node.module}")
                elif node.module in PACKAGES:
                    found += [
                        f"{relative}:{node.lineno} {node.module}.{a.name}"
                        for a in node.names
                        if a.name in submodules[node.module]
                    ]
            elif isinstance(node, ast.Import):
                found += [
                    f"{relative}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name.startswith(tuple(f"{p}." for p in PACKAGES))
                ]
    assert found == []
