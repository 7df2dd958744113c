"""The client's I/O: sends an :class:`~appstack.runtime.apirequest.ApiRequest` over aiohttp.

Configuration and authentication come from :mod:`.kubeconfig` — kubeconfig (client
certificates, tokens, token files, exec plugins, contexts, ``proxy-url``,
``tls-server-name``) or in-cluster service-account config — and, for the users it does not
read (``auth-provider``, basic auth), from ``kubernetes_asyncio``, imported only then; the
bearer token is asked for on every request, so a rotated or expired one is refreshed. We
do not use kubernetes_asyncio's generated models, serializer or HTTP session (see
:mod:`appstack.runtime.client`).

Connections, so that none can hang silently:

* Two pools: watches get their own connections (unbounded: one per watch, held for minutes)
  and never take one from the pool requests and Lease renewals use (64), so 72 watches
  cannot starve a reconcile.
* Every connection has a connect timeout (TCP and TLS handshake, default 10 s) and TCP
  keepalive (probes after 30 s idle, every 10 s, 3 lost = dead) for a peer that vanished;
  a watch that receives nothing for its read timeout raises
  :class:`~appstack.runtime.errors.WatchStalled` (a peer that stopped sending).
* ``proxy-url`` (http/https) and ``tls-server-name`` are honoured, and so are
  ``HTTPS_PROXY``/``NO_PROXY`` from the environment; other proxy schemes (``socks5://``)
  are refused with a clear error when connecting.

This is the only module that imports ``aiohttp`` for client requests or ``kubernetes_asyncio``
at all (an import-linter contract). Failures without an HTTP answer are raised as
:class:`~appstack.runtime.errors.TransportError`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from appstack.runtime import certdata, credentials
from appstack.runtime import kubeconfig as kubeconfig_loader
from appstack.runtime.apirequest import ApiRequest, Response, Timeouts
from appstack.runtime.errors import TransportError, WatchStalled
from appstack.runtime.kubeconfig import LegacyAuthMissing
from appstack.runtime.program import program_name

POOL_SIZE = 64
KEEPALIVE = (30, 10, 3)  # idle seconds before probing, seconds between probes, probes lost


async def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """Kubeconfig (``kubeconfig`` or ``$KUBECONFIG`` or ~/.kube/config) or in-cluster config,
    read by :mod:`.kubeconfig`; users it does not handle by ``kubernetes_asyncio``."""
    source: credentials.Reload | None
    if kubeconfig_loader.in_cluster_requested(kubeconfig, context):
        configuration, source = kubeconfig_loader.in_cluster()
    else:
        loaded = await kubeconfig_loader.load(kubeconfig, context)
        if loaded is None:
            return await _kubernetes_asyncio_configuration(kubeconfig, context)
        configuration, source = loaded
    credentials.Credentials.install(configuration, source)
    return configuration


async def _kubernetes_asyncio_configuration(kubeconfig: str | None, context: str | None) -> Any:
    """``auth-provider`` and basic-auth users: loaded by kubernetes_asyncio (≈ 38 MB, so
    an extra, ``appstack[legacy-auth]``, imported only for them)."""
    try:
        from kubernetes_asyncio import client as k8s_client  # noqa: PLC0415
        from kubernetes_asyncio import config as k8s_config  # noqa: PLC0415
    except ImportError as error:
        raise LegacyAuthMissing(
            "this kubeconfig's user authenticates with an auth-provider or basic auth, "
            "which needs the legacy-auth extra (appstack[legacy-auth]: "
            "pip install 'kubernetes_asyncio>=31' into this environment) "
            "(or use a token, a client certificate or an exec plugin)"
        ) from error

    configuration = k8s_client.Configuration()
    loader = await k8s_config.load_kube_config(
        config_file=kubeconfig, context=context, client_configuration=configuration
    )
    credentials.Credentials.install(configuration, credentials.from_kubeconfig(loader))
    return configuration


class AiohttpTransport:
    """Sends requests over two aiohttp pools (requests, watches) configured from a
    kubeconfig: TLS, client certificates, bearer tokens, proxy, TLS server name. The token
    is asked for on every request, so a rotated one is used (:attr:`credentials`).
    ``user_agent`` goes with every request (default: the program's name)."""

    def __init__(
        self,
        configuration: Any,
        *,
        user_agent: str | None = None,
        connect_timeout: float = 10.0,
        pool_size: int = POOL_SIZE,
    ) -> None:
        self.configuration = configuration
        self.user_agent = user_agent or program_name()
        self.connect_timeout = connect_timeout
        self.base_url = str(configuration.host or "").rstrip("/")
        self.host = urlsplit(self.base_url).netloc
        self.credentials = credentials.Credentials.of(configuration)
        self.proxy, self.proxy_auth = _proxy(configuration.proxy), None
        if self.proxy is None:
            self.proxy, self.proxy_auth = _env_proxy(self.base_url)
        self.server_hostname: str | None = configuration.tls_server_name or None
        context = _ssl_context(configuration)
        self.requests = _session(context, limit=pool_size, fenced=True)
        self.watches = _session(context, limit=0)

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, **options: Any
    ) -> AiohttpTransport:
        return cls(await load_configuration(kubeconfig, context), **options)

    async def close(self) -> None:
        await self.requests.close()
        await self.watches.close()

    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        headers = {**request.headers, "User-Agent": self.user_agent}
        for auth in (await self.configuration.auth_settings()).values():
            headers[auth["key"]] = auth["value"]
        session = self.watches if request.stream else self.requests
        # The guard runs after the last await before the send; what it returns bounds the
        # wait for a pooled connection, so a refused-later write cannot leave afterwards.
        connect = guard() if guard is not None else None
        timeout = aiohttp.ClientTimeout(
            total=timeouts.total,
            connect=connect,
            sock_connect=self.connect_timeout,
            sock_read=timeouts.read,
        )
        what = f"{request.method} {request.path}"
        try:
            body = request.body
            response = await session.request(
                request.method,
                self.base_url + request.path,
                params=request.params,
                data=body if guard is None or body is None else _FencedBody(body, guard),
                headers=headers,
                timeout=timeout,
                proxy=self.proxy,
                proxy_auth=self.proxy_auth,
                server_hostname=self.server_hostname,
                trace_request_ctx={"guard": guard} if guard is not None else None,
            )
            if not request.stream or response.status != 200:
                async with response:
                    body = await response.read()
                return Response(
                    response.status, dict(response.headers), body, warnings=_warnings(response)
                )
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            if guard is not None:
                guard()  # no connection before leadership may have ended: say so
            raise TransportError(
                f"{what}: {error or type(error).__name__}", self.base_url
            ) from error
        return Response(
            200,
            dict(response.headers),
            lines=_lines(response, timeouts.read),
            warnings=_warnings(response),
        )


