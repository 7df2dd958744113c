"""The operator image, built without a container daemon into the cache.

The ``Dockerfile`` is what users build with Docker (``make image``). This module builds an
image with the same contents where no daemon runs (``make image-oci``, ``appstack cluster
image``, and the image's e2e test): the constants below are the Dockerfile's packages,
build steps, user and configuration (``tests/unit/testbed/test_image_spec.py`` checks that they
agree), and :func:`build_image` replays the two stages:

1. build stage: a Debian minbase rootfs with ``python3 python3-venv`` (mmdebstrap,
   cached); the lock and the wheels — appstack's, built from the sources on the host, and
   its locked dependencies' for the image's Python, downloaded once per lock into the cache
   (:func:`gather_wheels` is the same for ``make wheels``, which the Dockerfile's build
   needs) — are copied in, and :data:`BUILD_STEPS` run chrooted in it, as root, with no
   name resolution: the venv ``/opt/appstack`` made from those wheels alone
   (``--no-index``, the dependencies hash-checked against ``requirements.lock``);
2. final stage: a minbase rootfs with ``python3`` (cached), :data:`USER_STEP`, the venv
   copied over, the image configuration set (with the provenance labels of
   :mod:`appstack_testbed.image_labels`: source, revision, created), committed with
   buildah to an oci-archive.

An operator scaffolded with ``appstack init`` (``make image-oci`` there, ``appstack cluster
image --project``) is built from its own generated ``Dockerfile`` instead, step by step as
``docker build`` runs it (:func:`build_with_dockerfile`, :func:`build_project_image`).

Everything lives in ``$APPSTACK_CACHE/image``; the archive is named after a key of all its
inputs (rootfs keys, steps, configuration, lock and sources), so a warm call returns at
once. Needs root (chroot, mounts); missing tools are installed with apt-get.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from appstack import __version__
from appstack_testbed import image_labels
from appstack_testbed.build import _file_lock, _fmt, _stderr
from appstack_testbed.oci import KEEP, ImageConfig, commit, keep_newest
from appstack_testbed.rootfs import (
    DebianRootfs,
    ImageBuildError,
    Printer,
    bootstrap,
    ensure_tools,
    namespace_command,
    run_streaming,
)
from appstack_testbed.versions import cache_root

SUITE = "bookworm"
# The Dockerfile's default base: Debian 12 slim, pinned to the point release that
# deb.debian.org served for SUITE when this was written (re-pin: see the Dockerfile).
BASE_IMAGE = "debian:12.15-slim"
BUILD_PACKAGES = ("python3", "python3-venv")
RUNTIME_PACKAGES = ("python3",)
VENV = "/opt/appstack"
UID = GID = 65532
PIP = "/opt/build-tools/bin/pip"
INTO_VENV = f"{PIP} --python {VENV}/bin/python"
#: Where ``make wheels`` puts every wheel the image installs — appstack's and its locked
#: dependencies' — for the Dockerfile to COPY: the image is built from them alone
#: (``--no-index``), nothing fetched while it builds.
WHEELS = "dist/image-wheels"
#: The image's Python (Debian 12's python3) and the machines its dependency wheels are for
#: (amd64 and arm64: ``make image-buildx PLATFORMS=linux/amd64,linux/arm64``).
IMAGE_PYTHON = "3.11"
IMAGE_ARCHS = ("x86_64", "aarch64")
#: The manylinux glibc levels accepted (bookworm has glibc 2.36).
_GLIBC = ("2_17", "2_28", "2_34")
BUILD_STEPS = (
    "python3 -m venv /opt/build-tools",
    f"python3 -m venv --without-pip {VENV}",
    f"{INTO_VENV} install --no-index --find-links /wheels --no-deps --require-hashes "
    "-r /src/requirements.lock",
    f"{INTO_VENV} install --no-index --no-deps /wheels/appstack-*.whl",
    f"{INTO_VENV} check",
)
USER_STEP = (
    f"groupadd --gid {GID} appstack && useradd --uid {UID} --gid {GID} --no-create-home "
    "--home-dir /nonexistent --shell /usr/sbin/nologin appstack"
)
# What the image is made of — the wheel's sources and the lock —: its key and provenance.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "requirements.lock", "src")
# What the Dockerfile COPYs into the build stage: (from the context, to).
COPIED = (("requirements.lock", "/src/"), (f"{WHEELS}/", "/wheels/"))
CONFIG = ImageConfig(
    entrypoint=("appstack",),
    cmd=("run", "--leader-elect"),
    user=f"{UID}:{GID}",
    env=(
        f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONUNBUFFERED=1",
    ),
    ports=(8080, 8081),
    labels={
        "org.opencontainers.image.title": "appstack",
        "org.opencontainers.image.description": "The appstack Kubernetes operator",
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.version": __version__,
    },
)
BUILD_ROOTFS = DebianRootfs(SUITE, BUILD_PACKAGES)
RUNTIME_ROOTFS = DebianRootfs(SUITE, RUNTIME_PACKAGES)


def project_root() -> Path:
    """The checkout this module runs from (it has the Dockerfile), else the working directory."""
    here = Path(__file__).resolve().parents[3]
    return here if (here / "Dockerfile").is_file() else Path.cwd()


def source_files(project: Path) -> list[Path]:
    """The files of :data:`SOURCES`, sorted, without caches and build leftovers."""
    files: list[Path] = []
    for name in SOURCES:
        path = project / name
        if path.is_dir():
            files += [
                p
                for p in path.rglob("*")
                if p.is_file()
                and "__pycache__" not in p.parts
                and not any(part.endswith(".egg-info") for part in p.parts)
            ]
        elif path.is_file():
            files.append(path)
        else:
            raise ImageBuildError(f"{path} is missing: is {project} an appstack checkout?")
    return sorted(files)


def image_key(project: Path) -> str:
    """A digest of everything the image is made of (its provenance labels included, but
    for the build time)."""
    digest = hashlib.sha256()
    provenance = image_labels.provenance(project, list(SOURCES))
    spec = [BUILD_ROOTFS.key, RUNTIME_ROOTFS.key, BUILD_STEPS, USER_STEP, repr(CONFIG)]
    spec.append(json.dumps(provenance, sort_keys=True))
    digest.update(json.dumps(spec).encode())
    for path in source_files(project):
        digest.update(str(path.relative_to(project)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class BuiltImage:
    """An oci-archive in the cache and the reference (``name:tag``) it carries."""

    archive: Path
    ref: str


def _build_env() -> dict[str, str]:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_PROGRESS_BAR": "off",
        "PIP_ROOT_USER_ACTION": "ignore",
        "PIP_NO_CACHE_DIR": "1",
    }
    return env


def _pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def build_wheel(project: Path, into: Path, printer: Printer = _stderr) -> Path:
    """appstack's wheel, built from a copy of ``project``'s :data:`SOURCES` (the checkout
    is left as it is), into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="appstack-wheel-") as tmp:
        for path in source_files(project):
            target = Path(tmp) / path.relative_to(project)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        printer("[appstack] wheel: appstack, from the sources")
        run_streaming(_pip("wheel", "-q", "--no-deps", "-w", str(into), tmp), printer)
    (wheel,) = into.glob(f"appstack-{__version__}-*.whl")
    return wheel


