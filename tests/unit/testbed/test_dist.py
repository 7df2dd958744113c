"""The pure parts of ``make dist`` (:mod:`appstack_testbed.dist`): the image repository of
IMG, the install pinned to a digest, SHA256SUMS, the archive renamed without changing its
digest, and one run over stand-in pieces (no image build, no helm: tests/e2e/test_dist.py
runs it for real)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from appstack import __version__
from appstack_testbed import dist, image
from appstack_testbed.image import BuiltImage
from appstack_testbed.oci import REF_ANNOTATION

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("reference", "repository"),
    [
        ("appstack", "appstack"),
        ("appstack:0.1.0", "appstack"),
        ("registry.example.com/team/appstack", "registry.example.com/team/appstack"),
        ("registry.example.com/team/appstack:0.1.0", "registry.example.com/team/appstack"),
        ("localhost:5000/appstack", "localhost:5000/appstack"),
        (f"localhost:5000/appstack:1@{DIGEST}", "localhost:5000/appstack"),
        (f"appstack@{DIGEST}", "appstack"),
    ],
)
def test_the_repository_of_an_image_reference_keeps_a_registry_port(
    reference: str, repository: str
) -> None:
    assert dist.repository(reference) == repository


def test_an_empty_reference_or_a_digest_that_is_not_sha256_is_refused() -> None:
    with pytest.raises(ValueError, match="not an image reference"):
        dist.repository(":1.0")
    with pytest.raises(ValueError, match="not a sha256 digest"):
        dist.pinned("appstack", "sha256:abc")
    with pytest.raises(ValueError, match="not a sha256 digest"):
        dist.pinned("appstack", "md5:" + "ab" * 32)


def test_the_install_runs_the_image_by_digest() -> None:
    image_ref = dist.pinned("registry.example.com/team/appstack", DIGEST)
    docs = list(yaml.safe_load_all(dist.install_yaml(image_ref)))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.example.com/team/appstack@{DIGEST}"
    kinds = {d["kind"] for d in docs}
    assert {"CustomResourceDefinition", "Namespace", "ServiceAccount"} <= kinds


def test_sha256sums_is_what_sha256sum_checks(tmp_path: Path) -> None:
    files = [tmp_path / "b.tgz", tmp_path / "a.whl", tmp_path / "install.yaml"]
    for path in files:
        path.write_bytes(path.name.encode() * 3)
    text = dist.sums_text(files)
    assert text.splitlines()[0] == (hashlib.sha256(b"a.whla.whla.whl").hexdigest() + "  a.whl")
    assert dist.listed(text) == ["a.whl", "b.tgz", "install.yaml"]
    (tmp_path / "SHA256SUMS").write_text(text)
    check = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert dist.listed("garbage\n\n") == []


def _archive(path: Path, ref: str) -> str:
    """A tiny single-image OCI archive as buildah writes one; its manifest digest."""
    config = json.dumps({"config": {"Labels": {"v": "1"}}}).encode()
    layer = b"layer bytes"
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"digest": "sha256:" + hashlib.sha256(config).hexdigest()},
            "layers": [{"digest": "sha256:" + hashlib.sha256(layer).hexdigest()}],
        }
    ).encode()
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": len(manifest),
                "annotations": {REF_ANNOTATION: ref},
            }
        ],
    }
    with tarfile.open(path, "w") as tar:
        for name, data in [
            *((f"blobs/sha256/{hashlib.sha256(b).hexdigest()}", b) for b in (layer, config)),
            (f"blobs/sha256/{digest.split(':')[1]}", manifest),
            ("index.json", json.dumps(index).encode()),
            ("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return digest


def _blob_bytes(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar
            if m.name.startswith("blobs/") and m.isfile()
        }


def test_the_archive_is_renamed_and_keeps_its_digest_and_blobs(tmp_path: Path) -> None:
    source, target = tmp_path / "cached.oci.tar", tmp_path / "dist.oci.tar"
    digest = _archive(source, "appstack:0.1.0")
    assert dist.renamed_archive(source, target, "reg.example.com/appstack:0.1.0")
    (descriptor,) = dist.archive_index(target)["manifests"]
    assert descriptor["digest"] == digest == dist.manifest_digest(source)
    assert descriptor["annotations"] == {REF_ANNOTATION: "reg.example.com/appstack:0.1.0"}
    assert _blob_bytes(target) == _blob_bytes(source)
    with tarfile.open(target) as renamed, tarfile.open(source) as cached:
        assert renamed.getnames() == cached.getnames()

    mtime = target.stat().st_mtime_ns
    assert not dist.renamed_archive(source, target, "reg.example.com/appstack:0.1.0")
    assert target.stat().st_mtime_ns == mtime
    assert dist.renamed_archive(source, target, "other/appstack:0.1.0")


def test_files_are_written_only_when_they_change(tmp_path: Path) -> None:
    path = tmp_path / "install.yaml"
    assert dist.write_if_changed(path, b"a")
    os.utime(path, ns=(1, 1))
    assert not dist.write_if_changed(path, b"a")
    assert path.stat().st_mtime_ns == 1
    assert dist.write_if_changed(path, b"b")
    copy = tmp_path / "copy"
    assert dist.copy_if_changed(path, copy)
    assert not dist.copy_if_changed(path, copy)
    assert copy.read_bytes() == b"b"


def test_a_release_over_stand_in_pieces_is_idempotent_and_drops_an_older_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel = cache / f"appstack-{__version__}-py3-none-any.whl"
    sdist = cache / f"appstack-{__version__}.tar.gz"
    chart = cache / f"appstack-{__version__}.tgz"
    for path in (wheel, sdist, chart):
        path.write_bytes(path.name.encode())
    archive = cache / "appstack-key.oci.tar"
    digest = _archive(archive, f"appstack:{__version__}")
    monkeypatch.setattr(dist, "python_distributions", lambda project, printer: (wheel, sdist))
    monkeypatch.setattr(dist, "chart_package", lambda printer: chart)
    monkeypatch.setattr(
        image, "build_image", lambda project, printer, ref: BuiltImage(archive, ref)
    )
    out = tmp_path / "dist"
    out.mkdir()
    (out / "appstack-0.0.1.oci.tar").write_text("old")
    (out / "notes.txt").write_text("the user's")
    (out / dist.SUMS).write_text("00  appstack-0.0.1.oci.tar\n00  install.yaml\n")
    messages: list[str] = []

    release = dist.build(out, "registry.example.com/team/appstack:9", printer=messages.append)
    assert release.image == f"registry.example.com/team/appstack@{digest}"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            wheel.name,
            sdist.name,
            chart.name,
            f"appstack-{__version__}.oci.tar",
            "install.yaml",
            "SHA256SUMS",
            "notes.txt",  # not an earlier release's: left alone
        ]
    )
    assert dist.listed((out / dist.SUMS).read_text()) == sorted(p.name for p in release.artifacts)
    assert release.image in release.install.read_text()
    assert dist.archive_index(release.archive)["manifests"][0]["annotations"] == {
        REF_ANNOTATION: f"registry.example.com/team/appstack:{__version__}"
    }

    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()}
    messages.clear()
    dist.build(out, "registry.example.com/team/appstack", printer=messages.append)
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()} == before
    assert "nothing changed" in messages[-1]
