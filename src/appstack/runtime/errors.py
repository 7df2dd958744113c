"""Typed Kubernetes API errors, built from a response's status code, ``Status`` body and headers.

Callers branch on the type, not on numbers: ``except NotFound``, ``except Conflict``,
``Invalid.causes`` (field-level reasons for a rejected object), ``TooManyRequests.retry_after``
(honour ``Retry-After``), ``Gone`` (a watch's resourceVersion is too old: re-list).
Two errors are not API answers: :class:`TransportError` (the server could not be reached or
the connection broke; :class:`WatchStalled` when a watch went silent) and
:class:`TerminalError`, which a reconciler raises for a problem only the user can fix.
Pure: no I/O. Raised by :mod:`appstack.runtime.client`, handled by the informer,
the controllers and the reconcile loop.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One field-level reason from ``Status.details.causes``."""

    field: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class ApiError(Exception):
    """Any non-success answer from the API server."""

    code: int = 0

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    @property
    def causes(self) -> list[Cause]:
        return [
            Cause(c.get("field", ""), c.get("reason", ""), c.get("message", ""))
            for c in self.details.get("causes", []) or []
        ]

    @property
    def retryable(self) -> bool:
        """Worth retrying unchanged (server busy or timing out), as opposed to a bad request."""
        return False


class BadRequest(ApiError):
    """400: the request itself was malformed."""


class Unauthorized(ApiError):
    """401: the credentials were missing or not accepted."""


class Forbidden(ApiError):
    """403: RBAC (or an admission policy) does not allow this request."""


class NotFound(ApiError):
    """404: no such object (or no such kind: its CRD is not installed)."""


class MethodNotAllowed(ApiError):
    """405: the verb is not supported on this path."""


class Conflict(ApiError):
    """409: optimistic-concurrency conflict, or a server-side-apply field conflict."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists."""


class Gone(ApiError):
    """410: the requested resourceVersion has been compacted; re-list."""


class Invalid(ApiError):
    """422: the object was rejected; :attr:`causes` names the fields."""

    def __str__(self) -> str:
        causes = "; ".join(str(c) for c in self.causes)
        return f"{self.message}" + (f" ({causes})" if causes and causes not in self.message else "")


class TooManyRequests(ApiError):
    """429: throttled (or API priority and fairness rejected the request)."""

    @property
    def retry_after(self) -> float:
        return _retry_after(self.headers, self.details, default=1.0)

    @property
    def retryable(self) -> bool:
        return True


class ServerError(ApiError):
    """5xx; :attr:`retry_after` honours ``Retry-After`` (e.g. a 503 from a busy server)."""

    @property
    def retry_after(self) -> float:
        return _retry_after(self.headers, self.details, default=1.0)

    @property
    def retryable(self) -> bool:
        return True


class ServerTimeout(ServerError):
    """504, or 500 with reason Timeout/ServerTimeout: the request may be retried."""


class TransportError(Exception):
    """The API server could not be reached or the connection broke (no HTTP answer).
    ``server`` is the API server's URL when known; :attr:`reason` says what went wrong in
    a few words (``connection refused``, ``timed out``), for a message a user reads."""

    def __init__(self, message: str, server: str = "") -> None:
        super().__init__(message)
        self.server = server

    @property
    def reason(self) -> str:
        """The root cause, short: the operating system's words for an errno (``connection
        refused``, ``name or service not known``), ``timed out``, ``TLS: <reason>``, else the
        message of the innermost cause."""
        error: BaseException | None = self
        innermost: BaseException = self
        while error is not None:
            if isinstance(error, TimeoutError):  # asyncio.TimeoutError is one since 3.11
                return "timed out"
            if isinstance(error, ssl.SSLError) and getattr(error, "reason", None):
                return f"TLS: {getattr(error, 'verify_message', None) or error.reason}"
            if isinstance(error, OSError) and not isinstance(error, ssl.SSLError) and error.errno:
                # errno < 0: a name resolution's (socket.gaierror)
                words = os.strerror(error.errno) if error.errno > 0 else error.strerror
                return str(words or error).lower()
            innermost = error
            error = (  # aiohttp's connection errors hold the cause they wrap
                getattr(error, "os_error", None)
                or getattr(error, "certificate_error", None)
                or error.__cause__
                or error.__context__
            )
        return str(innermost) or type(innermost).__name__


class WatchStalled(TransportError):
    """No event or bookmark arrived within the inactivity timeout: the stream is presumed dead."""


class TerminalError(Exception):
    """A reconcile failure only the user can fix (an invalid spec, a missing reference).

    Raise it from :meth:`~appstack.runtime.controller.Reconciler.reconcile` (``raise
    TerminalError("...") from cause``): the controller logs it and counts it in
    ``controller_runtime_terminal_reconcile_errors_total`` but does not retry it with backoff;
    the next event or resync about the object reconciles it again, as controller-runtime's
    ``reconcile.TerminalError``.
    """


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}


def from_response(
    code: int, body: Mapping[str, Any] | None, headers: Mapping[str, str] | None = None
) -> ApiError:
    """The typed error for an HTTP status and its (possibly missing) ``Status`` body."""
    status = body if body and body.get("kind") == "Status" else {}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or (body if body and not status else "") or "")
    details = status.get("details") or {}
    cls = _BY_CODE.get(code, ServerError if code >= 500 else ApiError)
    if code == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif code == 500 and reason in ("Timeout", "ServerTimeout"):
        cls = ServerTimeout
    # Watch streams report expiry as a 410 Status with reason Expired/Gone.
    elif reason in ("Expired", "Gone"):
        cls = Gone
    return cls(code, reason or cls.__name__, message, details, headers)


def _retry_after(headers: Mapping[str, str], details: Mapping[str, Any], default: float) -> float:
    """``Retry-After`` in seconds or as an HTTP date, else ``details.retryAfterSeconds``."""
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())
    seconds = details.get("retryAfterSeconds")
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else default
