"""A change made while the operator catches up after a restart.

N converged AppServices exist (children and status written by an operator that is then
stopped once idle: every rollout reported); a peer starts and, as soon as it has begun
reconciling (its ``controller_runtime_reconcile_total`` above 0: its first list is in),
the image of the *last* app (the last its first list delivers) is changed. Timed: from
that patch until the app's Deployment runs the new image and its
``status.observedGeneration`` is the new generation — a user's change queued behind N
reconciles of unchanged objects, or not; and from the peer's start until it is idle
(caught up), with the requests it sent meanwhile.

One namespace serves every peer, one after another. Used by ``bench/peers.py --restart N``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import urllib.error
from pathlib import Path
from typing import Any

from appstack.controllers.appservice import APP_SERVICE
from appstack.runtime import Client
from peerbench import promtext, waves
from peerbench.operators import Peer, Running
from peerbench.run import BENCH_AGENT


def _reconciles(port: int) -> float:
    try:
        return promtext.reconciles(promtext.fetch(port, timeout=2))
    except (urllib.error.URLError, OSError):  # not serving /metrics yet
        return 0.0


async def _reconciling(op: Running, timeout: float = 120) -> None:
    """Until the peer has reconciled something (its caches are synced)."""
    while _reconciles(op.port) < 1:
        if op.proc.poll() is not None or time.perf_counter() - op.started > timeout:
            raise RuntimeError(f"{op.peer.key} never reconciled; see {op.log_path}")
        await asyncio.sleep(0.05)


async def measure_restart(
    kubeconfig: str, converge_with: Peer, wanted: list[Peer], n: int
) -> list[dict[str, Any]]:
    log_dir = Path(tempfile.mkdtemp(prefix="peers-restart-"))
    loop = asyncio.get_running_loop()
    results = []
    async with await Client.connect(kubeconfig, user_agent=BENCH_AGENT) as client:
        namespace = await waves.create_namespace(client, "peers-restart")
        try:
            async with waves.Watch(client, namespace) as watch:
                op = Running(converge_with, kubeconfig, namespace, log_dir)
                try:
                    await loop.run_in_executor(None, op.wait_ready)
                    started = time.perf_counter()
                    await waves.create_apps(client, namespace, n)
                    await watch.until_converged(
                        n, waves.FIRST_IMAGE, status=True, started=started, timeout=n * 1.0
                    )
                    await loop.run_in_executor(None, op.wait_quiet)  # rollouts reported too
                    print(f"[peers] {n} apps converged in {time.perf_counter() - started:.0f} s")
                finally:
                    op.stop()
                last = waves.app_name(n - 1)
                for number, peer in enumerate(wanted):
                    image = f"nginx:restart-{number}"
                    op = Running(peer, kubeconfig, namespace, log_dir)
                    try:
                        await _reconciling(op)
                        patched = time.perf_counter()
                        await client.patch(
                            APP_SERVICE, last, {"spec": {"image": image}}, namespace=namespace
                        )
                        key = f"{namespace}/{last}"
                        while not watch.app_converged(
                            watch.apps.store.get(key), image, status=True
                        ):
                            if time.perf_counter() - patched > max(300.0, n / 10):
                                raise TimeoutError(f"{peer.key}: change not acted on")
                            await asyncio.sleep(0.05)
                        acted = time.perf_counter() - patched
                        await loop.run_in_executor(None, op.wait_quiet)
                        caught_up = time.perf_counter() - op.started
                        requests = promtext.diff(promtext.scrape(op.port), {})
                    finally:
                        op.stop()
                    results.append(
                        {
                            "peer": peer.key,
                            "label": peer.label,
                            "existing": n,
                            "change_acted_on_s": round(acted, 2),
                            "caught_up_s": round(caught_up, 1),
                            "requests": requests,
                        }
                    )
                    print(results[-1], flush=True)
        finally:
            await waves.delete_namespace(client, namespace)
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| peer | existing AppServices (converged) | a change made after start: acted on in "
        "| start -> caught up (idle) |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['label']} | {r['existing']:,} | {r['change_acted_on_s']:.2f} s "
        f"| {r['caught_up_s']:.1f} s |"
        for r in results
    ]
    return "\n".join(lines)
