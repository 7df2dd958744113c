"""The client's pure core: what to send for each verb, and what an answer means. No I/O.

* One function per verb (:func:`get`, :func:`list_page`, :func:`watch`, :func:`create`,
  :func:`update`, :func:`apply`, :func:`patch`, :func:`patch_status`, :func:`delete`) returns
  an :class:`ApiRequest`: method, path, query, headers and the encoded body.
* :func:`decode_body`, :func:`decode_list_page` and :func:`decode_watch_line` read answers; a
  watch ``ERROR`` event (e.g. ``410 Expired``) is raised as its typed error.
* :func:`error_for` maps a status, body and headers to the typed error of
  :mod:`appstack.runtime.errors`; :func:`retry_delay` says whether to retry it unchanged.
* :func:`parse_warnings` reads ``Warning:`` headers (RFC 7234: ``299 - "text"``), what the
  API server says of a deprecated version or an admission webhook's warnings.
* :class:`Transport` is what sends an :class:`ApiRequest`: the aiohttp one in
  :mod:`appstack.runtime.transport`, or a scripted one in unit tests.

Bodies are encoded with orjson (server-side apply sends JSON, which is YAML).
Used by :mod:`appstack.runtime.client`, after lightkube's ``BasicRequest``/``process_one_line``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

import orjson

from appstack.runtime import errors
from appstack.runtime.resources import Obj, Resource

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
JSON = "application/json"


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request to the API server, fully built; ``stream`` marks a watch."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str | None = None
    stream: bool = False
    accept: str = JSON

    @property
    def headers(self) -> dict[str, str]:
        headers = {"Accept": self.accept}
        if self.body is not None:
            headers["Content-Type"] = self.content_type or JSON
        return headers

    @property
    def is_write(self) -> bool:
        """Whether it changes the cluster (and so passes the leader fence). A review
        (TokenReview, SubjectAccessReview: POSTed, never stored) only asks: a standby replica
        answers ``/metrics`` scrapes with them too."""
        if self.method == "POST" and self.path.rstrip("/").endswith("reviews"):
            return False
        return self.method not in ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Timeouts:
    """Seconds: the whole request (None: unbounded, for watches) and the longest silence
    between two reads (None: unbounded). Connecting has its own, the transport's."""

    total: float | None = 60.0
    read: float | None = None


@dataclass
class Response:
    """An answer: status, headers and body — or, for a successful watch, its lines;
    ``warnings``: every ``Warning:`` header's value as received (``headers`` keeps one)."""

    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    lines: AsyncGenerator[bytes, None] | None = None
    warnings: tuple[str, ...] = ()


class Transport(Protocol):
    """Sends :class:`ApiRequest` objects; raises :class:`~appstack.runtime.errors.TransportError`
    when no answer arrives. ``host`` labels the request metrics."""

    host: str

    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        """``guard``, if given, is called right before the request goes out: it may refuse
        it by raising, and the seconds it returns bound the wait for a connection."""
        ...

    async def close(self) -> None: ...


# ------------------------------------------------------------------------------ verbs
def raw(
    method: str,
    path: str,
    *,
    params: Mapping[str, str] | None = None,
    body: Any = None,
    content_type: str = JSON,
) -> ApiRequest:
    """Any request, for paths the verbs below do not cover."""
    data = orjson.dumps(body) if body is not None else None
    return ApiRequest(method, path, dict(params or {}), data, content_type)


def get(resource: Resource, name: str, namespace: str | None = None) -> ApiRequest:
    return ApiRequest("GET", resource.path(namespace, name))


def list_page(
    resource: Resource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    limit: int = 500,
    continue_token: str | None = None,
    field_selector: str | None = None,
) -> ApiRequest:
    params = {"limit": str(limit)}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    if continue_token:
        params["continue"] = continue_token
    return ApiRequest("GET", resource.path(namespace), params, accept=_accept(resource, "List"))


