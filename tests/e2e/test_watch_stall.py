"""A watch whose connection goes half-open (the peer silent, TCP still up) is abandoned and
reopened, and the change made meanwhile is seen: the informer's stall detection at its
default, 1.5 times the API server's 60 s bookmark interval (the figure docs/reliability.md
quotes). A fault injected by a TCP proxy between the runtime client and the real API server
(appstack_testbed.tcpproxy); the other connection faults are tests/e2e/test_connections.py.

On the default Kubernetes only (the Makefile's ``VERSION_INDEPENDENT``): its subject is the
client's read timeout and resume, and the bookmark interval it rests on is the same on every
supported version; resuming a watch from a resourceVersion runs on both (test_informer.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from appstack.runtime.client import BOOKMARK_INTERVAL, Client
from appstack.runtime.informer import Informer
from appstack.runtime.resources import CONFIG_MAP
from appstack_testbed.tcpproxy import TcpProxy, api_server, proxied_kubeconfig
from appstack_testbed.waiting import eventually


@contextlib.asynccontextmanager
async def _running(informer: Informer) -> AsyncIterator[None]:
    task = asyncio.ensure_future(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 30)
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_half_open_watch_is_abandoned_and_the_change_made_meanwhile_seen_in_time(
    kubeconfig: Path, tmp_path: Path, client: Client, namespace: str
) -> None:
    loop = asyncio.get_running_loop()
    async with TcpProxy(api_server(kubeconfig)) as proxy:
        path = proxied_kubeconfig(kubeconfig, tmp_path / "kubeconfig", proxy)
        async with await Client.connect(str(path)) as via_proxy:
            informer = Informer(via_proxy, CONFIG_MAP, namespace=namespace)
            answered = via_proxy.metrics.rest_requests.labels(
                "200", "GET", f"127.0.0.1:{proxy.port}"
            )
            async with _running(informer):
                # Once the watch is answered (the LIST was the first GET), its peer goes
                # silent; TCP stays up.
                await eventually(lambda: answered._value.get() >= 2, timeout=10, what="the watch")
                proxy.black_hole()
                cut = loop.time()
                made = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "made-meanwhile", "namespace": namespace},
                }
                await client.create(CONFIG_MAP, made)
                await eventually(
                    lambda: f"{namespace}/made-meanwhile" in informer.store,
                    timeout=2 * BOOKMARK_INTERVAL,
                    what="the informer to notice the dead watch and see the change",
                )
                detected = loop.time() - cut
    print(f"half-open watch: change seen {detected:.1f} s after the cut")
    assert detected <= 2 * BOOKMARK_INTERVAL
