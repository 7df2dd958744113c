"""Admission latency of a validating webhook served by the operator, beside a CEL rule doing
the same check, and the operator's memory with its webhook server on and off (issue #49).

Two kinds of one throw-away group: ``Widget``, checked by a Python validating webhook
(``spec.size`` at most 3, refused naming the field), and ``CelWidget``, checked by the same
rule in CEL (``x-kubernetes-validations`` on its spec: ``self.size <= 3``). The operator is
a child process (``serve``: the SDK's :class:`~appstack.sdk.OperatorRunner`, its webhook in
developer mode on 127.0.0.1, the API server on this machine reaching it) acting in one
namespace of its own; this process is the load: ``--clients`` connections (one runtime
``Client`` each) sending server-side dry-run creates (``dryRun=All``: admission runs, nothing
is stored) open-loop at ``--rate`` requests a second in all, every tenth one refused by the
check, for ``--seconds`` after a warm-up of ``--warmup`` seconds. Latency is each request's
round trip through the real API server (this process's clock); p50/p99 per arm:

* *no check*: ``Widget`` with the operator running without its webhook (the floor: what the
  API server costs a dry-run create of this kind);
* *CEL*: ``CelWidget``, same operator;
* *webhook*: ``Widget`` with the operator serving its webhook (plus the operator's own
  mean handling time, from its ``controller_runtime_webhook_latency_seconds``).

The operator's RSS (``/proc``: VmRSS, RssAnon, VmHWM), ``--settle`` seconds after it is
ready, with the webhook server off and on, and on again after the webhook's load. It runs in
this venv's Python (not the image's: bench/idle.py measures that one); what matters here is
the difference between on and off. The load, the API server and the operator share this
machine's CPUs.

    python bench/webhooks.py --kubeconfig "$(appstack cluster kubeconfig --name NAME)" \\
        [--rate 200] [--seconds 20] [--clients 8] [--json F]

The docs' figures (docs/performance.md, "Admission webhooks") are this script's output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from appstack.runtime import NAMESPACE, ApiError, Client, NotFound, Resource, Result, allow, deny
from appstack.runtime.webhook import Verdict
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    Validator,
    WebhookReview,
    crd,
    custom_kind,
)

SUFFIX = os.environ.get("BENCH_WEBHOOKS_SUFFIX") or uuid.uuid4().hex[:6]
GROUP = f"hookbench{SUFFIX}.example.com"
IDENTITY = OperatorIdentity(project=f"hookbench{SUFFIX}", domain=GROUP)
CRD = Resource(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
LIMIT = 3


class WidgetSpec(KubeModel):
    size: int = 1


class CelWidgetSpec(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": f"self.size <= {LIMIT}",
                    "message": f"at most {LIMIT}",
                    "fieldPath": ".size",
                }
            ]
        }
    )

    size: int = 1


class WidgetStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group=GROUP, plural="widgets")
class Widget(CustomObject):
    spec: WidgetSpec
    status: WidgetStatus | None = None


@custom_kind(group=GROUP, plural="celwidgets")
class CelWidget(CustomObject):
    spec: CelWidgetSpec
    status: WidgetStatus | None = None


def check(review: WebhookReview) -> Verdict:
    """The webhook's check: what the CEL rule says."""
    if isinstance(review.object, Widget) and review.object.spec.size > LIMIT:
        return deny(f"at most {LIMIT}", field="spec.size")
    return allow()


class WidgetReconciler(KindReconciler[WidgetSpec]):
    kind = Widget.KIND

    def status(self, obj: KubeObject, problem: Problem | None) -> WidgetStatus:
        return WidgetStatus(seen=True)

    def invalid_status(self, obj: KubeObject, problem: Problem) -> WidgetStatus:
        return WidgetStatus(seen=False)

    async def apply(self, obj: KubeObject, spec: WidgetSpec) -> Result | None:
        return None


def registration(webhook: bool) -> Registration:
    hooks = (Validator(check),) if webhook else ()
    return Registration(name="widgets", reconciler=WidgetReconciler, webhooks=hooks)


# ------------------------------------------------------------------------------ the operator
async def serve(kubeconfig: str, namespace: str, webhook: bool) -> None:
    """The child: the operator until stdin closes; then its webhook's handling time."""
    runner = OperatorRunner(
        [registration(webhook)], IDENTITY, kubeconfig=kubeconfig, namespaces=[namespace]
    )
    async with runner as running:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        exposition = running.manager.metrics.exposition().decode()
    handled = {}
    for what in ("sum", "count"):
        found = re.findall(
            rf"controller_runtime_webhook_latency_seconds_{what}\{{.*\}} (\S+)", exposition
        )
        handled[what] = sum(float(v) for v in found)
    print(json.dumps(handled), flush=True)


class Operator:
    """The ``serve`` child process: started, read in /proc, stopped."""

    def __init__(self, kubeconfig: str, namespace: str, webhook: bool) -> None:
        argv = [sys.executable, __file__, "serve", "--kubeconfig", kubeconfig]
        argv += ["--namespace", namespace] + (["--webhook"] if webhook else [])
        env = {**os.environ, "BENCH_WEBHOOKS_SUFFIX": SUFFIX}
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )

    def ready(self) -> None:
        """Wait for its ``ready`` line (its log lines before it skipped)."""
        for line in self.process.stdout or ():
            if line.strip() == "ready":
                return
        raise RuntimeError(f"the operator did not start (exit {self.process.wait()})")

    def memory(self) -> dict[str, float]:
        """VmRSS, RssAnon, VmHWM in MiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "RssAnon", "VmHWM")}

    def stop(self) -> dict[str, float]:
        """Stop it; its webhook's handling time (seconds: sum, count)."""
        out, _ = self.process.communicate("", timeout=60)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        return dict(json.loads(lines[-1])) if lines else {}


