"""Start-up with many existing objects: N AppServices (without children) exist before the
operator starts; time from the operator's process start until its first reconcile shows
(the first Deployment owned by one of them), with its CPU and RSS at that moment.

One namespace serves every peer (the N apps exist once per AppService kind the peers
serve: appstack's, and the seed's ``kosmos.io`` one when it runs): after each, the peer is
stopped and the few children it made are deleted (and waited for) before the next starts.
Used by ``bench/peers.py --startup N``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from appstack.runtime import DEPLOYMENT, SERVICE, Client
from peerbench import waves
from peerbench.operators import Peer, Running
from peerbench.procstat import usage
from peerbench.run import BENCH_AGENT


def _owned(watch: waves.Watch) -> list[tuple[Any, dict[str, Any]]]:
    return [
        (res, obj)
        for res, informer in ((DEPLOYMENT, watch.deployments), (SERVICE, watch.services))
        for obj in informer.store.objects()
        if obj["metadata"].get("ownerReferences")
    ]


async def _first_child(watch: waves.Watch, op: Running, timeout: float) -> float:
    while not _owned(watch):
        if time.perf_counter() - op.started > timeout:
            raise TimeoutError(f"{op.peer.key}: no child after {timeout}s")
        if op.proc.poll() is not None:
            raise RuntimeError(f"{op.peer.key} exited; see {op.log_path}")
        await asyncio.sleep(0.05)
    return time.perf_counter() - op.started


async def measure_startup(kubeconfig: str, wanted: list[Peer], n: int) -> list[dict[str, Any]]:
    log_dir = Path(tempfile.mkdtemp(prefix="peers-startup-"))
    results = []
    async with await Client.connect(kubeconfig, user_agent=BENCH_AGENT) as client:
        namespace = await waves.create_namespace(client, "peers-startup")
        try:
            for kind in dict.fromkeys(peer.app_resource for peer in wanted):
                started = time.perf_counter()
                await waves.create_apps(client, namespace, n, kind)
                took = time.perf_counter() - started
                print(f"[peers] {n} AppServices ({kind}) created in {took:.0f} s")
            async with waves.Watch(client, namespace) as watch:
                for peer in wanted:
                    op = Running(peer, kubeconfig, namespace, log_dir)
                    try:
                        first = await _first_child(watch, op, timeout=max(600.0, n / 10))
                        use = usage(op.proc.pid)
                    finally:
                        op.stop()
                    results.append(
                        {
                            "peer": peer.key,
                            "label": peer.label,
                            "existing": n,
                            "first_reconcile_s": round(first, 2),
                            "cpu_s": round(use.cpu_s, 2),
                            "peak_rss_mib": round(use.peak_rss_kib / 1024, 1),
                        }
                    )
                    print(results[-1], flush=True)
                    await _clean(client, watch)
        finally:
            await waves.delete_namespace(client, namespace)
    return results


async def _clean(client: Client, watch: waves.Watch) -> None:
    """Delete the children a peer made (its last writes may still be landing), until the
    watch has seen them all go."""
    while owned := _owned(watch):
        for res, obj in owned:
            if not obj["metadata"].get("deletionTimestamp"):
                await client.delete(res, obj["metadata"]["name"], obj["metadata"]["namespace"])
        await asyncio.sleep(0.5)


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| peer | existing AppServices | start -> first reconcile | CPU-s until then "
        "| RSS MiB then |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['label']} | {r['existing']:,} | {r['first_reconcile_s']:.1f} s "
        f"| {r['cpu_s']:.1f} | {r['peak_rss_mib']:.0f} |"
        for r in results
    ]
    return "\n".join(lines)
