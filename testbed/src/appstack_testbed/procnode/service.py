"""Reach a Service from the host: a loopback TCP proxy to its ready endpoints.

There is no kube-proxy on the test bed, so a ClusterIP leads nowhere; a
:class:`ServiceProxy` listens on 127.0.0.1 and sends each new connection to one of the
Service's *ready* endpoints (from its EndpointSlices, round-robin), as kube-proxy would.
:func:`endpoint_targets` is the pure part. Used by
:class:`~appstack_testbed.procnode.runner.ProcessNodes` (``service_address``).
"""

from __future__ import annotations

import asyncio
import itertools
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
