"""What a stopped real node leaves behind, and how it goes away (root).

containerd's shims and the containers they run outlive containerd and the kubelet, and the
kubelet and containerd leave mounts (tmpfs volumes, overlay root filesystems, pod network
namespaces) and cgroups. :func:`kill_containers` ends every process in the node's cgroup root
and the shims of its containerd, :func:`unmount_under` unmounts everything below a
directory (deepest first), :func:`remove_cgroups` removes the node's cgroups and
:func:`ensure_cgroups` creates its cgroup root (the kubelet refuses a missing one). Used by
:mod:`.node` when a node stops, and before it starts (a crash may have left these).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def cgroup_mounts() -> list[Path]:
    """Every cgroup (v1) and cgroup2 hierarchy mounted on this machine."""
    mounts: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) == 2 and fields[1].split()[0] in ("cgroup", "cgroup2"):
            mounts.append(Path(fields[0].split()[4]))
    return mounts


def ensure_cgroups(root: str) -> None:
    """``root`` (e.g. ``/appstack/appstack-0-0``) in every hierarchy; cpuset directories get
    their parent's cpus and mems (a new cpuset is empty, and then nothing can run in it)."""
    for mount in cgroup_mounts():
        path = mount
        for part in Path(root).parts[1:]:
            parent, path = path, path / part
            path.mkdir(exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):
                own = path / name
                if own.exists() and not own.read_text().strip():
                    own.write_text((parent / name).read_text())


def _cgroups_below(base: Path) -> list[Path]:
    """``base`` and every cgroup directory below it, deepest first; directories that vanish
    meanwhile (the kubelet or runc removing them) are skipped."""
    found = [Path(top) for top, _, _ in os.walk(base, onerror=lambda _error: None)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _processes_in(root: str) -> set[int]:
    pids: set[int] = set()
    for mount in cgroup_mounts():
        for group in _cgroups_below(mount / root.lstrip("/")):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in (group / "cgroup.procs").read_text().split())
    return pids


def _shims_of(socket: Path) -> set[int]:
    """containerd-shim processes started by the containerd listening on ``socket``."""
    pids: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and b"containerd-shim" in args[0] and str(socket).encode() in args:
            pids.add(int(proc.name))
    return pids


def kill_containers(cgroup_root: str, socket: Path, timeout: float = 10.0) -> None:
    """SIGKILL every process below ``cgroup_root`` and every shim of ``socket``'s containerd."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _processes_in(cgroup_root) | _shims_of(socket)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def kill_container(root: str, container_id: str) -> list[int]:
    """SIGKILL the processes of one container (its cgroup below ``root`` is named after its
    id), as a crash would; the pids killed."""
    killed: list[int] = []
    for mount in cgroup_mounts():
        for group in _cgroups_below(mount / root.lstrip("/")):
            if group.name != container_id:
                continue
            with contextlib.suppress(OSError):
                for pid in (int(p) for p in (group / "cgroup.procs").read_text().split()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
        if killed:
            break
    if not killed:
        raise LookupError(f"container {container_id[:12]} has no process below {root}")
    return killed


def mounts_under(directory: Path) -> list[str]:
    prefix = str(directory).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == prefix.rstrip("/"):
            points.append(point)
    return points


def unmount_under(directory: Path) -> None:
    """Unmount every mount point at or below ``directory``, deepest first (lazily: a mount
    still busy for a moment goes when its last user does)."""
    for point in sorted(set(mounts_under(directory)), key=lambda p: p.count("/"), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def remove_cgroups(root: str) -> None:
    """Remove ``root`` and everything below it in every hierarchy (empty cgroups only)."""
    for mount in cgroup_mounts():
        base = mount / root.lstrip("/")
        for path in _cgroups_below(base):
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            base.parent.rmdir()  # /appstack, once no node of any cluster uses it
