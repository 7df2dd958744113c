"""Informer ingest benchmark: how fast objects reach the cache, and what caching them costs.

Creates N ConfigMaps (each with labels and ~200 bytes of data, written with server-side
apply so they carry managedFields like real objects), then, each in a fresh process so
RSS is not polluted by earlier runs:

* ``list``   — start an informer and wait until it has synced: objects/s, CPU seconds, and
  RSS per 1,000 cached objects (RSS after sync minus RSS of the same process before);
  once with ``metadata.managedFields`` dropped (the default) and once keeping everything;
* ``watch``  — with a synced informer, update every object and measure how fast the
  MODIFIED events are applied to the cache: events/s.

Usage: python bench/informer.py --kubeconfig PATH [--objects 10000] [--json OUT]
(``appstack cluster up`` gives a kubeconfig.) Results: docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import uuid
from typing import Any

from appstack.api.namespaces import ENABLED
from appstack.runtime import CONFIG_MAP, NAMESPACE, Client, FuncHandler, Informer

CONCURRENCY = 64


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _cm(name: str, namespace: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": name[:40], "bench": "informer"},
        },
        "data": {"config.yaml": f"value: {value}\n" + "x" * 200},
    }


async def _apply_all(client: Client, namespace: str, count: int, value: str) -> float:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with sem:
            await client.apply(CONFIG_MAP, _cm(f"cm-{i:05d}", namespace, value))

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - started


async def measure_list(
    kubeconfig: str, namespace: str, keep_managed_fields: bool
) -> dict[str, Any]:
    async with await Client.connect(kubeconfig) as client:
        await client.list(CONFIG_MAP, namespace, page_size=1)  # warm the connection
        rss_before = _rss_kib()
        informer = Informer(
            client,
            CONFIG_MAP,
            namespace=namespace,
            drop=() if keep_managed_fields else (("metadata", "managedFields"),),
        )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        task = asyncio.create_task(informer.run())
        await informer.wait_synced()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        cached = len(informer.store)
        rss_after = _rss_kib()
        task.cancel()
    return {
        "objects": cached,
        "seconds": round(wall, 3),
        "objects_per_s": round(cached / wall),
        "cpu_s": round(cpu, 3),
        "rss_kib_per_1000": round((rss_after - rss_before) * 1000 / max(cached, 1)),
        "keep_managed_fields": keep_managed_fields,
    }


async def measure_watch(kubeconfig: str, namespace: str, count: int) -> dict[str, Any]:
    async with await Client.connect(kubeconfig) as client:
        informer = Informer(client, CONFIG_MAP, namespace=namespace)
        seen = 0
        done = asyncio.Event()

        def on_update(_old: dict[str, Any], _new: dict[str, Any]) -> None:
            nonlocal seen
            seen += 1
            if seen >= count:
                done.set()

        informer.add_handler(FuncHandler(update=on_update))
        task = asyncio.create_task(informer.run())
        await informer.wait_synced()
        writer = await Client.connect(kubeconfig)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        write_s = await _apply_all(writer, namespace, count, "updated")
        await asyncio.wait_for(done.wait(), 300)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        await writer.close()
        task.cancel()
    return {
        "events": seen,
        "seconds": round(wall, 3),
        "events_per_s": round(seen / wall),
        "writes_s": round(write_s, 3),
        "cpu_s_incl_writer": round(cpu, 3),
    }


def _child(mode: str, kubeconfig: str, namespace: str, count: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--kubeconfig",
            kubeconfig,
            "--child",
            mode,
            "--namespace",
            namespace,
            "--objects",
            str(count),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--json")
    parser.add_argument("--child", choices=["list", "list-keep", "watch"])
    parser.add_argument("--namespace")
    args = parser.parse_args()

    if args.child:
        if args.child == "watch":
            result = await measure_watch(args.kubeconfig, args.namespace, args.objects)
        else:
            result = await measure_list(
                args.kubeconfig, args.namespace, keep_managed_fields=args.child == "list-keep"
            )
        print(json.dumps(result))
        return

    namespace = f"bench-informer-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(args.kubeconfig) as client:
        await client.create(
            NAMESPACE,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
            },
        )
        create_s = await _apply_all(client, namespace, args.objects, "initial")
        print(f"created {args.objects} ConfigMaps in {create_s:.1f}s", file=sys.stderr)
        try:
            results = {
                "objects": args.objects,
                "create_s": round(create_s, 2),
                "list": _child("list", args.kubeconfig, namespace, args.objects),
                "list_keep_managed_fields": _child(
                    "list-keep", args.kubeconfig, namespace, args.objects
                ),
                "watch": _child("watch", args.kubeconfig, namespace, args.objects),
            }
        finally:
            await client.delete(NAMESPACE, namespace)
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    asyncio.run(main())