def watch(
    resource: Resource,
    namespace: str | None = None,
    *,
    resource_version: str,
    label_selector: str | None = None,
    timeout_seconds: int = 290,
    field_selector: str | None = None,
) -> ApiRequest:
    """A watch from ``resource_version`` with bookmarks; the server ends it after
    ``timeout_seconds``."""
    params = {
        "watch": "1",
        "allowWatchBookmarks": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": str(timeout_seconds),
    }
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    accept = _accept(resource, "")
    return ApiRequest("GET", resource.path(namespace), params, stream=True, accept=accept)


def _accept(resource: Resource, suffix: str) -> str:
    """The Accept header of a list (``suffix="List"``) or watch: ``PartialObjectMetadata``
    for a metadata-only resource (the server sends no data), else plain JSON."""
    if not resource.only_metadata:
        return JSON
    return f"{JSON};as=PartialObjectMetadata{suffix};g=meta.k8s.io;v=v1,{JSON}"


def create(resource: Resource, obj: Mapping[str, Any]) -> ApiRequest:
    return raw("POST", resource.path(obj["metadata"].get("namespace")), body=obj)


def update(resource: Resource, obj: Mapping[str, Any]) -> ApiRequest:
    meta = obj["metadata"]
    return raw("PUT", resource.path(meta.get("namespace"), meta["name"]), body=obj)


def apply(
    resource: Resource,
    obj: Mapping[str, Any],
    *,
    field_manager: str,
    force: bool = True,
    subresource: str | None = None,
) -> ApiRequest:
    meta = obj["metadata"]
    params = {"fieldManager": field_manager}
    if force:
        params["force"] = "true"
    return raw(
        "PATCH",
        resource.path(meta.get("namespace"), meta["name"], subresource),
        params=params,
        body=obj,
        content_type=PATCH_TYPES["apply"],
    )


def patch(
    resource: Resource,
    name: str,
    body: Any,
    *,
    field_manager: str,
    namespace: str | None = None,
    patch_type: str = "merge",
    subresource: str | None = None,
) -> ApiRequest:
    return raw(
        "PATCH",
        resource.path(namespace, name, subresource),
        params={"fieldManager": field_manager},
        body=body,
        content_type=PATCH_TYPES[patch_type],
    )


def patch_status(
    resource: Resource,
    name: str,
    status: Mapping[str, Any],
    *,
    field_manager: str,
    namespace: str | None = None,
) -> ApiRequest:
    """A merge patch of the status subresource with ``{"status": status}``."""
    return patch(
        resource,
        name,
        {"status": status},
        field_manager=field_manager,
        namespace=namespace,
        subresource="status",
    )


def delete(
    resource: Resource,
    name: str,
    namespace: str | None = None,
    *,
    propagation: str = "Background",
    uid: str | None = None,
) -> ApiRequest:
    options: dict[str, Any] = {"propagationPolicy": propagation}
    if uid:
        options["preconditions"] = {"uid": uid}
    return raw("DELETE", resource.path(namespace, name), body=options)


# ---------------------------------------------------------------------------- answers
def decode_body(body: bytes) -> Obj:
    value = orjson.loads(body) if body else {}
    return value if isinstance(value, dict) else {"items": value}


def decode_list_page(page: Obj) -> tuple[list[Obj], str, str | None]:
    """A LIST answer's items, resourceVersion and ``continue`` token (None on the last page).

    The API server leaves ``apiVersion`` and ``kind`` out of a list's items (the list says
    them once: ``apps/v1``, ``DeploymentList``); they are put back, as client-go's
    unstructured lists do, so a listed object is the same as a fetched or watched one (a
    comparison with a wanted object, which has them, would otherwise always differ)."""
    meta = page.get("metadata") or {}
    items = list(page.get("items") or [])
    list_kind, api_version = str(page.get("kind") or ""), page.get("apiVersion")
    kind = list_kind.removesuffix("List") if list_kind.endswith("List") else None
    for item in items if kind else ():
        if isinstance(item, dict):
            item.setdefault("kind", kind)
            if api_version:
                item.setdefault("apiVersion", api_version)
    return items, str(meta.get("resourceVersion", "")), meta.get("continue") or None


