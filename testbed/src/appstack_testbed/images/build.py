"""Build the :mod:`.catalog` images daemonless and push them into the local registry, cached.

An image is built into ``$APPSTACK_CACHE/images/<name>-<key>.oci.tar`` — a Debian minbase
root filesystem with its packages (mmdebstrap, cached like the operator image's), its files
and script (chrooted), or an empty root with the binaries it needs — committed with buildah,
and pushed with skopeo under each of its names. Pushing also tags ``<first repository>:
testbed-<key>``, so a later run knows from the registry alone that the image is current (the
registry may have been wiped, or filled by another checkout). A warm :func:`ensure` makes one
HEAD request per image. Used by :mod:`appstack_testbed.cluster` and the e2e tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from appstack_testbed import etcd_releases, versitygw
from appstack_testbed.build import _file_lock, _fmt
from appstack_testbed.images.catalog import SUITE, LocalImage
from appstack_testbed.oci import commit
from appstack_testbed.registry import LocalRegistry
from appstack_testbed.rootfs import (
    DebianRootfs,
    ImageBuildError,
    bootstrap,
    ensure_tools,
    namespace_command,
    run_streaming,
)
from appstack_testbed.versions import cache_root

Printer = Callable[[str], None]


def cache() -> Path:
    return cache_root() / "images"


def key_tag(image: LocalImage) -> tuple[str, str]:
    repository = image.refs[0].rsplit(":", 1)[0]
    return repository, f"testbed-{image.key}"


def ensure(images: Iterable[LocalImage], registry: LocalRegistry, printer: Printer) -> None:
    """Every image in the registry under all its names, built first where needed."""
    for image in images:
        repository, tag = key_tag(image)
        if registry.has(repository, tag):
            continue
        with _file_lock(_lock_path()):
            if registry.has(repository, tag):  # pushed by another process meanwhile
                continue
            started = time.monotonic()
            archive = build(image, printer)
            for ref in image.refs:
                registry.push(archive, *ref.rsplit(":", 1))
            registry.push(archive, repository, tag)
            printer(
                f"[appstack]   image {image.name}: {', '.join(image.refs[:3])}"
                f"{' ...' if len(image.refs) > 3 else ''} in the registry "
                f"({_fmt(time.monotonic() - started)})"
            )


def _lock_path() -> Path:
    cache().mkdir(parents=True, exist_ok=True)
    return cache() / ".images.lock"


def build(image: LocalImage, printer: Printer) -> Path:
    """The image's oci-archive in the cache, built unless it is there."""
    archive = cache() / f"{image.name}-{image.key}.oci.tar"
    if archive.is_file():
        return archive
    ensure_tools(printer)  # mmdebstrap, buildah, umoci: a fresh machine has none of them
    printer(f"[appstack] building image {image.name} ({image.config.labels})")
    tarball = (
        bootstrap(DebianRootfs(SUITE, image.packages), cache(), printer) if image.packages else None
    )

    def populate(rootfs: Path) -> None:
        if tarball is not None:
            subprocess.run(["tar", "-xpf", str(tarball), "-C", str(rootfs)], check=True)
        for path, text in image.files.items():
            target = rootfs / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            target.chmod(0o755 if text.startswith("#!") else 0o644)
        for binary in image.binaries:
            _add_binary(binary, rootfs, printer)
        if image.script:
            run_streaming(namespace_command(rootfs, ["sh", "-ec", image.script]), printer)

    for old in cache().glob(f"{image.name}-*.oci.tar"):
        old.unlink()
    commit(cache() / "buildah", populate, image.config, archive, image.refs[0])
    return archive


def _add_binary(binary: str, rootfs: Path, printer: Printer) -> None:
    if binary == "pause":
        source = Path(__file__).with_name("pause.c")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "pause"
            subprocess.run(["gcc", "-static", "-O2", "-o", str(out), str(source)], check=True)
            subprocess.run(["strip", str(out)], check=True)
            shutil.copy2(out, rootfs / "pause")
    elif binary == "busybox":
        tarball = bootstrap(DebianRootfs(SUITE, ("busybox-static",)), cache(), printer)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                ["tar", "-xpf", str(tarball), "-C", tmp, "./usr/bin/busybox"], check=True
            )
            busybox = Path(tmp) / "usr/bin/busybox"
            applets = subprocess.run(
                [str(busybox), "--list-full"], capture_output=True, text=True, check=True
            ).stdout.split()
            (rootfs / "bin").mkdir(exist_ok=True)
            shutil.copy2(busybox, rootfs / "bin/busybox")
        for applet in applets:
            link = rootfs / applet
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists() and applet != "bin/busybox":
                os.symlink("/bin/busybox", link)
        for folder in ("tmp", "etc", "root", "var"):
            (rootfs / folder).mkdir(exist_ok=True)
        (rootfs / "tmp").chmod(0o1777)
        (rootfs / "etc/passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        )
        (rootfs / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    elif binary.startswith("etcd:"):
        built = etcd_releases.ensure(binary.split(":", 1)[1], printer)
        target = rootfs / "usr/local/bin"
        target.mkdir(parents=True, exist_ok=True)
        for name in etcd_releases.BINARIES:
            shutil.copy2(built / name, target / name)
        (rootfs / "tmp").mkdir(mode=0o1777, exist_ok=True)
    elif binary.startswith("versitygw:"):
        built = versitygw.ensure(binary.split(":", 1)[1], printer)
        target = rootfs / "usr/local/bin"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target / versitygw.BINARY)
        (rootfs / "tmp").mkdir(exist_ok=True)
        (rootfs / "tmp").chmod(0o1777)
    else:
        raise ImageBuildError(f"unknown binary {binary!r}")


def repository_path(ref: str) -> tuple[str, str]:
    """The local registry's repository and tag for an image reference, as every real
    node's containerd asks for it: the registry host dropped, docker.io's one-part names
    under ``library/`` (``nginx:1.7.9`` -> ``library/nginx``, ``1.7.9``;
    ``registry.example.com/appstack:2`` -> ``appstack``, ``2``)."""
    name, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "latest")
    parts = name.split("/")
    host = "docker.io"
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        host, parts = parts[0], parts[1:]
    if host in ("docker.io", "index.docker.io", "registry-1.docker.io") and len(parts) == 1:
        parts = ["library", *parts]
    return "/".join(parts), tag


def push_archive(archive: Path, ref: str, registry: LocalRegistry, printer: Printer) -> str:
    """Push an oci-archive (e.g. the operator's image) as ``ref``; the pulled name."""
    registry.ensure()
    repository, tag = repository_path(ref)
    registry.push(archive, repository, tag)
    printer(f"[appstack] {ref} pushed into the local registry ({repository}:{tag})")
    return ref
