"""The informer's loop survives malformed events and does not spin on empty streams, nor on
a kind the API server no longer serves (emptied, reported once, listed again when served).

A scripted transport under a real client, and a clock that records the backoff: these are
properties of our loop, not of Kubernetes (the real list/watch behaviour is covered by
tests/e2e/test_informer.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from appstack.runtime.client import Client
from appstack.runtime.errors import WatchStalled
from appstack.runtime.informer import FuncHandler, Informer
from appstack.runtime.resources import CONFIG_MAP, Resource
from appstack.runtime.watcher import Streaming, Unserved, Watching
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


NOT_FOUND = {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}


class Waiter:
    """An ``until_served`` that counts its calls; it answers False at once, or — given
    ``served`` — waits for that event and answers True."""

    def __init__(self, served: asyncio.Event | None = None) -> None:
        self.served = served
        self.calls = 0

    async def __call__(self, _client: Client, _resource: Resource) -> bool:
        self.calls += 1
        if self.served is None:
            return False
        await self.served.wait()
        return True


async def _until(done: Callable[[], bool]) -> None:
    for _ in range(1000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("not reached")


def _served_gauge(client: Client) -> float | None:
    return client.metrics.registry.get_sample_value(
        "informer_kind_served", {"resource": str(CONFIG_MAP)}
    )


async def test_a_kind_no_longer_served_is_emptied_then_listed_afresh_when_served_again() -> None:
    clock = RecordingClock()
    client, transport = scripted_client()
    deleted: list[str] = []
    added: list[str] = []
    # listed, then the watch is refused (404) and so is the LIST that follows: the CRD went
    transport.page(["a", "b"], "1").answer(404, NOT_FOUND).answer(404, NOT_FOUND)
    transport.page(["c"], "9")  # once it is served again
    served = asyncio.Event()
    waiter = Waiter(served)
    informer = Informer(client, CONFIG_MAP, clock=clock, until_served=waiter)
    informer.add_handler(
        FuncHandler(
            add=lambda obj: added.append(obj["metadata"]["name"]),
            delete=lambda obj: deleted.append(obj["metadata"]["name"]),
        )
    )
    running = asyncio.ensure_future(informer.run())
    try:
        await _until(lambda: waiter.calls == 1)
        assert informer.served is False
        assert list(informer.store) == []  # nothing stale is served
        assert sorted(deleted) == ["a", "b"]  # and the handlers were told
        assert informer.has_synced()
        assert isinstance(informer.state, Unserved)
        assert _served_gauge(client) == 0
        slept = len(clock.slept)

        served.set()  # the CRD serves the kind again
        await _until(lambda: "ns/c" in informer.store)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert waiter.calls == 1
    assert informer.served is True
    assert _served_gauge(client) == 1
    assert len(clock.slept) == slept  # listed at once, not after the backoff
    assert added == ["a", "b", "c"]
    assert _count(transport, watch=False) == 3


async def test_a_kind_that_stays_unserved_is_asked_about_with_growing_backoff_not_a_loop() -> None:
    clock = RecordingClock()
    client, transport = scripted_client()
    for _ in range(6):
        transport.answer(404, NOT_FOUND)
    waiter = Waiter()  # tells nothing (e.g. not allowed to read the CRD): False at once
    informer = Informer(client, CONFIG_MAP, clock=clock, until_served=waiter)
    await _run_until(informer, lambda: transport.remaining == 0 and waiter.calls >= 6)

    assert informer.served is False
    assert len(clock.slept) >= 5
    assert all(
        later > earlier for earlier, later in zip(clock.slept, clock.slept[1:], strict=False)
    )


async def test_a_kind_gone_is_reported_once_not_on_every_retry() -> None:
    client, transport = scripted_client()
    for _ in range(4):
        transport.answer(404, NOT_FOUND)
    waiter = Waiter()
    informer = Informer(client, CONFIG_MAP, clock=RecordingClock(), until_served=waiter)
    with structlog.testing.capture_logs() as logs:
        await _run_until(informer, lambda: transport.remaining == 0 and waiter.calls >= 4)
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert [entry["event"][:17] for entry in warnings] == ["kind not served ("]
