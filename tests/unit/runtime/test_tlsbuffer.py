"""The read buffer of asyncio's TLS connections (runtime/tlsbuffer.py): a process-wide
setting, 16 KiB when the operator sets it, read back as it is; a buffer of no bytes is
refused. The bytes of a large response read through it: tests/e2e/test_tls_buffer.py."""

from __future__ import annotations

from asyncio import sslproto
from collections.abc import Iterator

import pytest

from appstack.runtime.tlsbuffer import TLS_READ_BUFFER, limit_tls_read_buffer, tls_read_buffer


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = sslproto.SSLProtocol.max_size
    yield None
    sslproto.SSLProtocol.max_size = before


def test_the_limit_is_what_every_new_tls_connection_reads_into() -> None:
    limit_tls_read_buffer()
    assert TLS_READ_BUFFER == 16 * 1024
    assert sslproto.SSLProtocol.max_size == tls_read_buffer() == TLS_READ_BUFFER
    limit_tls_read_buffer(64 * 1024)
    assert sslproto.SSLProtocol.max_size == tls_read_buffer() == 64 * 1024


def test_the_buffer_read_back_is_asyncios_own_when_not_set() -> None:
    assert tls_read_buffer() == sslproto.SSLProtocol.max_size


@pytest.mark.parametrize("size", [0, -1])
def test_a_buffer_of_no_bytes_is_refused_and_nothing_changes(size: int) -> None:
    before = tls_read_buffer()
    with pytest.raises(ValueError, match="at least one byte"):
        limit_tls_read_buffer(size)
    assert tls_read_buffer() == before
