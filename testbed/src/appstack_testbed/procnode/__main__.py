"""``python -m appstack_testbed.procnode``: run one process node's agent until SIGTERM.

Started detached by :mod:`appstack_testbed.procnode.runner`; logs go to stdout (the
runner's log file).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from lightkube import AsyncClient, KubeConfig

from appstack_testbed.procnode.agent import NodeAgent


async def _main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    client = AsyncClient(
        config=KubeConfig.from_file(args.kubeconfig), field_manager="appstack-procnode"
    )
    try:
        await NodeAgent(client, args.cluster, args.index, Path(args.state)).run(stop)
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--cluster", required=True, help="cluster name (picks the pod IP range)")
    parser.add_argument("--index", type=int, default=0, help="node N: appstack-proc-N")
    parser.add_argument("--state", required=True, help="directory for pods' files")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    asyncio.run(_main(args))


if __name__ == "__main__":
    main()
