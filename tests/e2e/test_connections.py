"""Connections that cannot hang silently: faults injected by a TCP proxy between the runtime
client and the real API server (appstack_testbed.tcpproxy). Figures: docs/reliability.md."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from appstack.runtime import errors
from appstack.runtime.builder import Builder
from appstack.runtime.client import Client
from appstack.runtime.controller import Request, Result
from appstack.runtime.leaderelection import LeaderElectionConfig
from appstack.runtime.manager import Manager
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    LEASE,
    NAMESPACE,
    POD,
    PVC,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    STATEFUL_SET,
)
from appstack.runtime.transport import POOL_SIZE
from appstack_testbed.tcpproxy import TcpProxy, api_server, proxied_kubeconfig
from appstack_testbed.waiting import eventually


def _cm(name: str, namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


@pytest.mark.serial  # its subject is time (a tight bound): alone, on a quiet machine
async def test_a_connection_stuck_in_its_handshake_fails_after_the_connect_timeout(
    kubeconfig: Path, tmp_path: Path, namespace: str
) -> None:
    loop = asyncio.get_running_loop()
    async with TcpProxy(api_server(kubeconfig)) as proxy:
        proxy.accept_new = False  # accepted, then silence: the TLS handshake never completes
        path = proxied_kubeconfig(kubeconfig, tmp_path / "kubeconfig", proxy)
        async with await Client.connect(str(path), connect_timeout=1.0) as via_proxy:
            for attempt in (
                via_proxy.get(NAMESPACE, namespace),
                anext(via_proxy.watch(CONFIG_MAP, namespace, resource_version="1")),
            ):
                started = loop.time()
                with pytest.raises(errors.TransportError):
                    await asyncio.wait_for(attempt, 10)
                failed_after = loop.time() - started
                print(f"stuck handshake: failed after {failed_after:.2f} s")
                assert failed_after < 3


@pytest.mark.serial  # its subject is time (a tight bound): alone, on a quiet machine
async def test_long_lived_watches_do_not_starve_requests_and_use_tcp_keepalive(
    kubeconfig: Path, tmp_path: Path, client: Client, namespace: str
) -> None:
    _, resource_version = await client.list(CONFIG_MAP, namespace)
    watches = POOL_SIZE + 8  # e.g. 9 kinds x 8 namespaces = 72
    async with TcpProxy(api_server(kubeconfig)) as proxy:
        path = proxied_kubeconfig(kubeconfig, tmp_path / "kubeconfig", proxy)
        async with await Client.connect(str(path)) as via_proxy:
            streams = [
                via_proxy.watch(CONFIG_MAP, namespace, resource_version=resource_version)
                for _ in range(watches)
            ]
            tasks = [asyncio.ensure_future(anext(stream)) for stream in streams]
            try:
                await eventually(
                    lambda: proxy.accepted >= watches, timeout=30, what="every watch connected"
                )
                loop = asyncio.get_running_loop()
                started = loop.time()
                await asyncio.wait_for(via_proxy.get(NAMESPACE, namespace), 10)
                await asyncio.wait_for(via_proxy.create(CONFIG_MAP, _cm("written", namespace)), 10)
                took = loop.time() - started
                keepalive = _keepalive_ports()
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
    print(f"{watches} watches open: a GET and a create took {took:.2f} s")
    assert took < 5
    assert set(proxy.peer_ports) <= keepalive  # every client socket has its keepalive timer


@pytest.mark.serial  # its subject is time (a tight bound): alone, on a quiet machine
async def test_a_manager_with_80_informers_still_syncs_reconciles_and_renews_its_lease(
    client: Client, namespace: str
) -> None:
    """8 kinds in 10 namespaces (as ``appstack run`` with 10 ``--namespace`` flags)."""
    namespaces = [namespace] + [f"{namespace}-{i}" for i in range(9)]  # may not exist: empty
    manager = Manager(
        client,
        namespaces=namespaces,
        leader_election=LeaderElectionConfig(
            "pools", namespace, "solo", lease_duration=4, renew_deadline=3, retry_period=0.5
        ),
    )
    written: list[str] = []

    class Writer:
        async def reconcile(self, request: Request) -> Result | None:
            if request.name == "source":
                await client.apply(CONFIG_MAP, _cm("copy", request.namespace or ""))
                written.append(request.name)
            return None

    builder = Builder(manager, "writer").for_(CONFIG_MAP)
    for kind in (SECRET, SERVICE, POD, SERVICE_ACCOUNT, PVC, DEPLOYMENT, STATEFUL_SET):
        builder.watches(kind, lambda _obj: [])
    builder.complete(Writer())
    task = asyncio.create_task(manager.run())
    try:
        await asyncio.wait_for(manager.cache.wait_synced(), 30)
        assert sum(len(group) for group in manager.cache._informers.values()) == 80
        elector = manager.elector
        assert elector is not None
        await eventually(lambda: elector.is_leader, timeout=30, what="leadership")
        renewed = (await client.get(LEASE, "pools", namespace))["spec"]["renewTime"]
        await client.create(CONFIG_MAP, _cm("source", namespace))
        await eventually(lambda: written == ["source"], timeout=10, what="the reconcile")
        await eventually(
            lambda: (elector._lease or {}).get("spec", {}).get("renewTime") != renewed,
            timeout=10,
            what="a Lease renewal written after the reconcile",
        )
        assert not task.done()
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


def _keepalive_ports() -> set[int]:
    """Local ports of TCP sockets with a keepalive timer running (Linux /proc/net/tcp)."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        pytest.skip("needs Linux /proc/net/tcp")
    ports = set()
    for line in table.read_text().splitlines()[1:]:
        fields = line.split()
        timer = fields[5].split(":")[0]  # tr: 0 none, 1 retransmit, 2 keepalive
        if fields[3] == "01" and timer == "02":  # ESTABLISHED
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


async def test_kubeconfig_proxy_url_is_honoured_and_unsupported_proxies_refused(
    kubeconfig: Path, tmp_path: Path
) -> None:
    async with TcpProxy(None, connect=True) as proxy:
        path = proxied_kubeconfig(kubeconfig, tmp_path / "kubeconfig", proxy)
        async with await Client.connect(str(path)) as via_proxy:
            assert (await via_proxy.get(NAMESPACE, "default"))["metadata"]["name"] == "default"
        assert proxy.accepted >= 1

        socks = proxied_kubeconfig(
            kubeconfig, tmp_path / "socks", proxy, **{"proxy-url": "socks5://127.0.0.1:1080"}
        )
        with pytest.raises(ValueError, match=r"proxy-url 'socks5://127\.0\.0\.1:1080'"):
            await Client.connect(str(socks))


async def test_kubeconfig_tls_server_name_is_honoured(kubeconfig: Path, tmp_path: Path) -> None:
    # 127.0.0.2 is not in the API server's certificate; "localhost" is.
    async with TcpProxy(api_server(kubeconfig), host="127.0.0.2") as proxy:
        plain = proxied_kubeconfig(kubeconfig, tmp_path / "plain", proxy)
        named = proxied_kubeconfig(
            kubeconfig, tmp_path / "named", proxy, **{"tls-server-name": "localhost"}
        )
        async with await Client.connect(str(plain)) as mismatched:
            with pytest.raises(errors.TransportError, match="certificate"):
                await mismatched.get(NAMESPACE, "default")
        async with await Client.connect(str(named)) as matched:
            assert (await matched.get(NAMESPACE, "default"))["metadata"]["name"] == "default"
