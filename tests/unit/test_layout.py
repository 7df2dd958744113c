"""tests/unit mirrors the code it tests, so a module's tests are found without a search:
each folder under tests/unit is a package of the code (see tests/README.md) and holds the
``__init__.py`` that keeps its test modules' names apart."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import REPO_ROOT

UNIT = REPO_ROOT / "tests" / "unit"

# The first folder under tests/unit names the tree it mirrors; any other is src/appstack's.
MIRRORED = {
    "testbed": REPO_ROOT / "testbed" / "src" / "appstack_testbed",
    "bench": REPO_ROOT / "bench",
    "support": REPO_ROOT / "tests" / "support",
}


def _folders() -> list[Path]:
    return sorted(
        path.relative_to(UNIT)
        for path in UNIT.rglob("*")
        if path.is_dir() and path.name != "__pycache__"
    )


def mirrored(folder: Path) -> Path:
    """The code folder that tests/unit/``folder`` holds the tests of."""
    first, *rest = folder.parts
    if first in MIRRORED:
        return MIRRORED[first].joinpath(*rest)
    return REPO_ROOT / "src" / "appstack" / folder


def test_every_folder_under_tests_unit_is_a_folder_of_the_code() -> None:
    folders = _folders()
    assert Path("runtime") in folders  # the walk found the tree
    missing = [
        f"tests/unit/{f} (no {mirrored(f).relative_to(REPO_ROOT)})"
        for f in folders
        if not mirrored(f).is_dir()
    ]
    assert not missing, f"test folders that mirror no code folder: {missing}"


def test_every_test_folder_is_a_package() -> None:
    # Without __init__.py two test modules of the same name in different folders collide.
    bare = [str(f) for f in _folders() if not (UNIT / f / "__init__.py").is_file()]
    assert not bare, f"folders under tests/unit without __init__.py: {bare}"


def test_the_mirror_maps_folders_as_documented() -> None:
    assert mirrored(Path("controllers/etcdcluster")) == (
        REPO_ROOT / "src" / "appstack" / "controllers" / "etcdcluster"
    )
    assert mirrored(Path("testbed/images")) == (
        REPO_ROOT / "testbed" / "src" / "appstack_testbed" / "images"
    )
