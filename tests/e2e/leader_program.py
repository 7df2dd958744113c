"""Test program: a manager with leader election whose controller stamps ConfigMaps labelled
``stamp=yes`` with ``reconciled-by: <identity>`` (once). Run as a separate process by
test_leader_election.py, so that the leader can be SIGKILLed or SIGTERMed."""

from __future__ import annotations

import argparse
import asyncio

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
    args = parser.parse_args()
    rt_logging.configure("json")
    client = await Client.connect(args.kubeconfig)
    manager = Manager(
        client,
        namespaces=[args.namespace],
        leader_election=LeaderElectionConfig(args.lease, args.namespace, args.identity),
    )

    class Stamp:
        async def reconcile(self, request: Request) -> Result | None:
            obj = manager.cache.get(CONFIG_MAP, request.key)
            if obj is None or obj["metadata"].get("labels", {}).get("stamp") != "yes":
                return None
            if "reconciled-by" not in (obj["metadata"].get("annotations") or {}):
                await client.patch(
                    CONFIG_MAP,
                    request.name,
                    namespace=request.namespace,
                    patch={"metadata": {"annotations": {"reconciled-by": args.identity}}},
                )
            return None

    Builder(manager, "stamp").for_(CONFIG_MAP).complete(Stamp())
    manager.install_signal_handlers()
    try:
        await manager.run()
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
