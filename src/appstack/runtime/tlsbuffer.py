"""The memory of a TLS connection: asyncio's read buffer, 16 KiB instead of 256 KiB.

asyncio's TLS layer (``asyncio.sslproto.SSLProtocol``) gives every connection a zeroed
256 KiB buffer that the socket is read into (CPython issue #109534). An operator holds a
connection per watch (one per kind and namespace) and up to ``--concurrency`` more for
requests during a burst, so that buffer was the largest part of its memory growth under
load: 48 connections to the API server cost 14.6 MiB with it and 3.7 MiB with 16 KiB
(measured, docs/performance.md). 16 KiB holds one TLS record, the most one decryption
returns anyway; a large LIST is read in more, smaller socket reads (the kernel's socket
buffer holds the rest), with the same bytes delivered.

:func:`limit_tls_read_buffer` is a process-wide setting: an operator applies it once,
before it opens its first connection.
"""

from __future__ import annotations

from asyncio import sslproto
from typing import Any

# The class attribute asyncio reads for every new connection (not in typeshed's stubs).
_PROTOCOL: Any = sslproto.SSLProtocol

#: Bytes read from a TLS socket at a time (one TLS record: 16 KiB of plaintext).
TLS_READ_BUFFER = 16 * 1024


def limit_tls_read_buffer(size: int = TLS_READ_BUFFER) -> None:
    """Give every TLS connection asyncio opens from now on a read buffer of ``size`` bytes."""
    if size <= 0:
        raise ValueError(f"a read buffer needs at least one byte, got {size}")
    _PROTOCOL.max_size = size


def tls_read_buffer() -> int:
    """The read buffer, in bytes, of the TLS connections asyncio opens now."""
    return int(_PROTOCOL.max_size)
