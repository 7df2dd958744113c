"""The async Kubernetes client the runtime and controllers use: plain dicts, fast JSON.

Verbs: get, list (all pages), list_page, watch (a raw event stream), create, update, apply
(server-side apply as the client's ``field_manager``, forced), patch, patch_status, delete.
Bodies are orjson (1.5 CPU-s per 2,000 creates against 2.1-2.7 s for typed clients:
``bench/client_choice.py``). What to send and what answers mean is pure
(:mod:`.apirequest`); the I/O is a :class:`~appstack.runtime.apirequest.Transport`
(aiohttp: :mod:`.transport`; scripted in unit tests); this module adds policy: 429 and 5xx
with ``Retry-After`` are retried a few times, as client-go does.

Every request, watches included, passes through :meth:`Client._send`: counted in
``rest_client_requests_total{code,method,host}``; a write is handed to the transport with
``write_guard`` (set by the manager under leader election), which may refuse it right before
it is sent (Lease calls bypass it: ``fenced=False``); ``credentials`` re-reads a rotated
token after a 401 (retried once if it changed); ``availability`` notes outages.

The API server's warnings (``Warning: 299 - "text"`` headers: a deprecated version's
``deprecationWarning``, an admission webhook's warnings) are counted in
``<prefix>_rest_client_warnings_total{host}``, handed to :attr:`Client.on_warning` once per
distinct text (default: logged at WARNING; the CLI prints ``Warning: text`` as kubectl), and
gathered, every one, for the calls made inside :meth:`Client.warnings`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import structlog

from appstack.runtime import apirequest, errors
from appstack.runtime.apirequest import ApiRequest, Response, Timeouts, Transport
from appstack.runtime.availability import Availability
from appstack.runtime.clock import Clock, RealClock
from appstack.runtime.credentials import Credentials
from appstack.runtime.errors import TransportError, WatchStalled
from appstack.runtime.metrics import Metrics
from appstack.runtime.program import program_name
from appstack.runtime.resources import Obj, Resource

__all__ = ["Client", "TransportError", "WatchStalled"]

# Bookmarks come about every 60 s: a watch silent for 1.5 times that is dead (half-open).
BOOKMARK_INTERVAL = 60.0
STALL_TIMEOUT = 1.5 * BOOKMARK_INTERVAL
_MAX_RETRIES = 5
_MAX_RETRY_WAIT = 10.0
_WARNED_AT_MOST = 1024  # distinct warning texts remembered (then forgotten, and said again)

log = structlog.get_logger(__name__)
_GATHERED: ContextVar[list[str] | None] = ContextVar("client_warnings", default=None)


class Client:
    """The async Kubernetes client: one object per process, shared by every controller.

    Objects are plain dicts; kinds are :class:`~appstack.runtime.resources.Resource`
    descriptors. Create it with ``await Client.connect(kubeconfig)`` and close it (or use
    ``async with``). Errors are the typed ones of :mod:`appstack.runtime.errors`.
    ``field_manager`` names its server-side applies and patches (default: the program's
    name, :func:`~appstack.runtime.program.program_name`); ``metrics`` is where it and
    everything built on it count (default: a new :class:`~appstack.runtime.metrics.Metrics`,
    without a prefix). ``on_warning`` (an attribute) is called with each distinct warning
    text the API server sends (default: logged at WARNING); :meth:`warnings` gathers them.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        metrics: Metrics | None = None,
        field_manager: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.transport = transport
        self.metrics = metrics or Metrics()
        self.field_manager = field_manager or program_name()
        self.clock = clock or RealClock()
        found = getattr(transport, "credentials", None)
        self.credentials = found if isinstance(found, Credentials) else Credentials()
        self.availability = Availability()  # whether the server answers, for the controllers
        #: Called before every write; raises to refuse it, returns the seconds left to send.
        self.write_guard: Callable[[], float] | None = None
        #: Called with each distinct warning text the API server sends (once per text).
        self.on_warning: Callable[[str], None] = _log_warning
        self._warned: set[str] = set()

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        user_agent: str | None = None,
        connect_timeout: float = 10.0,
        **kwargs: Any,
    ) -> Client:
        """A client for a kubeconfig (``$KUBECONFIG``, ~/.kube/config or in-cluster);
        ``connect_timeout`` bounds every new connection (TCP and TLS handshake);
        ``user_agent`` is sent with every request (default: the program's name); the other
        keywords (``field_manager``, ``metrics``, ``clock``) go to the constructor."""
        # aiohttp and kubernetes_asyncio (0.5 s) load only when connecting.
        from appstack.runtime.transport import AiohttpTransport  # noqa: PLC0415

        transport = await AiohttpTransport.connect(
            kubeconfig, context, user_agent=user_agent, connect_timeout=connect_timeout
        )
        return cls(transport, **kwargs)

    async def close(self) -> None:
        """Close the connections."""
        await self.transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @contextmanager
    def warnings(self) -> Iterator[list[str]]:
        """The API server's warning texts for the calls made inside the block (by this task
        and the tasks it starts there), every one in order, repeats included::

            with client.warnings() as said:
                await client.get(OLD_VERSION, "x", "ns")
            assert said == ["example.com/v1alpha1 Widget is deprecated; use v1"]
        """
        gathered: list[str] = []
        token = _GATHERED.set(gathered)
        try:
            yield gathered
        finally:
            _GATHERED.reset(token)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        """One object; :class:`~appstack.runtime.errors.NotFound` if it does not exist."""
        return await self._call(apirequest.get(resource, name, namespace))

    async def list_page(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        limit: int = 500,
        token: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[Obj], str, str | None]:
        """One page: its items, the resourceVersion and the next page's ``continue`` token
        (``field_selector``: e.g. ``metadata.name=NAME``, one object as a list)."""
        request = apirequest.list_page(
            resource,
            namespace,
            label_selector=label_selector,
            limit=limit,
            continue_token=token,
            field_selector=field_selector,
        )
        return apirequest.decode_list_page(await self._call(request))

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[list[Obj], str]:
        """All objects (following ``continue`` tokens) and the list's resourceVersion."""
        items: list[Obj] = []
        token: str | None = None
        while True:
            page, resource_version, token = await self.list_page(
                resource, namespace, label_selector=label_selector, limit=page_size, token=token
            )
            items.extend(page)
            if token is None:
                return items, resource_version

    async def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 290,
        inactivity_timeout: float = STALL_TIMEOUT,
        field_selector: str | None = None,
    ) -> AsyncGenerator[Obj, None]:
        """Watch events (``{"type", "object"}``) from ``resource_version``, with bookmarks
        (of the objects ``field_selector`` selects, if given: ``metadata.name=NAME`` watches
        one object). The server ends the stream after ``timeout_seconds``; nothing (not even
        a bookmark) for ``inactivity_timeout`` raises :class:`WatchStalled`; an ``ERROR``
        event raises its typed error (:class:`~appstack.runtime.errors.Gone` when the
        version expired)."""
        request = apirequest.watch(
            resource,
            namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
            field_selector=field_selector,
        )
        response = await self._send(request, Timeouts(total=None, read=inactivity_timeout))
        if response.lines is None:
            if response.status == 401:
                await self.credentials.reload()  # the informer's next attempt uses it
            raise apirequest.error_for(response.status, response.body, response.headers)
        lines = response.lines
        try:
            async for line in lines:
                event = apirequest.decode_watch_line(line)
                if event is not None:
                    yield event
        finally:
            await lines.aclose()

    async def create(self, resource: Resource, obj: Mapping[str, Any]) -> Obj:
        """Create ``obj`` (in ``metadata.namespace``); AlreadyExists if the name is taken."""
        return await self._call(apirequest.create(resource, obj))

    async def update(self, resource: Resource, obj: Mapping[str, Any]) -> Obj:
        """Replace (PUT); ``metadata.resourceVersion`` makes it optimistic (409 if stale)."""
        return await self._call(apirequest.update(resource, obj))

    async def apply(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        force: bool = True,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Obj:
        """Server-side apply ``obj`` (a full intent: apiVersion, kind, metadata.name...)."""
        return await self._call(
            apirequest.apply(
                resource,
                obj,
                field_manager=field_manager or self.field_manager,
                force=force,
                subresource=subresource,
            )
        )

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        """Patch (``merge``, ``json`` or ``strategic``) as this client's field manager."""
        return await self._call(
            apirequest.patch(
                resource,
                name,
                patch,
                field_manager=self.field_manager,
                namespace=namespace,
                patch_type=patch_type,
                subresource=subresource,
            )
        )

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        status: Mapping[str, Any],
        *,
        namespace: str | None = None,
    ) -> Obj:
        """Merge-patch the status subresource with ``{"status": status}``."""
        request = apirequest.patch_status(
            resource, name, status, field_manager=self.field_manager, namespace=namespace
        )
        return await self._call(request)

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Delete; False if it was already gone. ``uid`` guards against deleting a successor."""
        request = apirequest.delete(resource, name, namespace, propagation=propagation, uid=uid)
        try:
            await self._call(request)
        except errors.NotFound:
            return False
        return True

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = apirequest.JSON,
        timeout: float = 60.0,
        fenced: bool = True,
    ) -> Obj:
        """Any request by path, decoded; ``fenced=False`` skips the write guard (Leases)."""
        request = apirequest.raw(method, path, params=params, body=body, content_type=content_type)
        return await self._call(request, Timeouts(total=timeout), fenced=fenced)

    async def _call(
        self, request: ApiRequest, timeouts: Timeouts | None = None, *, fenced: bool = True
    ) -> Obj:
        """Send; retry while the server asks (429, 5xx + Retry-After), once after a 401."""
        for attempt in range(_MAX_RETRIES + 1):
            response = await self._send(request, timeouts or Timeouts(), fenced=fenced)
            if response.status < 300:
                return apirequest.decode_body(response.body)
            if response.status == 401 and attempt == 0 and await self.credentials.reload():
                continue
            error = apirequest.error_for(response.status, response.body, response.headers)
            delay = apirequest.retry_delay(error, _MAX_RETRY_WAIT)
            if delay is None or attempt == _MAX_RETRIES:
                raise error
            await self.clock.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self, request: ApiRequest, timeouts: Timeouts, *, fenced: bool = True
    ) -> Response:
        """Every request: fenced if a write, sent, counted, shown to the credentials."""
        host = self.transport.host
        guard = self.write_guard if fenced and request.is_write else None
        if guard is not None:  # the server drops it, too, once leadership may have ended
            request = apirequest.with_server_deadline(request, guard())
        try:
            response = await self.transport.send(request, timeouts, guard)
        except TransportError:
            self.metrics.rest_requests.labels("<error>", request.method, host).inc()
            self.availability.failed()
            raise
        self.metrics.rest_requests.labels(str(response.status), request.method, host).inc()
        self.availability.answered(response.status)
        self.credentials.observe(request.method, response.status)
        if response.warnings:
            self._warnings(response.warnings, host)
        return response

    def _warnings(self, headers: tuple[str, ...], host: str) -> None:
        """The 299 warnings with a text (what the API server sends; others ignored, as
        client-go): counted, gathered, handed on once per text."""
        gathered = _GATHERED.get()
        for warning in apirequest.parse_warnings(headers):
            if warning.code != 299 or not warning.text:
                continue
            self.metrics.rest_warnings.labels(host).inc()
            if gathered is not None:
                gathered.append(warning.text)
            if warning.text not in self._warned:
                if len(self._warned) >= _WARNED_AT_MOST:
                    self._warned.clear()
                self._warned.add(warning.text)
                self.on_warning(warning.text)


def _log_warning(text: str) -> None:
    log.warning("API server warning", warning=text)
