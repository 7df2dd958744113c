"""The client's I/O: sends an :class:`~appstack.runtime.apirequest.ApiRequest` over aiohttp.

Configuration and authentication come from ``kubernetes_asyncio`` — kubeconfig (client
certificates, tokens, exec plugins, contexts) or in-cluster service-account config — and so
does the session: its configured aiohttp session (TLS, proxy, connection pool). We do not use
its generated models or serializer (see :mod:`appstack.runtime.client`).

This is the only module that imports ``aiohttp`` for client requests or ``kubernetes_asyncio``
at all (an import-linter contract); everything it does not have to do lives in the pure
:mod:`appstack.runtime.apirequest`. Failures without an HTTP answer are raised as
:class:`~appstack.runtime.errors.TransportError`; a watch silent for longer than its read
timeout as :class:`~appstack.runtime.errors.WatchStalled`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Callable
from urllib.parse import urlsplit

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from appstack.runtime import credentials
from appstack.runtime.apirequest import ApiRequest, Response, Timeouts
from appstack.runtime.errors import TransportError, WatchStalled

Configuration = k8s_client.Configuration


async def load_configuration(
    kubeconfig: str | None = None, context: str | None = None
) -> Configuration:
    """Kubeconfig (``kubeconfig`` or ``$KUBECONFIG`` or ~/.kube/config) or in-cluster config."""
    configuration = k8s_client.Configuration()
    in_cluster = "KUBERNETES_SERVICE_HOST" in os.environ and not (
        kubeconfig or os.environ.get("KUBECONFIG")
    )
    source: credentials.Reload | None
    if in_cluster:  # the projected token is re-read by credentials (also after a 401)
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration, try_refresh_token=False
        )
        source = credentials.token_file(credentials.IN_CLUSTER_TOKEN)
    else:
        loader = await k8s_config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
        source = credentials.from_kubeconfig(loader)
    credentials.Credentials.install(configuration, source)
    configuration.connection_pool_maxsize = 64
    return configuration


class AiohttpTransport:
    """Sends requests with the aiohttp session ``kubernetes_asyncio`` configured (TLS, proxy,
    pool), authenticating each one: rotated tokens are re-read (:attr:`credentials`)."""

    def __init__(self, configuration: Configuration, *, user_agent: str = "appstack") -> None:
        self._api = k8s_client.ApiClient(configuration=configuration)
        self._api.user_agent = user_agent
        self.base_url = str(configuration.host or "").rstrip("/")
        self.host = urlsplit(self.base_url).netloc
        self.credentials = credentials.Credentials.of(configuration)

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, *, user_agent: str
    ) -> AiohttpTransport:
        return cls(await load_configuration(kubeconfig, context), user_agent=user_agent)

    async def close(self) -> None:
        await self._api.close()

    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        headers = {**request.headers, "User-Agent": self._api.user_agent}
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        session: aiohttp.ClientSession = self._api.rest_client.pool_manager
        # The guard runs after the last await before the send; what it returns bounds the
        # wait for a pooled connection, so a refused-later write cannot leave afterwards.
        connect = guard() if guard is not None else None
        timeout = aiohttp.ClientTimeout(
            total=timeouts.total,
            connect=connect,
            sock_connect=timeouts.connect,
            sock_read=timeouts.read,
        )
        what = f"{request.method} {request.path}"
        try:
            response = await session.request(
                request.method,
                self.base_url + request.path,
                params=request.params,
                data=request.body,
                headers=headers,
                timeout=timeout,
            )
            if not request.stream or response.status != 200:
                async with response:
                    body = await response.read()
                return Response(response.status, dict(response.headers), body)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            if guard is not None:
                guard()  # no connection before leadership may have ended: say so
            raise TransportError(f"{what}: {error or type(error).__name__}") from error
        return Response(200, dict(response.headers), lines=_lines(response, timeouts.read))


async def _lines(
    response: aiohttp.ClientResponse, read_timeout: float | None
) -> AsyncGenerator[bytes, None]:
    """The non-blank lines of a streamed answer; the response is released when done."""
    buffer = b""
    try:
        async for chunk in response.content.iter_any():
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line
    except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as error:
        raise WatchStalled(f"no watch event for {read_timeout or 0:.0f}s") from error
    except aiohttp.ClientError as error:
        raise TransportError(str(error)) from error
    finally:
        response.release()
