"""A TCP forwarder: ``python -m appstack_testbed.forward LISTEN=TARGET ...``.

The control plane and the image registry listen on 127.0.0.1 only; a real node lives in a
network namespace of its own and reaches the host through its cluster's gateway address
(:mod:`appstack_testbed.realnode.addressing`). One forwarder per cluster listens there —
``10.120.<k>.1:<API server port>`` and ``10.120.<k>.1:5000`` — and forwards each connection
to the loopback address behind it, so that nothing but the nodes can reach them. It is a
managed process of the cluster (:mod:`appstack_testbed.cluster`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


def parse(argument: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """``10.120.0.1:5000=127.0.0.1:23456`` -> ((listen host, port), (target host, port))."""
    listen, target = argument.split("=", 1)
    lhost, lport = listen.rsplit(":", 1)
    thost, tport = target.rsplit(":", 1)
    return (lhost, int(lport)), (thost, int(tport))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def _handler(target: tuple[str, int]):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    return handle


async def serve(pairs: list[tuple[tuple[str, int], tuple[str, int]]]) -> None:
    servers = [await asyncio.start_server(_handler(t), *listen) for listen, t in pairs]
    for server in servers:
        print(f"forwarding {server.sockets[0].getsockname()}", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m appstack_testbed.forward LISTEN_HOST:PORT=TARGET_HOST:PORT ...")
    asyncio.run(serve([parse(a) for a in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
