"""Admission webhooks served by the operator (controller-runtime's webhook server): an HTTPS
server (TLS 1.2+, the :mod:`.servingcert` contexts) answering the API server's
``AdmissionReview`` (``admission.k8s.io/v1``) on one path per :class:`Webhook`, each a
validating or a mutating handler written in Python.

A handler gets an :class:`AdmissionRequest` (operation, object and old object as dicts,
user info, ``dryRun``) and returns a :class:`Verdict` — :func:`allow` or :func:`deny` (a
message, optionally the field it is about, warnings the client is shown). A mutating
handler may also return the object as it wants it stored (a dict, or ``Verdict.object``):
the server computes the RFC 6902 JSONPatch from the object it was sent (:func:`json_patch`).

What a request may cost is bounded: bodies up to :data:`MAX_BODY` (the API server's own
limit; 413 beyond), a handler answering within ``timeout`` seconds (the server's, or the
webhook's own; else the request is refused with code 500: a coroutine handler is cut off
then, a plain function runs on the event loop and cannot be), a malformed review answered
400 with one log line (no traceback).
Metrics keep controller-runtime's names: ``controller_runtime_webhook_requests_total
{webhook,code}``, ``controller_runtime_webhook_latency_seconds{webhook}`` and
``controller_runtime_webhook_requests_in_flight{webhook}`` (:class:`~.metrics.Metrics`).
CRD conversion webhooks (:class:`~.conversion.Conversion`, ``ConversionReview``) are served
beside them (``conversions``), bounded and counted alike.

The server runs on every replica (the API server calls whichever a Service picks), not
only on the leader: a program starts it beside its manager (:meth:`WebhookServer.start`)
and adds a readiness check (:attr:`WebhookServer.listening`). An SDK may make the
:class:`Webhook` objects from typed handlers declared beside its controllers.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import inspect
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import web

from appstack.runtime.conversion import Conversion, convert, review_envelope, review_request
from appstack.runtime.metrics import Metrics

log = structlog.get_logger(__name__)

#: The largest request body accepted (bytes): the API server's own request limit, 3 MiB.
MAX_BODY = 3 * 1024 * 1024
#: Seconds a handler has to answer (the API server's default ``timeoutSeconds`` is 10).
DEFAULT_TIMEOUT = 10.0
API_VERSION = "admission.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


@dataclass(frozen=True)
class AdmissionRequest:
    """What the API server asks about (an ``AdmissionReview``'s ``request``): ``object`` is
    the object as it would be stored (None on DELETE), ``old_object`` as it is (UPDATE and
    DELETE); ``dry_run`` true when nothing will be stored; ``raw`` the request as sent."""

    uid: str
    operation: str
    kind: Mapping[str, str]
    resource: Mapping[str, str]
    name: str
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    user_info: Mapping[str, Any]
    dry_run: bool
    sub_resource: str = ""
    options: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_review(cls, review: Any) -> AdmissionRequest:
        """The request of an ``AdmissionReview`` (``admission.k8s.io/v1``); ValueError,
        saying what is wrong, when it is not one."""
        request, uid = review_envelope(review, API_VERSION, "AdmissionReview")
        operation = request.get("operation")
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}")
        obj, old = request.get("object"), request.get("oldObject")
        for key, value in (("object", obj), ("oldObject", old)):
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"the request's {key} is not an object")
        return cls(
            uid=uid,
            operation=operation,
            kind=_mapping(request.get("kind")),
            resource=_mapping(request.get("resource")),
            name=str(request.get("name") or (obj or old or {}).get("metadata", {}).get("name", "")),
            namespace=str(request.get("namespace") or ""),
            object=obj,
            old_object=old,
            user_info=_mapping(request.get("userInfo")),
            dry_run=bool(request.get("dryRun")),
            sub_resource=str(request.get("subResource") or ""),
            options=request.get("options") if isinstance(request.get("options"), dict) else None,
            raw=request,
        )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Verdict:
    """A handler's answer: ``allowed``; when refused, ``message``, the HTTP-like ``code``
    (403, or 422 when a ``field`` is named) and ``reason``; ``warnings`` shown to the client
    (``kubectl`` prints them); for a mutating handler, ``object`` as it wants it stored."""

    allowed: bool
    message: str = ""
    code: int = 200
    reason: str = ""
    field: str = ""
    warnings: tuple[str, ...] = ()
    object: dict[str, Any] | None = None


def allow(*warnings: str, object: dict[str, Any] | None = None) -> Verdict:
    """Let the request through, with ``warnings`` for the client (and, for a mutating
    handler, the object as it should be stored)."""
    return Verdict(True, warnings=tuple(warnings), object=object)


def deny(
    message: str, *, field: str = "", code: int | None = None, warnings: Sequence[str] = ()
) -> Verdict:
    """Refuse the request: ``message`` (prefixed with ``field``, e.g. ``spec.replicas``,
    when one is named: the API server shows it as ``admission webhook "..." denied the
    request: spec.replicas: ...``). The code is 422 (``Invalid``) for a field, else 403
    (``Forbidden``), unless given."""
    status = code or (422 if field else 403)
    reason = "Invalid" if status == 422 else "Forbidden" if status == 403 else ""
    return Verdict(False, message, status, reason=reason, field=field, warnings=tuple(warnings))


#: What a handler returns: a verdict, or (a mutating handler) the object as it wants it
#: stored (None: unchanged, allowed); a coroutine function may be given.
Answer = Verdict | dict[str, Any] | None
Handler = Callable[[AdmissionRequest], Answer | Awaitable[Answer]]


@dataclass(frozen=True)
class Webhook:
    """One admission webhook: the ``path`` the API server posts to, its ``handler``,
    whether it is ``mutating``, its ``name`` (the metrics' ``webhook`` label; default:
    the path), and the seconds its handler has to answer (``timeout``; default: the
    server's)."""

    path: str
    handler: Handler
    mutating: bool = False
    name: str = ""
    timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"a webhook path starts with '/': {self.path!r}")

    @property
    def label(self) -> str:
        """Its metrics' ``webhook`` label: its name, else its path."""
        return self.name or self.path


# ------------------------------------------------------------------------------ JSONPatch
def _pointer(path: Sequence[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def json_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``old`` into ``new`` (JSON values): ``add``,
    ``remove`` and ``replace`` of object members, recursively; a list of the same length
    compared item by item, any other list replaced whole (correct rather than minimal)."""
    ops: list[dict[str, Any]] = []
    _diff(old, new, [], ops)
    return ops


def _diff(old: Any, new: Any, path: list[str | int], ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": _pointer([*path, key])})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer([*path, key]), "value": value})
            else:
                _diff(old[key], value, [*path, key], ops)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            _diff(before, after, [*path, index], ops)
    elif type(old) is not type(new) or old != new:  # 1 == True in Python, not in JSON
        ops.append({"op": "replace", "path": _pointer(path), "value": new})


# ------------------------------------------------------------------------------- answers
def review_response(
    request_uid: str, verdict: Verdict, *, original: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``AdmissionReview`` answering ``request_uid`` with ``verdict`` (its patch
    computed from ``original`` when the verdict carries an object)."""
    response: dict[str, Any] = {"uid": request_uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        message = f"{verdict.field}: {verdict.message}" if verdict.field else verdict.message
        status: dict[str, Any] = {"code": verdict.code, "message": message}
        if verdict.reason:
            status["reason"] = verdict.reason
        if verdict.field:
            cause = {
                "type": "FieldValueInvalid",
                "field": verdict.field,
                "message": verdict.message,
            }
            status["details"] = {"causes": [cause]}
        response["status"] = status
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.allowed and verdict.object is not None and original is not None:
        patch = json_patch(original, verdict.object)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _verdict(answer: Answer) -> Verdict:
    if answer is None:
        return allow()
    if isinstance(answer, Verdict):
        return answer
    if isinstance(answer, dict):
        return allow(object=answer)
    raise TypeError(f"a webhook handler returned {type(answer).__name__}, not a Verdict or dict")


async def answer(webhook: Webhook, request: AdmissionRequest, timeout: float) -> Verdict:
    """``webhook``'s verdict on ``request``, its handler given at most ``timeout`` seconds
    (a refusal with code 500 past it, or when the handler raises: logged with its
    traceback, the client told only that it failed). A handler that is not a coroutine
    function runs in a worker thread (``asyncio.to_thread``), so that a slow one neither
    stalls the event loop nor escapes its timeout (past it, its thread finishes unheard). A
    validating webhook's object is ignored; a mutating handler gets a copy of the object to
    change."""
    mutable = (
        AdmissionRequest(**{**request.__dict__, "object": copy.deepcopy(request.object)})
        if webhook.mutating
        else request
    )
    try:
        if inspect.iscoroutinefunction(webhook.handler):
            result = await asyncio.wait_for(webhook.handler(mutable), timeout)
        else:  # a plain function, in a worker thread: the loop never waits for it
            result = await asyncio.wait_for(asyncio.to_thread(webhook.handler, mutable), timeout)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, timeout)
        verdict = _verdict(result)
    except asyncio.TimeoutError:  # not yet the built-in TimeoutError on Python 3.10
        log.warning("webhook handler timed out", webhook=webhook.label, timeout=timeout)
        return deny(f"the webhook did not answer within {timeout:g}s", code=500)
    except Exception:
        log.exception("webhook handler failed", webhook=webhook.label, uid=request.uid)
        return deny("the webhook failed to decide (see the operator's log)", code=500)
    if not webhook.mutating and verdict.object is not None:
        verdict = Verdict(**{**verdict.__dict__, "object": None})
    return verdict


# -------------------------------------------------------------------------------- server
class WebhookServer:
    """Serves ``webhooks`` over HTTPS (``tls``: a server context, e.g.
    :func:`~appstack.runtime.servingcert.self_signed_context`) on ``address``
    (``host:port``; port 0: any free one, see :attr:`port`), counting into ``metrics``."""

    def __init__(
        self,
        webhooks: Sequence[Webhook],
        *,
        address: str,
        tls: ssl.SSLContext | None,
        metrics: Metrics | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_body: int = MAX_BODY,
        conversions: Sequence[Conversion] = (),
    ) -> None:
        paths = [w.path for w in webhooks] + [c.path for c in conversions]
        if len(set(paths)) != len(paths):
            raise ValueError(f"two webhooks share a path: {paths}")
        self.webhooks = {w.path: w for w in webhooks}
        #: the CRD conversion webhooks (:mod:`.conversion`), routed beside the admission ones
        self.conversions = {c.path: c for c in conversions}
        self.address = address
        self.tls = tls
        self.metrics = metrics or Metrics()
        self.timeout = timeout
        self.max_body = max_body
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    @property
    def listening(self) -> bool:
        """True once the server accepts connections (the readiness check)."""
        return self.port is not None

    async def start(self) -> None:
        """Listen (:attr:`port` is then the port bound)."""
        app = web.Application(client_max_size=self.max_body)
        app.add_routes([web.post(path, self._serve) for path in self.webhooks])
        app.add_routes([web.post(path, self._serve) for path in self.conversions])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        host, _, port = self.address.rpartition(":")
        site = web.TCPSite(runner, host or "0.0.0.0", int(port), ssl_context=self.tls)  # noqa: S104
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[-1][1])
        paths = sorted([*self.webhooks, *self.conversions])
        log.info("webhook server listening", port=self.port, paths=paths)

    async def stop(self) -> None:
        """Stop listening (requests in flight are cut off)."""
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner, self.port = None, None

    async def _serve(self, http: web.Request) -> web.Response:
        webhook = self.webhooks.get(http.path) or self.conversions[http.path]
        label = webhook.label
        in_flight = self.metrics.webhook_in_flight.labels(label)
        started = time.monotonic()
        in_flight.inc()
        try:
            response = await self._respond(webhook, http)
        finally:
            in_flight.dec()
            self.metrics.webhook_latency.labels(label).observe(time.monotonic() - started)
        self.metrics.webhook_requests.labels(label, str(response.status)).inc()
        return response

    async def _respond(self, webhook: Webhook | Conversion, http: web.Request) -> web.Response:
        if http.content_type != "application/json":
            return self._bad(webhook, f"content type {http.content_type!r}, not application/json")
        if http.content_length is not None and http.content_length > self.max_body:
            return self._too_large(webhook)
        try:
            body = await http.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large(webhook)
        if isinstance(webhook, Conversion):
            return await self._convert(webhook, body)
        try:
            request = AdmissionRequest.from_review(json.loads(body))
        except ValueError as error:  # json.JSONDecodeError is one
            return self._bad(webhook, str(error))
        verdict = await answer(webhook, request, webhook.timeout or self.timeout)
        review = review_response(request.uid, verdict, original=request.object)
        return web.json_response(review)

    async def _convert(self, conversion: Conversion, body: bytes) -> web.Response:
        try:
            asked = review_request(json.loads(body))
        except ValueError as error:  # json.JSONDecodeError is one
            return self._bad(conversion, str(error))
        return web.json_response(await convert(conversion, asked, self.timeout))

    def _too_large(self, webhook: Webhook | Conversion) -> web.Response:
        """413, as a ``Status`` the API server reads: its message is what the user sees
        ("failed calling webhook ...: the review is larger than ...")."""
        message = f"the review is larger than the webhook server's limit ({self.max_body} bytes)"
        log.warning("review too large", webhook=webhook.label, limit=self.max_body)
        status = {
            "apiVersion": "v1",
            "kind": "Status",
            "status": "Failure",
            "message": message,
            "reason": "RequestEntityTooLarge",
            "code": 413,
        }
        return web.json_response(status, status=413)

    @staticmethod
    def _bad(webhook: Webhook | Conversion, why: str) -> web.Response:
        log.warning("malformed review", webhook=webhook.label, error=why)
        return web.Response(status=400, text=why)
