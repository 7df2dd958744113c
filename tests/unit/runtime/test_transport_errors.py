""":attr:`TransportError.reason`: what went wrong reaching the API server, in a few words
for a user (issue #38), from the cause the transport wraps."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl

import pytest

from appstack.runtime import TransportError


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
