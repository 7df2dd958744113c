"""A loopback TCP proxy that delays every byte by an adjustable latency, for fault injection.

The API server speaks HTTPS end to end, so a TCP proxy cannot see request paths; instead a
test routes only *one connection's* traffic through it — e.g. an operator's Lease calls,
which have their own client and kubeconfig (``appstack run --leader-election-kubeconfig``)
— and sets :attr:`LatencyProxy.delay` (seconds, both directions) while it runs. Bytes keep
their order; data read while the delay is 20 s is delivered 20 s later. Bounded: at most
``max_connections`` connections and ``max_chunks`` chunks in flight per direction
(reading pauses beyond that). Listens on 127.0.0.1 only. Used by the e2e fencing tests.
"""

from __future__ import annotations

import asyncio
import contextlib

_CHUNK = 64 * 1024


class LatencyProxy:
    """Forward 127.0.0.1:<port> to ``target``, holding every chunk ``delay`` seconds."""

    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        delay: float = 0.0,
        max_connections: int = 32,
        max_chunks: int = 256,
    ) -> None:
        self.target = (target_host, target_port)
        self.delay = delay
        self.max_connections = max_connections
        self.max_chunks = max_chunks
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Listen on a free loopback port; returns it."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> LatencyProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._tasks) >= 2 * self.max_connections:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Copy ``source`` to ``sink``, each chunk sent ``delay`` seconds after it was read."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(self.max_chunks)

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not chunk:
                    return
                sink.write(chunk)
                await sink.drain()

        delivering = asyncio.create_task(deliver())
        try:
            while True:
                chunk = await source.read(_CHUNK)
                await queue.put((loop.time() + self.delay, chunk))
                if not chunk:  # EOF: delivered (and the sink closed) after the delay too
                    break
            await delivering
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await delivering
            sink.close()
