"""What the operator's cache holds per object, by kind (issue #26).

N AppServices (size 1, one port) are created in a fresh namespace and the operator
(``appstack run``, its own process) reconciles them until every one has its Deployment and
Service and the Deployment's pod exists; the operator's idle and peak RSS are read from
``/proc``. Then this process sets up every controller on a manager of its own, as the
operator does (the same label selectors, transforms and field manager), without starting
them, and starts the cache's informers one at a time: ``tracemalloc`` gives the memory each
kind's store holds once synced, divided by its objects, and the store how many of those
bytes are the packed objects themselves (the rest: keys and indexes).

    python bench/cachesize.py --kubeconfig "$(appstack cluster kubeconfig --name NAME)" --n 1000

``--during`` measures instead what the operator's stores pack to when they were filled by
a wave, as the operator's are: this process's informers (the operator's, set up the same
way) start on the empty namespace before the N AppServices are created, see every event
of the create wave and of an image-update wave after it, and then report per kind the
packed bytes per object and the size of the store's dictionary. (Without ``--during`` the
stores are filled by one LIST of objects that have settled.)

``--during --ab`` also decides how a store's preset dictionary is made (issue #40), in the
same invocation and on the same events: beside each informer's store, shadow stores are
fed every object it caches, in the same order, one per way of making the dictionary
(:data:`DICTIONARIES`: growing at the 16th, 128th and 1,024th pack as today; chosen once,
at the 16th; the first object only), each timed; the report gives per kind and in total
the packed MiB and the CPU seconds of each.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
import tracemalloc
import uuid
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from converge import _bounded, _free_port, _metrics_up, _proc_usage, start_operator

from appstack.api.identity import IDENTITY
from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.registry import ALL, CACHE
from appstack.runtime import (
    DEPLOYMENT,
    NAMESPACE,
    POD,
    SERVICE,
    Client,
    EventRecorder,
    Manager,
    Store,
    limit_tls_read_buffer,
    object_key,
)
from appstack.sdk.operator import wire


def _app(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1, "image": "nginx:1.27", "ports": [{"port": 80, "targetPort": 8080}]},
    }


async def _create_namespace(client: Client, namespace: str) -> None:
    await client.create(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
        },
    )


async def _count(client: Client, resource: Any, namespace: str) -> int:
    return len((await client.list(resource, namespace=namespace))[0])


async def _updated(client: Client, namespace: str, image: str) -> int:
    """Pods running ``image`` that are not being deleted."""
    pods = (await client.list(POD, namespace=namespace))[0]
    return sum(
        1
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and pod["spec"]["containers"][0]["image"] == image
    )


async def populate(
    client: Client, kubeconfig: str, namespace: str, n: int, *, update: bool = False
) -> dict[str, float]:
    """Create N AppServices with the operator running (then, with ``update``, change the
    image of all); its RSS once all are reconciled."""
    port = _free_port()
    operator = start_operator(kubeconfig, namespace, port, [])
    try:
        await _metrics_up(port)
        await asyncio.sleep(3.0)  # its caches sync, its heap settles
        _, idle = _proc_usage(operator.pid)
        await _bounded(n, lambda i: client.create(APP_SERVICE, _app(f"app-{i:04d}", namespace)))
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            counts = [await _count(client, r, namespace) for r in (DEPLOYMENT, SERVICE, POD)]
            if min(counts) >= n:
                break
            await asyncio.sleep(2.0)
        if update:
            patch = {"spec": {"image": "nginx:1.28"}}
            await _bounded(
                n, lambda i: client.patch(APP_SERVICE, f"app-{i:04d}", patch, namespace=namespace)
            )
            while time.monotonic() < deadline:
                if await _updated(client, namespace, "nginx:1.28") >= n:
                    break
                await asyncio.sleep(2.0)
        await asyncio.sleep(10.0)  # the status writes of the last rollouts
        _, peak = _proc_usage(operator.pid)
    finally:
        operator.terminate()
        operator.wait(timeout=30)
    return {
        "operator_idle_rss_mib": round(idle / 1024, 1),
        "operator_peak_rss_mib": round(peak / 1024, 1),
    }


def _operators_manager(client: Client, namespace: str) -> tuple[Manager, EventRecorder]:
    """A manager with every controller set up as the operator sets them up (the same label
    selectors and transforms; ``client`` connected with its field manager), not started."""
    manager = Manager(client, namespaces=[namespace])
    recorder = EventRecorder(client, controller=IDENTITY.event_source)
    wire(manager, recorder, ALL, IDENTITY, cache=CACHE)  # the operator's own assembly
    return manager, recorder


#: The ways of making a store's preset dictionary the A/B compares: the packs after which
#: it grows (runtime/packing.py).
DICTIONARIES: dict[str, frozenset[int]] = {
    "grows at 16, 128, 1024": frozenset({16, 128, 1024}),
    "chosen once, at 16": frozenset({16}),
    "first object only": frozenset(),
}


class Shadow:
    """Stores fed every object an informer caches, one per way of making the dictionary,
    with the CPU time each spends."""

    def __init__(self) -> None:
        self.stores = {name: Store(grow_at=grow) for name, grow in DICTIONARIES.items()}
        self.cpu = dict.fromkeys(DICTIONARIES, 0.0)

    def _each(self, call: Any) -> None:
        for name, store in self.stores.items():
            started = time.process_time()
            call(store)
            self.cpu[name] += time.process_time() - started

    def on_add(self, obj: dict[str, Any]) -> None:
        self._each(lambda store: store.upsert(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._each(lambda store: store.upsert(new))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._each(lambda store: store.delete(object_key(obj)))


async def during_wave(
    kubeconfig: str, namespace: str, n: int, ab: bool = False
) -> list[dict[str, Any]]:
    """Packed bytes per object of each kind, in stores that saw the waves' every event
    (with ``ab``, also in the shadow stores of each way of making the dictionary)."""
    limit_tls_read_buffer()
    async with await Client.connect(kubeconfig, field_manager=IDENTITY.field_manager) as client:
        manager, recorder = _operators_manager(client, namespace)
        informers = [i for group in manager.cache._informers.values() for i in group.values()]
        shadows = {}
        if ab:
            for informer in informers:
                shadows[informer] = Shadow()
                informer.add_handler(shadows[informer])
        tasks = [asyncio.create_task(informer.run()) for informer in informers]
        try:
            for informer in informers:
                await informer.wait_synced()
            await populate(client, kubeconfig, namespace, n, update=True)
            rows = []
            for informer in informers:
                store = informer.store
                if not len(store):
                    continue
                row = {
                    "kind": informer.resource.kind,
                    "objects": len(store),
                    "packed_bytes_per_object": round(store.packed_bytes() / len(store)),
                    "dictionary_bytes": len(store._packer.dictionary or b""),
                }
                if informer in shadows:
                    shadow = shadows[informer]
                    row["ab"] = {
                        name: {
                            "packed_bytes": shadow.stores[name].packed_bytes(),
                            "dictionary_bytes": len(shadow.stores[name]._packer.dictionary or b""),
                            "cpu_s": round(shadow.cpu[name], 3),
                        }
                        for name in DICTIONARIES
                    }
                rows.append(row)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await recorder.close(timeout=0)
    return rows


async def per_kind(kubeconfig: str, namespace: str) -> list[dict[str, Any]]:
    """Bytes per cached object of each kind the operator caches, in ``namespace``."""
    limit_tls_read_buffer()  # as the operator: 16 KiB per watch connection, not 256
    client = await Client.connect(kubeconfig, field_manager=IDENTITY.field_manager)
    manager, recorder = _operators_manager(client, namespace)
    rows = []
    tasks = []
    resources = sorted(manager.cache._informers, key=lambda r: r != APP_SERVICE)
    tracemalloc.start()
    for resource in resources:
        for informer in manager.cache._informers[resource].values():
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            tasks.append(asyncio.create_task(informer.run()))
            await informer.wait_synced()
            await asyncio.sleep(0.5)
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            objects = len(informer.store)
            packed = informer.store.packed_bytes()
            rows.append(
                {
                    "kind": resource.kind,
                    "objects": objects,
                    "kib_per_object": round(held / objects / 1024, 2) if objects else None,
                    "packed_bytes_per_object": round(packed / objects) if objects else None,
                    "mib": round(held / 2**20, 2),
                }
            )
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await recorder.close(timeout=0)
    await client.close()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--namespace", help="measure an existing namespace (no operator run)")
    parser.add_argument("--keep", action="store_true", help="leave the namespace")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--during", action="store_true", help="stores filled by a create and an update wave"
    )
    parser.add_argument(
        "--ab", action="store_true", help="with --during: compare ways of making the dictionary"
    )
    args = parser.parse_args()
    if args.during:
        await _during(args)
        return
    result: dict[str, Any] = {"n": args.n}
    namespace = args.namespace or f"bench-cache-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(args.kubeconfig) as client:
        if not args.namespace:
            await _create_namespace(client, namespace)
            result.update(await populate(client, args.kubeconfig, namespace, args.n))
        result["namespace"] = namespace
        result["kinds"] = await per_kind(args.kubeconfig, namespace)
        total = sum(row["mib"] for row in result["kinds"])
        result["kib_per_app"] = round(total * 1024 / args.n, 2)
        if not args.namespace and not args.keep:
            await client.delete(NAMESPACE, namespace)
    print(f"{'kind':<22}{'objects':>8}{'KiB/object':>12}{'packed B':>10}{'MiB':>8}")
    for row in result["kinds"]:
        print(
            f"{row['kind']:<22}{row['objects']:>8}{row['kib_per_object'] or 0:>12}"
            f"{row['packed_bytes_per_object'] or 0:>10}{row['mib']:>8}"
        )
    print(json.dumps({k: v for k, v in result.items() if k != "kinds"}))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)


async def _during(args: argparse.Namespace) -> None:
    namespace = f"bench-cache-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(args.kubeconfig) as client:
        await _create_namespace(client, namespace)
        try:
            rows = await during_wave(args.kubeconfig, namespace, args.n, ab=args.ab)
        finally:
            if not args.keep:
                await client.delete(NAMESPACE, namespace)
    print(f"{'kind':<22}{'objects':>8}{'packed B':>10}{'dictionary B':>14}")
    for row in rows:
        print(
            f"{row['kind']:<22}{row['objects']:>8}{row['packed_bytes_per_object']:>10}"
            f"{row['dictionary_bytes']:>14}"
        )
    ab = {}
    if args.ab:
        print(f"\n{'dictionary':<26}{'packed MiB':>12}{'CPU s':>8}   (all kinds, N = {args.n})")
        for name in DICTIONARIES:
            packed = sum(row["ab"][name]["packed_bytes"] for row in rows if "ab" in row)
            cpu = sum(row["ab"][name]["cpu_s"] for row in rows if "ab" in row)
            ab[name] = {"packed_mib": round(packed / 2**20, 2), "cpu_s": round(cpu, 2)}
            print(f"{name:<26}{ab[name]['packed_mib']:>12}{ab[name]['cpu_s']:>8}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"n": args.n, "during": True, "kinds": rows, "ab": ab}, out, indent=1)


if __name__ == "__main__":
    asyncio.run(main())
