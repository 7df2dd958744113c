"""Pods for real: start latency on the test bed's real node, beside kwok's, and the operator's
own added latency (issues #23 and #26).

On a local cluster with a real node (its own, ``--cluster``, started if needed), N at a
time (default 50):

* ``pods``        N bare pods (nginx) created at once, on the real node and on the kwok
                  nodes: per pod, creation → ``Ready`` (the pod's Ready condition time);
* ``deployments`` N Deployments of one nginx pod applied directly, on the real node:
                  creation → the pod Ready *and answering HTTP* on its pod IP;
* ``appservices`` N AppServices of size 1 (the operator running under its ServiceAccount,
                  as ``make demo`` runs it): creation → the same. The difference from
                  ``deployments`` is what the operator adds.

Percentiles p50/p95 in seconds, one line per scenario; ``--json OUT`` writes them. Never
asserted in a test: docs/performance.md holds the figures.

Usage: python bench/realpods.py [--cluster NAME] [--count 50] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from appstack.api.namespaces import ENABLED
from appstack.controllers.appservice import APP_SERVICE
from appstack.runtime import DEPLOYMENT, NAMESPACE, POD, Client
from appstack_testbed import demo
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.pytest_plugin import KWOK_PLACEMENT

IMAGE = "nginx:1.27"


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p95": round(q[94] if len(ordered) > 1 else ordered[0], 2),
        "max": round(ordered[-1], 2),
    }


async def _namespace(client: Client, name: str, kwok: bool) -> str:
    meta: dict[str, Any] = {"name": name, "labels": {ENABLED: "true"}}
    if kwok:
        meta["annotations"] = dict(KWOK_PLACEMENT)
    await client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return name


async def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.5)


async def bare_pods(client: Client, count: int, kwok: bool) -> list[float]:
    """Creation → Ready of ``count`` bare pods created at once."""
    ns = await _namespace(client, f"pods-{'kwok' if kwok else 'real'}-{uuid.uuid4().hex[:5]}", kwok)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns},
        "spec": {"containers": [{"name": "web", "image": IMAGE}]},
    }
    await asyncio.gather(
        *(
            client.create(POD, {**pod, "metadata": {**pod["metadata"], "name": f"p{i}"}})
            for i in range(count)
        )
    )

    async def ready() -> bool:
        pods, _ = await client.list(POD, ns)
        return len(pods) == count and all(_ready_at(p) for p in pods)

    await _wait(ready, 600, f"{count} pods Ready")
    pods, _ = await client.list(POD, ns)
    await client.delete(NAMESPACE, ns)
    return [_ready_at(p) - _ts(p["metadata"]["creationTimestamp"]) for p in pods]  # type: ignore[operator]


def _ready_at(pod: dict[str, Any]) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready" and c["status"] == "True":
            return _ts(c["lastTransitionTime"])
    return None


def _deployment(name: str, ns: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": IMAGE}]},
            },
        },
    }


def _appservice(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"size": 1, "image": IMAGE, "ports": [{"port": 80}]},
    }


async def serving(client: Client, kind: str, count: int) -> list[float]:
    """Creation of each object → its pod Ready and answering HTTP on its pod IP."""
    ns = await _namespace(client, f"{kind}-{uuid.uuid4().hex[:5]}", kwok=False)
    make, res = (_deployment, DEPLOYMENT) if kind == "deployments" else (_appservice, APP_SERVICE)
    created: dict[str, float] = {}
    answered: dict[str, float] = {}

    async def create(i: int) -> None:
        created[f"a{i}"] = time.time()
        await client.create(res, make(f"a{i}", ns))

    await asyncio.gather(*(create(i) for i in range(count)))

    async def all_serving() -> bool:
        pods, _ = await client.list(POD, ns)
        for pod in pods:
            owner = pod["metadata"]["name"].rsplit("-", 2)[0]
            ip = (pod.get("status") or {}).get("podIP")
            if owner in answered or not ip or _ready_at(pod) is None:
                continue
            try:
                await asyncio.to_thread(urllib.request.urlopen, f"http://{ip}/", timeout=2)
                answered[owner] = time.time()
            except OSError:
                continue
        return len(answered) == count

    await _wait(all_serving, 900, f"{count} {kind} serving")
    await client.delete(NAMESPACE, ns)
    return [answered[name] - created[name] for name in created]


async def run(cluster: LocalCluster, count: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    async with await Client.connect(str(cluster.kubeconfig)) as client:
        results["pods on the real node"] = percentiles(await bare_pods(client, count, kwok=False))
        results["pods on kwok"] = percentiles(await bare_pods(client, count, kwok=True))
        results["deployments, serving"] = percentiles(await serving(client, "deployments", count))
        results["appservices, serving"] = percentiles(await serving(client, "appservices", count))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", default="bench-real")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cluster = LocalCluster(args.cluster, real_nodes=1)
    cluster.up()
    demo.start_operator(cluster, demo.install(cluster))
    results = asyncio.run(run(cluster, args.count))
    for scenario, figures in results.items():
        print(f"{scenario:<24} " + "  ".join(f"{k} {v}" for k, v in figures.items()))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
