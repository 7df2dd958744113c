"""The release artifacts (``make dist``): everything a release is made of, in one directory.

``python -m appstack_testbed.dist [--image REPOSITORY] [-o dist]`` writes, for the version
``appstack.__version__`` (V):

* ``appstack-V-py3-none-any.whl`` and ``appstack-V.tar.gz``: ``python -m build`` (the sdist,
  then the wheel from it), kept in ``$APPSTACK_CACHE/dist`` under a key of the sources;
* ``appstack-V.oci.tar``: the operator image as an OCI image layout archive — the daemonless
  build of :mod:`appstack_testbed.image` (cached there), its ``index.json`` naming it
  ``REPOSITORY:V`` (the name ``podman load`` gives it; the manifest, and so the digest, is the
  cached image's);
* ``appstack-V.tgz``: the Helm chart rendered from the code (what ``charts/appstack`` holds
  when it is up to date) packaged with ``helm package``, kept in the cache by its files;
* ``install.yaml``: ``appstack manifests --image REPOSITORY@sha256:<digest> -o yaml``, the
  install pinned to the archived image's manifest digest, which ``skopeo copy`` and
  ``crane push`` keep when they push the archive;
* ``SHA256SUMS``: ``sha256sum -c SHA256SUMS`` checks them all.

Idempotent: what is up to date is left alone (a second run rewrites nothing, every file
keeps its mtime); artifacts that a previous run listed in ``SHA256SUMS`` and this one does
not make (an older version's) are removed. Building the image needs root (:mod:`.image`).
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appstack import __version__
from appstack_testbed.build import Printer, _file_lock, _fmt, _stderr, write_atomically
from appstack_testbed.oci import REF_ANNOTATION
from appstack_testbed.versions import HELM, cache_root

SUMS = "SHA256SUMS"
INSTALL = "install.yaml"
DEFAULT_REPOSITORY = "appstack"


def repository(image: str) -> str:
    """The repository of an image reference: ``reg:5000/team/appstack:1.0@sha256:…`` →
    ``reg:5000/team/appstack`` (a registry's port is not a tag)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    name = name[:colon] if colon > slash else name
    if not name:
        raise ValueError(f"not an image reference: {image!r}")
    return name


def pinned(repo: str, digest: str) -> str:
    """``repo@sha256:…``: the image by its manifest digest."""
    algorithm, _, hexdigest = digest.partition(":")
    if algorithm != "sha256" or len(hexdigest) != 64:
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return f"{repo}@{digest}"


def install_yaml(image: str) -> str:
    """The install bundle (``appstack manifests --image IMAGE -o yaml``)."""
    from appstack.manifests.bundle import bundle_text  # noqa: PLC0415
    from appstack.manifests.install import InstallOptions  # noqa: PLC0415

    return bundle_text(InstallOptions(image=image))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sums_text(files: Iterable[Path]) -> str:
    """``sha256sum``'s format (``<hex>  <name>``), sorted by name: ``sha256sum -c`` reads it
    in the files' directory."""
    return "".join(f"{sha256(p)}  {p.name}\n" for p in sorted(files, key=lambda p: p.name))


def listed(text: str) -> list[str]:
    """The file names of a ``SHA256SUMS`` text."""
    names = []
    for line in text.splitlines():
        _, sep, name = line.partition("  ")
        if sep and name not in ("", ".", "..") and "/" not in name:
            names.append(name)
    return names


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` unless the file holds it already (its mtime kept); whether it wrote."""
    if path.is_file() and path.read_bytes() == data:
        return False
    write_atomically(path, data)
    return True


def copy_if_changed(source: Path, target: Path) -> bool:
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return False
    partial = target.with_name(target.name + ".partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)
    return True


def _key(parts: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(parts):
        digest.update(name.encode() + b"\0" + hashlib.sha256(parts[name]).digest())
    return digest.hexdigest()[:16]


# --- the image archive


def archive_index(archive: Path) -> dict[str, Any]:
    """The ``index.json`` of an OCI archive."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        if member is None:
            raise ValueError(f"{archive}: no index.json")
        index: dict[str, Any] = json.load(member)
    return index


def named_index(index: Mapping[str, Any], ref: str) -> dict[str, Any]:
    """``index`` with its one image named ``ref`` (the manifest descriptor unchanged but for
    that annotation: the digest stays)."""
    (descriptor,) = index["manifests"]
    annotations = {**descriptor.get("annotations", {}), REF_ANNOTATION: ref}
    return {**index, "manifests": [{**descriptor, "annotations": annotations}]}


def manifest_digest(archive: Path) -> str:
    (descriptor,) = archive_index(archive)["manifests"]
    digest: str = descriptor["digest"]
    return digest


def renamed_archive(source: Path, target: Path, ref: str) -> bool:
    """Copy the single-image OCI archive ``source`` to ``target`` with its image named
    ``ref`` in ``index.json`` (blobs byte for byte); nothing to do when ``target`` is that
    already. Whether it wrote."""
    index = named_index(archive_index(source), ref)
    data = json.dumps(index, separators=(",", ":")).encode()
    if target.is_file():
        try:
            same = archive_index(target) == index and _blobs(target) == _blobs(source)
        except (tarfile.TarError, ValueError, OSError):
            same = False
        if same:
            return False
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(source) as src, tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as out:
        for member in src:
            if member.name == "index.json":
                replaced = tarfile.TarInfo("index.json")
                replaced.size, replaced.mode, replaced.mtime = len(data), member.mode, member.mtime
                out.addfile(replaced, io.BytesIO(data))
            else:
                out.addfile(member, src.extractfile(member) if member.isfile() else None)
    os.replace(partial, target)
    return True


def _blobs(archive: Path) -> list[tuple[str, int]]:
    with tarfile.open(archive) as tar:
        return sorted((m.name, m.size) for m in tar if m.name.startswith("blobs/") and m.isfile())


# --- the pieces, cached


def source_build_lock() -> contextlib.AbstractContextManager[None]:
    """Held while setuptools writes into a checkout (``src/*.egg-info``): the wheel and sdist
    build here, and a test's ``python -m build`` or ``pip install -e`` of the checkout — two
    at once (parallel test workers) would write the same files."""
    (cache_root() / "dist").mkdir(parents=True, exist_ok=True)
    return _file_lock(cache_root() / "dist" / ".python.lock")


def python_distributions(project: Path, printer: Printer) -> tuple[Path, Path]:
    """(wheel, sdist) of ``project``, built with ``python -m build`` unless the cache has
    them for these sources."""
    from appstack_testbed.image import source_files  # noqa: PLC0415

    files = source_files(project)
    key = _key({str(p.relative_to(project)): p.read_bytes() for p in files})
    cached = cache_root() / "dist" / f"python-{key}"
    wheel = cached / f"appstack-{__version__}-py3-none-any.whl"
    sdist = cached / f"appstack-{__version__}.tar.gz"
    if wheel.is_file() and sdist.is_file():
        printer(f"[appstack] wheel and sdist are up to date ({cached})")
        return wheel, sdist
    with source_build_lock():
        if wheel.is_file() and sdist.is_file():
            return wheel, sdist
        started = time.monotonic()
        printer("[appstack] python -m build: sdist, then the wheel from it")
        # setuptools warns about skipped bytecode when it is disabled
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        tmp = Path(tempfile.mkdtemp(dir=cached.parent, prefix=".python-"))
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "build", "--outdir", str(tmp), str(project)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if proc.returncode != 0:
                raise DistError(f"python -m build failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
            for built in (wheel, sdist):
                if not (tmp / built.name).is_file():
                    raise DistError(f"python -m build did not write {built.name}")
            shutil.rmtree(cached, ignore_errors=True)
            tmp.chmod(0o755)
            os.replace(tmp, cached)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        printer(f"[appstack] wheel and sdist built in {_fmt(time.monotonic() - started)}")
    _prune(cache_root() / "dist", "python-*")
    return wheel, sdist


def chart_package(printer: Printer) -> Path:
    """The Helm chart rendered from the code, packaged with ``helm package`` (cached by its
    files)."""
    from appstack.manifests import chart  # noqa: PLC0415
    from appstack_testbed.build import GoBuilder  # noqa: PLC0415
    from appstack_testbed.helm import Helm, helm_component  # noqa: PLC0415
    from appstack_testbed.versions import Toolchain  # noqa: PLC0415

    files = chart.render()
    key = _key({"helm": HELM.encode(), **{k: v.encode() for k, v in files.items()}})
    cached = cache_root() / "dist" / f"chart-{key}" / f"appstack-{__version__}.tgz"
    if cached.is_file():
        printer(f"[appstack] chart package is up to date ({cached})")
        return cached
    cached.parent.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cached.parent.parent, prefix=".chart-") as tmp:
        work = Path(tmp)
        for relative, text in files.items():
            path = work / "appstack" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (work / "out").mkdir()
        binary = GoBuilder(Toolchain(), printer).ensure(helm_component())
        helm = Helm(binary, kubeconfig=Path(os.devnull), home=work / "home")
        helm(
            "package",
            str(work / "appstack"),
            f"--version={__version__}",
            f"--app-version={__version__}",
            f"--destination={work / 'out'}",
        )
        packaged = work / "out" / cached.name
        if not packaged.is_file():
            raise DistError(f"helm package did not write {cached.name}")
        cached.parent.mkdir(exist_ok=True)
        os.replace(packaged, cached)
    printer(f"[appstack] chart packaged with helm {HELM}")
    _prune(cache_root() / "dist", "chart-*")
    return cached


def _prune(cache: Path, pattern: str) -> None:
    from appstack_testbed.oci import KEEP, keep_newest  # noqa: PLC0415

    for old in keep_newest(list(cache.glob(pattern)), KEEP):
        shutil.rmtree(old, ignore_errors=True)


# --- the release


class DistError(RuntimeError):
    """An artifact could not be made."""


@dataclass(frozen=True)
class Release:
    """What :func:`build` wrote into ``directory``."""

    directory: Path
    version: str
    image: str  # the install's image: repository@digest
    wheel: Path
    sdist: Path
    archive: Path
    chart: Path
    install: Path
    sums: Path

    @property
    def artifacts(self) -> list[Path]:
        return [self.wheel, self.sdist, self.archive, self.chart, self.install]


def build(
    directory: Path,
    image: str = DEFAULT_REPOSITORY,
    *,
    project: Path | None = None,
    printer: Printer = _stderr,
) -> Release:
    """Write the release artifacts into ``directory`` for the image repository of ``image``
    (a tag or digest in it is ignored: the archive is named ``REPOSITORY:VERSION`` and the
    install pins the digest)."""
    from appstack_testbed.image import build_image, project_root  # noqa: PLC0415

    project = project or project_root()
    repo = repository(image)
    directory.mkdir(parents=True, exist_ok=True)
    previous = directory / SUMS
    previous_names = listed(previous.read_text()) if previous.is_file() else []

    wheel, sdist = python_distributions(project, printer)
    built = build_image(project, printer, ref=f"appstack:{__version__}")
    digest = manifest_digest(built.archive)
    chart = chart_package(printer)

    out = {
        "wheel": directory / wheel.name,
        "sdist": directory / sdist.name,
        "archive": directory / f"appstack-{__version__}.oci.tar",
        "chart": directory / chart.name,
        "install": directory / INSTALL,
    }
    archive_ref = f"{repo}:{__version__}"
    reference = pinned(repo, digest)
    written = [
        path.name
        for path, wrote in [
            (out["wheel"], copy_if_changed(wheel, out["wheel"])),
            (out["sdist"], copy_if_changed(sdist, out["sdist"])),
            (out["archive"], renamed_archive(built.archive, out["archive"], archive_ref)),
            (out["chart"], copy_if_changed(chart, out["chart"])),
            (out["install"], write_if_changed(out["install"], install_yaml(reference).encode())),
            (previous, write_if_changed(previous, sums_text(out.values()).encode())),
        ]
        if wrote
    ]
    for name in sorted(set(previous_names) - {p.name for p in out.values()}):
        if (directory / name).is_file():
            (directory / name).unlink()
            printer(f"[appstack] removed {directory / name} (an earlier make dist's)")
    changed = f"{', '.join(written)} written" if written else "nothing changed"
    printer(f"[appstack] {directory}: {changed}; install.yaml runs {reference}")
    return Release(
        directory=directory,
        version=__version__,
        image=reference,
        wheel=out["wheel"],
        sdist=out["sdist"],
        archive=out["archive"],
        chart=out["chart"],
        install=out["install"],
        sums=previous,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m appstack_testbed.dist",
        description="Write the release artifacts (wheel, sdist, OCI image archive, Helm "
        "chart, install.yaml pinned to the image's digest, SHA256SUMS). Needs root (the "
        "image build).",
    )
    parser.add_argument(
        "--image",
        default=DEFAULT_REPOSITORY,
        help="The image repository the install names, e.g. registry.example.com/team/appstack "
        "(a tag is ignored: the release's tag is its version) [default: %(default)s]",
    )
    parser.add_argument(
        "-o", "--output-dir", default="dist", help="[default: %(default)s]", type=Path
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        release = build(args.output_dir, args.image)
    except (ValueError, RuntimeError) as error:  # ours, the image build's, helm's, Go's
        print(f"make dist: {error}", file=sys.stderr)
        return 1
    for path in [*release.artifacts, release.sums]:
        size = path.stat().st_size
        shown = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
        print(f"{path}  ({shown})")
    print(f"in {_fmt(time.monotonic() - started)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
