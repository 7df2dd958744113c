"""``make dist``'s release artifacts, made for real (``python -m appstack_testbed.dist``, what
the target runs) into a directory of the test's own: the wheel and sdist of this version,
the OCI image archive whose manifest digest is the one install.yaml's Deployment runs, the
chart package with this version as version and appVersion, SHA256SUMS that check; a second
run rewrites nothing; and pushed as docs/install.md says (skopeo with --preserve-digests,
helm push) into the local registry, the image keeps its digest and the chart its version.
The image build is the cached one of tests/e2e/test_image.py, so warm this takes seconds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack import __version__
from appstack.manifests import chart
from appstack_testbed.helm import Helm
from appstack_testbed.oci import REF_ANNOTATION
from appstack_testbed.registry import MANIFEST_TYPES, LocalRegistry
from tests.support.paths import REPO_ROOT

# cold, the image build (tests/e2e/test_image.py's, cached) comes first, in the fixture
pytestmark = pytest.mark.timeout(1800)
REPOSITORY = "registry.example.com/team/appstack"
ARTIFACTS = [
    f"appstack-{__version__}-py3-none-any.whl",
    f"appstack-{__version__}.tar.gz",
    f"appstack-{__version__}.oci.tar",
    f"appstack-{__version__}.tgz",
    "install.yaml",
]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Run:
    directory: Path
    stdout: str
    seconds: float


def _dist(directory: Path) -> Run:
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "appstack_testbed.dist",
            "--image",
            f"{REPOSITORY}:x",
            "-o",
            str(directory),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    _progress(proc.stderr[-2000:])
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return Run(directory, proc.stdout, seconds)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _dist(tmp_path_factory.mktemp("dist"))


def _read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None, name
    return member.read()


def _tar_json(tar: tarfile.TarFile, name: str) -> Any:
    return json.loads(_read(tar, name))


def _image_digest(archive: Path) -> str:
    """The archive's one manifest digest, checked against the manifest blob's bytes."""
    with tarfile.open(archive) as tar:
        (descriptor,) = _tar_json(tar, "index.json")["manifests"]
        digest: str = descriptor["digest"]
        manifest = _read(tar, "blobs/sha256/" + digest.removeprefix("sha256:"))
        assert "sha256:" + hashlib.sha256(manifest).hexdigest() == digest
        config = _tar_json(
            tar, "blobs/" + json.loads(manifest)["config"]["digest"].replace(":", "/")
        )
    assert descriptor["annotations"][REF_ANNOTATION] == f"{REPOSITORY}:{__version__}"
    assert config["config"]["Labels"]["org.opencontainers.image.version"] == __version__
    return digest


def _deployment_image(install: Path) -> str:
    docs = [d for d in yaml.safe_load_all(install.read_text()) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    image: str = container["image"]
    return image


def test_every_artifact_is_of_this_version_and_the_install_runs_the_archived_image(
    release: Run,
) -> None:
    out = release.directory
    _progress(f"[test] make dist took {release.seconds:.1f} s")
    assert sorted(p.name for p in out.iterdir()) == sorted([*ARTIFACTS, "SHA256SUMS"])

    with zipfile.ZipFile(out / ARTIFACTS[0]) as wheel:
        metadata = wheel.read(f"appstack-{__version__}.dist-info/METADATA").decode()
    assert f"Version: {__version__}" in metadata.splitlines()
    with tarfile.open(out / ARTIFACTS[1]) as sdist:
        pkg_info = _read(sdist, f"appstack-{__version__}/PKG-INFO").decode()
    assert f"Version: {__version__}" in pkg_info.splitlines()

    digest = _image_digest(out / ARTIFACTS[2])
    assert _deployment_image(out / "install.yaml") == f"{REPOSITORY}@{digest}"

    rendered = chart.render()
    with tarfile.open(out / ARTIFACTS[3]) as package:
        names = {
            n.removeprefix("appstack/") for n in package.getnames() if package.getmember(n).isfile()
        }
        chart_yaml = yaml.safe_load(_read(package, "appstack/Chart.yaml"))
        values = _read(package, "appstack/values.yaml").decode()
    assert names == set(rendered)
    assert (chart_yaml["name"], chart_yaml["version"], chart_yaml["appVersion"]) == (
        "appstack",
        __version__,
        __version__,
    )
    assert values == rendered["values.yaml"]

    sums = (out / "SHA256SUMS").read_text().splitlines()
    assert [line.split("  ")[1] for line in sums] == sorted(ARTIFACTS)
    for line in sums:
        expected, name = line.split("  ")
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == expected, name
    check = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"],
        cwd=out,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_second_run_rewrites_nothing(release: Run) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in release.directory.iterdir()}
    again = _dist(release.directory)
    _progress(f"[test] make dist again took {again.seconds:.1f} s")
    assert {p.name: p.stat().st_mtime_ns for p in release.directory.iterdir()} == before
    assert again.stdout == release.stdout


def test_pushed_as_the_docs_say_the_image_keeps_its_digest_and_the_chart_its_version(
    release: Run, tmp_path: Path
) -> None:
    out = release.directory
    registry = LocalRegistry(_progress)
    registry.ensure()
    target = f"{registry.address}/dist-test/appstack:{__version__}"
    push = subprocess.run(
        [
            "skopeo",
            "copy",
            "--preserve-digests",
            "--dest-tls-verify=false",
            f"oci-archive:{out / ARTIFACTS[2]}",
            f"docker://{target}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert push.returncode == 0, push.stderr
    request = urllib.request.Request(
        f"http://{registry.address}/v2/dist-test/appstack/manifests/{__version__}",
        method="HEAD",
        headers={"Accept": MANIFEST_TYPES},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the local registry
        served = response.headers["Docker-Content-Digest"]
    assert f"{REPOSITORY}@{served}" == _deployment_image(out / "install.yaml")

    helm = Helm.ensure(Path(os.devnull), tmp_path / "helm", _progress)
    charts = f"oci://{registry.address}/dist-test/charts"
    helm("push", str(out / ARTIFACTS[3]), charts, "--plain-http")
    shown = helm("show", "chart", f"{charts}/appstack", "--version", __version__, "--plain-http")
    assert yaml.safe_load(shown.stdout)["appVersion"] == __version__
