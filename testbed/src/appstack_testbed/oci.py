"""OCI images without a daemon: commit a root filesystem with buildah, unpack one with umoci.

:func:`commit` creates a ``buildah from scratch`` working container in buildah storage of
its own (under the cache, ``vfs`` driver, so it works wherever root can write files), lets
the caller fill its root filesystem, sets the image configuration and commits it to an
``oci-archive`` (gzip layer). :func:`unpack` turns such an archive back into a root
filesystem with ``umoci unpack`` and returns it with the image configuration read from
the archive. Used by :mod:`appstack_testbed.image` and the image's e2e test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appstack_testbed.build import _file_lock
from appstack_testbed.rootfs import ImageBuildError

REF_ANNOTATION = "org.opencontainers.image.ref.name"
KEEP = 3  # images (archives, unpacked root filesystems) kept in the cache


def keep_newest(paths: Sequence[Path], keep: int) -> list[Path]:
    """The paths to remove so that only the ``keep`` most recently modified remain."""
    return sorted(paths, key=lambda p: p.stat().st_mtime, reverse=True)[keep:]


@dataclass(frozen=True)
class ImageConfig:
    """The parts of an OCI image configuration the operator image sets."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    user: str
    env: tuple[str, ...]
    ports: tuple[int, ...]
    labels: Mapping[str, str]
    workdir: str = "/"
    # the signal that stops the container (the runtime's default, SIGTERM, when None); out
    # of repr so that the images that set none keep their cache keys
    stop_signal: str | None = field(default=None, repr=False)

    def buildah_args(self) -> list[str]:
        return [
            f"--entrypoint={json.dumps(list(self.entrypoint))}",
            f"--cmd={json.dumps(list(self.cmd))}",
            f"--user={self.user}",
            f"--workingdir={self.workdir}",
            *(f"--env={pair}" for pair in self.env),
            *(f"--port={port}/tcp" for port in self.ports),
            *(f"--label={key}={value}" for key, value in sorted(self.labels.items())),
            *([f"--stop-signal={self.stop_signal}"] if self.stop_signal else []),
        ]


def _run(cmd: Sequence[str]) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ImageBuildError(f"{' '.join(cmd[:4])} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout.strip()


def commit(
    storage: Path, populate: Callable[[Path], None], config: ImageConfig, archive: Path, ref: str
) -> None:
    """Build an image from scratch: ``populate(rootfs)``, configure, commit to ``archive``."""
    buildah = [
        "buildah",
        f"--root={storage / 'storage'}",
        f"--runroot={storage / 'run'}",
        "--storage-driver=vfs",
    ]
    container = _run([*buildah, "from", "--name", f"appstack-image-{os.getpid()}", "scratch"])
    try:
        populate(Path(_run([*buildah, "mount", container])))
        _run([*buildah, "umount", container])
        _run([*buildah, "config", *config.buildah_args(), container])
        partial = archive.with_name(archive.name + ".partial")
        partial.unlink(missing_ok=True)
        _run(
            [
                *buildah,
                "commit",
                "--format=oci",
                "--disable-compression=false",
                "--quiet",
                container,
                f"oci-archive:{partial}:{ref}",
            ]
        )
        os.replace(partial, archive)
    finally:
        subprocess.run([*buildah, "rm", container], capture_output=True, check=False)


@dataclass(frozen=True)
class UnpackedImage:
    """An image's root filesystem (``bundle/rootfs``) and its OCI configuration."""

    digest: str
    ref: str
    bundle: Path
    config: dict[str, Any]

    @property
    def rootfs(self) -> Path:
        return self.bundle / "rootfs"


def _json(tar: tarfile.TarFile, name: str) -> dict[str, Any]:
    member = tar.extractfile(name)
    if member is None:
        raise ImageBuildError(f"{name} missing from the archive")
    value: dict[str, Any] = json.load(member)
    return value


def read_archive(archive: Path) -> tuple[str, str, dict[str, Any]]:
    """(manifest digest, ref name, image configuration) of a single-image oci-archive."""
    with tarfile.open(archive) as tar:
        (descriptor,) = _json(tar, "index.json")["manifests"]
        manifest = _json(tar, "blobs/" + descriptor["digest"].replace(":", "/"))
        config = _json(tar, "blobs/" + manifest["config"]["digest"].replace(":", "/"))
    ref = descriptor.get("annotations", {}).get(REF_ANNOTATION, "")
    return descriptor["digest"], ref, config


def unpack(archive: Path, cache: Path) -> UnpackedImage:
    """``umoci unpack`` the archive into ``cache/<digest>`` (reused while the digest matches).

    Only the :data:`KEEP` most recently used root filesystems stay in ``cache``.
    """
    digest, ref, config = read_archive(archive)
    bundle = cache / digest.replace(":", "-")
    done = bundle / ".unpacked"
    cache.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache / ".lock"):
        if not done.is_file():
            shutil.rmtree(bundle, ignore_errors=True)  # an interrupted unpack
            with tempfile.TemporaryDirectory(dir=cache, prefix=".layout-") as layout:
                _run(["tar", "-xf", str(archive), "-C", layout])
                _run(["umoci", "unpack", "--image", f"{layout}:{ref}", str(bundle)])
        done.write_text(digest + "\n")  # its mtime: last used
        stamps = [d / ".unpacked" for d in cache.glob("sha256-*")]
        for old in [s for s in stamps if not s.is_file()] + keep_newest(
            [s for s in stamps if s.is_file()], KEEP
        ):
            shutil.rmtree(old.parent, ignore_errors=True)
    return UnpackedImage(digest, ref, bundle, config["config"])
