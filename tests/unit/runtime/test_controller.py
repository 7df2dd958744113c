"""The reconcile loop: outcomes, retries, requeue_after, resync, and log context."""

from __future__ import annotations

import asyncio
import collections
import json

import pytest
import structlog

from appstack.runtime import logging as rt_logging
from appstack.runtime.controller import Controller, Request, Result
from appstack.runtime.errors import Conflict, TerminalError, TransportError
from appstack_testbed.waiting import eventually

log = structlog.get_logger("test")


class Scripted:
    """Returns (or raises) the next scripted outcome for each key."""

    def __init__(self, script: dict[str, list[object]]) -> None:
        self.script = script
        self.calls: collections.Counter[str] = collections.Counter()

    async def reconcile(self, request: Request) -> Result | None:
        self.calls[request.name] += 1
        log.info("reconciling")
        outcomes = self.script.get(request.name, [])
        outcome = outcomes.pop(0) if outcomes else None
        if isinstance(outcome, Exception):
            raise outcome
        return outcome  # type: ignore[return-value]


async def _run(controller: Controller, until: object, timeout: float = 5) -> None:
    await controller.start()
    try:
        await eventually(until, timeout=timeout, what="the expected reconciles")  # type: ignore[arg-type]
    finally:
        await controller.stop()


async def test_an_error_is_retried_with_backoff_and_success_forgets_the_backoff() -> None:
    reconciler = Scripted({"flaky": [RuntimeError("1"), RuntimeError("2"), None]})
    controller = Controller("c", reconciler)
    controller.enqueue(Request("ns", "flaky"))
    await _run(controller, lambda: reconciler.calls["flaky"] == 3)
    assert controller.queue.num_requeues(Request("ns", "flaky")) == 0
    assert controller.metrics.reconcile_errors.labels("c")._value.get() == 2
    assert controller.metrics.reconcile_total.labels("c", "success")._value.get() == 1


async def test_a_failure_the_api_server_explains_is_logged_without_a_traceback() -> None:
    """A timeout, a refusal or a dropped connection is the API server's answer (a tenant's
    huge objects made their status writes time out, issue #46): one line with the error;
    a traceback only for what no request explains, a bug."""
    reconciler = Scripted(
        {
            "answered": [TransportError("PATCH /x: Server disconnected"), None],
            "refused": [Conflict(409, "Conflict", "the object has been modified"), None],
            "bug": [KeyError("spec"), None],
        }
    )
    controller = Controller("c", reconciler, concurrency=3)
    for name in reconciler.script:
        controller.enqueue(Request("ns", name))
    with structlog.testing.capture_logs() as logs:
        await _run(controller, lambda: all(reconciler.calls[n] == 2 for n in reconciler.script))
    failed = {e["error_type"]: e for e in logs if e["event"] == "reconcile failed"}
    assert failed.keys() == {"TransportError", "Conflict", "KeyError"}
    assert failed["TransportError"].get("exc_info") is None
    assert failed["Conflict"].get("exc_info") is None
    assert isinstance(failed["KeyError"]["exc_info"], KeyError)


async def test_requeue_after_looks_again_later_and_other_keys_are_not_blocked() -> None:
    reconciler = Scripted({"later": [Result(requeue_after=0.2)], "now": [None]})
    controller = Controller("c", reconciler, concurrency=2)
    controller.enqueue(Request("ns", "later"))
    controller.enqueue(Request("ns", "now"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await _run(controller, lambda: reconciler.calls["later"] == 2)
    assert loop.time() - started >= 0.2
    assert reconciler.calls["now"] == 1


async def test_periodic_resync_reenqueues_every_known_object() -> None:
    reconciler = Scripted({})
    controller = Controller(
        "c",
        reconciler,
        resync_period=0.05,
        resync_source=lambda: [Request("ns", "a"), Request("ns", "b")],
    )
    await _run(controller, lambda: reconciler.calls["a"] >= 2 and reconciler.calls["b"] >= 2)


async def test_reconcile_log_lines_carry_the_object_and_a_reconcile_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rt_logging.configure("json")  # bound to pytest's captured stderr: undone below
    try:
        reconciler = Scripted({})
        controller = Controller("widgets", reconciler)
        controller.enqueue(Request("ns", "w1"))
        controller.enqueue(Request("ns", "w2"))
        await _run(controller, lambda: len(reconciler.calls) == 2)
    finally:
        structlog.reset_defaults()

    lines = [
        json.loads(line) for line in capsys.readouterr().err.splitlines() if '"reconciling"' in line
    ]
    assert {line["object"] for line in lines} == {"ns/w1", "ns/w2"}
    assert all(line["controller"] == "widgets" for line in lines)
    assert len({line["reconcile_id"] for line in lines}) == 2


async def test_a_terminal_error_is_counted_but_not_retried_until_the_next_event() -> None:
    reconciler = Scripted({"bad": [RuntimeError("transient"), TerminalError("spec.x is empty")]})
    controller = Controller("c", reconciler)
    bad = Request("ns", "bad")
    controller.enqueue(bad)
    await controller.start()
    try:
        terminal = controller.metrics.terminal_reconcile_errors.labels("c")
        await eventually(lambda: terminal._value.get() == 1, timeout=30, what="a terminal error")
        # Not requeued: nothing waits in the delayed heap and the backoff is forgotten.
        assert controller.queue.num_requeues(bad) == 0
        assert not controller.queue._waiting
        assert len(controller.queue) == 0
        assert reconciler.calls["bad"] == 2
        # A later event (or a resync) reconciles it again.
        controller.enqueue(bad)
        await eventually(
            lambda: reconciler.calls["bad"] == 3, timeout=30, what="bad reconciled again"
        )
    finally:
        await controller.stop()
    assert controller.metrics.reconcile_errors.labels("c")._value.get() == 2
    assert controller.metrics.reconcile_total.labels("c", "error")._value.get() == 2
    assert controller.metrics.reconcile_total.labels("c", "success")._value.get() == 1
