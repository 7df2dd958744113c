"""A TCP proxy for fault injection: put it between a client and the API server, then break
the network on purpose.

* :meth:`TcpProxy.black_hole` — connections already established stop carrying bytes in
  either direction but stay open: the peer neither answers nor closes (a half-open
  connection, as behind a NAT or load balancer that dropped its state);
* ``accept_new=False`` — new connections are accepted and then ignored, so a client hangs in
  its TCP/TLS handshake (a connect timeout must end it);
* ``connect=True`` — it is an HTTP ``CONNECT`` proxy (kubeconfig ``proxy-url``) instead of a
  fixed forwarder.

:func:`api_server` reads the address a kubeconfig's API server is at (what the proxy forwards
to); :func:`proxied_kubeconfig` writes a copy of a kubeconfig whose server is the proxy. Plain
asyncio streams; used by tests/e2e/test_connections.py and tests/e2e/test_watch_stall.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


class TcpProxy:
    """Forwards 127.0.0.1:``port`` (or any ``CONNECT`` target) to ``target``, with faults."""

    def __init__(
        self,
        target: tuple[str, int] | None,
        *,
        host: str = "127.0.0.1",
        connect: bool = False,
    ) -> None:
        self.target = target
        self.host = host
        self.connect = connect
        self.port = 0
        self.accept_new = True
        self.accepted = 0  # connections accepted so far
        self.peer_ports: list[int] = []  # the clients' local ports, one per connection
        self._server: asyncio.base_events.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._blocked: set[asyncio.StreamWriter] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for task in self._pipes:
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def __aenter__(self) -> TcpProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def black_hole(self) -> None:
        """Established connections go silent both ways and stay open; new ones still work."""
        self._blocked.update(self._writers)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.peer_ports.append(int(writer.get_extra_info("peername")[1]))
        self._writers.add(writer)
        if not self.accept_new:
            self._blocked.add(writer)
            return  # never read, never answer, never close
        try:
            target = await self._target(reader, writer)
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        except (OSError, ValueError):
            writer.close()
            return
        self._writers.add(upstream_writer)
        for source, sink, owner in (
            (reader, upstream_writer, writer),
            (upstream_reader, writer, writer),
        ):
            task = asyncio.ensure_future(self._pipe(source, sink, owner))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _target(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[str, int]:
        if not self.connect:
            assert self.target is not None  # noqa: S101 - a forwarder has a target
            return self.target
        request = await reader.readuntil(b"\r\n\r\n")
        method, authority, _ = request.split(b"\r\n", 1)[0].decode().split(" ", 2)
        if method != "CONNECT":
            raise ValueError(f"not a CONNECT request: {method}")
        host, _, port = authority.rpartition(":")
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        return host.strip("[]"), int(port)

    async def _pipe(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        client: asyncio.StreamWriter,
    ) -> None:
        try:
            while data := await source.read(65536):
                if client in self._blocked:
                    await asyncio.Event().wait()  # swallow everything from now on
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if client not in self._blocked:
                with contextlib.suppress(OSError):
                    sink.close()


def api_server(kubeconfig: Path) -> tuple[str, int]:
    """The host and port of the API server of ``kubeconfig``'s first cluster."""
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    parts = urlsplit(server)
    return str(parts.hostname), int(parts.port or 443)


def proxied_kubeconfig(source: Path, dest: Path, proxy: TcpProxy, **cluster: Any) -> Path:
    """A copy of ``source`` whose clusters' server is ``proxy`` (a forwarder), or — for a
    ``CONNECT`` proxy — which keeps the server and adds ``proxy-url``. ``cluster`` adds or
    overrides cluster fields (e.g. ``{"tls-server-name": "localhost"}``)."""
    config = yaml.safe_load(source.read_text())
    for entry in config["clusters"]:
        settings = entry["cluster"]
        if proxy.connect:
            settings["proxy-url"] = f"http://{proxy.host}:{proxy.port}"
        else:
            settings["server"] = f"https://{proxy.host}:{proxy.port}"
        settings.update(cluster)
    dest.write_text(yaml.safe_dump(config))
    return dest
