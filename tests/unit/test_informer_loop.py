"""The informer's loop survives malformed events and does not spin on empty streams.

A scripted stand-in for the client: these are properties of our loop, not of Kubernetes
(the real list/watch behaviour is covered by tests/e2e/test_informer.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from appstack.runtime import informer as informer_module
from appstack.runtime.informer import Informer
from appstack.runtime.resources import CONFIG_MAP


def _cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


class ScriptedClient:
    def __init__(self, streams: list[list[dict[str, Any]]]) -> None:
        self.streams = streams
        self.lists = 0
        self.watches = 0

    async def list(self, *_args: Any, **_kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        self.lists += 1
        return [_cm("a", "1")], "1"

    async def watch(self, *_args: Any, **_kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        self.watches += 1
        for event in self.streams.pop(0) if self.streams else []:
            yield event


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        recorded.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(informer_module.asyncio, "sleep", fake_sleep)
    return recorded


async def _run_until(informer: Informer, done: Any) -> None:
    task = asyncio.ensure_future(informer.run())
    for _ in range(1000):
        if done():
            break
        await asyncio.sleep(0)
    task.cancel()


async def test_a_malformed_event_leads_to_a_relist_not_a_dead_informer(
    sleeps: list[float],
) -> None:
    client = ScriptedClient(
        [
            [{"type": "MODIFIED", "object": {"no": "metadata"}}],
            [{"type": "ADDED", "object": _cm("b", "3")}],
        ]
    )
    informer = Informer(client, CONFIG_MAP)  # type: ignore[arg-type]
    await _run_until(informer, lambda: "ns/b" in informer.store)

    assert "ns/b" in informer.store
    assert client.lists == 2  # listed again after the bad event
    assert sleeps  # and backed off before doing so


async def test_watch_streams_that_end_at_once_and_empty_are_backed_off(
    sleeps: list[float],
) -> None:
    client = ScriptedClient([[], [], [], []])
    informer = Informer(client, CONFIG_MAP)  # type: ignore[arg-type]
    await _run_until(informer, lambda: client.watches >= 4)

    assert len(sleeps) >= 3
    assert sleeps[1] > sleeps[0] * 1.2  # growing: 0.5 s, 1 s, 2 s ... (with jitter)
