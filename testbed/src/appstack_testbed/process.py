"""Start, find and stop the control plane's processes, which outlive the command that started them.

``appstack cluster up`` returns while the cluster keeps running, so each component is a
detached process (its own session) with a pid file and a log file under the cluster
directory. A pid is trusted only while ``/proc/<pid>/exe`` still points at the binary we
started, so a recycled pid is never signalled. Used by :mod:`appstack_testbed.cluster`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class ComponentError(RuntimeError):
    """A component did not become healthy; the message ends with its log tail."""

    def __init__(self, component: str, reason: str, log_tail: str) -> None:
        super().__init__(
            f"{component}: {reason}\n--- last lines of the {component} log ---\n{log_tail}"
        )
        self.component = component
        self.log_tail = log_tail


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int | None
    healthy: bool

    @property
    def state(self) -> str:
        if self.pid is None:
            return "stopped"
        return "healthy" if self.healthy else "unhealthy"


@dataclass(frozen=True)
class ManagedProcess:
    """One component's process files: ``pids/<name>.pid`` and ``logs/<name>.log``."""

    name: str
    directory: Path

    @property
    def pid_file(self) -> Path:
        return self.directory / "pids" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / "logs" / f"{self.name}.log"

    def pid(self) -> int | None:
        """The live pid of this component, or None (stale pid files are ignored)."""
        try:
            pid_text, binary = self.pid_file.read_text().split("\n", 1)
            pid = int(pid_text)
        except (FileNotFoundError, ValueError):
            return None
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            return None
        if exe.removesuffix(" (deleted)") != binary.strip():
            return None
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return None
        except OSError:
            return None
        return pid

    def running(self) -> bool:
        return self.pid() is not None

    def args(self) -> list[str] | None:
        """The command line the live process was started with, or None if not running."""
        pid = self.pid()
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes() if pid is not None else None
        except OSError:
            return None
        return None if raw is None else [a.decode() for a in raw.split(b"\0")[:-1]]

    def start(
        self,
        args: Sequence[str],
        env: dict[str, str] | None = None,
        *,
        netns: Path | None = None,
    ) -> int:
        """Start detached, appending to the log file; returns the pid. With ``netns`` (a
        network namespace file, e.g. ``/var/run/netns/NAME``) the process runs in that
        network namespace (entered in the child before it executes the program, so that the
        pid is the program's own)."""
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        binary = os.path.realpath(args[0])  # what /proc/<pid>/exe will show
        with open(self.log_file, "ab") as log:
            log.write(
                f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {' '.join(args)}\n".encode()
            )
            log.flush()
            proc = subprocess.Popen(
                list(args),  # as given: a venv's python is a symlink that must stay one
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                cwd=self.directory,
                preexec_fn=None if netns is None else _enter_netns(netns),  # noqa: PLW1509
            )
        self.pid_file.write_text(f"{proc.pid}\n{binary}\n")
        # Reap the child if this Python process outlives it (e.g. pytest restarting a component).
        _reapers.append(proc)
        return proc.pid

    def stop(self, timeout: float = 15.0, sig: signal.Signals = signal.SIGTERM) -> None:
        """Signal the process (SIGTERM, then SIGKILL after ``timeout``) and wait for it."""
        pid = self.pid()
        if pid is not None:
            _signal(pid, sig)
            deadline = time.monotonic() + timeout
            while self.pid() is not None and time.monotonic() < deadline:
                _reap()
                time.sleep(0.05)
            if self.pid() is not None:
                _signal(pid, signal.SIGKILL)
                while self.pid() is not None:
                    _reap()
                    time.sleep(0.05)
        _reap()
        self.pid_file.unlink(missing_ok=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_file, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - 64 * 1024))
                text = log.read().decode(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


_CLONE_NEWNET = 0x40000000


def _enter_netns(path: Path) -> Callable[[], None]:
    """A ``preexec_fn`` that moves the child into the network namespace at ``path``."""

    def enter() -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns({path})")
        finally:
            os.close(fd)

    return enter


_reapers: list[subprocess.Popen[bytes]] = []


def _reap() -> None:
    for proc in list(_reapers):
        if proc.poll() is not None:
            _reapers.remove(proc)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
