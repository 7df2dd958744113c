"""End-to-end operator benchmark: N AppServices created at once, then an image update wave.

For each N, in a fresh namespace, with the operator (``appstack run``) as a separate
process watching that namespace:

* ``operator``  time until every AppService has its Deployment and Service and a status
                with ``observedGeneration == generation`` — the operator's own work;
* ``ready``     time until every AppService is ``Ready=True`` — the whole system
                (controller-manager, scheduler and kwok included);
* ``update``    the same two times after changing the image of all N;
* ``baseline``  the time this process needs to server-side-apply the same N Deployments
                and N Services itself (same concurrency): the operator's ``operator`` time
                divided by this is its overhead over the bare API writes;
* operator CPU seconds (utime+stime) and peak RSS (VmHWM), read from /proc.

Usage: python bench/converge.py --kubeconfig PATH [--sizes 100,300,1000] [--json OUT]
       [--plot docs/converge.png]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.controllers.appservice import APP_SERVICE, desired
from appstack.runtime.client import Client
from appstack.runtime.informer import Informer
from appstack.runtime.resources import DEPLOYMENT, NAMESPACE, SERVICE

CONCURRENCY = 16
TICKS = os.sysconf("SC_CLK_TCK")


def _app(name: str, namespace: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1, "image": image, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def _proc_usage(pid: int) -> tuple[float, int]:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    with open(f"/proc/{pid}/status") as status:
        hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return cpu, hwm


def start_operator(kubeconfig: str, namespace: str) -> subprocess.Popen[bytes]:
    """``appstack run`` as its own process (so its CPU and RSS can be read from /proc)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "appstack",
            "run",
            f"--kubeconfig={kubeconfig}",
            f"--namespace={namespace}",
            f"--concurrency={CONCURRENCY}",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--log-level=warning",
        ],
        stderr=subprocess.DEVNULL,
    )


async def _bounded(count: int, make: Any) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with sem:
            await make(i)

    await asyncio.gather(*(one(i) for i in range(count)))


class Watch:
    """Informers on AppServices, Deployments and Services of one namespace."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.apps = Informer(client, APP_SERVICE, namespace=namespace)
        self.deployments = Informer(client, DEPLOYMENT, namespace=namespace)
        self.services = Informer(client, SERVICE, namespace=namespace)
        self.tasks = [
            asyncio.create_task(i.run()) for i in (self.apps, self.deployments, self.services)
        ]

    def reconciled(self, image: str) -> int:
        done = 0
        for app in self.apps.store.objects():
            key = f"{app['metadata']['namespace']}/{app['metadata']['name']}"
            status = app.get("status") or {}
            dep = self.deployments.store.get(key)
            if (
                status.get("observedGeneration") == app["metadata"]["generation"]
                and dep is not None
                and key in self.services.store
                and dep["spec"]["template"]["spec"]["containers"][0]["image"] == image
            ):
                done += 1
        return done

    def ready(self) -> int:
        return sum(
            1
            for app in self.apps.store.objects()
            if (app.get("status") or {}).get("observedGeneration") == app["metadata"]["generation"]
            and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (app.get("status") or {}).get("conditions") or []
            )
        )

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()


async def _until(count: int, probe: Any, started: float, timeout: float = 1800) -> float:
    while probe() < count:
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"only {probe()}/{count} after {timeout}s")
        await asyncio.sleep(0.05)
    return time.perf_counter() - started


async def _wave(
    client: Client, watch: Watch, namespace: str, n: int, image: str, *, create: bool
) -> dict[str, float]:
    started = time.perf_counter()
    if create:
        await _bounded(
            n, lambda i: client.create(APP_SERVICE, _app(f"app-{i:04d}", namespace, image))
        )
    else:
        await _bounded(
            n,
            lambda i: client.patch(
                APP_SERVICE, f"app-{i:04d}", {"spec": {"image": image}}, namespace=namespace
            ),
        )
    operator_s = await _until(n, lambda: watch.reconciled(image), started)
    ready_s = await _until(n, watch.ready, started)
    return {
        "operator_s": round(operator_s, 2),
        "operator_apps_per_s": round(n / operator_s, 1),
        "ready_s": round(ready_s, 2),
        "ready_apps_per_s": round(n / ready_s, 1),
    }


async def _baseline(client: Client, n: int) -> float:
    """Apply the same children directly: what the operator's writes cost without it."""
    namespace = f"bench-baseline-{uuid.uuid4().hex[:6]}"
    await client.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    started = time.perf_counter()

    async def one(i: int) -> None:
        app = _app(f"app-{i:04d}", namespace, "nginx:1.27")
        app["metadata"]["uid"] = str(uuid.uuid4())
        spec = AppServiceSpec.model_validate(app["spec"])
        for res, obj in (
            (DEPLOYMENT, desired.deployment(app, spec)),
            (SERVICE, desired.service(app, spec)),
        ):
            assert obj is not None  # noqa: S101
            obj["metadata"].pop("ownerReferences")  # no owner exists in this namespace
            await client.apply(res, obj)

    await _bounded(n, one)
    elapsed = time.perf_counter() - started
    await client.delete(NAMESPACE, namespace)
    return elapsed


async def measure(kubeconfig: str, n: int) -> dict[str, Any]:
    namespace = f"bench-converge-{n}-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(kubeconfig) as client:
        await client.create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        operator = start_operator(kubeconfig, namespace)
        watch = Watch(client, namespace)
        try:
            await watch.apps.wait_synced()
            await asyncio.sleep(1.0)  # the operator's caches sync
            cpu0, _ = _proc_usage(operator.pid)
            created = await _wave(client, watch, namespace, n, "nginx:1.27", create=True)
            cpu1, rss1 = _proc_usage(operator.pid)
            updated = await _wave(client, watch, namespace, n, "nginx:1.28", create=False)
            cpu2, rss2 = _proc_usage(operator.pid)
        finally:
            watch.stop()
            operator.terminate()
            operator.wait(timeout=30)
        baseline_s = await _baseline(client, n)
        await client.delete(NAMESPACE, namespace)
    return {
        "n": n,
        "create": {**created, "operator_cpu_s": round(cpu1 - cpu0, 2)},
        "update": {**updated, "operator_cpu_s": round(cpu2 - cpu1, 2)},
        "operator_peak_rss_mib": round(max(rss1, rss2) / 1024, 1),
        "baseline_apply_s": round(baseline_s, 2),
        "operator_vs_baseline": round(created["operator_s"] / baseline_s, 2),
    }


def plot(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib  # noqa: PLC0415 - optional, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    sizes = [r["n"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4))
    for wave, style in (("create", "-"), ("update", "--")):
        ax.plot(
            sizes,
            [r[wave]["operator_apps_per_s"] for r in results],
            "o" + style,
            label=f"{wave}: reconciled (operator)",
        )
        ax.plot(
            sizes,
            [r[wave]["ready_apps_per_s"] for r in results],
            "s" + style,
            label=f"{wave}: Ready (whole system)",
        )
    ax.set_xlabel("AppServices created at once (N)")
    ax.set_ylabel("apps/s")
    ax.set_xscale("log")
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("appstack convergence on 2 cores (control plane on the same machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    args = parser.parse_args()
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        result = await measure(args.kubeconfig, n)
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    asyncio.run(main())
