"""The async Kubernetes client the runtime and controllers use: plain dicts, fast JSON.

Configuration and authentication come from ``kubernetes_asyncio`` — kubeconfig (client
certificates, tokens, exec plugins, contexts) or in-cluster service-account config — and
so does the transport: its configured aiohttp session (TLS, proxy, connection pool). We do
not use its generated models or serializer: bodies are encoded and decoded with orjson,
which measured 1.5 CPU-s per 2,000 creates against 2.1 to 2.7 s for the typed clients
(``bench/client_choice.py``, ``docs/design.md``).

Verbs: :meth:`get`, :meth:`list` (paginated), :meth:`watch` (a raw event stream),
:meth:`create`, :meth:`update`, :meth:`apply` (server-side apply, field manager
``appstack``, forced on the fields we own), :meth:`patch`, :meth:`patch_status`,
:meth:`delete` (propagation policy).
Errors are the typed ones of :mod:`appstack.runtime.errors`; 429 and 5xx answers that carry
``Retry-After`` are retried a few times first, as client-go does. Every request is counted
in ``rest_client_requests_total{code,method,host}``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from appstack.runtime import errors
from appstack.runtime.errors import TransportError, WatchStalled
from appstack.runtime.metrics import Metrics
from appstack.runtime.resources import Resource

Obj = dict[str, Any]
FIELD_MANAGER = "appstack"
_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: we send orjson output
}
_MAX_RETRIES = 5
_MAX_RETRY_WAIT = 10.0


async def load_configuration(
    kubeconfig: str | None = None, context: str | None = None
) -> k8s_client.Configuration:
    """Kubeconfig (``kubeconfig`` or ``$KUBECONFIG`` or ~/.kube/config) or in-cluster config."""
    configuration = k8s_client.Configuration()
    in_cluster = "KUBERNETES_SERVICE_HOST" in os.environ and not (
        kubeconfig or os.environ.get("KUBECONFIG")
    )
    if in_cluster:
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    else:
        await k8s_config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    configuration.connection_pool_maxsize = 64
    return configuration


__all__ = ["FIELD_MANAGER", "Client", "TransportError", "WatchStalled", "load_configuration"]


class Client:
    """The async Kubernetes client: one object per process, shared by every controller.

    Objects are plain dicts; kinds are :class:`~appstack.runtime.resources.Resource`
    descriptors. Create it with ``await Client.connect(kubeconfig)`` and close it (or use
    ``async with``). Errors are the typed ones of :mod:`appstack.runtime.errors`.
    """

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        metrics: Metrics | None = None,
        field_manager: str = FIELD_MANAGER,
        user_agent: str = "appstack",
    ) -> None:
        self._api = k8s_client.ApiClient(configuration=configuration)
        self._api.user_agent = user_agent
        self.host = str(configuration.host or "").rstrip("/")
        self._host_label = urlsplit(self.host).netloc
        self.metrics = metrics or Metrics()
        self.field_manager = field_manager

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Client:
        return cls(await load_configuration(kubeconfig, context), **kwargs)

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --------------------------------------------------------------------------- verbs
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        return await self.request("GET", res.path(namespace, name))

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[list[Obj], str]:
        """All objects (following ``continue`` tokens) and the list's resourceVersion."""
        items: list[Obj] = []
        params: dict[str, str] = {"limit": str(page_size)}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = await self.request("GET", res.path(namespace), params=params)
            items.extend(page.get("items") or [])
            token = page["metadata"].get("continue")
            if not token:
                return items, str(page["metadata"].get("resourceVersion", ""))
            params["continue"] = token

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 290,
        inactivity_timeout: float = 330.0,
    ) -> AsyncIterator[Obj]:
        """Watch events (``{"type", "object"}``) from ``resource_version``, with bookmarks.

        The server ends the stream after ``timeout_seconds``; if nothing at all (not even a
        bookmark) arrives for ``inactivity_timeout`` seconds, :class:`WatchStalled` is raised
        so a silently dead connection cannot hang an informer.
        """
        params = {
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            params["labelSelector"] = label_selector
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=inactivity_timeout)
        response = await self._send("GET", res.path(namespace), params=params, timeout=timeout)
        async with response:
            if response.status != 200:
                raise await self._error(response)
            buffer = b""
            try:
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield orjson.loads(line)
            except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as error:
                raise WatchStalled(f"no watch event for {inactivity_timeout:.0f}s") from error
            except aiohttp.ClientError as error:
                raise TransportError(str(error)) from error

    async def create(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        namespace = obj["metadata"].get("namespace")
        return await self.request("POST", res.path(namespace), body=obj)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        """Replace (PUT); ``metadata.resourceVersion`` makes it optimistic (409 if stale)."""
        meta = obj["metadata"]
        return await self.request("PUT", res.path(meta.get("namespace"), meta["name"]), body=obj)

    async def apply(
        self,
        res: Resource,
        obj: Mapping[str, Any],
        *,
        force: bool = True,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> Obj:
        """Server-side apply ``obj`` (a full intent: apiVersion, kind, metadata.name...)."""
        meta = obj["metadata"]
        params = {"fieldManager": field_manager or self.field_manager}
        if force:
            params["force"] = "true"
        return await self.request(
            "PATCH",
            res.path(meta.get("namespace"), meta["name"], subresource),
            params=params,
            body=obj,
            content_type=_PATCH_TYPES["apply"],
        )

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        return await self.request(
            "PATCH",
            res.path(namespace, name, subresource),
            params={"fieldManager": self.field_manager},
            body=patch,
            content_type=_PATCH_TYPES[patch_type],
        )

    async def patch_status(
        self, res: Resource, name: str, status: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj:
        """Merge-patch the status subresource with ``{"status": status}``."""
        return await self.patch(
            res, name, {"status": status}, namespace=namespace, subresource="status"
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Delete; False if it was already gone. ``uid`` guards against deleting a successor."""
        options: dict[str, Any] = {"propagationPolicy": propagation}
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", res.path(namespace, name), body=options)
        except errors.NotFound:
            return False
        return True

    # ----------------------------------------------------------------------- transport
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 60.0,
    ) -> Obj:
        data = orjson.dumps(body) if body is not None else None
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        for attempt in range(_MAX_RETRIES + 1):
            response = await self._send(
                method,
                path,
                params=params,
                data=data,
                content_type=content_type,
                timeout=client_timeout,
            )
            async with response:
                payload = await response.read()
                if response.status < 300:
                    return orjson.loads(payload) if payload else {}
                error = errors.from_response(
                    response.status, _json_or_none(payload), dict(response.headers)
                )
            delay = _retry_delay(error)
            if delay is None or attempt == _MAX_RETRIES:
                raise error
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        data: bytes | None = None,
        content_type: str | None = None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        headers = {"Accept": "application/json", "User-Agent": self._api.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        session: aiohttp.ClientSession = self._api.rest_client.pool_manager
        try:
            response = await session.request(
                method,
                self.host + path,
                params=params,
                data=data,
                headers=headers,
                timeout=timeout,
            )
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            self.metrics.rest_requests.labels("<error>", method, self._host_label).inc()
            raise TransportError(f"{method} {path}: {error or type(error).__name__}") from error
        self.metrics.rest_requests.labels(str(response.status), method, self._host_label).inc()
        return response

    async def _error(self, response: aiohttp.ClientResponse) -> errors.ApiError:
        payload = await response.read()
        return errors.from_response(response.status, _json_or_none(payload), dict(response.headers))


def _json_or_none(payload: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return {"message": payload.decode(errors="replace")[:1000]} if payload else None
    return value if isinstance(value, dict) else None


def _retry_delay(error: errors.ApiError) -> float | None:
    """Seconds to wait before retrying unchanged, or None: retry only when the server says so."""
    if isinstance(error, errors.TooManyRequests) or (
        isinstance(error, errors.ServerError)
        and "retry-after" in {k.lower() for k in error.headers}
    ):
        return min(_MAX_RETRY_WAIT, max(0.1, getattr(error, "retry_after", 1.0)))
    return None
