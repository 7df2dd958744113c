"""A :class:`~appstack.runtime.apirequest.Transport` that answers from a script, for unit tests
of the client and the watcher without a server (the real server is in tests/e2e)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import orjson

from appstack.runtime.apirequest import ApiRequest, Response, Timeouts
from appstack.runtime.client import Client
from appstack.runtime.clock import Clock


class ScriptedTransport:
    """Answers each request with the next scripted answer; waits forever once out of answers
    (a test stops the loop under test before that)."""

    host = "scripted:6443"

    def __init__(self) -> None:
        self.sent: list[tuple[ApiRequest, Timeouts]] = []
        self._answers: deque[Response | Exception] = deque()
        self.closed = False
        self.open_streams = 0  # streams being read: started and not yet ended or closed

    def answer(
        self,
        status: int = 200,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        warnings: tuple[str, ...] = (),
    ) -> ScriptedTransport:
        """The next answer; ``warnings``: its ``Warning:`` header values."""
        data = body if isinstance(body, bytes) else orjson.dumps(body) if body is not None else b""
        self._answers.append(Response(status, dict(headers or {}), data, warnings=warnings))
        return self

    def page(self, names: list[str], rv: str, token: str | None = None) -> ScriptedTransport:
        """A LIST page of ConfigMaps called ``names``."""
        meta: dict[str, Any] = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
        return self.answer(body={"items": [cm(n, rv) for n in names], "metadata": meta})

    def stream(
        self, *items: dict[str, Any] | bytes | Exception, hold: bool = False
    ) -> ScriptedTransport:
        """A watch answer: each event (a dict, or a raw line) in turn; an exception is raised
        from the stream where it stands; then the stream ends (or, with ``hold``, stays open
        and silent)."""
        self._answers.append(Response(200, {}, lines=self._lines(items, hold)))
        return self

    async def _lines(
        self, items: tuple[dict[str, Any] | bytes | Exception, ...], hold: bool
    ) -> AsyncGenerator[bytes, None]:
        self.open_streams += 1
        try:
            for item in items:
                if isinstance(item, Exception):
                    raise item
                yield item if isinstance(item, bytes) else orjson.dumps(item)
            if hold:
                await asyncio.Event().wait()
        finally:
            self.open_streams -= 1

    def fail(self, error: Exception) -> ScriptedTransport:
        """No answer at all: ``send`` raises ``error`` (a TransportError)."""
        self._answers.append(error)
        return self

    @property
    def remaining(self) -> int:
        return len(self._answers)

    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        if guard is not None:
            guard()  # as the real transport: right before sending
        self.sent.append((request, timeouts))
        if not self._answers:
            await asyncio.Event().wait()
        answer = self._answers.popleft()
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def close(self) -> None:
        self.closed = True


def cm(name: str, rv: str, namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return event("BOOKMARK", {"kind": "ConfigMap", "metadata": {"resourceVersion": rv}})


class RecordingClock:
    """A clock whose ``sleep`` records the delay, moves time on by it and returns at once."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start
        self.slept: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.time += max(0.0, seconds)
        await asyncio.sleep(0)


def scripted_client(
    clock: Clock | None = None, *, field_manager: str | None = None
) -> tuple[Client, ScriptedTransport]:
    transport = ScriptedTransport()
    return Client(transport, clock=clock, field_manager=field_manager), transport
