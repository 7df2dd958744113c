"""Whether the API server is answering, as the client last saw it, and a signal when an
outage ends.

:class:`~appstack.runtime.client.Client` reports every request here: one that could not
be sent or answered (a :class:`~appstack.runtime.errors.TransportError`) or was answered
429 or 503 marks the server *unavailable*; an answer below 500 marks it *available* again
and, if it was unavailable, calls the ``on_recovered`` callbacks once. Other 5xx answers
change nothing: a webhook that fails with 500 while the server is healthy is that
request's problem, not an outage.

Why: a reconcile that fails during an outage is retried with the key's exponential
backoff, which keeps growing while nothing can succeed (and across two outages in a row),
so after a long API-server or etcd restart some keys would wait minutes for their next
try. Each :class:`~appstack.runtime.controller.Controller` parks such keys and re-enqueues
them, backoff forgotten, from the callback: how long objects take to converge after an
outage is bounded by the outage, not by the backoff history. Pure (no I/O, no clock).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from appstack.runtime import errors

log = structlog.get_logger(__name__)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` says the API server could not serve anyone (not that this request
    was wrong): unreachable, a broken connection, 429 or 5xx."""
    if isinstance(error, errors.TransportError):
        return True
    return isinstance(error, errors.ApiError) and error.retryable


class Availability:
    """The API server's availability as the client's requests saw it."""

    def __init__(self) -> None:
        self.available = True
        self._recovered: list[Callable[[], None]] = []

    def on_recovered(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` every time the server answers again after being unavailable."""
        self._recovered.append(callback)

    def failed(self) -> None:
        """A request could not be sent or answered."""
        self.available = False

    def answered(self, status: int) -> None:
        """A request was answered with ``status``."""
        if status in (429, 503):
            self.available = False
        if status >= 500 or status == 429 or self.available:
            return
        self.available = True
        log.info("the API server answers again")
        for callback in self._recovered:
            callback()
