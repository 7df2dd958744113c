"""appstack's operator says who it is (the runtime names no product, issue #35): the same
names the runtime had as defaults before, so managedFields owners, Events and metric names
are unchanged for dashboards, alerts, installs and the e2e tests."""

from __future__ import annotations

from typing import Any

import pytest

from appstack import operator
from appstack.runtime import Client
from tests.support.scripted_transport import ScriptedTransport


def test_the_operator_passes_the_identity_the_runtime_had() -> None:
    # Byte-identical to before the runtime lost its defaults: managedFields owners, Events'
    # reportingController, metric names (dashboards, alerts and the e2e tests read them).
    assert operator.FIELD_MANAGER == "appstack"
    assert operator.EVENT_SOURCE == "appstack.dev/operator"
    assert operator.METRIC_PREFIX == "appstack"


class _Built(Exception):
    """Raised by the stand-in EventRecorder: the operator is assembled far enough."""


async def test_the_operator_gives_its_identity_to_the_client_events_and_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connected: list[dict[str, Any]] = []
    recorded: list[dict[str, Any]] = []

    async def connect(kubeconfig: str | None = None, **kwargs: Any) -> Client:
        connected.append(kwargs)
        options = {k: v for k, v in kwargs.items() if k in {"field_manager", "metrics"}}
        return Client(ScriptedTransport(), **options)

    async def served(client: Client) -> None:
        return None

    def recorder(client: Client, **kwargs: Any) -> None:
        recorded.append({"client": client, **kwargs})
        raise _Built

    monkeypatch.setattr(operator.Client, "connect", connect)
    monkeypatch.setattr(operator, "require_crds", served)
    monkeypatch.setattr(operator, "limit_tls_read_buffer", lambda: None)  # process-wide
    monkeypatch.setattr(operator, "EventRecorder", recorder)
    options = operator.OperatorOptions(metrics_address=None, health_address=None)
    with pytest.raises(_Built):
        await operator._run(options)

    [kwargs] = connected
    assert kwargs["field_manager"] == "appstack"
    assert kwargs["metrics"].prefix == "appstack"
    assert kwargs["user_agent"].startswith("appstack/")
    [event_source] = recorded
    assert event_source["controller"] == "appstack.dev/operator"
    assert event_source["client"].field_manager == "appstack"
