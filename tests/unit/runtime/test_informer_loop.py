"""The informer's loop survives malformed events and does not spin on empty streams.

A scripted transport under a real client, and a clock that records the backoff: these are
properties of our loop, not of Kubernetes (the real list/watch behaviour is covered by
tests/e2e/test_informer.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from appstack.runtime.errors import WatchStalled
from appstack.runtime.informer import Informer
from appstack.runtime.resources import CONFIG_MAP
from appstack.runtime.watcher import Streaming, Watching
from tests.support.scripted_transport import (
    RecordingClock,
    ScriptedTransport,
    cm,
    event,
    scripted_client,
)


def _count(transport: ScriptedTransport, *, watch: bool) -> int:
    return sum(1 for request, _ in transport.sent if request.stream == watch)


async def _run_until(informer: Informer, done: Callable[[], bool]) -> None:
    task = asyncio.ensure_future(informer.run())
    for _ in range(1000):
        if done():
            break
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_malformed_event_leads_to_a_relist_not_a_dead_informer() -> None:
    clock = RecordingClock()
    client, transport = scripted_client()
    transport.page(["a"], "1").stream(event("MODIFIED", {"no": "metadata"}))
    transport.page(["a"], "1").stream(event("ADDED", cm("b", "3")))
    informer = Informer(client, CONFIG_MAP, clock=clock)
    await _run_until(informer, lambda: "ns/b" in informer.store)

    assert "ns/b" in informer.store
    assert _count(transport, watch=False) == 2  # listed again after the bad event
    assert clock.slept  # and backed off before doing so


async def test_watch_streams_that_end_at_once_and_empty_are_backed_off() -> None:
    clock = RecordingClock()
    client, transport = scripted_client()
    transport.page(["a"], "1").stream().stream().stream().stream()
    informer = Informer(client, CONFIG_MAP, clock=clock)
    await _run_until(informer, lambda: _count(transport, watch=True) >= 4)

    sleeps = clock.slept
    assert len(sleeps) >= 3
    assert sleeps[1] > sleeps[0] * 1.2  # growing: 0.5 s, 1 s, 2 s ... (with jitter)


async def test_a_cancelled_informer_closes_its_stream_and_resumes_watching_where_it_was() -> None:
    client, transport = scripted_client()
    transport.page(["a"], "1").stream(event("ADDED", cm("b", "3")), hold=True)
    informer = Informer(client, CONFIG_MAP, clock=RecordingClock())
    await _run_until(informer, lambda: isinstance(informer.state, Streaming))
    assert transport.open_streams == 0
    assert informer.state == Watching("3")
    assert informer.resource_version == "3"

    transport.stream(event("ADDED", cm("c", "4")))
    await _run_until(informer, lambda: "ns/c" in informer.store)
    assert _count(transport, watch=False) == 1  # no second LIST
    watches = [request for request, _ in transport.sent if request.stream]
    assert watches[1].params["resourceVersion"] == "3"


async def test_a_quiet_watch_is_opened_again_from_where_it_was_without_a_warning() -> None:
    """A server sends no bookmark for a resource nobody changed (Kubernetes 1.30): the watch
    goes quiet past the inactivity timeout. That is routine: the watch is opened again from
    the same resourceVersion, with no re-list and nothing logged above debug."""
    clock = RecordingClock()
    client, transport = scripted_client()
    transport.page(["a"], "7").stream(WatchStalled("no watch event for 90s"))
    transport.stream(event("ADDED", cm("b", "8")), hold=True)
    informer = Informer(client, CONFIG_MAP, clock=clock)
    with structlog.testing.capture_logs() as logs:
        await _run_until(informer, lambda: "ns/b" in informer.store)

    assert "ns/b" in informer.store
    assert _count(transport, watch=False) == 1  # no re-list
    watches = [r for r, _ in transport.sent if r.stream]
    assert [dict(r.params).get("resourceVersion") for r in watches] == ["7", "7"]
    assert informer.stalls == 1
    assert [e["event"] for e in logs if e["log_level"] != "debug"] == []