def download_dependencies(
    lock: Path, into: Path, printer: Printer = _stderr, archs: tuple[str, ...] = IMAGE_ARCHS
) -> list[Path]:
    """The wheels of every dependency ``lock`` pins, for the image's Python on each of
    ``archs``, into ``into`` — hash-checked against the lock (pip's index, as the host's
    pip is configured: ``PIP_INDEX_URL``...)."""
    into.mkdir(parents=True, exist_ok=True)
    for arch in archs:
        platforms = [f"manylinux_{glibc}_{arch}" for glibc in _GLIBC] + [f"manylinux2014_{arch}"]
        printer(f"[appstack] wheels: the locked dependencies for Python {IMAGE_PYTHON} on {arch}")
        run_streaming(
            _pip(
                "download", "-q", "--no-deps", "--require-hashes", "--only-binary=:all:",
                "--implementation", "cp", "--python-version", IMAGE_PYTHON,
                *(arg for platform in platforms for arg in ("--platform", platform)),
                "-r", str(lock), "-d", str(into),
            ),
            printer,
        )  # fmt: skip
    return sorted(into.glob("*.whl"))


def gather_wheels(project: Path, into: Path, printer: Printer = _stderr) -> list[Path]:
    """Every wheel the image installs, into ``into`` (its old wheels removed first):
    appstack's (:func:`build_wheel`) and its dependencies' (:func:`download_dependencies`).
    What ``make wheels`` runs before ``make image``."""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.whl"):
        old.unlink()
    build_wheel(project, into, printer)
    return download_dependencies(project / "requirements.lock", into, printer)


