"""Build the test-bed binaries from Go modules, once, into the cache.

Each component is built through a throw-away *wrapper module* that requires the upstream
module at a pinned version (``go install pkg@version`` refuses modules with ``replace``
directives, and Kubernetes needs its staging modules pinned). The wrapper lives in the
cache (``<toolchain>/src/<component>``), never in the repository.

Used by ``LocalCluster.build``/``up`` (:mod:`appstack_testbed.cluster`) and ``appstack
cluster build``. A cold build prints progress (component, packages compiled, elapsed
time) so it never looks hung; a warm call only checks stamps and returns.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from appstack_testbed.versions import SharedTools, Toolchain

Printer = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class GoComponent:
    """One wrapper-module build producing one or more binaries."""

    name: str
    module: str
    version: str
    packages: tuple[str, ...]
    # Sibling modules released together with `module`, pinned to the same version.
    siblings: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    # Go build tags (e.g. Prometheus' ``remove_all_sd``, which leaves the cloud SDKs out).
    tags: tuple[str, ...] = ()
    # Called with the upstream go.mod text; returns extra `replace` lines for the wrapper.
    replaces: Callable[[str], list[str]] = field(default=lambda _gomod: [])

    @property
    def stamp(self) -> str:
        fields: dict[str, object] = {
            "module": self.module,
            "version": self.version,
            "packages": self.packages,
            "siblings": self.siblings,
            "ldflags": self.ldflags,
        }
        if self.tags:  # only when set, so that the stamps of existing builds stay valid
            fields["tags"] = self.tags
        return json.dumps(fields, sort_keys=True)


_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", re.MULTILINE)


def kubernetes_staging_replaces(version: str) -> Callable[[str], list[str]]:
    """``k8s.io/<name> v0.0.0 => k8s.io/<name> v0.Y.Z`` for every staging module in go.mod."""
    staging_version = "v0." + version.removeprefix("v").split(".", 1)[1]

    def replaces(gomod: str) -> list[str]:
        return [f"{m} v0.0.0 => {m} {staging_version}" for m in _STAGING.findall(gomod)]

    return replaces


def _version_ldflags(version: str) -> tuple[str, ...]:
    major, minor = version.removeprefix("v").split(".")[:2]
    flags: list[str] = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    return tuple(flags)


def components(toolchain: Toolchain) -> list[GoComponent]:
    """What the local control plane needs, in build order (smallest first)."""
    k8s = toolchain.kubernetes
    return [
        GoComponent(
            name="etcd",
            module="go.etcd.io/etcd/server/v3",
            version=toolchain.etcd,
            packages=("go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/etcdctl/v3"),
            siblings=tuple(
                f"go.etcd.io/etcd/{m}/v3" for m in ("etcdctl", "api", "client", "pkg", "client/pkg")
            ),
        ),
        GoComponent(
            name="kwok",
            module="sigs.k8s.io/kwok",
            version=toolchain.kwok,
            packages=("sigs.k8s.io/kwok/cmd/kwok",),
        ),
        GoComponent(
            name="kubernetes",
            module="k8s.io/kubernetes",
            version=k8s,
            packages=tuple(
                f"k8s.io/kubernetes/cmd/{c}"
                for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
            ),
            ldflags=_version_ldflags(k8s),
            replaces=kubernetes_staging_replaces(k8s),
        ),
    ]


def node_components(toolchain: Toolchain) -> list[GoComponent]:
    """What a real node runs (kubelet, kube-proxy), from the same Kubernetes modules as the
    control plane; a component of its own, so that its stamp leaves the control plane's alone."""
    k8s = toolchain.kubernetes
    return [
        GoComponent(
            name="kubernetes-node",
            module="k8s.io/kubernetes",
            version=k8s,
            packages=tuple(f"k8s.io/kubernetes/cmd/{c}" for c in ("kubelet", "kube-proxy")),
            ldflags=_version_ldflags(k8s),
            replaces=kubernetes_staging_replaces(k8s),
        )
    ]


def shared_components(tools: SharedTools) -> list[GoComponent]:
    """The cluster services of a real node that do not depend on the Kubernetes version:
    CoreDNS (cluster DNS) and the CNCF distribution registry (the local image registry)."""
    return [
        GoComponent(
            name="coredns",
            module="github.com/coredns/coredns",
            version=tools.coredns,
            packages=("github.com/coredns/coredns",),
        ),
        GoComponent(
            name="registry",
            module="github.com/distribution/distribution/v3",
            version=tools.registry,
            packages=("github.com/distribution/distribution/v3/cmd/registry",),
        ),
    ]


def installed_binaries(component: GoComponent) -> list[str]:
    """Binary names, one per package (``.../server/v3`` is etcd, ``.../etcdctl/v3`` etcdctl)."""
    out = []
    for pkg in component.packages:
        parts = pkg.rstrip("/").split("/")
        name = parts[-1]
        if re.fullmatch(r"v\d+", name):
            name = {"server": "etcd"}.get(parts[-2], parts[-2])
        out.append(name)
    return out


class BuildRoot(Protocol):
    """Where a set of components is built: a :class:`Toolchain` or :class:`SharedTools`."""

    @property
    def root(self) -> Path: ...

    @property
    def bin_dir(self) -> Path: ...

    def binary(self, name: str) -> Path: ...