# ------------------------------------------------------------------------------ the load
def _object(kind: Any, namespace: str, index: int) -> dict[str, Any]:
    size = LIMIT + 2 if index % 10 == 9 else 1 + index % LIMIT
    return {
        "apiVersion": kind.KIND.api_version,
        "kind": kind.KIND.kind,
        "metadata": {"name": f"w{index}", "namespace": namespace},
        "spec": {"size": size},
    }


async def load(
    clients: list[Client], kind: Any, namespace: str, args: argparse.Namespace, checked: bool
) -> dict[str, Any]:
    """Open loop: request i sent at start + i/rate, by client i mod len(clients);
    ``wrong`` counts answers that are not what the check (if ``checked``) says."""
    rate, seconds, warmup = args.rate, args.seconds, args.warmup
    path = kind.KIND.resource.path(namespace)
    latencies: list[float] = []
    outcome = {"admitted": 0, "refused": 0, "wrong": 0, "late_sends": 0}
    total = int((warmup + seconds) * rate)
    measured_from = int(warmup * rate)

    async def send(index: int) -> None:
        obj = _object(kind, namespace, index)
        started = time.perf_counter()
        try:
            await clients[index % len(clients)].request(
                "POST", path, params={"dryRun": "All"}, body=obj
            )
            refused = False
        except ApiError as error:
            refused = True
            if "at most 3" not in str(error):
                print(f"[webhooks] unexpected: {error}", file=sys.stderr)
                outcome["wrong"] += 1
        elapsed = time.perf_counter() - started
        if index >= measured_from:
            latencies.append(elapsed)
            should_refuse = obj["spec"]["size"] > LIMIT
            outcome["refused" if refused else "admitted"] += 1
            if refused != (should_refuse and checked):
                outcome["wrong"] += 1

    tasks = []
    start = time.perf_counter()
    for index in range(total):
        delay = start + index / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.01:
            outcome["late_sends"] += 1
        tasks.append(asyncio.create_task(send(index)))
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - start - warmup
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "achieved_rps": round(len(ordered) / wall, 1),
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p90_ms": round(1000 * ordered[int(0.90 * len(ordered))], 2),
        "p99_ms": round(1000 * ordered[int(0.99 * len(ordered))], 2),
        "max_ms": round(1000 * ordered[-1], 2),
        **outcome,
    }


async def _served(client: Client, kind: Any, namespace: str) -> bool:
    try:
        await client.list_page(kind.KIND.resource, namespace, limit=1)
    except ApiError:
        return False
    return True


async def _wait(what: str, condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    namespace = f"hookbench-{SUFFIX}"
    result: dict[str, Any] = {
        "rate": args.rate,
        "seconds": args.seconds,
        "clients": args.clients,
        "cpus": os.cpu_count(),
    }
    async with await Client.connect(args.kubeconfig, field_manager="hookbench") as admin:
        namespace_object = {
            "metadata": {"name": namespace, "labels": {IDENTITY.enabled_label: "true"}}
        }
        await admin.create(NAMESPACE, namespace_object)
        for kind in (Widget, CelWidget):
            await admin.create(CRD, crd(kind.KIND))
        clients = [
            await Client.connect(args.kubeconfig, field_manager="hookbench")
            for _ in range(args.clients)
        ]
        try:
            for kind in (Widget, CelWidget):
                await _wait(kind.KIND.kind, lambda k=kind: _served(admin, k, namespace))
            for webhook in (False, True):
                operator = Operator(args.kubeconfig, namespace, webhook)
                try:
                    await asyncio.to_thread(operator.ready)
                    await asyncio.sleep(args.settle)
                    label = "webhook_on" if webhook else "webhook_off"
                    result[f"rss_{label}_idle"] = operator.memory()
                    arms = (
                        [("webhook", Widget)] if webhook else [("none", Widget), ("cel", CelWidget)]
                    )
                    for arm, kind in arms:
                        print(f"[webhooks] {arm} at {args.rate}/s", file=sys.stderr)
                        result[arm] = await load(clients, kind, namespace, args, arm != "none")
                        print(f"[webhooks] {arm}: {result[arm]}", file=sys.stderr)
                    result[f"rss_{label}_after_load"] = operator.memory()
                finally:
                    handled = await asyncio.to_thread(operator.stop)
                if webhook and handled.get("count"):
                    mean = 1000 * handled["sum"] / handled["count"]
                    result["webhook"]["operator_mean_handling_ms"] = round(mean, 3)
        finally:
            for client in clients:
                await client.close()
            for kind in (Widget, CelWidget):
                with contextlib.suppress(NotFound):
                    await admin.delete(CRD, kind.KIND.crd_name)
            await admin.delete(NAMESPACE, namespace)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--namespace", help="(serve) the namespace the operator acts in")
    parser.add_argument("--webhook", action="store_true", help="(serve) serve the webhook")
    args = parser.parse_args()
    if args.mode == "serve":
        asyncio.run(serve(args.kubeconfig, args.namespace, args.webhook))
        return
    result = asyncio.run(bench(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