def decode_watch_line(line: bytes) -> Obj | None:
    """One line of a watch stream as ``{"type", "object"}`` (None for a blank line).

    An ``ERROR`` event carries a ``Status``: it is raised as its typed error (410 Gone when
    the resourceVersion has expired).
    """
    if not line.strip():
        return None
    event = orjson.loads(line)
    if not isinstance(event, dict):
        raise ValueError(f"a watch event must be an object, got {line[:200]!r}")
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        raise errors.from_response(int(status.get("code") or 500), status)
    return event


def error_for(status: int, body: bytes, headers: Mapping[str, str]) -> errors.ApiError:
    """The typed error for a non-2xx answer; a body that is not JSON becomes the message."""
    try:
        value = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        value = {"message": body.decode(errors="replace")[:1000]}
    return errors.from_response(status, value if isinstance(value, dict) else None, headers)


class ApiWarning(NamedTuple):
    """One warning of a ``Warning:`` header: its code (the API server's are 299), its agent
    (``-``) and its text."""

    code: int
    agent: str
    text: str


def parse_warnings(values: Iterable[str]) -> list[ApiWarning]:
    """The warnings of ``Warning:`` header values (RFC 7234 §5.5), in order: each value a
    comma-separated list of ``CODE AGENT "TEXT" ["DATE"]``, the text a quoted string whose
    ``\\`` escapes the next character. A value that stops making sense is read up to there:
    what precedes is kept, the rest ignored (as client-go)."""
    found: list[ApiWarning] = []
    for value in values:
        found.extend(_warnings_of(value))
    return found


def _warnings_of(value: str) -> Iterator[ApiWarning]:
    at, end = 0, len(value)
    while True:
        while at < end and value[at] in " \t,":
            at += 1
        if at == end:
            return
        code, at = value[at : at + 3], at + 3
        if not (code.isascii() and code.isdigit()) or value[at : at + 1] != " ":
            return
        space = value.find(" ", at + 1)
        if space <= at + 1:
            return
        agent = value[at + 1 : space]
        text, at = _quoted(value, space + 1)
        if text is None:
            return
        if value[at : at + 2] == ' "':  # a warn-date
            date, at = _quoted(value, at + 1)
            if date is None:
                return
        if at < end and value[at] not in " \t,":
            return
        yield ApiWarning(int(code), agent, text)


def _quoted(value: str, at: int) -> tuple[str | None, int]:
    """The quoted string starting at ``at`` (unescaped) and where it ends, or None."""
    if value[at : at + 1] != '"':
        return None, at
    chars: list[str] = []
    at += 1
    while at < len(value):
        char = value[at]
        if char == "\\" and at + 1 < len(value):
            chars.append(value[at + 1])
            at += 2
        elif char == '"':
            return "".join(chars), at + 1
        else:
            chars.append(char)
            at += 1
    return None, at


def retry_delay(error: errors.ApiError, cap: float = 10.0) -> float | None:
    """Seconds to wait before retrying unchanged, or None: retry only when the server says so
    (429, or a 5xx with ``Retry-After``), as client-go does."""
    if isinstance(error, errors.TooManyRequests) or (
        isinstance(error, errors.ServerError)
        and "retry-after" in {k.lower() for k in error.headers}
    ):
        return min(cap, max(0.1, error.retry_after))
    return None


def with_server_deadline(request: ApiRequest, seconds: float) -> ApiRequest:
    """``request`` with the API server's own ``timeout`` (whole seconds, at least 1): the
    server gives up on it after that — waiting in its priority-and-fairness queue included —
    instead of carrying it out late. The client sets it on a fenced write to the leadership
    left (the Lease itself lasts 5 s longer than the renew deadline that bounds it)."""
    whole = max(1, math.floor(seconds))
    return replace(request, params={**request.params, "timeout": f"{whole}s"})
