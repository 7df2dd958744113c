"""Test program: an SDK operator run with ``sharding=True`` whose controller stamps
ConfigMaps labelled ``tick.example.com/tick=yes`` with the annotation
``tick.example.com/seen`` = their ``data.v``, each reconcile taking at least 20 ms and
printing one JSON line ``{"reconcile": key, "pid", "start", "end", "wrote", "error"}``.
Run as separate processes by test_sharding.py, which scales them and SIGKILLs one."""

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
    writes = (CONFIG_MAP,)
    selector = f"{TICK}=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        start, wrote, error = time.time(), False, ""
        try:
            await asyncio.sleep(0.02)  # a reconcile long enough for an overlap to show
            value = (obj.get("data") or {}).get("v", "")
            if (meta.get("annotations") or {}).get(SEEN) != value:
                patch = {"metadata": {"annotations": {SEEN: value}}}
                await self.client.patch(
                    CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"]
                )
                wrote = True
        except Exception as failed:
            error = type(failed).__name__
            raise
        finally:
            line = {"reconcile": key, "pid": os.getpid(), "start": start, "end": time.time()}
            print(json.dumps({**line, "wrote": wrote, "error": error}), flush=True)
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args()
    options = OperatorOptions(
        kubeconfig=args.kubeconfig,
        namespaces=[args.namespace],
        enable_all_namespaces=True,
        leader_election_namespace=args.namespace,
        leader_election_id="tick",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
        shutdown_timeout=5.0,
        metrics_address=None,
        health_address=None,
        log_format="json",
    )
    return run_operator(
        [Registration(name="tick", reconciler=Tick)], IDENTITY, options, sharding=True
    )


if __name__ == "__main__":
    sys.exit(main())
