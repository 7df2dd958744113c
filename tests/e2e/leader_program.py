"""Test program: a manager with leader election whose controller stamps ConfigMaps labelled
``stamp=yes`` with ``reconciled-by: <identity>`` (once), and hangs forever in the reconcile
of ConfigMaps labelled ``hang=yes`` (after stamping ``hanging: <identity>``). A ConfigMap
labelled ``freeze=<identity>`` makes that replica stamp ``frozen-by``, stop itself with
SIGSTOP in the middle of the reconcile and, once continued, try to stamp ``thawed-by``
(the write the fence must refuse). Run as a separate process by test_leader_election.py,
test_shutdown.py and test_fencing.py, so that the leader can be SIGKILLed or SIGTERMed."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal

from appstack.runtime import logging as rt_logging
from appstack.runtime.builder import Builder
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.leaderelection import LeaderElectionConfig
from appstack.runtime.manager import Manager
from appstack.runtime.resources import CONFIG_MAP


async def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--kubeconfig", "--namespace", "--identity", "--lease"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--shutdown-timeout", type=float, default=20.0)
    args = parser.parse_args()
    rt_logging.configure("json")
    client = await Client.connect(args.kubeconfig, user_agent=f"leader-program ({args.identity})")
    manager = Manager(
        client,
        namespaces=[args.namespace],
        leader_election=LeaderElectionConfig(args.lease, args.namespace, args.identity),
        shutdown_timeout=args.shutdown_timeout,
    )

    class Stamp:
        async def reconcile(self, request: Request) -> Result | None:
            obj = manager.cache.get(CONFIG_MAP, request.key)
            labels = {} if obj is None else obj["metadata"].get("labels", {})
            if labels.get("hang") == "yes":
                await self._annotate(request, "hanging")
                await asyncio.Event().wait()  # a reconcile that never returns
            if labels.get("freeze") == args.identity:
                await self._annotate(request, "frozen-by")
                os.kill(os.getpid(), signal.SIGSTOP)  # frozen mid-flight, until SIGCONT
                await self._annotate(request, "thawed-by")
            if obj is None or labels.get("stamp") != "yes":
                return None
            if "reconciled-by" not in (obj["metadata"].get("annotations") or {}):
                await self._annotate(request, "reconciled-by")
            return None

        async def _annotate(self, request: Request, key: str) -> None:
            await client.patch(
                CONFIG_MAP,
                request.name,
                namespace=request.namespace,
                patch={"metadata": {"annotations": {key: args.identity}}},
            )

    Builder(manager, "stamp").for_(CONFIG_MAP).complete(Stamp())
    manager.install_signal_handlers()
    try:
        await manager.run()
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
