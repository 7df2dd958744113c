"""Which async Kubernetes client should the runtime stand on? Measure, don't guess.

For each candidate: create N ConfigMaps (64 in flight) and list M ConfigMaps (pages of 500),
reporting wall time, requests/s (or objects/s) and the CPU seconds this process spent.

Candidates:
  lightkube-typed   lightkube.AsyncClient with its typed models
  httpx-raw         httpx.AsyncClient configured by lightkube (auth, TLS) + orjson on plain dicts
  k8s-asyncio-typed kubernetes_asyncio with its generated models
  k8s-asyncio-raw   kubernetes_asyncio transport (aiohttp), _preload_content=False + orjson

Usage: python bench/client_choice.py --kubeconfig PATH [--creates 2000] [--objects 10000]
Needs: pip install kubernetes_asyncio orjson (not runtime dependencies).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

CONCURRENCY = 64


async def _bounded(n: int, make: Callable[[int], Awaitable[Any]]) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with sem:
            await make(i)

    await asyncio.gather(*(one(i) for i in range(n)))


async def _measure(label: str, coro: Awaitable[int]) -> dict[str, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    count = await coro
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        f"{label}_s": round(wall, 3),
        f"{label}_per_s": round(count / wall, 1),
        f"{label}_cpu_s": round(cpu, 3),
    }


def _cm(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"bench": "client"}},
        "data": {"key": "x" * 200},
    }


# ------------------------------------------------------------------------------ lightkube
async def lightkube_typed(kubeconfig: str, ns: str, creates: int, list_ns: str) -> dict[str, Any]:
    from lightkube import AsyncClient, KubeConfig  # noqa: PLC0415
    from lightkube.models.meta_v1 import ObjectMeta  # noqa: PLC0415
    from lightkube.resources.core_v1 import ConfigMap  # noqa: PLC0415

    client = AsyncClient(config=KubeConfig.from_file(kubeconfig))

    async def create() -> int:
        await _bounded(
            creates,
            lambda i: client.create(
                ConfigMap(
                    metadata=ObjectMeta(name=f"lt-{i}", namespace=ns), data={"key": "x" * 200}
                )
            ),
        )
        return creates

    async def list_all() -> int:
        return len([o async for o in client.list(ConfigMap, namespace=list_ns, chunk_size=500)])

    out = await _measure("create", create()) | await _measure("list", list_all())
    await client.close()
    return out


async def httpx_raw(kubeconfig: str, ns: str, creates: int, list_ns: str) -> dict[str, Any]:
    from lightkube import KubeConfig  # noqa: PLC0415
    from lightkube.config import client_adapter  # noqa: PLC0415

    config = KubeConfig.from_file(kubeconfig).get()
    http = client_adapter.AsyncClient(config, client_adapter.ConnectionParams())

    async def create() -> int:
        async def one(i: int) -> None:
            r = await http.post(
                f"/api/v1/namespaces/{ns}/configmaps",
                content=orjson.dumps(_cm(f"hx-{i}", ns)),
                headers={"content-type": "application/json"},
            )
            r.raise_for_status()
            orjson.loads(r.content)

        await _bounded(creates, one)
        return creates

    async def list_all() -> int:
        count, cont = 0, ""
        while True:
            r = await http.get(
                f"/api/v1/namespaces/{list_ns}/configmaps",
                params={"limit": 500, **({"continue": cont} if cont else {})},
            )
            body = orjson.loads(r.content)
            count += len(body["items"])
            cont = body["metadata"].get("continue", "")
            if not cont:
                return count

    out = await _measure("create", create()) | await _measure("list", list_all())
    await http.aclose()
    return out


# ----------------------------------------------------------------------- kubernetes_asyncio
async def _k8s_api(kubeconfig: str) -> Any:
    from kubernetes_asyncio import client, config  # noqa: PLC0415

    configuration = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = CONCURRENCY
    return client, client.ApiClient(configuration=configuration)


async def k8s_asyncio_typed(kubeconfig: str, ns: str, creates: int, list_ns: str) -> dict[str, Any]:
    client, api_client = await _k8s_api(kubeconfig)
    core = client.CoreV1Api(api_client)

    async def create() -> int:
        await _bounded(
            creates,
            lambda i: core.create_namespaced_config_map(
                ns,
                client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name=f"kt-{i}"), data={"key": "x" * 200}
                ),
            ),
        )
        return creates

    async def list_all() -> int:
        count, cont = 0, None
        while True:
            page = await core.list_namespaced_config_map(list_ns, limit=500, _continue=cont)
            count += len(page.items)
            cont = page.metadata._continue
            if not cont:
                return count

    out = await _measure("create", create()) | await _measure("list", list_all())
    await api_client.close()
    return out


async def k8s_asyncio_raw(kubeconfig: str, ns: str, creates: int, list_ns: str) -> dict[str, Any]:
    client, api_client = await _k8s_api(kubeconfig)
    core = client.CoreV1Api(api_client)

    async def create() -> int:
        async def one(i: int) -> None:
            resp = await core.create_namespaced_config_map(
                ns, _cm(f"kr-{i}", ns), _preload_content=False
            )
            orjson.loads(await resp.read())

        await _bounded(creates, one)
        return creates

    async def list_all() -> int:
        count, cont = 0, None
        while True:
            resp = await core.list_namespaced_config_map(
                list_ns, limit=500, _continue=cont, _preload_content=False
            )
            body = orjson.loads(await resp.read())
            count += len(body["items"])
            cont = body["metadata"].get("continue")
            if not cont:
                return count

    out = await _measure("create", create()) | await _measure("list", list_all())
    await api_client.close()
    return out


CANDIDATES = {
    "lightkube-typed": lightkube_typed,
    "httpx-raw": httpx_raw,
    "k8s-asyncio-typed": k8s_asyncio_typed,
    "k8s-asyncio-raw": k8s_asyncio_raw,
}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=10000)
    args = parser.parse_args()

    from lightkube import AsyncClient, KubeConfig  # noqa: PLC0415
    from lightkube.models.meta_v1 import ObjectMeta  # noqa: PLC0415
    from lightkube.resources.core_v1 import Namespace  # noqa: PLC0415

    admin = AsyncClient(config=KubeConfig.from_file(args.kubeconfig))
    run = uuid.uuid4().hex[:6]
    list_ns = f"bench-list-{run}"
    await admin.create(Namespace(metadata=ObjectMeta(name=list_ns)))
    http_seed = CANDIDATES["httpx-raw"]
    await http_seed(args.kubeconfig, list_ns, args.objects, list_ns)  # seed M objects (warm-up)
    results: dict[str, Any] = {}
    for name, candidate in CANDIDATES.items():
        ns = f"bench-{name}-{run}"
        await admin.create(Namespace(metadata=ObjectMeta(name=ns)))
        results[name] = await candidate(args.kubeconfig, ns, args.creates, list_ns)
        await admin.delete(Namespace, ns)
        print(name, json.dumps(results[name]), flush=True)
    await admin.delete(Namespace, list_ns)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
