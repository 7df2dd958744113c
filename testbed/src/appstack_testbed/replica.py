"""Operator replicas as real processes (``appstack run --leader-elect``), and a supervisor
that keeps a number of them running the way a Deployment's pods are restarted.

Each replica's identity (and so its user agent, ``appstack/<version> (<identity>)``) starts
with its name, so the API server's audit log tells the replicas apart. Used by the
fault-injection tests (tests/e2e/test_fencing.py, test_chaos.py) and bench/chaos.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Replica:
    """One ``appstack run --leader-elect`` process; its identity starts with ``name``."""

    def __init__(self, name: str, kubeconfig: Path, namespace: str, logs: Path, *args: str):
        self.name, self.health = name, free_port()
        self.log_path = logs / f"{name}.log"
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "appstack",
                    "run",
                    f"--kubeconfig={kubeconfig}",
                    f"--namespace={namespace}",
                    "--leader-elect",
                    f"--leader-election-namespace={namespace}",
                    "--metrics-bind-address=0",
                    f"--health-probe-bind-address=127.0.0.1:{self.health}",
                    "--log-format=json",
                    *args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**_env(), "POD_NAME": name},
            )

    def log(self) -> str:
        return self.log_path.read_text()[-4000:]

    def owns(self, identity: str) -> bool:
        """Whether ``identity`` (e.g. the Lease's holder) is this process's."""
        return identity.startswith(self.name + "_")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    async def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(f"{self.name} exited: {self.log()}")
                try:
                    response = await http.get(f"http://127.0.0.1:{self.health}/readyz")
                    if response.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"{self.name} never ready: {self.log()}")

    async def wait_exit(self, timeout: float) -> int:
        """The exit code (polling: the test's event loop keeps running, e.g. a proxy)."""
        deadline = time.monotonic() + timeout
        while (code := self.proc.poll()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} still running after {timeout}s: {self.log()}")
            await asyncio.sleep(0.05)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST",)}


class Supervisor:
    """Keeps ``count`` replicas running: one that exits (SIGKILLed, or leadership lost) is
    replaced by a new process with the next name (``<prefix>-1``, ``<prefix>-2``, …), as a
    Deployment's pod would be. :meth:`run` supervises until cancelled."""

    def __init__(
        self, count: int, kubeconfig: Path, namespace: str, logs: Path, *args: str
    ) -> None:
        self.count, self.kubeconfig, self.namespace, self.logs = count, kubeconfig, namespace, logs
        self.args = args
        self.started: list[Replica] = []
        self.exits: list[tuple[str, int]] = []  # (name, exit code) of every replaced replica

    def start(self, prefix: str = "op") -> Replica:
        name = f"{prefix}-{len(self.started) + 1}"
        replica = Replica(name, self.kubeconfig, self.namespace, self.logs, *self.args)
        self.started.append(replica)
        return replica

    def running(self) -> list[Replica]:
        return [r for r in self.started if r.alive() and r.name not in dict(self.exits)]

    def by_identity(self, identity: str) -> Replica | None:
        return next((r for r in self.started if r.owns(identity)), None)

    def top_up(self) -> None:
        """Record the replicas that exited and start replacements up to ``count``."""
        for replica in self.started:
            code = replica.proc.poll()
            if code is not None and replica.name not in dict(self.exits):
                self.exits.append((replica.name, code))
        for _ in range(self.count - len(self.running())):
            self.start()

    async def run(self, interval: float = 0.2) -> None:
        while True:
            self.top_up()
            await asyncio.sleep(interval)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM every replica (bounded drain, Lease released), SIGKILL after ``timeout``."""
        live = [r for r in self.started if r.alive()]
        for replica in live:
            replica.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for replica in live:
            try:
                replica.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                replica.kill()