def _dependency_wheels(project: Path, printer: Printer) -> Path:
    """The locked dependencies' wheels, downloaded once per lock into the cache."""
    lock = project / "requirements.lock"
    digest = hashlib.sha256(lock.read_bytes() + repr((IMAGE_PYTHON, IMAGE_ARCHS)).encode())
    into = cache_root() / "image" / f"wheels-{digest.hexdigest()[:16]}"
    done = into / ".complete"
    if not done.is_file():
        with _file_lock(cache_root() / "image" / ".wheels.lock"):
            if not done.is_file():
                download_dependencies(lock, into, printer)
                done.touch()
    return into


def _build_stage(project: Path, work: Path, printer: Printer) -> Path:
    """Run :data:`BUILD_STEPS` in a fresh build-stage rootfs, with the lock and every wheel
    (:data:`COPIED`) in it and no network; return that rootfs."""
    tarball = bootstrap(BUILD_ROOTFS, cache_root() / "image", printer)
    builder = work / "build"
    builder.mkdir()
    subprocess.run(["tar", "-xpf", str(tarball), "-C", str(builder)], check=True)
    (builder / "src").mkdir(exist_ok=True)
    shutil.copy2(project / "requirements.lock", builder / "src" / "requirements.lock")
    wheels = builder / "wheels"
    wheels.mkdir()
    for wheel in _dependency_wheels(project, printer).glob("*.whl"):
        shutil.copy2(wheel, wheels / wheel.name)
    build_wheel(project, wheels, printer)
    script = " && ".join(BUILD_STEPS)
    printer("[appstack] build stage: the venv, from the wheels alone")
    run_streaming(namespace_command(builder, ["sh", "-exc", script]), printer, env=_build_env())
    return builder


def build_image(
    project: Path | None = None,
    printer: Printer = _stderr,
    *,
    ref: str = f"appstack:{__version__}",
    refresh: bool = False,
) -> BuiltImage:
    """The operator image as an oci-archive in the cache, built unless it is up to date."""
    project = project or project_root()
    cache = cache_root() / "image"
    ensure_tools(printer)
    bootstrap(BUILD_ROOTFS, cache, printer, refresh)
    runtime_tarball = bootstrap(RUNTIME_ROOTFS, cache, printer, refresh)
    archive = cache / f"appstack-{image_key(project)}.oci.tar"
    stamp = archive.with_name(archive.name + ".ref")

    def up_to_date() -> bool:
        return archive.is_file() and stamp.is_file() and stamp.read_text() == ref

    if up_to_date() and not refresh:
        printer(f"[appstack] image {ref} is up to date: {archive}")
        os.utime(archive)  # recently used: kept when older ones are pruned
        return BuiltImage(archive, ref)
    with _file_lock(cache / ".image.lock"):
        if up_to_date() and not refresh:  # another process (a parallel test) built it meanwhile
            printer(f"[appstack] image {ref} was just built: {archive}")
            return BuiltImage(archive, ref)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
            builder = _build_stage(project, Path(tmp), printer)

            def populate(rootfs: Path) -> None:
                printer("[appstack] final stage: python3 rootfs, user 65532, the venv")
                subprocess.run(["tar", "-xpf", str(runtime_tarball), "-C", str(rootfs)], check=True)
                run_streaming(namespace_command(rootfs, ["sh", "-ec", USER_STEP]), printer)
                venv = builder / VENV.lstrip("/")
                subprocess.run(["cp", "-a", str(venv), str(rootfs / "opt")], check=True)

            labels = {
                **CONFIG.labels,
                **image_labels.provenance(project, list(SOURCES)),
                f"{image_labels.PREFIX}created": image_labels.created(),
            }
            config = dataclasses.replace(CONFIG, labels=labels)
            commit(cache / "buildah", populate, config, archive, ref)
        partial = stamp.with_name(stamp.name + ".tmp")
        partial.write_text(ref)
        partial.replace(stamp)  # whole or absent, for a reader outside the lock
        # Keep a few: other checkouts (worktrees) may be testing their own image right now.
        for old in keep_newest(list(cache.glob("appstack-*.oci.tar")), KEEP):
            old.unlink()
            old.with_name(old.name + ".ref").unlink(missing_ok=True)
    size = archive.stat().st_size / 2**20
    printer(
        f"[appstack] image {ref} built in {_fmt(time.monotonic() - started)} "
        f"({size:.0f} MiB compressed) -> {archive}"
    )
    return BuiltImage(archive, ref)


