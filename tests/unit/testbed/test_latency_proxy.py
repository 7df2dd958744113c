"""The latency proxy (appstack_testbed.latency_proxy) the fencing e2e tests put between
the operator and the API server: each direction delayed, the bytes in order."""

from __future__ import annotations

import asyncio
import time

from appstack_testbed.latency_proxy import LatencyProxy


async def test_the_latency_proxy_delays_each_direction_and_keeps_the_bytes_in_order() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, LatencyProxy("127.0.0.1", port, delay=0.2) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        started = time.monotonic()
        writer.write(b"one ")
        writer.write(b"two")
        received = b""
        while len(received) < 7:
            received += await reader.read(1024)
        elapsed = time.monotonic() - started
        proxy.delay = 0.0
        writer.write(b"!")
        assert await reader.read(1) == b"!"
        writer.close()
    assert received == b"one two"
    assert elapsed >= 0.4  # 0.2 s each way