def _warnings(response: aiohttp.ClientResponse) -> tuple[str, ...]:
    """Every ``Warning:`` header (the API server sends one per warning)."""
    return tuple(response.headers.getall("Warning", ()))


def _proxy(url: str | None) -> str | None:
    if not url:
        return None
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise ValueError(
            f"kubeconfig proxy-url {url!r}: only http:// and https:// proxies are supported"
        )
    return url


def _env_proxy(base_url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """``HTTPS_PROXY``/``NO_PROXY`` (as in client-go) for the API server, read once: aiohttp's
    ``trust_env`` would look them and ``~/.netrc`` up again, in threads, for every request."""
    try:
        proxy, auth = get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return None, None
    return str(proxy), auth


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cafile=configuration.ssl_ca_cert, cadata=getattr(configuration, "ca_data", None)
    )
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    elif getattr(configuration, "cert_data", None):
        _load_cert_data(context, configuration.cert_data, configuration.key_data)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def _load_cert_data(context: ssl.SSLContext, cert: bytes, key: bytes | None) -> None:
    """Client certificate and key given as data (no file: see :mod:`certdata`)."""
    certdata.load_cert_chain(context, cert, key)


def _session(context: ssl.SSLContext, *, limit: int, fenced: bool = False) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=limit, ssl=context, socket_factory=_keepalive_socket)
    traces = [_fence_trace()] if fenced else []
    # HTTPS_PROXY/NO_PROXY from the environment apply (as in client-go): _env_proxy.
    return aiohttp.ClientSession(connector=connector, trace_configs=traces)


def _fence_trace() -> aiohttp.TraceConfig:
    """Ask a write's fence once more when its connection is in hand, right before the request
    is written: awaiting a connection (or a freeze meanwhile) may have outlasted leadership."""

    async def fence_again(_session: Any, context: Any, _params: Any) -> None:
        guard = (context.trace_request_ctx or {}).get("guard")
        if guard is not None:
            guard()  # raises NotLeader: the request is never written

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(fence_again)
    trace.on_connection_reuseconn.append(fence_again)
    return trace


class _FencedBody(aiohttp.BytesPayload):
    """A write's body that asks the fence a last time right before its bytes (with the
    buffered request line and headers) go to the socket, with no await in between. Below
    Python 3.12 aiohttp writes the body in a task of its own, a loop turn after the
    connection hook above: a freeze in that turn would otherwise let the write leave after
    leadership may have ended."""

    def __init__(self, value: bytes, guard: Callable[[], float]) -> None:
        super().__init__(value, content_type="application/json")
        self._guard = guard

    async def write_with_length(self, writer: Any, content_length: int | None) -> None:
        self._guard()  # raises NotLeader: nothing of the request is written
        await super().write_with_length(writer, content_length)

    async def write(self, writer: Any) -> None:
        self._guard()
        await super().write(writer)


def _keepalive_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    family, type_, proto = addr_info[:3]
    sock = socket.socket(family=family, type=type_, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):  # Linux; macOS has only the switch above
        idle, interval, count = KEEPALIVE
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, count)
    return sock


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