def build_project_image(
    project: Path, printer: Printer = _stderr, *, ref: str, refresh: bool = False
) -> BuiltImage:
    """The image of an operator scaffolded with ``appstack init``, built from the project's
    own ``Dockerfile`` as ``docker build`` would (:func:`build_with_dockerfile`: the same
    steps, buildah instead of a daemon) from the wheels ``make build`` put in ``dist/``,
    then written as an oci-archive in the cache (for the local registry, or ``podman
    load``). What a user changes in the Dockerfile — more packages, more dependencies — is
    in the image. Up to date (the same Dockerfile, wheels and ``ref``): returned at once."""
    from appstack.scaffold.project import read  # noqa: PLC0415

    package = read(project).package
    wheels = sorted((project / "dist").glob("*.whl"))
    if not any(_distribution(wheel) == package for wheel in wheels):
        raise ImageBuildError(
            f"{project / 'dist'} has no wheel of {package}: its Dockerfile installs from "
            "the wheels there alone — run `make build` first (`make image-oci` does)"
        )
    cache = cache_root() / "image"
    digest = hashlib.sha256(BUILD_ROOTFS.key.encode() + b"\0" + ref.encode() + b"\0")
    digest.update((project / "Dockerfile").read_bytes())
    for wheel in wheels:
        digest.update(wheel.name.encode() + b"\0" + hashlib.sha256(wheel.read_bytes()).digest())
    key = digest.hexdigest()[:16]
    archive = cache / f"project-{package}-{key}.oci.tar"
    if archive.is_file() and not refresh:
        printer(f"[appstack] image {ref} is up to date: {archive}")
        os.utime(archive)  # recently used: kept when older ones are pruned
        return BuiltImage(archive, ref)
    started = time.monotonic()
    # a name of its own in the build storage: the archive carries ``ref``
    built = f"localhost/appstack-project-{package}:{key}"
    build_with_dockerfile(project, built, printer)
    try:
        partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
        _buildah(_dockerfile_buildah(), "push", "--quiet", built, f"oci-archive:{partial}:{ref}")
        os.replace(partial, archive)
    finally:
        remove_dockerfile_image(built)
    for old in keep_newest(list(cache.glob(f"project-{package}-*.oci.tar")), KEEP):
        if old != archive:
            old.unlink()
    took, size = _fmt(time.monotonic() - started), archive.stat().st_size / 2**20
    printer(f"[appstack] image {ref} from {project / 'Dockerfile'} in {took} ({size:.0f} MiB)")
    return BuiltImage(archive, ref)


def _distribution(wheel: Path) -> str:
    """A wheel's distribution name as its file name spells it (``-``, ``.`` as ``_``)."""
    return wheel.name.split("-", 1)[0].lower()


