"""Real container probes (httpGet, tcpSocket, exec) with the kubelet's thresholds.

A :class:`Prober` runs one probe spec against the pod IP every ``periodSeconds`` after
``initialDelaySeconds`` and keeps a verdict that flips after ``successThreshold``
consecutive successes or ``failureThreshold`` consecutive failures (Kubernetes
defaults: 10 s period, 1 s timeout, thresholds 1 and 3). Used by
:mod:`appstack_testbed.procnode.container` for startup, readiness and liveness.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from appstack_testbed.procnode.sandbox import exec_in


def resolve_port(port: int | str, container: Mapping[str, Any]) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"container {container['name']!r} has no port named {port!r}")


async def probe_once(
    spec: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    pod_ip: str,
    pid: int,
    env: Mapping[str, str],
    argv_of: Callable[[Sequence[str]], list[str]],
) -> bool:
    """One attempt; True on success. ``argv_of`` maps an exec command to local binaries."""
    timeout = float(spec.get("timeoutSeconds", 1))
    if "httpGet" in spec:
        get = spec["httpGet"]
        scheme = str(get.get("scheme", "HTTP")).lower()
        host = get.get("host") or pod_ip
        url = f"{scheme}://{host}:{resolve_port(get['port'], container)}{get.get('path', '/')}"
        headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
        try:
            async with httpx.AsyncClient(verify=False, timeout=timeout) as client:  # noqa: S501
                response = await client.get(url, headers=headers)
        except httpx.HTTPError:
            return False
        return 200 <= response.status_code < 400
    if "tcpSocket" in spec:
        tcp = spec["tcpSocket"]
        port = resolve_port(tcp["port"], container)
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(tcp.get("host") or pod_ip, port), timeout
            )
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        return True
    if "exec" in spec:
        command: Sequence[str] = argv_of(spec["exec"]["command"])
        code, _ = await exec_in(pid, command, env, timeout)
        return code == 0
    raise ValueError(f"unsupported probe: {sorted(spec)}")


class Prober:
    """The running verdict of one probe (see the module docstring)."""

    def __init__(self, spec: Mapping[str, Any], *, initial: bool) -> None:
        self.spec = spec
        self.ok = initial
        self.period = float(spec.get("periodSeconds", 10))
        self.delay = float(spec.get("initialDelaySeconds", 0))
        self.successes_needed = int(spec.get("successThreshold", 1))
        self.failures_allowed = int(spec.get("failureThreshold", 3))
        self._streak = 0
        self._due = 0.0
        self.failures = 0  # consecutive failed attempts

    def start(self, now: float | None = None) -> None:
        """(Re)arm for a new container process."""
        self._due = (now if now is not None else time.monotonic()) + self.delay
        self._streak = 0

    def due(self, now: float) -> bool:
        return now >= self._due

    def record(self, success: bool, now: float) -> bool:
        """Count one attempt; returns True when the verdict changed."""
        self._due = now + self.period
        self.failures = 0 if success else self.failures + 1
        if success == self.ok:
            self._streak = 0
            return False
        self._streak += 1
        needed = self.successes_needed if success else self.failures_allowed
        if self._streak >= needed:
            self.ok = success
            self._streak = 0
            return True
        return False
