"""One measurement: a peer (or the raw floor, or the full floor) at one size, in a fresh
namespace that is deleted, and waited for, afterwards.

For an operator: start it, wait until it is ready and idle, create N AppServices at once
and time until :meth:`~peerbench.waves.Watch.converged` reaches N; wait until the process
is idle again (the tail of its work is charged to the wave), read its CPU and
``rest_client_requests_total``; the same for the image-update wave; peak RSS at the end.
Writes per app come from the API server's audit log (every peer, by namespace, the
benchmark's own requests left out) when the cluster directory is known.
Used by ``bench/peers.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections import Counter
from pathlib import Path
from typing import Any

from appstack.runtime import Client
from appstack_testbed.audit import read_audit_events
from peerbench import fullfloor, promtext, waves
from peerbench.operators import Peer, Running
from peerbench.procstat import usage

BENCH_AGENT = "appstack-bench"
FULL_FLOOR_LABEL = "full floor: + the AppService writes and a status write, done directly"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def audit_writes(
    cluster_dir: Path | None, namespace: str, since: datetime.datetime, until: datetime.datetime
) -> dict[str, int] | None:
    """The peer's writes (by verb) in ``namespace`` received in [since, until]."""
    if cluster_dir is None:
        return None
    counts: Counter[str] = Counter()
    for event in read_audit_events(cluster_dir, namespace=namespace):
        if not event.user_agent.startswith(BENCH_AGENT) and since <= event.received <= until:
            counts[event.verb] += 1
    return dict(sorted(counts.items()))


async def measure_floor(kubeconfig: str, n: int, *, full: bool = False) -> dict[str, Any]:
    """The floor (the 2N child creates, N Deployment patches), or with ``full`` every write
    a status-writing operator's wave holds (:mod:`peerbench.fullfloor`)."""
    create, update = (
        (fullfloor.full_create, fullfloor.full_update)
        if full
        else (waves.floor_create, waves.floor_update)
    )
    async with await Client.connect(kubeconfig, user_agent=BENCH_AGENT) as client:
        namespace = await waves.create_namespace(client, "peers-floor")
        try:
            create_s = await create(client, namespace, n)
            update_s = await update(client, namespace, n)
        finally:
            await waves.delete_namespace(client, namespace)
    return {
        "peer": "floor-full" if full else "floor",
        "label": FULL_FLOOR_LABEL if full else "floor",
        "n": n,
        "create": {"seconds": round(create_s, 2), "apps_per_s": round(n / create_s, 1)},
        "update": {"seconds": round(update_s, 2), "apps_per_s": round(n / update_s, 1)},
    }


async def _wave(
    client: Client,
    op: Running,
    watch: waves.Watch,
    namespace: str,
    n: int,
    *,
    create: bool,
    cluster_dir: Path | None,
    timeout: float,
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    cpu0 = usage(op.proc.pid).cpu_s
    before = promtext.scrape(op.port) if op.peer.has_metrics else {}
    since = _now()
    started = time.perf_counter()
    if create:
        await waves.create_apps(client, namespace, n, op.peer.app_resource)
    else:
        await waves.update_apps(client, namespace, n, op.peer.app_resource)
    image = waves.FIRST_IMAGE if create else waves.SECOND_IMAGE
    seconds = await watch.until_converged(
        n, image, status=op.peer.writes_status, started=started, timeout=timeout
    )
    problems = watch.child_problems(image)
    await loop.run_in_executor(None, op.wait_quiet)
    requests = promtext.diff(promtext.scrape(op.port), before) if op.peer.has_metrics else None
    writes = await loop.run_in_executor(None, audit_writes, cluster_dir, namespace, since, _now())
    cpu = usage(op.proc.pid).cpu_s - cpu0
    return {
        "seconds": round(seconds, 2),
        "apps_per_s": round(n / seconds, 1),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_app": round(1000 * cpu / n, 2),
        "requests": requests,
        "requests_per_app": round(sum(requests.values()) / n, 2) if requests else None,
        "writes": writes,
        "writes_per_app": round(sum(writes.values()) / n, 2) if writes else None,
        "child_problems": problems,
    }


async def measure_peer(
    kubeconfig: str, peer: Peer, n: int, *, cluster_dir: Path | None, log_dir: Path
) -> dict[str, Any]:
    timeout = max(600.0, n * 1.0)
    async with await Client.connect(kubeconfig, user_agent=BENCH_AGENT) as client:
        namespace = await waves.create_namespace(client, f"peers-{peer.key}")
        loop = asyncio.get_running_loop()
        op: Running | None = None
        try:
            # Inside: a peer that cannot start (its fixed port taken) leaves no namespace.
            op = Running(peer, kubeconfig, namespace, log_dir)
            ready_s = await loop.run_in_executor(None, op.wait_ready)
            async with waves.Watch(client, namespace, peer.app_resource) as watch:
                kw: dict[str, Any] = {"cluster_dir": cluster_dir, "timeout": timeout}
                created = await _wave(client, op, watch, namespace, n, create=True, **kw)
                updated = await _wave(client, op, watch, namespace, n, create=False, **kw)
            peak = usage(op.proc.pid).peak_rss_kib
        finally:
            if op is not None:
                op.stop()
            await waves.delete_namespace(client, namespace)
    return {
        "peer": peer.key,
        "label": peer.label,
        "n": n,
        "ready_s": round(ready_s, 2),
        "create": created,
        "update": updated,
        "peak_rss_mib": round(peak / 1024, 1),
    }
