"""Start a container's process in its own mount namespace (``unshare -m``).

The process sees the host's filesystem (no image, no chroot) except for bind mounts: the
pod's ``/etc/hosts`` and each volume at its ``mountPath`` (an empty directory or file is
created on the host as the mount point when missing). It runs in its own session (so
the whole process group can be signalled) and dies with the agent (``PR_SET_PDEATHSIG``),
so a crashed agent leaves no processes behind. Exec probes enter the same namespace with
``nsenter``.

Used by :mod:`appstack_testbed.procnode.container`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from appstack_testbed.procnode.volumes import Mount

_PR_SET_PDEATHSIG = 1
# In every container's environment: the node's state directory (finds strays).
MARKER = "APPSTACK_PROCESS_NODE"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def mount_script(hosts: Path, mounts: Sequence[Mount], workdir: str) -> str:
    """The shell run inside the new namespace before ``exec`` of the container's argv."""
    steps = ["set -e"]
    for mount in [Mount(hosts, "/etc/hosts", False), *mounts]:
        src, dst = shlex.quote(str(mount.source)), shlex.quote(mount.target)
        if mount.source.is_dir():
            steps.append(f"mkdir -p {dst}")
        else:
            steps.append(f"[ -e {dst} ] || {{ mkdir -p $(dirname {dst}); : > {dst}; }}")
        steps.append(f"mount --bind {src} {dst}")
        if mount.read_only:
            steps.append(f"mount -o remount,bind,ro {dst}")
    steps += [f"mkdir -p {shlex.quote(workdir)}", f"cd {shlex.quote(workdir)}", 'exec "$@"']
    return "\n".join(steps)


async def launch(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    hosts: Path,
    mounts: Sequence[Mount],
    workdir: str,
    log: Path,
    node_state: Path,
) -> asyncio.subprocess.Process:
    """The running process (its pid is the container's main process once exec'd)."""
    script = mount_script(hosts, mounts, workdir)
    base_env = {
        "PATH": HOST_PATH,
        MARKER: str(node_state),
    }
    with open(log, "ab") as out:
        return await asyncio.create_subprocess_exec(
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-c",
            script,
            "container",
            *argv,
            env={**base_env, **env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


async def exec_in(
    pid: int, argv: Sequence[str], env: Mapping[str, str], timeout: float
) -> tuple[int, bytes]:
    """Run ``argv`` in the mount namespace of ``pid`` (an exec probe); (exit code, output)."""
    proc = await asyncio.create_subprocess_exec(
        "nsenter",
        f"--target={pid}",
        "--mount",
        "--",
        *argv,
        env={"PATH": HOST_PATH, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        kill_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        return -1, b"timed out"
    return proc.returncode or 0, out


def kill_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group the container's process leads (it and its children)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
