"""EventRecorder (runtime/events.py): what an Event says, how repeats fold into its series,
how many are sent at once and how fast while reconciles wait, what is dropped when too many
wait, and that no answer of the API server ever reaches the caller. Over a scripted transport;
tests/e2e/test_events.py has the same recorder against a real API server."""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import structlog

from appstack.runtime import errors, events
from appstack.runtime.apirequest import ApiRequest, Response, Timeouts
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack_testbed.waiting import eventually
from tests.support.scripted_transport import ScriptedTransport, scripted_client

EVENTS = "/apis/events.k8s.io/v1/namespaces/ns/events"
MERGE_PATCH = "application/merge-patch+json"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def _obj(name: str = "web", uid: str = "uid-web", namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": "7"}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "appstack.dev/v1", "kind": "AppService", "metadata": meta}


def _body(request: ApiRequest) -> dict[str, Any]:
    assert request.body is not None
    body: dict[str, Any] = orjson.loads(request.body)
    return body


def _requests(transport: ScriptedTransport) -> list[ApiRequest]:
    return [request for request, _ in transport.sent]


def _answered(transport: ScriptedTransport, count: int) -> ScriptedTransport:
    for _ in range(count):
        transport.answer(201, {})
    return transport


async def _flush(recorder: EventRecorder) -> None:
    # a recorder waiting for an answer that was never scripted would wait forever
    await asyncio.wait_for(recorder.flush(), 5)


class HeldTransport(ScriptedTransport):
    """The scripted transport, answering a request only once the test lets one through
    (:meth:`release`): what is in flight meanwhile can be counted, and when each was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0
        self.times: list[float] = []  # the loop's time of each request, as it is sent
        self._let_through = asyncio.Semaphore(0)

    def release(self, count: int = 1) -> None:
        for _ in range(count):
            self.answer(201, {})
            self._let_through.release()

    async def send(
        self, request: ApiRequest, timeouts: Timeouts, guard: Callable[[], float] | None = None
    ) -> Response:
        self.times.append(asyncio.get_running_loop().time())
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self._let_through.acquire()
            return await super().send(request, timeouts, guard)
        finally:
            self.in_flight -= 1


def _held() -> tuple[Client, HeldTransport]:
    transport = HeldTransport()
    return Client(transport), transport


def _dropped(client: Client) -> float:
    value: float = client.metrics.events_dropped._value.get()
    return value


# ------------------------------------------------------------------------ what is sent


async def test_recording_returns_before_anything_is_sent_then_one_event_describes_it() -> None:
    client, transport = scripted_client()
    _answered(transport, 1)
    recorder = EventRecorder(client, controller="example.com/widgets", instance="widgets-0")

    recorder.record(_obj(), "Warning", "InvalidSpec", "spec.image is empty", action="Validate")
    assert transport.sent == []  # nothing in the caller: the send is in the background
    await _flush(recorder)

    [request] = _requests(transport)
    assert (request.method, request.path) == ("POST", EVENTS)
    body = _body(request)
    name = body["metadata"].pop("name")
    assert re.fullmatch(r"web\.[0-9a-f]{16}", name)
    assert MICRO_TIME.match(body.pop("eventTime"))
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"namespace": "ns"},
        "reportingController": "example.com/widgets",
        "reportingInstance": "widgets-0",
        "action": "Validate",
        "reason": "InvalidSpec",
        "note": "spec.image is empty",
        "type": "Warning",
        "regarding": {
            "apiVersion": "appstack.dev/v1",
            "kind": "AppService",
            "name": "web",
            "namespace": "ns",
            "uid": "uid-web",
            "resourceVersion": "7",
        },
    }  # and no series: it happened once


async def test_event_returns_once_the_event_is_sent() -> None:
    client, transport = scripted_client()
    _answered(transport, 1)
    recorder = EventRecorder(client, instance="test")
    await asyncio.wait_for(recorder.event(_obj(), "Normal", "Created", "created"), 5)
    assert [r.method for r in _requests(transport)] == ["POST"]
    assert transport.remaining == 0  # answered, not only sent


async def test_the_reporter_defaults_to_the_programs_name_and_host_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/widget-operator"])
    monkeypatch.setattr(events.socket, "gethostname", lambda: "node-1")
    client, _ = scripted_client()
    recorder = EventRecorder(client)
    assert (recorder.controller, recorder.instance) == ("widget-operator", "widget-operator-node-1")
    # reportingInstance is at most 128 characters in the API
    assert len(EventRecorder(client, controller="c" * 200).instance) == 128


async def test_a_note_longer_than_the_apis_limit_is_cut_with_an_ellipsis() -> None:
    client, transport = scripted_client()
    _answered(transport, 1)
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj(), "Warning", "Failed", "x" * 5000)
    await _flush(recorder)
    note = _body(_requests(transport)[0])["note"]
    assert len(note) == 1024
    assert note == "x" * 1021 + "..."


async def test_events_about_a_cluster_scoped_object_go_to_the_default_namespace() -> None:
    client, transport = scripted_client()
    _answered(transport, 1)
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj("tenant-a", namespace=None), "Normal", "Enabled", "namespace enabled")
    await _flush(recorder)
    [request] = _requests(transport)
    assert request.path == "/apis/events.k8s.io/v1/namespaces/default/events"
    assert _body(request)["regarding"]["namespace"] is None


# ------------------------------------------------------------------------ repeats and series


async def test_repeats_queued_before_the_first_send_make_one_event_created_with_their_count() -> (
    None
):
    client, transport = scripted_client()
    _answered(transport, 1)
    recorder = EventRecorder(client, instance="test")
    for _ in range(3):  # no await in between: all before the sender runs
        recorder.record(_obj(), "Warning", "SyncFailed", "port 30002 is already taken")
    await _flush(recorder)

    [request] = _requests(transport)
    series = _body(request)["series"]
    assert series["count"] == 3
    assert MICRO_TIME.match(series["lastObservedTime"])


async def test_a_later_repeat_updates_the_series_of_the_event_already_created() -> None:
    client, transport = scripted_client()
    _answered(transport, 3)
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)

    create, first, second = _requests(transport)
    name = _body(create)["metadata"]["name"]
    for update, count in ((first, 2), (second, 3)):
        assert (update.method, update.path) == ("PATCH", f"{EVENTS}/{name}")
        assert update.content_type == MERGE_PATCH
        assert list(_body(update)) == ["series"]  # the rest of the Event is left as it is
        assert _body(update)["series"]["count"] == count
        assert MICRO_TIME.match(_body(update)["series"]["lastObservedTime"])


async def test_a_repeat_while_its_create_is_in_flight_follows_as_one_series_update() -> None:
    client, transport = _held()
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await eventually(lambda: transport.in_flight, timeout=5, what="the create in flight")
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    assert transport.in_flight == 1  # no second request yet
    assert transport.sent == []
    transport.release(2)
    await _flush(recorder)

    create, update = _requests(transport)
    assert "series" not in _body(create)  # it was sent as the first occurrence
    assert update.method == "PATCH"
    assert _body(update)["series"]["count"] == 3  # both repeats, in one update


async def test_events_differing_in_object_type_reason_action_or_note_are_not_folded() -> None:
    client, transport = scripted_client()
    _answered(transport, 6)
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj(), "Normal", "Created", "Deployment web")
    recorder.record(_obj(uid="uid-other"), "Normal", "Created", "Deployment web")
    recorder.record(_obj(), "Warning", "Created", "Deployment web")
    recorder.record(_obj(), "Normal", "Updated", "Deployment web")
    recorder.record(_obj(), "Normal", "Created", "Deployment web", action="Delete")
    recorder.record(_obj(), "Normal", "Created", "Service web")
    await _flush(recorder)
    requests = _requests(transport)
    assert [r.method for r in requests] == ["POST"] * 6
    assert all("series" not in _body(r) for r in requests)


async def test_a_repeat_after_the_series_window_starts_a_new_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(events, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    client, transport = scripted_client()
    _answered(transport, 3)
    recorder = EventRecorder(client, instance="test", series_window=60.0)
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)
    now[0] += 59.0
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")  # within: the series
    await _flush(recorder)
    now[0] += 1.0  # 60 s after the first occurrence
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)

    first, update, second = _requests(transport)
    assert [first.method, update.method, second.method] == ["POST", "PATCH", "POST"]
    assert _body(first)["metadata"]["name"] != _body(second)["metadata"]["name"]
    assert "series" not in _body(second)  # counted afresh


async def test_an_event_gone_from_the_server_is_created_again_with_a_fresh_count() -> None:
    client, transport = scripted_client()
    transport.answer(201, {})
    transport.answer(404, {"kind": "Status", "code": 404, "reason": "NotFound"})  # its TTL
    transport.answer(201, {})
    recorder = EventRecorder(client, instance="test")
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)
    recorder.record(_obj(), "Warning", "SyncFailed", "port taken")
    await _flush(recorder)

    create, update, again = _requests(transport)
    assert (update.method, again.method) == ("PATCH", "POST")
    assert _body(again)["metadata"]["name"] != _body(create)["metadata"]["name"]
    assert "series" not in _body(again)


async def test_beyond_max_tracked_the_least_recent_event_is_forgotten() -> None:
    client, transport = scripted_client()
    _answered(transport, 6)
    recorder = EventRecorder(client, instance="test", max_tracked=2)
    for reason in ("A", "B", "A", "C"):  # A repeated after B: B is now the least recent
        recorder.record(_obj(), "Normal", reason, "note")
        await _flush(recorder)
    recorder.record(_obj(), "Normal", "A", "note")  # still tracked: its series
    await _flush(recorder)
    recorder.record(_obj(), "Normal", "B", "note")  # forgotten: a new Event
    await _flush(recorder)
    sent = [(r.method, _body(r).get("reason")) for r in _requests(transport)]
    assert sent == [
        ("POST", "A"),
        ("POST", "B"),
        ("PATCH", None),
        ("POST", "C"),
        ("PATCH", None),
        ("POST", "B"),
    ]


# ------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("failure", "level"),
    [
        (lambda t: t.answer(500, {"kind": "Status", "code": 500}), "warning"),
        (lambda t: t.answer(403, {"kind": "Status", "code": 403}), "warning"),
        (lambda t: t.fail(errors.TransportError("connection refused")), "warning"),
        (lambda t: t.fail(RuntimeError("a surprise")), "error"),  # with its traceback
    ],
    ids=["server-error", "forbidden", "transport", "unexpected"],
)
async def test_a_failed_send_is_logged_never_raised_and_the_next_event_is_still_sent(
    failure: Callable[[ScriptedTransport], object], level: str
) -> None:
    client, transport = scripted_client()
    failure(transport)
    _answered(transport, 1)
    recorder = EventRecorder(client, instance="test", senders=1)
    with structlog.testing.capture_logs() as logs:
        recorder.record(_obj(), "Warning", "First", "lost")
        recorder.record(_obj(), "Normal", "Second", "sent")
        await _flush(recorder)
    assert [_body(r)["reason"] for r in _requests(transport)] == ["First", "Second"]
    assert transport.remaining == 0
    failures = [e for e in logs if e["event"] == "could not record event"]
    assert [(e["reason"], e["log_level"]) for e in failures] == [("First", level)]


async def test_a_full_queue_drops_new_events_counts_them_and_warns_once_per_burst() -> None:
    client, transport = _held()
    recorder = EventRecorder(client, instance="test", senders=1, max_pending=2)
    before = _dropped(client)
    with structlog.testing.capture_logs() as logs:
        for i in range(5):  # two wait, three are dropped
            recorder.record(_obj(), "Normal", "Step", f"step {i}")
        assert _dropped(client) == before + 3
        transport.release(2)
        await _flush(recorder)
        for i in range(5, 9):  # a second burst: two more dropped, warned again
            recorder.record(_obj(), "Normal", "Step", f"step {i}")
        transport.release(2)
        await _flush(recorder)
    notes = [_body(r)["note"] for r in _requests(transport)]
    assert notes == ["step 0", "step 1", "step 5", "step 6"]
    assert _dropped(client) == before + 5
    warnings = [e for e in logs if e["event"] == "too many events waiting, dropping"]
    assert len(warnings) == 2


async def test_a_dropped_event_is_not_remembered_so_its_repeat_is_a_first_occurrence() -> None:
    client, transport = _held()
    recorder = EventRecorder(client, instance="test", senders=1, max_pending=1)
    recorder.record(_obj(), "Normal", "Step", "kept")
    recorder.record(_obj(), "Normal", "Step", "dropped")
    transport.release()
    await _flush(recorder)
    recorder.record(_obj(), "Normal", "Step", "dropped")
    transport.release()
    await _flush(recorder)
    sent = [(r.method, _body(r)["note"], "series" in _body(r)) for r in _requests(transport)]
    assert sent == [("POST", "kept", False), ("POST", "dropped", False)]  # counted once


# ------------------------------------------------------------------------ pacing


async def test_at_most_senders_requests_are_in_flight_at_once() -> None:
    client, transport = _held()
    recorder = EventRecorder(client, instance="test", senders=3)
    for i in range(7):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    await eventually(lambda: transport.in_flight, lambda n: n == 3, timeout=5, what="3 sends")
    transport.release(7)
    await _flush(recorder)
    assert len(transport.sent) == 7
    assert transport.most_in_flight == 3


async def test_while_reconciles_wait_one_sender_sends_one_event_per_interval() -> None:
    client, transport = _held()
    transport.release(4)  # answered at once: only the pacing holds them
    recorder = EventRecorder(
        client, instance="test", senders=4, busy=lambda: True, busy_interval=0.1
    )
    started = asyncio.get_running_loop().time()
    for i in range(4):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    await _flush(recorder)
    assert transport.most_in_flight == 1
    sent = [started, *transport.times]
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    assert len(gaps) == 4
    assert min(gaps) >= 0.09, gaps  # the first waits too: the writes go first


async def test_senders_beyond_one_stop_once_reconciles_start_waiting() -> None:
    waiting = False
    client, transport = _held()
    recorder = EventRecorder(
        client, instance="test", senders=3, busy=lambda: waiting, busy_interval=0.1
    )
    for i in range(7):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    await eventually(lambda: transport.in_flight, lambda n: n == 3, timeout=5, what="3 sends")
    waiting = True
    transport.release(7)  # the three in flight and the four after them, answered at once
    await _flush(recorder)
    assert len(transport.times) == 7
    later = transport.times[2:]  # from the last of the three sent together
    gaps = [b - a for a, b in itertools.pairwise(later)]
    assert min(gaps) >= 0.09, gaps  # one sender, pacing: not three at once


async def test_while_reconciles_wait_a_half_full_queue_is_sent_without_pausing() -> None:
    client, transport = _held()
    transport.release(4)
    recorder = EventRecorder(
        client, instance="test", max_pending=4, busy=lambda: True, busy_interval=600
    )
    for i in range(4):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    # three are sent while at least half of max_pending wait; the last one then waits
    # busy_interval, past close's deadline
    await eventually(lambda: len(transport.sent), lambda n: n == 3, timeout=5, what="3 sent")
    await asyncio.wait_for(recorder.close(timeout=0.2), 5)
    assert len(transport.sent) == 3


# ------------------------------------------------------------------------ shutdown


async def test_close_sends_what_is_queued() -> None:
    client, transport = scripted_client()
    _answered(transport, 3)
    recorder = EventRecorder(client, instance="test", senders=1)
    for i in range(3):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    await asyncio.wait_for(recorder.close(), 5)
    assert [_body(r)["note"] for r in _requests(transport)] == [f"child {i}" for i in range(3)]


async def test_close_gives_up_at_its_deadline_and_leaves_nothing_running() -> None:
    client, transport = _held()  # never answers
    recorder = EventRecorder(client, instance="test", senders=2)
    for i in range(3):
        recorder.record(_obj(), "Normal", "Created", f"child {i}")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(recorder.close(timeout=0.2), 5)
    assert 0.2 <= loop.time() - started < 2
    assert transport.in_flight == 0  # the senders were cancelled
    await asyncio.wait_for(recorder.flush(), 1)  # and nothing is left queued
