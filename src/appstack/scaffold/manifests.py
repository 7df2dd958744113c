"""``appstack generate manifests`` and ``appstack generate installer``: a scaffolded
project's ``config/`` and ``dist/install.yaml`` from its code — the kinds and controllers
its package declares (``<package>.controllers``: ``CONTROLLERS``, ``KINDS``, and ``GUARDS``
if it extends its admission guards), its identity
(``<package>.identity.IDENTITY``) and its ``PROJECT`` file — by the SDK's generator
(:mod:`appstack.sdk.config`), and kustomize for the bundle (``kubectl kustomize``: every
edit of the user's in ``config/`` kept). Also :func:`stale`, what the project's own test
checks, and what ``appstack edit`` changes in the files scaffolded once (:func:`set_image`,
:func:`set_args`), and ``appstack generate chart`` (``make helm``): the Helm chart in
``dist/chart`` derived from the same install (:func:`write_chart`, the SDK's
:func:`appstack.sdk.chart_files`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import yaml

from appstack.scaffold import project as projects
from appstack.sdk import (
    SCAFFOLDED_CONFIG,
    ChartError,
    ConfigProject,
    GuardExtensions,
    PolicyError,
    chart_files,
    chart_flags,
    config_files,
    config_with_alerts,
    config_with_args,
    config_with_image,
    config_with_webhooks,
)

CONFIG = "config"


def _import_fresh(package: str, src: Path, *modules: str) -> list[Any]:
    """``<package>.<module>`` of each of ``modules`` from ``src`` (a package of that name
    imported before, from another directory, is forgotten first)."""
    for name in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        del sys.modules[name]
    sys.path.insert(0, str(src))
    try:
        return [importlib.import_module(f"{package}.{module}") for module in modules]
    finally:
        sys.path.remove(str(src))


def command_flags(directory: Path, package: str) -> list[Any]:
    """The operator's own flags as values of its chart (:func:`appstack.sdk.chart_flags`):
    those its run command, ``main`` of ``<package>/__main__.py``, adds to the SDK's; none
    if it has no such command."""
    (module,) = _import_fresh(package, directory / "src", "__main__")
    command = getattr(module, "main", None)
    return chart_flags(command) if isinstance(command, click.Command) else []


def load(directory: Path) -> ConfigProject:
    """The project in ``directory`` as the generator sees it (its code imported)."""
    project = projects.read(directory)
    identity, controllers = _import_fresh(
        project.package, directory / "src", "identity", "controllers"
    )
    guards = getattr(controllers, "GUARDS", GuardExtensions())
    if not isinstance(guards, GuardExtensions):
        raise projects.Refused(
            f"{project.package}.controllers.GUARDS is a {type(guards).__name__}, "
            "not an appstack.sdk.GuardExtensions"
        )
    return ConfigProject(
        identity=identity.IDENTITY,
        package=project.package,
        controllers=list(controllers.CONTROLLERS),
        kinds=list(controllers.KINDS),
        namespaced=project.namespaced,
        enable_all_namespaces=project.enable_all_namespaces,
        guards=guards,
    )


def _generated(project: ConfigProject) -> dict[str, str]:
    """:func:`appstack.sdk.config_files` of ``project``; what its code declares that cannot
    be installed (two policies of one name, an own guard that makes no policy) refused in
    one line."""
    try:
        return config_files(project)
    except PolicyError as error:
        raise projects.Refused(str(error)) from None


def files(directory: Path) -> dict[Path, str]:
    """Every file of ``config/`` as the code generates it now, by path (those scaffolded
    once included: :data:`appstack.sdk.SCAFFOLDED_CONFIG`)."""
    generated = _generated(load(directory))
    return {directory / CONFIG / rel: text for rel, text in generated.items()}


def _scaffolded(directory: Path, path: Path) -> bool:
    return str(path.relative_to(directory / CONFIG)) in SCAFFOLDED_CONFIG


def generate(directory: Path) -> list[Path]:
    """Write ``config/``: the generated files, and those scaffolded once where missing (a
    user's edits to ``manager/``, ``default/`` and ``prometheus/`` are theirs; once the
    project declares webhooks, ``../webhook`` and the webhook port are added to them where
    missing: :func:`appstack.sdk.config_with_webhooks`; the operator's alerts,
    ``prometheus/alerts.yaml``, listed in ``prometheus/kustomization.yaml`` where a project
    scaffolded before did not list it: :func:`appstack.sdk.config_with_alerts`); the files
    that changed (none the second time)."""
    changed = []
    project = load(directory)
    generated = {directory / CONFIG / rel: text for rel, text in _generated(project).items()}
    for path, text in generated.items():
        if path.is_file() and (_scaffolded(directory, path) or path.read_text() == text):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        changed.append(path)
    # a project's first webhook: wired into the files scaffolded once, the rest kept
    default = directory / CONFIG / "default" / "kustomization.yaml"
    manager = directory / CONFIG / "manager" / "manager.yaml"
    before = default.read_text(), manager.read_text()
    after = config_with_webhooks(*before, project)
    for path, old, new in ((default, before[0], after[0]), (manager, before[1], after[1])):
        if new != old:
            path.write_text(new)
            changed.append(path)
    # the operator's alerts: listed in config/prometheus beside its ServiceMonitor
    monitoring = directory / CONFIG / "prometheus" / "kustomization.yaml"
    kustomization = monitoring.read_text()
    listed = config_with_alerts(kustomization)
    if listed != kustomization:
        monitoring.write_text(listed)
        changed.append(monitoring)
    return changed


def stale(directory: Path) -> list[str]:
    """The generated files that differ from what the code generates now, and those
    scaffolded once that are missing."""
    return [
        str(path.relative_to(directory))
        for path, text in files(directory).items()
        if not path.is_file() or (not _scaffolded(directory, path) and path.read_text() != text)
    ]


def set_image(directory: Path, image: str) -> Path:
    """``config/manager/kustomization.yaml`` made to run ``image`` (``appstack edit
    --image``, ``kustomize edit set image controller=IMAGE`` in a kubebuilder project)."""
    path = directory / CONFIG / "manager" / "kustomization.yaml"
    if not path.is_file():
        raise projects.Refused(f"{path} is missing: run make manifests first")
    text = config_with_image(path.read_text(), image)
    if text != path.read_text():
        path.write_text(text)
    return path


def set_args(directory: Path) -> Path | None:
    """``config/manager/manager.yaml``'s flags that the project's settings decide made to
    follow them (``appstack edit``); nothing else in it changes. None if it is missing
    (``make manifests`` writes it)."""
    path = directory / CONFIG / "manager" / "manager.yaml"
    if not path.is_file():
        return None
    text = config_with_args(path.read_text(), load(directory))
    if text != path.read_text():
        path.write_text(text)
    return path


def installer(directory: Path, image: str, kubectl: str = "kubectl") -> str:
    """The install bundle for ``image`` (``dist/install.yaml``): the image set in
    ``config/manager``, then ``kubectl kustomize config/default`` — every edit of the
    user's in ``config/`` included, as ``make deploy`` applies it."""
    set_image(directory, image)
    proc = subprocess.run(
        [kubectl, "kustomize", str(directory / CONFIG / "default")],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise projects.Refused(f"kubectl kustomize config/default: {proc.stderr.strip()}")
    return proc.stdout


#: Where ``make helm`` writes the chart (kubebuilder's helm plugin's place for it).
CHART = Path("dist") / "chart"
#: The digests of the chart's files as last generated: a file whose content differs from
#: its digest here was edited, and is kept.
CHART_RECORD = ".appstack-generated"
CHART_HEADER = (
    "# Generated by `appstack generate chart` (make helm) from the project's install:\n"
    "# change config/ or the code and regenerate. A file you edit is kept by the next\n"
    "# `make helm` (`appstack generate chart --force` rewrites it).\n"
)


def _kustomized(config: Path, kubectl: str, overlay: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [kubectl, "kustomize", str(config / overlay)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise projects.Refused(f"kubectl kustomize config/{overlay}: {proc.stderr.strip()}")
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


def install_objects(
    directory: Path,
    kubectl: str = "kubectl",
    *,
    config: Path | None = None,
    project: ConfigProject | None = None,
) -> list[dict[str, Any]]:
    """What ``make deploy`` applies — kustomize's build of ``config/default``, every edit of
    the user's in ``config/`` included — and what ``config/prometheus`` holds (the
    ServiceMonitor, the kinds' alerts) and ``config/grafana`` (the dashboards), named and
    placed as ``config/default`` names and places the rest (``config``: another copy of
    ``config/`` to build instead; ``project``: the project as :func:`load` read it)."""
    project = project or load(directory)
    config = config or directory / CONFIG
    objects = _kustomized(config, kubectl, "default")
    prefix = f"{project.identity.project}-"
    monitoring_objects = _kustomized(config, kubectl, "prometheus")
    if (config / "grafana" / "kustomization.yaml").is_file():  # made before: none
        monitoring_objects += _kustomized(config, kubectl, "grafana")
    for monitoring in monitoring_objects:
        if not monitoring["metadata"]["name"].startswith(prefix):
            monitoring["metadata"]["name"] = prefix + monitoring["metadata"]["name"]
        monitoring["metadata"]["namespace"] = project.identity.namespace
        objects.append(monitoring)
    return objects


#: config/default's entry of the sharding Component (config/sharding).
SHARDING_COMPONENT = "../sharding"


def sharding_toggled(
    directory: Path, kubectl: str = "kubectl", *, project: ConfigProject | None = None
) -> list[dict[str, Any]] | None:
    """The install of :func:`install_objects` with the sharding Component turned the other
    way in ``config/default`` (on if it is off, off if on), built from a copy of
    ``config/`` (the project's files untouched); None when the project has no
    ``config/sharding`` (no controller)."""
    config = directory / CONFIG
    if not (config / "sharding" / "kustomization.yaml").is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="appstack-chart-") as tmp:
        copied = Path(tmp) / CONFIG
        shutil.copytree(config, copied)
        kustomization = copied / "default" / "kustomization.yaml"
        body = yaml.safe_load(kustomization.read_text()) or {}
        listed = list(body.get("components") or [])
        components = [c for c in listed if c != SHARDING_COMPONENT]
        if len(components) == len(listed):
            components.append(SHARDING_COMPONENT)
        body["components"] = components
        if not components:
            del body["components"]
        kustomization.write_text(yaml.safe_dump(body, sort_keys=False))
        return install_objects(directory, kubectl, config=copied, project=project)


def _version(directory: Path) -> str:
    """The project's version (pyproject.toml), the chart's and the operator's."""
    try:
        text = (directory / "pyproject.toml").read_text()
    except OSError:
        return "0.1.0"
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, flags=re.MULTILINE)
    return found.group(1) if found else "0.1.0"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_chart(
    directory: Path, image: str = "", kubectl: str = "kubectl", *, force: bool = False
) -> tuple[list[Path], list[Path]]:
    """Write ``dist/chart`` from the project's install (:func:`install_objects`, ``image``
    the default image if given): every file as generated, except one edited since it was
    generated (or put there by the user), which is kept unless ``force``; a file generated
    before and no longer (unedited) is removed. (written, kept)."""
    project = load(directory)
    version = _version(directory)
    try:
        generated = chart_files(
            install_objects(directory, kubectl, project=project),
            project.identity,
            version=version,
            image=image,
            header=CHART_HEADER,
            toggled=sharding_toggled(directory, kubectl, project=project),
            flags=command_flags(directory, project.package),
        )
    except ChartError as error:
        raise projects.Refused(f"config/default: {error}") from None
    generated[".helmignore"] += f"{CHART_RECORD}\n"
    root = directory / CHART
    record_path = root / CHART_RECORD
    try:
        record: dict[str, str] = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    written: list[Path] = []
    kept: list[Path] = []
    new_record: dict[str, str] = {}
    for rel, text in generated.items():
        path = root / rel
        if path.is_file():
            current = path.read_text()
            if current == text:
                new_record[rel] = _digest(text)
                continue
            if not force and record.get(rel) != _digest(current):  # edited, or their own
                kept.append(path)
                new_record[rel] = record.get(rel, "")
                continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
        new_record[rel] = _digest(text)
    for rel, digest in record.items():
        path = root / rel
        if rel not in generated and path.is_file() and _digest(path.read_text()) == digest:
            path.unlink()
    root.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(dict(sorted(new_record.items())), indent=1) + "\n")
    return written, kept
