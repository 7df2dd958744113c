"""AppStack benchmark: N copies of examples/dataservice.yaml (12 members each: a managed
MySQL and 11 components in 8 dependency waves) created at once in one namespace.

Reports the time until every stack is Ready (stacks/s and members/s), the operator's CPU
seconds and peak RSS (it runs as its own process, read from /proc).

Usage: python bench/stacks.py --kubeconfig PATH [--stacks 100] [--json OUT]
       [--operator-args="--concurrency=16"]   (default: appstack run with its defaults)
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from appstack.api.namespaces import ENABLED
from appstack.controllers.appstack import APP_STACK
from appstack.runtime import CONFIG_MAP, NAMESPACE, SECRET, Client, Informer

sys.path.insert(0, str(Path(__file__).parent))
from converge import _bounded, _proc_usage, start_operator  # shared with the AppService benchmark
from peerbench.operators import free_port
from peerbench.waves import delete_namespace

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dataservice.yaml"


def _ready(stack: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (stack.get("status") or {}).get("conditions") or []
    )


def _uuc_token(namespace: str) -> dict[str, Any]:
    """The Secret the example's external ``uuc`` service reads its bearer token from."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "uuc-token", "namespace": namespace},
        "stringData": {"token": "bench-token"},
    }


async def measure(kubeconfig: str, count: int, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """``count`` stacks Ready, with ``appstack run`` (default flags plus ``extra``)."""
    init, template = yaml.safe_load_all(EXAMPLE.read_text())
    for component in template["spec"]["components"]:
        for port in component.get("ports", []):
            port.pop("nodePort", None)  # node ports are cluster-wide
    members = len(template["spec"]["components"]) + len(template["spec"]["middleware"])
    namespace = f"bench-stacks-{uuid.uuid4().hex[:6]}"
    async with await Client.connect(kubeconfig) as client:
        await client.create(
            NAMESPACE,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {ENABLED: "true"}},
            },
        )
        init["metadata"]["namespace"] = namespace
        await client.create(CONFIG_MAP, init)
        await client.create(SECRET, _uuc_token(namespace))  # as the example asks of its user
        operator = start_operator(kubeconfig, namespace, free_port(), list(extra))
        stacks = Informer(client, APP_STACK, namespace=namespace)
        task = asyncio.create_task(stacks.run())
        try:
            await stacks.wait_synced()
            await asyncio.sleep(1.0)  # the operator's caches sync
            cpu0, _ = _proc_usage(operator.pid)
            started = time.perf_counter()

            async def create(i: int) -> None:
                stack = copy.deepcopy(template)
                stack["metadata"] = {"name": f"ds-{i:03d}", "namespace": namespace}
                await client.create(APP_STACK, stack)

            await _bounded(count, create)
            while sum(1 for s in stacks.store.objects() if _ready(s)) < count:
                if time.perf_counter() - started > 1800:
                    raise TimeoutError("stacks did not become Ready within 30 minutes")
                await asyncio.sleep(0.2)
            elapsed = time.perf_counter() - started
            cpu1, rss = _proc_usage(operator.pid)
        finally:
            task.cancel()
            # The stacks carry the operator's teardown finalizer: delete the namespace
            # while it runs, and wait until it is gone.
            deleted = await delete_namespace(client, namespace)
            print(f"[stacks] namespace deleted in {deleted:.0f} s", file=sys.stderr)
            operator.terminate()
            operator.wait(timeout=60)
    return {
        "operator_args": " ".join(extra) or "defaults",
        "stacks": count,
        "members_per_stack": members,
        "ready_s": round(elapsed, 1),
        "stacks_per_s": round(count / elapsed, 2),
        "members_per_s": round(count * members / elapsed, 1),
        "operator_cpu_s": round(cpu1 - cpu0, 1),
        "operator_peak_rss_mib": round(rss / 1024, 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--stacks", type=int, default=100)
    parser.add_argument("--json")
    parser.add_argument("--operator-args", default="", help="appstack run flags beyond defaults")
    args = parser.parse_args()
    result = await measure(args.kubeconfig, args.stacks, tuple(args.operator_args.split()))
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
