"""The Dockerfile, the daemonless build (appstack_testbed.image) and the lock agree.

The e2e test runs the operator from the daemonless image; these checks make sure that
image is the one the Dockerfile describes, and that ``requirements.lock`` pins exactly
the runtime dependencies of ``pyproject.toml`` (no dev or testing extras), with hashes.
"""

from __future__ import annotations

import datetime
import json
import re
import shlex

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from appstack import __version__
from appstack_testbed import image, image_labels
from tests.support.paths import REPO_ROOT as ROOT

tomllib = pytest.importorskip("tomllib")


def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages as lists of (INSTRUCTION, arguments); continuations joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    stages: list[list[tuple[str, str]]] = [[]]
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        instruction, _, args = line.strip().partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        stages[-1].append((instruction.upper(), args.strip()))
    return stages


def _runs(stage: list[tuple[str, str]]) -> list[list[str]]:
    return [[c.strip() for c in a.split("&&")] for i, a in stage if i == "RUN"]


def _apt_packages(commands: list[str]) -> tuple[str, ...]:
    (install,) = [c for c in commands if c.startswith("apt-get install")]
    return tuple(w for w in install.split()[2:] if not w.startswith("-"))


def test_the_base_is_pinned_and_both_stages_use_it() -> None:
    preamble, build, final = _stages()
    assert preamble == [("ARG", f"BASE_IMAGE={image.BASE_IMAGE}")]
    assert re.fullmatch(r"debian:12\.\d+-slim", image.BASE_IMAGE)
    assert build[0] == ("FROM", "${BASE_IMAGE} AS build")
    assert final[0] == ("FROM", "${BASE_IMAGE}")
    assert image.SUITE == "bookworm"  # Debian 12


def test_build_stage_matches_the_daemonless_build() -> None:
    _, build, _ = _stages()
    apt, steps = _runs(build)
    assert _apt_packages(apt) == image.BUILD_PACKAGES
    assert tuple(steps) == image.BUILD_STEPS
    copied = [tuple(a.split()) for i, a in build if i == "COPY"]
    assert copied == list(image.COPIED)  # the lock and the wheels: no source, no index


def test_the_image_builds_from_the_wheels_alone() -> None:
    """Every pip step of the build stage installs with ``--no-index`` from the copied
    wheels, the dependencies hash-checked against the lock; and the build context
    (.dockerignore) holds only what the Dockerfile copies."""
    installs = [step for step in image.BUILD_STEPS if " install " in step]
    assert len(installs) == 2
    assert all("--no-index" in step and "/wheels" in step for step in installs)
    assert "--require-hashes -r /src/requirements.lock" in installs[0]
    ignored = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignored == ["*", "!requirements.lock", f"!{image.WHEELS}/*.whl"]


def test_final_stage_matches_the_daemonless_build() -> None:
    _, _, final = _stages()
    apt, user = _runs(final)
    assert _apt_packages(apt) == image.RUNTIME_PACKAGES
    assert " && ".join(user) == image.USER_STEP
    instructions = dict(final[1:])
    config = image.CONFIG
    assert instructions["COPY"] == f"--from=build {image.VENV} {image.VENV}"
    assert tuple(shlex.split(instructions["ENV"])) == config.env
    provenance = {
        f"org.opencontainers.image.{key}": f"${{{arg}}}"
        for key, arg in (("source", "SOURCE"), ("revision", "REVISION"), ("created", "CREATED"))
    }
    labels = dict(kv.split("=", 1) for kv in shlex.split(instructions["LABEL"]))
    assert labels == {**config.labels, **provenance}  # the build arguments give those three
    assert shlex.split(instructions["ARG"]) == ["SOURCE=", "REVISION=", "CREATED="]
    assert config.labels["org.opencontainers.image.version"] == __version__
    assert instructions["USER"] == config.user == "65532:65532"
    assert instructions["WORKDIR"] == config.workdir
    assert tuple(int(p) for p in instructions["EXPOSE"].split()) == config.ports
    assert json.loads(instructions["ENTRYPOINT"]) == list(config.entrypoint)
    assert json.loads(instructions["CMD"]) == list(config.cmd)


def test_the_image_user_is_the_one_the_deployment_runs_as() -> None:
    docs = yaml.safe_load_all((ROOT / "deploy" / "operator.yaml").read_text())
    (deployment,) = [d for d in docs if d and d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (image.UID, image.GID)


def _lock() -> dict[str, str]:
    text = (ROOT / "requirements.lock").read_text()
    entries = re.findall(
        r"^([A-Za-z0-9_.-]+)==(\S+)(?: ;[^\\\n]*)? \\\n((?:\s+--hash=sha256:\w+.*\n)+)", text, re.M
    )
    pins = {canonicalize_name(name): version for name, version, _ in entries}
    assert len(entries) == len(re.findall(r"^\S+==", text, re.M)), "every pin has hashes"
    return pins


def test_the_lock_pins_every_runtime_dependency_and_nothing_else() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _lock()
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: run make lock"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} vs {spec}"
    extras_only = {
        canonicalize_name(Requirement(spec).name)
        for extra in project["optional-dependencies"].values()
        for spec in extra
    } - {canonicalize_name(Requirement(s).name) for s in project["dependencies"]}
    assert not (extras_only & set(pins)), "dev/testing extras do not belong in the image"
    assert "--python-version 3.11" in (ROOT / "requirements.lock").read_text()  # bookworm's


def test_the_source_label_is_the_remote_as_an_https_url_without_credentials() -> None:
    for remote in (
        "git@github.com:o/r.git",
        "ssh://git@github.com/o/r.git",
        "https://github.com/o/r.git",
        "https://user:secret@github.com/o/r",
        "https://github.com/o/r/",
    ):
        assert image_labels.https_url(remote) == "https://github.com/o/r", remote
    for local in ("/work/main", "file:///work/main", "../appstack"):  # a clone of a clone
        assert image_labels.https_url(local) is None, local
    assert (
        image_labels.created(datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc))
        == "2026-01-02T03:04:05Z"
    )
