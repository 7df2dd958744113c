"""Debian root filesystems built and entered without a container daemon.

* :func:`ensure_tools` installs ``mmdebstrap``, ``buildah`` and ``umoci`` with apt-get when
  they are missing (showing apt's progress), so a fresh machine needs no manual step.
* :func:`bootstrap` makes a minimal Debian root filesystem tarball with mmdebstrap
  (``--variant=minbase``, like the ``debian:*-slim`` images, plus the given packages),
  cached by a key of suite, packages, mirrors and dpkg options.
* :func:`namespace_command` runs a program chrooted into a root filesystem inside a
  private mount namespace (``unshare -m``) with ``/proc``, ``/dev``, tmpfs and bind mounts,
  optionally with the root remounted read-only and as an unprivileged user.

Used by :mod:`appstack_testbed.image` (build steps, as root) and by the image's e2e test
(the operator, as the image's non-root user on a read-only root).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from appstack_testbed.build import _file_lock, _fmt
from appstack_testbed.versions import cache_root

Printer = Callable[[str], None]

# command (or file) -> the Debian package that provides it
TOOLS = {"mmdebstrap": "mmdebstrap", "buildah": "buildah", "umoci": "umoci"}
# What a real node needs on the host (appstack_testbed.realnode), and skopeo to push images.
NODE_TOOLS = {
    "containerd": "containerd",
    "runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "skopeo": "skopeo",
    "gcc": "gcc",
    "/usr/lib/x86_64-linux-gnu/libc.a": "libc6-dev",
}

# What the Docker Official Images' `-slim` variants leave out (debuerreotype --slimify).
SLIM_DPKG_OPTIONS = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/linda/*",
    "path-exclude=/usr/share/lintian/*",
    "path-exclude=/usr/share/locale/*",
)


class ImageBuildError(RuntimeError):
    """A step of the daemonless image build failed; the message carries its output's tail."""


def run_streaming(
    cmd: Sequence[str], printer: Printer, *, env: Mapping[str, str] | None = None
) -> None:
    """Run ``cmd``, printing each output line as progress; raise with the tail on failure."""
    tail: collections.deque[str] = collections.deque(maxlen=40)
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env=dict(env) if env is not None else None,
    )
    for line in proc.stdout or ():
        tail.append(line.rstrip())
        printer(f"[appstack]   {line.rstrip()}")
    if proc.wait() != 0:
        raise ImageBuildError(
            f"{shlex.join(cmd)[:200]} failed (exit {proc.returncode}):\n" + "\n".join(tail)
        )


def _present(command: str) -> bool:
    return Path(command).exists() if command.startswith("/") else shutil.which(command) is not None


def ensure_tools(printer: Printer, tools: Mapping[str, str] = TOOLS) -> None:
    """Check for root; install the Debian packages providing ``tools`` (command or file ->
    package) when missing."""
    if os.geteuid() != 0:
        raise ImageBuildError(
            "the daemonless image build and real nodes need root (chroot, mounts, network "
            "namespaces): run as root, or build the image with a container daemon: make image"
        )
    if not _missing(tools):
        return
    if shutil.which("apt-get") is None:
        raise ImageBuildError(
            f"the daemonless image build needs {', '.join(_missing(tools))}: install them"
        )
    cache_root().mkdir(parents=True, exist_ok=True)
    with _file_lock(cache_root() / ".apt.lock"):  # parallel test workers: one apt-get at a time
        missing = _missing(tools)
        if not missing:
            return
        printer(f"[appstack] installing {', '.join(missing)} with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run_streaming(["apt-get", "update"], printer, env=env)
        run_streaming(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing], printer, env=env
        )


def _missing(tools: Mapping[str, str]) -> list[str]:
    return sorted({package for command, package in tools.items() if not _present(command)})


def debian_sources(suite: str) -> tuple[str, ...]:
    """The release, its updates and its security updates, as the Debian images use them."""
    return (
        f"deb http://deb.debian.org/debian {suite} main",
        f"deb http://deb.debian.org/debian {suite}-updates main",
        f"deb http://deb.debian.org/debian-security {suite}-security main",
    )


@dataclass(frozen=True)
class DebianRootfs:
    """A minbase root filesystem of ``suite`` with ``packages`` (and their dependencies)."""

    suite: str
    packages: tuple[str, ...]
    dpkg_options: tuple[str, ...] = SLIM_DPKG_OPTIONS

    @property
    def key(self) -> str:
        spec = [self.suite, sorted(self.packages), debian_sources(self.suite), self.dpkg_options]
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    def tarball(self, cache: Path) -> Path:
        return cache / f"rootfs-{self.suite}-{self.key}.tar"

    def command(self, output: Path) -> list[str]:
        return [
            "mmdebstrap",
            "--variant=minbase",
            f"--include={','.join(self.packages)}",
            *(f"--dpkgopt={option}" for option in self.dpkg_options),
            self.suite,
            str(output),
            *debian_sources(self.suite),
        ]


def bootstrap(spec: DebianRootfs, cache: Path, printer: Printer, refresh: bool = False) -> Path:
    """The rootfs tarball of ``spec``, built with mmdebstrap unless cached (or ``refresh``)."""
    target = spec.tarball(cache)
    if target.is_file() and not refresh:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with _file_lock(cache / ".rootfs.lock"):
        if target.is_file() and not refresh:  # built by another process meanwhile
            return target
        started = time.monotonic()
        printer(f"[appstack] mmdebstrap: Debian {spec.suite} minbase + {', '.join(spec.packages)}")
        partial = target.with_name(target.stem + ".partial.tar")
        partial.unlink(missing_ok=True)
        run_streaming(spec.command(partial), printer)
        os.replace(partial, target)
        size = target.stat().st_size / 2**20
        printer(
            f"[appstack] rootfs built in {_fmt(time.monotonic() - started)} "
            f"({size:.0f} MiB) -> {target}"
        )
    return target


@dataclass(frozen=True)
class Bind:
    """``source`` on the host, bind-mounted at ``target`` inside the root."""

    source: Path
    target: str
    read_only: bool = True


def namespace_command(
    root: Path,
    argv: Sequence[str],
    *,
    userspec: str | None = None,
    binds: Sequence[Bind] = (),
    tmpfs: Sequence[str] = (),
    read_only_root: bool = False,
) -> list[str]:
    """A command running ``argv`` chrooted into ``root`` in a private mount namespace.

    The shell and ``chroot`` exec into ``argv``, so the returned command's pid is the
    program's. Mount points under a tmpfs are created in it; nothing else is written to
    ``root`` unless a bind's target is missing there.
    """
    r = str(root)
    q = shlex.quote
    lines = [
        "set -e",
        f"mount --bind {q(r)} {q(r)}",  # its own mount, so that it can be made read-only
        f"mount -t proc proc {q(r + '/proc')}",
        f"mount --rbind /dev {q(r + '/dev')}",
        *(f"mount -t tmpfs -o mode=0755,size=16m tmpfs {q(r + path)}" for path in tmpfs),
    ]
    for bind in binds:
        target = q(r + bind.target)
        create = "mkdir -p" if bind.source.is_dir() else "touch"
        lines += [
            f'[ -e {target} ] || {{ mkdir -p "$(dirname {target})"; {create} {target}; }}',
            f"mount --bind {q(str(bind.source))} {target}",
        ]
        if bind.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    if read_only_root:
        lines.append(f"mount -o remount,bind,ro {q(r)}")
    user = [f"--userspec={userspec}"] if userspec else []
    lines.append("exec " + shlex.join(["chroot", *user, r, *argv]))
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(lines)]
