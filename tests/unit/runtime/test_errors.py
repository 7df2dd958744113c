"""API errors (runtime/errors.py): a response's status code and Status reason become a
typed error (with its field causes, a retry-after); a :class:`TransportError` says what went
wrong reaching the API server in a few words for a user (issue #38), from the cause it wraps."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl

import pytest

from appstack.runtime import TransportError, errors


def test_an_invalid_object_error_carries_its_field_causes() -> None:
    body = {
        "kind": "Status",
        "reason": "Invalid",
        "message": 'AppService.appstack.dev "x" is invalid: spec.size: Invalid value: -1',
        "details": {
            "causes": [
                {"field": "spec.size", "reason": "FieldValueInvalid", "message": "must be >= 0"}
            ]
        },
    }
    error = errors.from_response(422, body)
    assert isinstance(error, errors.Invalid)
    assert error.causes == [errors.Cause("spec.size", "FieldValueInvalid", "must be >= 0")]


def test_status_codes_and_reasons_map_to_types() -> None:
    assert isinstance(errors.from_response(404, None), errors.NotFound)
    assert isinstance(
        errors.from_response(409, {"kind": "Status", "reason": "AlreadyExists"}),
        errors.AlreadyExists,
    )
    assert isinstance(
        errors.from_response(409, {"kind": "Status", "reason": "Conflict"}), errors.Conflict
    )
    assert isinstance(
        errors.from_response(410, {"kind": "Status", "reason": "Expired"}), errors.Gone
    )
    assert isinstance(
        errors.from_response(500, {"kind": "Status", "reason": "Timeout"}), errors.ServerTimeout
    )
    assert isinstance(errors.from_response(503, None), errors.ServerError)
    assert isinstance(errors.from_response(403, None), errors.Forbidden)


def test_too_many_requests_honours_retry_after() -> None:
    throttled = errors.from_response(429, None, {"Retry-After": "3"})
    assert isinstance(throttled, errors.TooManyRequests)
    assert throttled.retry_after == 3.0
    assert throttled.retryable
    detail = errors.from_response(429, {"kind": "Status", "details": {"retryAfterSeconds": 7}})
    assert isinstance(detail, errors.TooManyRequests)
    assert detail.retry_after == 7.0


def _tls(reason: str, verify_message: str = "") -> ssl.SSLError:
    """An SSL error as OpenSSL's are (``reason``; ``verify_message`` for a certificate's)."""
    error = ssl.SSLCertVerificationError(1, reason) if verify_message else ssl.SSLError(1, reason)
    error.reason = reason
    if verify_message:
        error.verify_message = verify_message  # type: ignore[attr-defined]
    return error


def _wrapping(cause: BaseException) -> TransportError:
    try:
        try:
            raise cause
        except BaseException as error:
            raise TransportError("GET /version: failed", "https://k:6443") from error
    except TransportError as error:
        return error


@pytest.mark.parametrize(
    ("cause", "reason"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"), "connection refused"),
        (OSError(errno.EHOSTUNREACH, "x"), "no route to host"),
        (
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "name or service not known",
        ),
        (asyncio.TimeoutError(), "timed out"),
        (_tls("WRONG_VERSION_NUMBER"), "TLS: WRONG_VERSION_NUMBER"),
        (
            _tls("CERTIFICATE_VERIFY_FAILED", "self-signed certificate"),
            "TLS: self-signed certificate",
        ),
        (ValueError("odd"), "odd"),
    ],
)
def test_the_reason_is_the_root_cause_in_a_few_words(cause: BaseException, reason: str) -> None:
    error = _wrapping(cause)
    assert error.server == "https://k:6443"
    assert error.reason == reason


def test_without_a_cause_the_reason_is_the_message() -> None:
    assert TransportError("broken pipe").reason == "broken pipe"
    assert TransportError("broken pipe").server == ""
