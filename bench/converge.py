"""End-to-end operator benchmark: N AppServices created at once, then an image update wave.

For each N, in a fresh namespace, with the operator (``appstack run``) as a separate
process watching that namespace:

* ``operator``  time until every AppService has its Deployment and Service and a status
                with ``observedGeneration == generation`` — the operator's own work;
* ``ready``     time until every AppService is ``Ready=True`` — the whole system
                (controller-manager, scheduler and kwok included);
* ``update``    the same two times after changing the image of all N;
* ``floor``     the time this process needs to create the same N Deployments and N
                Services itself (64 in flight), and to change their N images: the
                operator's ``operator`` time divided by this is its overhead over the bare
                API writes it cannot avoid;
* operator CPU seconds (utime+stime) and peak RSS (VmHWM), read from /proc, and the
  API requests it issued per app, by verb (its ``rest_client_requests_total`` on /metrics).

The operator runs with default flags unless ``--operator-arg`` adds some
(e.g. ``--operator-arg=--concurrency=16``).

Usage: python bench/converge.py --kubeconfig PATH [--sizes 100,300,1000] [--json OUT]
       [--plot docs/converge.png] [--operator-arg ARG ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any

from appstack.api.appservice import AppServiceSpec
from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE, desired
from appstack.runtime import DEPLOYMENT, NAMESPACE, SERVICE, Client, Informer, errors

DEV_IMPORTS = "--dev-imports" in sys.argv
CONCURRENCY = 64  # in flight, for the AppServices created and for the floor's writes
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_REQUESTS = re.compile(r"^rest_client_requests_total\{([^}]*)\} ([0-9.e+]+)$", re.M)


def requests_by_verb(port: int) -> dict[str, float]:
    """The operator's ``rest_client_requests_total``, summed by HTTP method."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    totals: dict[str, float] = {}
    for labels, value in _REQUESTS.findall(text):
        method = re.search(r'method="([A-Z]+)"', labels)
        if method:
            totals[method.group(1)] = totals.get(method.group(1), 0.0) + float(value)
    return totals


def _per_app(before: dict[str, float], after: dict[str, float], n: int) -> dict[str, float]:
    per = {v: round((after.get(v, 0) - before.get(v, 0)) / n, 2) for v in sorted(after)}
    per = {v: c for v, c in per.items() if c}
    return {**per, "total": round(sum(per.values()), 2)}


def start_operator(
    kubeconfig: str, namespace: str, port: int, extra: list[str]
) -> subprocess.Popen[bytes]:
    """``appstack run`` as its own process (so its CPU and RSS can be read from /proc), with
    the modules the operator image has: the development venv also holds ``rich`` (for
    import-linter and twine), which structlog would import (+13 MiB); the image's lock file
    has no rich. ``--dev-imports`` keeps it importable."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            ("" if DEV_IMPORTS else "import sys; sys.modules['rich'] = None; ")
            + "from appstack.cli import main; main()",
            "run",
            f"--kubeconfig={kubeconfig}",
            f"--namespace={namespace}",
            f"--metrics-bind-address=127.0.0.1:{port}",
            "--no-metrics-auth",
            "--no-metrics-secure",  # read over plain HTTP, as before /metrics was HTTPS
            "--health-probe-bind-address=0",
            "--log-level=warning",
            *extra,
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


async def _create(client: Client, res: Any, obj: dict[str, Any]) -> None:
    """Create; an overloaded API server's 504 is retried (the write may have landed)."""
    for _ in range(10):
        try:
            await client.create(res, obj)
        except errors.AlreadyExists:
            return
        except errors.ServerTimeout:
            continue
        return
    raise TimeoutError(f"could not create {obj['metadata']['name']}")


async def _floor(client: Client, n: int) -> tuple[float, float]:
    """Create the same children directly, then change their images: the writes the
    operator cannot avoid, without it (seconds for each wave)."""
    namespace = f"bench-floor-{uuid.uuid4().hex[:6]}"
    await client.create(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
        },
    )

    async def create(i: int) -> None:
        app = _app(f"app-{i:04d}", namespace, "nginx:1.27")
        app["metadata"]["uid"] = str(uuid.uuid4())
        spec = AppServiceSpec.model_validate(app["spec"])
        for res, obj in (
            (DEPLOYMENT, desired.deployment(app, spec)),
            (SERVICE, desired.service(app, spec)),
        ):
            assert obj is not None  # noqa: S101
            obj["metadata"].pop("ownerReferences")  # no owner exists in this namespace
            await _create(client, res, obj)

    async def update(i: int) -> None:
        image = {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": desired.COMPONENT, "image": "nginx:1.28"}]}
                }
            }
        }
        await client.patch(
            DEPLOYMENT, f"app-{i:04d}", image, namespace=namespace, patch_type="strategic"
        )

    started = time.perf_counter()
    await _bounded(n, create)
    created = time.perf_counter() - started
    started = time.perf_counter()
    await _bounded(n, update)
    updated = time.perf_counter() - started
    await client.delete(NAMESPACE, namespace)
    return created, updated


async def _metrics_up(port: int) -> dict[str, float]:
    for _ in range(600):
        try:
            return await asyncio.to_thread(requests_by_verb, port)
        except OSError:
            await asyncio.sleep(0.1)
    raise TimeoutError("the operator's /metrics did not answer")


def _figures(
    wave: dict[str, float], cpu: float, requests: dict[str, float], floor: float, n: int
) -> dict[str, Any]:
    return {
        **wave,
        "operator_cpu_s": round(cpu, 2),
        "cpu_ms_per_app": round(cpu * 1000 / n, 1),
        "requests_per_app": requests,
        "floor_s": round(floor, 2),
        "vs_floor": round(wave["operator_s"] / floor, 2),
    }


async def measure(kubeconfig: str, n: int, extra: list[str]) -> dict[str, Any]:
    namespace = f"bench-converge-{n}-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(kubeconfig) as client:
        floor_create, floor_update = await _floor(client, n)
        await client.create(
            NAMESPACE,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
            },
        )
        port = _free_port()
        operator = start_operator(kubeconfig, namespace, port, extra)
        watch = Watch(client, namespace)
        try:
            await watch.apps.wait_synced()
            await _metrics_up(port)
            await asyncio.sleep(1.0)  # the operator's caches sync
            cpu0, rss0 = _proc_usage(operator.pid)
            req0 = requests_by_verb(port)
            created = await _wave(client, watch, namespace, n, "nginx:1.27", create=True)
            cpu1, rss1 = _proc_usage(operator.pid)
            req1 = requests_by_verb(port)
            updated = await _wave(client, watch, namespace, n, "nginx:1.28", create=False)
            cpu2, rss2 = _proc_usage(operator.pid)
            req2 = requests_by_verb(port)
        finally:
            watch.stop()
            operator.terminate()
            operator.wait(timeout=30)
        await client.delete(NAMESPACE, namespace)
    return {
        "n": n,
        "operator_args": extra,
        "create": _figures(created, cpu1 - cpu0, _per_app(req0, req1, n), floor_create, n),
        "update": _figures(updated, cpu2 - cpu1, _per_app(req1, req2, n), floor_update, n),
        "operator_idle_rss_mib": round(rss0 / 1024, 1),
        "operator_peak_rss_mib": round(max(rss1, rss2) / 1024, 1),
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
    parser.add_argument("--operator-arg", action="append", default=[])
    parser.add_argument("--dev-imports", action="store_true", help="let the operator import rich")
    args = parser.parse_args()
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        result = await measure(args.kubeconfig, n, args.operator_arg)
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    asyncio.run(main())