class GoBuilder:
    """Builds :func:`components` into ``toolchain.bin_dir`` (idempotent, lock-protected)."""

    def __init__(self, toolchain: BuildRoot, printer: Printer = _stderr) -> None:
        self.toolchain = toolchain
        self.print = printer

    def is_built(self, component: GoComponent) -> bool:
        stamp = self.toolchain.root / "stamps" / component.name
        return (
            stamp.is_file()
            and stamp.read_text() == component.stamp
            and all(self.toolchain.binary(b).is_file() for b in installed_binaries(component))
        )

    def ensure(self, component: GoComponent) -> Path:
        """Build one extra component (e.g. :func:`helm_component`) unless built; its binary."""
        self._build_missing([component])
        return self.toolchain.binary(installed_binaries(component)[0])

    def ensure_all(self) -> None:
        assert isinstance(self.toolchain, Toolchain)  # noqa: S101 - the control plane's root
        self._build_missing(components(self.toolchain))

    def ensure_components(self, wanted: list[GoComponent]) -> None:
        """Build those of ``wanted`` that are not built yet (one lock, progress printed)."""
        self._build_missing(wanted)

    def _build_missing(self, wanted: list[GoComponent]) -> None:
        todo = [c for c in wanted if not self.is_built(c)]
        if not todo:
            return
        if shutil.which("go") is None:
            raise BuildError("Go is required to build the test bed (go is not on PATH)")
        self.toolchain.root.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.toolchain.root / ".build.lock"):
            started = time.monotonic()
            for component in todo:
                if not self.is_built(component):  # another process may have built it meanwhile
                    self.build(component)
            self.print(
                f"[appstack] {', '.join(c.name for c in todo)} built in "
                f"{_fmt(time.monotonic() - started)} "
                f"-> {self.toolchain.bin_dir}"
            )

    def build(self, component: GoComponent) -> None:
        work = self.toolchain.root / "src" / component.name
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
        self.print(
            f"[appstack] building {component.name} {component.version} "
            f"({', '.join(installed_binaries(component))}) from Go modules"
        )
        upstream_gomod = self._download(component, work, env)
        lines = [
            f"module appstack.local/testbed/{component.name}",
            "",
            "go 1.22",
            "",
            *[f"require {m} {component.version}" for m in (component.module, *component.siblings)],
            "",
            *[f"replace {r}" for r in component.replaces(upstream_gomod)],
        ]
        (work / "go.mod").write_text("\n".join(lines) + "\n")
        imports = "\n".join(f'\t_ "{p}"' for p in component.packages)
        (work / "tools.go").write_text(
            f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
        )
        self._run(component, ["go", "mod", "tidy"], work, env, phase="resolving modules")
        out = work / "out"
        out.mkdir()
        ldflags = " ".join(("-s", "-w", *component.ldflags))
        self.toolchain.bin_dir.mkdir(parents=True, exist_ok=True)
        for pkg, binary in zip(component.packages, installed_binaries(component), strict=True):
            cmd = [
                "go",
                "build",
                "-v",
                "-trimpath",
                *(["-tags", ",".join(component.tags)] if component.tags else []),
                "-ldflags",
                ldflags,
                "-o",
                str(out / binary),
                pkg,
            ]
            self._run(component, cmd, work, env, phase=f"compiling {binary}")
            os.replace(out / binary, self.toolchain.binary(binary))
        stamps = self.toolchain.root / "stamps"
        stamps.mkdir(exist_ok=True)
        (stamps / component.name).write_text(component.stamp)

    def _download(self, component: GoComponent, work: Path, env: dict[str, str]) -> str:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{component.module}@{component.version}"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise BuildError(
                f"cannot download {component.module}@{component.version}:\n"
                f"{proc.stdout}{proc.stderr}"
            )
        gomod_path = json.loads(proc.stdout)["GoMod"]
        return Path(gomod_path).read_text()

    def _run(
        self, component: GoComponent, cmd: list[str], cwd: Path, env: dict[str, str], phase: str
    ) -> None:
        log_path = cwd / "build.log"
        started = time.monotonic()
        compiled = [0]
        with open(log_path, "a") as log:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            stop = threading.Event()
            ticker = threading.Thread(
                target=self._tick, args=(component, phase, started, compiled, stop), daemon=True
            )
            ticker.start()
            try:
                if proc.stdout is not None:
                    _count_lines(proc.stdout, log, compiled)
                rc = proc.wait()
            finally:
                stop.set()
                ticker.join()
        if rc != 0:
            tail = "".join(log_path.read_text().splitlines(keepends=True)[-40:])
            raise BuildError(f"building {component.name} failed ({' '.join(cmd)}):\n{tail}")
        self.print(
            f"[appstack]   {component.name}: {phase} done in {_fmt(time.monotonic() - started)}"
        )

    def _tick(
        self,
        component: GoComponent,
        phase: str,
        started: float,
        compiled: list[int],
        stop: threading.Event,
    ) -> None:
        while not stop.wait(15):
            self.print(
                f"[appstack]   {component.name}: {phase}, {compiled[0]} packages, "
                f"{_fmt(time.monotonic() - started)} elapsed"
            )


def _count_lines(stream: IO[str], log: IO[str], counter: list[int]) -> None:
    for line in stream:
        log.write(line)
        counter[0] += 1


@contextmanager
def _file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """``path`` locked (flock) for the block: alone, or ``shared`` with other shared holders."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_atomically(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` at once: written beside it, then renamed over it, so that a
    reader in another process (a parallel test worker) sees the old file or the new one,
    never a half-written one."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _fmt(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class BuildError(RuntimeError):
    """A component could not be built; the message carries the tail of the build log."""
