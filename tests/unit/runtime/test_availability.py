"""An outage ends: keys that failed while the API server did not answer are retried at
once (backoff forgotten), not after the backoff they piled up; a request's own 500 while
the server answers others is ordinary backoff."""

from __future__ import annotations

import pytest

from appstack.runtime import controller as controller_module
from appstack.runtime.availability import Availability, is_outage
from appstack.runtime.controller import Controller, Request
from appstack.runtime.errors import Conflict, ServerError, TooManyRequests, TransportError
from appstack_testbed.waiting import eventually
from tests.unit.runtime.test_controller import Scripted


def test_what_counts_as_an_outage() -> None:
    assert is_outage(TransportError("GET /: connection refused"))
    assert is_outage(TooManyRequests(429, "TooManyRequests", "storage is (re)initializing"))
    assert is_outage(ServerError(503, "ServiceUnavailable", "etcd"))
    assert not is_outage(Conflict(409, "Conflict", "stale"))
    assert not is_outage(RuntimeError("a bug"))


def test_availability_flips_on_outages_and_calls_back_once_per_recovery() -> None:
    availability = Availability()
    recovered: list[int] = []
    availability.on_recovered(lambda: recovered.append(1))
    availability.answered(200)
    assert availability.available
    assert recovered == []
    availability.answered(500)  # one request's failure (a webhook): not an outage
    assert availability.available
    availability.failed()
    availability.answered(504)  # still down
    availability.answered(429)
    assert not availability.available
    assert recovered == []
    availability.answered(403)  # an answer: the server is back
    availability.answered(200)
    assert availability.available
    assert recovered == [1]
    availability.answered(503)
    availability.answered(201)
    assert recovered == [1, 1]


class AnHourLater:
    """A key's backoff after any failure: an hour (as a long outage leaves it)."""

    def __init__(self) -> None:
        self.failures: dict[object, int] = {}

    def when(self, item: object) -> float:
        self.failures[item] = self.failures.get(item, 0) + 1
        return 3600.0

    def forget(self, item: object) -> None:
        self.failures.pop(item, None)

    def retries(self, item: object) -> int:
        return self.failures.get(item, 0)


async def test_keys_that_failed_in_an_outage_are_retried_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(controller_module, "RECOVERY_INTERVAL", 0.0)
    down = TransportError("PATCH /x: connection refused")
    reconciler = Scripted({"a": [down], "webhook": [ServerError(500, "Internal", "x")]})
    availability = Availability()
    controller = Controller("c", reconciler, availability=availability)
    controller.queue.rate_limiter = AnHourLater()
    await controller.start()
    try:
        # A 500 while the server answers is that request's problem: plain backoff.
        controller.enqueue(Request("ns", "webhook"))
        await eventually(lambda: reconciler.calls["webhook"] == 1, timeout=2, what="webhook")
        availability.failed()  # the client saw the server go
        controller.enqueue(Request("ns", "a"))
        await eventually(
            lambda: controller.queue.num_requeues(Request("ns", "a")) == 1,
            timeout=2,
            what="a requeued",
        )
        availability.answered(200)  # back: "a" is retried now, not in an hour
        await eventually(lambda: reconciler.calls["a"] == 2, timeout=2, what="a retried")
        await eventually(
            lambda: controller.queue.num_requeues(Request("ns", "a")) == 0,
            timeout=2,
            what="a's backoff forgotten",
        )
        assert reconciler.calls["webhook"] == 1
        assert controller.queue.num_requeues(Request("ns", "webhook")) == 1
    finally:
        await controller.stop()
