"""One container of a pod as a supervised process: start, probe, restart with back-off, stop.

:class:`ContainerRunner` starts the process (:mod:`~appstack_testbed.procnode.sandbox`),
runs its startup, readiness and liveness probes (:mod:`~appstack_testbed.procnode.probes`),
and when it exits applies the pod's ``restartPolicy``: restarts it after a back-off that
doubles from ``backoff_base`` up to ``backoff_cap`` (shorter than the kubelet's 10 s..5 min
so tests stay fast; reset after 10 minutes of running), counting ``restartCount`` and
keeping the exit in ``lastState.terminated``. A liveness (or startup) probe that fails
``failureThreshold`` times kills the container, which then restarts. :meth:`status` is
the container's entry in ``status.containerStatuses``.

Used by :mod:`appstack_testbed.procnode.pod`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from appstack_testbed.procnode.probes import Prober, probe_once
from appstack_testbed.procnode.sandbox import kill_group, launch
from appstack_testbed.procnode.volumes import Mount

_RESET_AFTER = 600.0


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Launch:
    """Everything needed to start the container's process."""

    argv: Sequence[str]
    env: Mapping[str, str]
    hosts: Path
    mounts: Sequence[Mount]
    workdir: str
    log: Path
    pid_file: Path
    node_state: Path
    pod_ip: str
    resolve_argv: Callable[[Sequence[str]], list[str]]


class ContainerRunner:
    """Supervises one container (see the module docstring)."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        launch_spec: Launch,
        *,
        restart_policy: str,
        on_change: Callable[[], None],
        restart_count: int = 0,
        backoff_base: float = 1.0,
        backoff_cap: float = 20.0,
        grace: float = 30.0,
    ) -> None:
        self.spec = spec
        self.launch = launch_spec
        self.restart_policy = restart_policy
        self.on_change = on_change
        self.restart_count = restart_count
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.grace = grace  # the pod's terminationGracePeriodSeconds (liveness kills)
        self.pid: int | None = None
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.ready = False
        self.started = False
        self.stopping = asyncio.Event()
        self._proc: asyncio.subprocess.Process | None = None
        self._stopper: asyncio.Future[None] | None = None

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def finished(self) -> bool:
        """Exited for good (restartPolicy Never/OnFailure and nothing left to run)."""
        return "terminated" in self.state

    def status(self) -> dict[str, Any]:
        image = str(self.spec.get("image", ""))
        out: dict[str, Any] = {
            "name": self.name,
            "image": image,
            "imageID": image,
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.pid is not None:
            out["containerID"] = f"process://{self.pid}"
        return out

    async def run(self) -> None:
        """Run until stopped, or until the process exits and must not be restarted."""
        backoff = 0.0
        while not self.stopping.is_set():
            started_at, began = now_rfc3339(), time.monotonic()
            code = await self._run_once(started_at)
            self.ready = self.started = False
            self._proc = None
            self.last_state = {"terminated": _terminated(code, started_at)}
            if self.stopping.is_set() or not self._restarts(code):
                self.state = self.last_state
                self.last_state = {}
                self.on_change()
                return
            if time.monotonic() - began > _RESET_AFTER:
                backoff = 0.0
            self.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff" if backoff else "Restarting",
                    "message": f"back-off {backoff:.0f}s restarting failed container {self.name}",
                }
            }
            self.on_change()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), backoff)
            backoff = min(max(backoff * 2, self.backoff_base), self.backoff_cap)
            if not self.stopping.is_set():
                self.restart_count += 1

    def _restarts(self, code: int) -> bool:
        return self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and code != 0)

    async def _run_once(self, started_at: str) -> int:
        spec = self.launch
        try:
            proc = await launch(
                spec.argv,
                spec.env,
                hosts=spec.hosts,
                mounts=spec.mounts,
                workdir=spec.workdir,
                log=spec.log,
                node_state=spec.node_state,
            )
        except OSError as error:
            self.state = {"waiting": {"reason": "RunContainerError", "message": str(error)}}
            self.on_change()
            return 128
        self._proc, self.pid = proc, proc.pid
        spec.pid_file.write_text(f"{proc.pid}\n")
        if self.stopping.is_set():  # stopped while the process was being started
            self._stopper = asyncio.ensure_future(self.kill(self.grace))
        self.state = {"running": {"startedAt": started_at}}
        probing = asyncio.ensure_future(self._probe_loop(proc))
        try:
            code = await proc.wait()
        finally:
            probing.cancel()
            kill_group(proc.pid, signal.SIGKILL)  # whatever the process left in its group
            spec.pid_file.unlink(missing_ok=True)
        return code

    async def _probe_loop(self, proc: asyncio.subprocess.Process) -> None:
        startup = self._prober("startupProbe", initial=False)
        readiness = self._prober("readinessProbe", initial=False)
        liveness = self._prober("livenessProbe", initial=True)
        self.started = startup is None
        self.ready = self.started and readiness is None
        self.on_change()
        while proc.returncode is None:
            now = time.monotonic()
            if not self.started:
                assert startup is not None  # noqa: S101 - started is False only with a probe
                if startup.due(now):
                    ok = await self._probe(startup, proc)
                    startup.record(ok, time.monotonic())
                    if ok:
                        self.started = True
                        self.ready = readiness is None
                        for later in (readiness, liveness):
                            if later is not None:
                                later.start()
                        self.on_change()
                    elif startup.failures >= startup.failures_allowed:
                        await self.kill(self.grace)
                        return
            else:
                if readiness is not None and readiness.due(now):
                    changed = readiness.record(await self._probe(readiness, proc), time.monotonic())
                    if changed:
                        self.ready = readiness.ok
                        self.on_change()
                if liveness is not None and liveness.due(now):
                    liveness.record(await self._probe(liveness, proc), time.monotonic())
                    if not liveness.ok:
                        await self.kill(self.grace)
                        return
            await asyncio.sleep(0.1)

    def _prober(self, key: str, *, initial: bool) -> Prober | None:
        spec = self.spec.get(key)
        if not spec:
            return None
        prober = Prober(spec, initial=initial)
        prober.start()
        return prober

    async def _probe(self, prober: Prober, proc: asyncio.subprocess.Process) -> bool:
        return await probe_once(
            prober.spec,
            self.spec,
            pod_ip=self.launch.pod_ip,
            pid=proc.pid,
            env=self.launch.env,
            argv_of=self.launch.resolve_argv,
        )

    async def kill(self, grace: float) -> None:
        """SIGTERM the process, SIGKILL its group after ``grace`` seconds."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
        except asyncio.TimeoutError:
            kill_group(proc.pid, signal.SIGKILL)

    async def stop(self, grace: float) -> None:
        """Stop for good (pod deletion, agent shutdown)."""
        self.stopping.set()
        await self.kill(grace)


def _terminated(code: int, started_at: str) -> dict[str, Any]:
    exit_code = 128 - code if code < 0 else code  # killed by signal N: 128+N, as a runtime
    return {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": started_at,
        "finishedAt": now_rfc3339(),
    }