def build_with_dockerfile(project: Path, ref: str, printer: Printer = _stderr) -> str:
    """The image of a scaffolded project built from its own ``Dockerfile`` as ``docker
    build`` would (buildah, chroot isolation, the host's network; root), its wheels from
    ``make build`` in ``dist/``; returns the image id, stored under ``ref`` in the cache's
    buildah storage (:func:`build_project_image` writes it as an oci-archive). No registry
    is reachable here: the Dockerfile's ``FROM`` is replaced by a Debian rootfs of the same
    suite built from Debian packages (:data:`BUILD_ROOTFS`); every ``RUN`` step is the
    Dockerfile's own (as generated: apt-get from Debian, pip from ``dist/`` alone). A CA
    bundle pip must trust (``PIP_CERT``: an index behind a TLS-inspecting proxy, for a
    Dockerfile a user made fetch from one) reaches pip through ``/etc/pip.conf`` during the
    build only, as a user behind such a proxy would pass it."""
    cache = cache_root() / "image"
    ensure_tools(printer)
    # Debian's python3 and python3-venv there already: the Dockerfile's apt-get step still
    # runs, with nothing left to unpack (what its FROM would leave it to do, it does)
    base_tarball = bootstrap(BUILD_ROOTFS, cache, printer)
    base = f"localhost/appstack-debian-{SUITE}:{BUILD_ROOTFS.key}"
    buildah = _dockerfile_buildah()
    with _file_lock(cache / ".dockerfile.lock"), tempfile.TemporaryDirectory() as work:
        started = time.monotonic()
        present = subprocess.run(
            [*buildah, "inspect", "--type=image", base], capture_output=True, check=False
        )
        if present.returncode != 0:
            container = _buildah(buildah, "from", "scratch")
            try:
                _buildah(buildah, "add", container, str(base_tarball), "/")
                _buildah(buildah, "commit", "--quiet", container, base)
            finally:
                subprocess.run([*buildah, "rm", container], capture_output=True, check=False)
        volumes = []
        if os.environ.get("PIP_CERT"):
            conf = Path(work) / "pip.conf"
            conf.write_text("[global]\ncert = /run/appstack-pip-ca.crt\n")
            volumes = [
                f"--volume={conf}:/etc/pip.conf:ro",
                f"--volume={os.environ['PIP_CERT']}:/run/appstack-pip-ca.crt:ro",
            ]
        printer(f"[appstack] {project / 'Dockerfile'}: building {ref} (FROM {base})")
        argv = [
            *buildah,
            "build",
            f"--from={base}",
            "--isolation=chroot",
            "--network=host",
            *volumes,
            f"--tag={ref}",
            str(project),
        ]
        run_streaming(argv, printer)
        image = _buildah(buildah, "inspect", "--type=image", "--format={{.FromImageID}}", ref)
        printer(f"[appstack] image {ref} built in {_fmt(time.monotonic() - started)}")
        return image


def remove_dockerfile_image(ref: str) -> None:
    """Remove an image :func:`build_with_dockerfile` built (its base stays cached)."""
    buildah = _dockerfile_buildah()
    subprocess.run([*buildah, "rmi", ref], capture_output=True, check=False)


def _dockerfile_buildah() -> list[str]:
    storage = cache_root() / "image" / "buildah-dockerfile"
    return [
        "buildah",
        f"--root={storage / 'storage'}",
        f"--runroot={storage / 'run'}",
        "--storage-driver=vfs",
    ]


def _buildah(buildah: list[str], *args: str) -> str:
    proc = subprocess.run([*buildah, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ImageBuildError(f"buildah {args[0]} failed: {proc.stderr.strip()[-2000:]}")
    return proc.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    """``python -m appstack_testbed.image wheels [DIR]``: :func:`gather_wheels` of this
    checkout into DIR (default :data:`WHEELS`) — ``make wheels``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "wheels" or len(args) > 2:
        print("usage: python -m appstack_testbed.image wheels [DIR]", file=sys.stderr)
        return 2
    project = project_root()
    into = Path(args[1]) if len(args) == 2 else project / WHEELS
    try:
        wheels = gather_wheels(project, into)
    except (ImageBuildError, subprocess.CalledProcessError) as error:
        print(f"[appstack] {error}", file=sys.stderr)
        return 1
    print(f"[appstack] {len(wheels)} wheels in {into}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
