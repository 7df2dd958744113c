"""Reach a Service from the host: a loopback TCP proxy to its ready endpoints.

A Service's ClusterIP exists only inside the nodes (kube-proxy's rules live in each real
node's network namespace), while the host reaches every pod address; a
:class:`ServiceProxy` listens on 127.0.0.1 and sends each new connection to one of the
Service's *ready* endpoints (from its EndpointSlices, round-robin), as kube-proxy would.
:class:`ServiceAccess` keeps such proxies running on a loop of their own for synchronous
callers (tests). :func:`endpoint_targets` is the pure part. Used by the pytest plugin's
``real_node`` handle (``service_address``) and the process nodes.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from lightkube import ApiError, Client
from lightkube.resources.core_v1 import Service
from lightkube.resources.discovery_v1 import EndpointSlice

from appstack_testbed.tcpproxy import TcpProxy


def endpoint_targets(
    service: Mapping[str, Any], slices: Iterable[Mapping[str, Any]], port: int
) -> list[tuple[str, int]]:
    """(ip, port) of every ready endpoint serving the Service's ``port``."""
    ports = [p for p in service["spec"].get("ports") or [] if p["port"] == port]
    if not ports:
        raise ValueError(f"service {service['metadata']['name']!r} has no port {port}")
    name = ports[0].get("name") or ""
    target = ports[0].get("targetPort", port)
    out: list[tuple[str, int]] = []
    for endpoint_slice in slices:
        numbers = [
            p["port"] for p in endpoint_slice.get("ports") or [] if (p.get("name") or "") == name
        ]
        if not numbers and isinstance(target, int):
            numbers = [target]
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            out.extend((ip, numbers[0]) for ip in endpoint.get("addresses") or [] if numbers)
    return sorted(out)


class ServiceProxy(TcpProxy):
    """A forwarder whose target is picked per connection among the ready endpoints."""

    def __init__(self, client: Client, namespace: str, service: str, port: int) -> None:
        super().__init__(None)
        self.client = client
        self.namespace = namespace
        self.service = service
        self.service_port = port
        self._turn = itertools.count()

    def targets(self) -> list[tuple[str, int]]:
        service = self.client.get(Service, self.service, namespace=self.namespace).to_dict()
        slices = [
            s.to_dict()
            for s in self.client.list(
                EndpointSlice,
                namespace=self.namespace,
                labels={"kubernetes.io/service-name": self.service},
            )
        ]
        return endpoint_targets(service, slices, self.service_port)

    async def _target(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[str, int]:
        try:
            targets = await asyncio.to_thread(self.targets)
        except ApiError as error:  # e.g. no such Service: the connection is closed
            raise ValueError(str(error)) from error
        if not targets:
            raise ValueError(f"service {self.namespace}/{self.service} has no ready endpoint")
        return targets[next(self._turn) % len(targets)]


class ServiceAccess:
    """Service proxies on an event loop of their own (a daemon thread), for synchronous code."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[tuple[str, str, int], ServiceProxy] = {}

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, daemon=True).start()
        return self._loop

    def address(self, namespace: str, service: str, port: int) -> tuple[str, int]:
        """A loopback (host, port) whose connections reach the Service's ready endpoints."""
        key = (namespace, service, port)
        if key not in self._proxies:
            proxy = ServiceProxy(self.client, namespace, service, port)
            asyncio.run_coroutine_threadsafe(proxy.start(), self._event_loop()).result(10)
            self._proxies[key] = proxy
        proxy = self._proxies[key]
        return proxy.host, proxy.port

    def stop(self) -> None:
        if self._loop is None:
            return
        for proxy in self._proxies.values():
            asyncio.run_coroutine_threadsafe(proxy.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop = None
        self._proxies.clear()
