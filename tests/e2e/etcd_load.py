"""A writer that keeps writing keys through an EtcdCluster's client Service during an
operation, and what the EtcdCluster e2e tests wait for (members healthy, status).

:class:`Writer` writes ``w-<n>`` = ``n`` one after another, retrying a key until etcd
acknowledges it; every acknowledged key must be readable afterwards (no write lost) and
the longest time between two acknowledgements is the write stall.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from appstack.controllers.etcdcluster import ETCD_CLUSTER
from appstack.controllers.etcdcluster.etcdapi import EtcdClient, EtcdError
from appstack.runtime.client import Client
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import until

T = TypeVar("T")


@dataclass
class Writer:
    """Writes through ``endpoint`` until stopped; ``acked`` keys were acknowledged."""

    endpoint: str
    acked: int = 0
    failures: int = 0
    longest_stall: float = 0.0
    task: asyncio.Task[None] | None = None
    errors: list[str] = field(default_factory=list)

    async def _run(self) -> None:
        async with EtcdClient(timeout=2.0) as client:
            last = time.monotonic()
            while True:
                try:
                    await client.put(self.endpoint, f"w-{self.acked}", str(self.acked))
                except EtcdError as error:
                    self.failures += 1
                    self.errors = [*self.errors[-4:], str(error)]
                    await asyncio.sleep(0.05)
                    continue
                now = time.monotonic()
                self.longest_stall = max(self.longest_stall, now - last)
                last = now
                self.acked += 1
                await asyncio.sleep(0.02)

    def start(self) -> Writer:
        self.task = asyncio.create_task(self._run())
        return self

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def lost(self) -> list[int]:
        """Acknowledged keys that cannot be read back (should be none)."""
        async with EtcdClient(timeout=5.0) as client:
            missing = []
            for n in range(self.acked):  # a pooled connection may meet a restarted member
                value = await retry(lambda n=n: client.get(self.endpoint, f"w-{n}"))  # type: ignore[misc]
                if value != str(n):
                    missing.append(n)
            return missing


def alive_pod_names(pods: list[dict[str, Any]]) -> list[str]:
    """The names of ``pods`` not being deleted (a real pod may take a while to terminate)."""
    return [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]


async def retry(call: Callable[[], Awaitable[T]], timeout: float = 30) -> T:
    """``call``'s answer once it does not raise :class:`EtcdError` (the last one on timeout)."""
    return await eventually(
        call,
        lambda _: True,
        timeout=timeout,
        what="etcd to answer",
        interval=0.2,
        retry_on=(EtcdError,),
    )


def healthy(replicas: int, version: str | None = None) -> Any:
    """A check: ``replicas`` healthy voting members, nothing left to do."""

    def check(obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        members = status.get("members") or []
        return (
            status.get("phase") == "Done"
            and status.get("observedGeneration") == obj["metadata"]["generation"]
            and len(members) == replicas
            and all(m["healthy"] and not m["isLearner"] for m in members)
            and (version is None or all(m.get("version") == version for m in members))
        )

    return check


async def wait_healthy(
    client: Client, name: str, namespace: str, replicas: int, timeout: float = 180, **kw: Any
) -> tuple[dict[str, Any], float]:
    """The cluster once healthy, and how long that took."""
    start = time.monotonic()
    obj = await until(
        client, ETCD_CLUSTER, name, namespace, healthy(replicas, **kw), timeout, f"{name} healthy"
    )
    return obj, time.monotonic() - start


def snapshot_claim(namespace: str, name: str = "snapshots") -> dict[str, Any]:
    """A 1Gi PVC for snapshots."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


async def first_snapshot(
    client: Client, name: str, namespace: str, backup: dict[str, Any]
) -> tuple[dict[str, Any], float]:
    """Set ``spec.backup``; the cluster once its first snapshot is taken, and how long
    that took."""
    start = time.monotonic()
    await client.patch(ETCD_CLUSTER, name, {"spec": {"backup": backup}}, namespace=namespace)
    obj = await until(
        client,
        ETCD_CLUSTER,
        name,
        namespace,
        lambda o: (o.get("status") or {}).get("backupsTaken") == 1,
        120,
        "the first snapshot",
    )
    return obj, time.monotonic() - start
