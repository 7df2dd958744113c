"""``appstack generate manifests`` and ``appstack generate installer``: a scaffolded
project's ``config/`` and ``dist/install.yaml`` from its code — the kinds and controllers
its package declares (``<package>.controllers``: ``CONTROLLERS``, ``KINDS``), its identity
(``<package>.identity.IDENTITY``) and its ``PROJECT`` file — by the SDK's generator
(:mod:`appstack.sdk.config`). Also :func:`stale`, what the project's own test checks.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from appstack.sdk import config
from appstack.sdk.scaffold import project as projects

CONFIG = "config"


def _import_fresh(package: str, src: Path) -> tuple[object, object]:
    """``<package>.identity`` and ``<package>.controllers`` from ``src`` (a package of that
    name imported before, from another directory, is forgotten first)."""
    for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        del sys.modules[name]
    sys.path.insert(0, str(src))
    try:
        identity = importlib.import_module(f"{package}.identity")
        controllers = importlib.import_module(f"{package}.controllers")
    finally:
        sys.path.remove(str(src))
    return identity, controllers


def load(directory: Path) -> config.Project:
    """The project in ``directory`` as the generator sees it (its code imported)."""
    project = projects.read(directory)
    identity, controllers = _import_fresh(project.package, directory / "src")
    return config.Project(
        identity=identity.IDENTITY,  # type: ignore[attr-defined]
        package=project.package,
        controllers=list(controllers.CONTROLLERS),  # type: ignore[attr-defined]
        kinds=list(controllers.KINDS),  # type: ignore[attr-defined]
        namespaced=project.namespaced,
        enable_all_namespaces=project.enable_all_namespaces,
    )


def files(directory: Path) -> dict[Path, str]:
    """Every generated file of the project in ``directory``, by path."""
    generated = config.config_files(load(directory))
    return {directory / CONFIG / rel: text for rel, text in generated.items()}


def generate(directory: Path) -> list[Path]:
    """Write ``config/``; the files that changed (none the second time)."""
    changed = []
    for path, text in files(directory).items():
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(path)
    return changed


def stale(directory: Path) -> list[str]:
    """The generated files that differ from what the code generates now."""
    return [
        str(path.relative_to(directory))
        for path, text in files(directory).items()
        if not path.is_file() or path.read_text() != text
    ]


def installer(directory: Path, image: str) -> str:
    """The install bundle for ``image`` (``dist/install.yaml``)."""
    return config.installer_text(load(directory), image)
