"""appstack's operator says who it is (the runtime and the SDK name no product, issue #35):
the same names the runtime had as defaults before, so managedFields owners, Events and
metric names are unchanged for dashboards, alerts, installs and the e2e tests — passed by
the SDK's assembly from appstack's identity."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.api.identity import IDENTITY
from appstack.controllers.registry import ALL
from appstack.runtime import Client
from appstack.sdk import operator
from appstack.sdk.options import OperatorOptions
from tests.support.scripted_transport import ScriptedTransport


def test_appstacks_identity_is_the_one_the_runtime_had() -> None:
    # Byte-identical to before the runtime lost its defaults: managedFields owners, Events'
    # reportingController, metric names (dashboards, alerts and the e2e tests read them).
    assert IDENTITY.field_manager == "appstack"
    assert IDENTITY.event_source == "appstack.dev/operator"
    assert IDENTITY.metric_prefix == "appstack"
    assert IDENTITY.lease_name == "appstack-operator"


class _Built(Exception):
    """Raised by the stand-in EventRecorder: the operator is assembled far enough."""


async def test_the_assembly_gives_the_identity_to_the_client_events_and_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connected: list[dict[str, Any]] = []
    recorded: list[dict[str, Any]] = []

    async def connect(
        kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Client:
        connected.append(kwargs)
        options = {k: v for k, v in kwargs.items() if k in {"field_manager", "metrics"}}
        return Client(ScriptedTransport(), **options)

    async def served(*_args: Any) -> None:
        return None

    def recorder(client: Client, **kwargs: Any) -> None:
        recorded.append({"client": client, **kwargs})
        raise _Built

    monkeypatch.setattr(operator.Client, "connect", connect)
    monkeypatch.setattr(operator, "require_crds", served)
    monkeypatch.setattr(operator, "tune_connections", lambda: None)  # process-wide
    monkeypatch.setattr(operator, "EventRecorder", recorder)
    options = OperatorOptions(metrics_address=None, health_address=None)
    with pytest.raises(_Built):
        await operator.serve(ALL, IDENTITY, options, version="1.2.3")

    [kwargs] = connected
    assert kwargs["field_manager"] == "appstack"
    assert kwargs["metrics"].prefix == "appstack"
    assert kwargs["user_agent"].startswith("appstack/1.2.3 (")
    [event_source] = recorded
    assert event_source["controller"] == "appstack.dev/operator"
    assert event_source["client"].field_manager == "appstack"


async def test_only_serve_tunes_the_process_an_embedded_assembly_leaves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``assemble`` inside someone else's asyncio program changes nothing process-wide;
    ``serve`` (the operator's own process) asks for the TLS buffer tuning."""
    tuned: list[bool] = []

    async def connect(*_args: Any, **kwargs: Any) -> Client:
        options = {k: v for k, v in kwargs.items() if k in {"field_manager", "metrics"}}
        return Client(ScriptedTransport(), **options)

    def recorder(*_args: Any, **_kwargs: Any) -> None:
        raise _Built

    monkeypatch.setattr(operator.Client, "connect", connect)
    monkeypatch.setattr(operator, "tune_connections", lambda: tuned.append(True))
    monkeypatch.setattr(operator, "EventRecorder", recorder)
    options = OperatorOptions(metrics_address=None, health_address=None)
    with pytest.raises(_Built):
        await operator.assemble(ALL, IDENTITY, options)
    assert tuned == []
    with pytest.raises(_Built):
        await operator.serve(ALL, IDENTITY, options)
    assert tuned == [True]
