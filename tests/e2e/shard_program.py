"""Test program: an SDK operator run with ``sharding=True`` whose controller stamps
ConfigMaps labelled ``tick.example.com/tick=yes`` with the annotation
``tick.example.com/seen`` = their ``data.v``, each reconcile taking at least 20 ms and
printing one JSON line ``{"reconcile": key, "pid", "start", "end", "wrote", "error",
"sent"}`` (``sent``: when its write was asked for, or null).
With ``--stamp-child`` every reconcile instead writes the ConfigMap ``<name>-seen`` (so the
audit log tells a reconcile's writes from the label patches on the key itself), and
``--lease-kubeconfig`` gives the Lease calls a connection of their own (through a latency
proxy, say). Run as separate processes by test_sharding.py, which scales them and SIGKILLs
one, by bench/sharding_faults.py (faults, checked with the audit log), and by
bench/sharding_scale.py (``--delay``, ``--concurrency``, ``--metrics-port``, ``--quiet``,
``--lease-duration``: latency-bound reconciles, a fixed number of workers, the workqueue's
metrics, a Lease that survives a loaded machine)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

from appstack.runtime import CONFIG_MAP, Result
from appstack.sdk import (
    ObjectReconciler,
    OperatorIdentity,
    OperatorOptions,
    Registration,
    run_operator,
)

IDENTITY = OperatorIdentity(project="tick", domain="tick.example.com")
TICK = "tick.example.com/tick"
SEEN = "tick.example.com/seen"


class Tick(ObjectReconciler):
    primary = CONFIG_MAP
    delay = 0.02  # a reconcile long enough for an overlap to show (--delay)
    quiet = False  # --quiet: no line per reconcile
    stamp_child = False  # --stamp-child: every reconcile writes the ConfigMap <name>-seen
    writes = (CONFIG_MAP,)
    selector = f"{TICK}=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        start, wrote, error, sent = time.time(), False, "", None
        try:
            await asyncio.sleep(self.delay)
            value = (obj.get("data") or {}).get("v", "")
            if self.stamp_child:  # a write of the key's own, apart from the label patches
                name, namespace = f"{meta['name']}-seen", meta["namespace"]
                child = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": value}}
                child["metadata"] = {"name": name, "namespace": namespace}
                sent = time.time()
                await self.client.apply(CONFIG_MAP, child)
                wrote = True
            elif (meta.get("annotations") or {}).get(SEEN) != value:
                patch = {"metadata": {"annotations": {SEEN: value}}}
                sent = time.time()
                await self.client.patch(
                    CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"]
                )
                wrote = True
        except Exception as failed:
            error = type(failed).__name__
            raise
        finally:
            if not self.quiet:
                line = {"reconcile": key, "pid": os.getpid(), "start": start, "end": time.time()}
                line.update(wrote=wrote, error=error, sent=sent)
                print(json.dumps(line), flush=True)
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--delay", type=float, default=Tick.delay, help="seconds per reconcile")
    parser.add_argument("--concurrency", type=int, default=OperatorOptions.concurrency)
    parser.add_argument("--metrics-port", type=int, help="plain-HTTP /metrics on 127.0.0.1")
    parser.add_argument("--quiet", action="store_true", help="no line per reconcile")
    parser.add_argument("--stamp-child", action="store_true", help="write <name>-seen")
    parser.add_argument("--lease-kubeconfig", help="the Lease calls' own connection")
    parser.add_argument("--lease-duration", type=float, default=3.0, help="renew: 2/3 of it")
    parser.add_argument(
        "--max-drains",
        type=lambda value: None if value == "auto" else int(value),
        default=OperatorOptions.shard_max_drains,
        help="per look: a number, or auto (the SDK's default)",
    )
    parser.add_argument(
        "--shutdown-timeout", type=float, default=5.0, help="seconds: the hand-back's bound"
    )
    args = parser.parse_args()
    Tick.delay, Tick.quiet, Tick.stamp_child = args.delay, args.quiet, args.stamp_child
    metrics = f"127.0.0.1:{args.metrics_port}" if args.metrics_port else None
    options = OperatorOptions(
        kubeconfig=args.kubeconfig,
        namespaces=[args.namespace],
        enable_all_namespaces=True,
        leader_election_namespace=args.namespace,
        leader_election_kubeconfig=args.lease_kubeconfig,
        leader_election_id="tick",
        lease_duration=args.lease_duration,
        renew_deadline=args.lease_duration * 2 / 3,
        retry_period=0.5,
        shutdown_timeout=args.shutdown_timeout,
        concurrency=args.concurrency,
        shard_max_drains=args.max_drains,
        metrics_address=metrics,
        metrics_auth=False,
        metrics_secure=False,
        health_address=None,
        log_format="json",
    )
    return run_operator(
        [Registration(name="tick", reconciler=Tick)], IDENTITY, options, sharding=True
    )


if __name__ == "__main__":
    sys.exit(main())
